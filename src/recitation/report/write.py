"""Write the three reports of an audit (HTML, Markdown, JSON) from its folder alone."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from recitation.report.collect import collect
from recitation.report.html import render_html
from recitation.report.markdown import render_markdown


def write_reports(folder: Path, *, redact: bool | None = None,
                  out_dir: Path | None = None) -> dict[str, Path]:
    """``report.html``, ``report.md``, ``report.json`` (``report-redacted.*`` when redacted)
    in ``out_dir`` (default: the audit folder)."""
    return write_findings(collect(folder, redact=redact), out_dir or folder)


def write_findings(findings: dict[str, Any], out: Path) -> dict[str, Path]:
    """The three reports of ``findings`` (from :func:`collect`, computed once) in ``out``."""
    stem = "report-redacted" if findings["redacted"] else "report"
    out.mkdir(parents=True, exist_ok=True)
    paths = {"html": out / f"{stem}.html", "md": out / f"{stem}.md",
             "json": out / f"{stem}.json"}
    paths["html"].write_text(render_html(findings), encoding="utf-8")
    paths["md"].write_text(render_markdown(findings), encoding="utf-8")
    paths["json"].write_text(json.dumps(findings, indent=1, default=str), encoding="utf-8")
    return paths

