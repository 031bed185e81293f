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
    findings = collect(folder, redact=redact)
    stem = "report-redacted" if findings["redacted"] else "report"
    out = out_dir or folder
    out.mkdir(parents=True, exist_ok=True)
    paths = {"html": out / f"{stem}.html", "md": out / f"{stem}.md",
             "json": out / f"{stem}.json"}
    paths["html"].write_text(render_html(findings), encoding="utf-8")
    paths["md"].write_text(render_markdown(findings), encoding="utf-8")
    paths["json"].write_text(json.dumps(findings, indent=1, default=str), encoding="utf-8")
    return paths


def verdict_rows(findings: dict[str, Any]) -> list[list[str]]:
    """The verdict table's rows for a console: model, verdict, reproduced, flagged."""
    rows = []
    for m in findings["models"]:
        ex = m.get("extraction") or {}
        t, c = ex.get("text") or {}, ex.get("control") or {}
        det = m.get("detection") or {}
        flags = ", ".join(f"{p} {det['detectors'][p]['flagged']}/{det['detectors'][p]['n']}"
                          for p in det.get("primary", []))
        rows.append([m["spec"], m["verdict"]["label"],
                     f"{t.get('reproduced', '-')}/{t.get('n', '-')}",
                     f"{c.get('reproduced', '-')}/{c.get('n', '-')}",
                     str(t.get("longest_span", "-")), flags or "-"])
    return rows
