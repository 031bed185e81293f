"""``recitation compare``: one table and one chart across audits (models or runs)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from recitation.errors import require
from recitation.report.collect import collect
from recitation.report.table import MISSING, VERDICT_COLUMNS, fmt, of, pair

COLUMNS = ["audit", *VERDICT_COLUMNS, "RECAP text reproduced",
           "RECAP ROUGE-L (text / controls)", "AUCs (primary; reported)"]
TEXT_REPRODUCED, CONTROLS_REPRODUCED = (COLUMNS.index(c) for c in (
    "text reproduced", "controls reproduced"))


def compare_rows(findings: list[dict[str, Any]]) -> list[list[str]]:
    """The verdict table's row of every model of every audit (:mod:`recitation.report.table`),
    with the audit, RECAP's final result and the ROC AUCs of the primary and reported
    scores."""
    rows = [COLUMNS]
    for f in findings:
        for m, row in zip(f["models"], f["verdict_table"]["rows"], strict=True):
            det = m.get("detection") or {}
            aucs = ", ".join(f"{p} {fmt(det['detectors'][p]['auc'])}" + (
                             "" if p in det.get("primary", []) else " (reported)")
                             for p in det.get("primary", []) + det.get("reported", [])
                             if det["detectors"][p].get("auc") is not None)
            rg = (m.get("recap") or {}).get("groups") or {}
            rt = (rg.get("text") or {}).get("final") or {}
            rc = (rg.get("control") or {}).get("final") or {}
            rows.append([f["audit_id"], *row, of(rt.get("reproduced"), rt.get("n")),
                         pair(rt.get("rouge_l_weighted"), rc.get("rouge_l_weighted")),
                         aucs or MISSING])
    return rows


def write_compare(folders: list[Path], out: Path) -> tuple[list[list[str]], dict[str, Path]]:
    go = require("plotly.graph_objects", "the comparison chart")
    jinja2 = require("jinja2", "the comparison report")
    findings = [collect(f) for f in folders]
    rows = compare_rows(findings)
    fig = go.Figure()
    labels = [f"{r[0]} · {r[1]}" for r in rows[1:]]
    for col, name in ((TEXT_REPRODUCED, "text reproduced"),
                      (CONTROLS_REPRODUCED, "controls reproduced")):
        vals = []
        for r in rows[1:]:
            k, _, n = r[col].partition("/")
            vals.append(int(k) / int(n) if k.isdigit() and n.isdigit() and int(n) else 0)
        fig.add_bar(name=name, x=labels, y=vals)
    fig.update_layout(title="Share of passages reproduced verbatim", barmode="group",
                      template="plotly_white", yaxis={"range": [0, 1]})
    div = fig.to_html(full_html=True, include_plotlyjs=True, div_id="chart-compare")
    table = jinja2.Environment(autoescape=True).from_string(
        "<table border=1 id='compare-table'>{% for r in rows %}<tr>{% for c in r %}"
        "<td>{{ c }}</td>{% endfor %}</tr>{% endfor %}</table>").render(rows=rows)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"html": out / "compare.html", "md": out / "compare.md",
             "json": out / "compare.json"}
    paths["html"].write_text(div.replace("<body>", "<body>" + table, 1), encoding="utf-8")
    md = ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * len(rows[0])]
    md += ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in rows[1:]]
    paths["md"].write_text("\n".join(md) + "\n", encoding="utf-8")
    paths["json"].write_text(json.dumps({"columns": rows[0], "rows": rows[1:],
                                         "audits": [str(f) for f in folders]}, indent=1),
                             encoding="utf-8")
    return rows, paths
