"""The ``shout`` report section: the audit's models, read from its manifest."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from markupsafe import escape

from recitation.report.sections import Section


def _collect(folder: Path, manifest: dict[str, Any]) -> dict[str, Any] | None:
    models = [m["spec"] for m in manifest.get("models", [])]
    return {"models": models} if models else None


def _markdown(data: dict[str, Any]) -> list[str]:
    return [f"Shouted at {len(data['models'])} model(s): {', '.join(data['models'])}"]


def _html(data: dict[str, Any]) -> str:
    return f"<p>Shouted at {escape(', '.join(data['models']))}</p>"


SECTION = Section(name="shout", title="Shout words", collect=_collect, markdown=_markdown,
                  html=_html)
