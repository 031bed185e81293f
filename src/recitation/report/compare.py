"""``recitation compare``: one table and one chart across audits (models or runs)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from recitation.errors import require
from recitation.report.collect import collect

COLUMNS = ["audit", "model", "verdict", "text reproduced", "controls reproduced",
           "ROUGE-L text", "ROUGE-L controls", "RECAP text reproduced",
           "RECAP ROUGE-L text / controls", "primary AUCs"]


def compare_rows(findings: list[dict[str, Any]]) -> list[list[str]]:
    rows = [COLUMNS]
    for f in findings:
        for m in f["models"]:
            ex = m.get("extraction") or {}
            t, c = ex.get("text") or {}, ex.get("control") or {}
            det = m.get("detection") or {}
            aucs = ", ".join(f"{p} {det['detectors'][p]['auc']:.2f}" + (
                             "" if p in det.get("primary", []) else " (reported)")
                             for p in det.get("primary", []) + det.get("reported", [])
                             if det["detectors"][p].get("auc") is not None)
            rg = (m.get("recap") or {}).get("groups") or {}
            rt = (rg.get("text") or {}).get("final") or {}
            rc = (rg.get("control") or {}).get("final") or {}
            rows.append([f["audit_id"], m["spec"], m["verdict"]["label"],
                         f"{t.get('reproduced', '-')}/{t.get('n', '-')}",
                         f"{c.get('reproduced', '-')}/{c.get('n', '-')}",
                         _f(t.get("rouge_l_weighted")), _f(c.get("rouge_l_weighted")),
                         f"{rt.get('reproduced', '-')}/{rt.get('n', '-')}",
                         f"{_f(rt.get('rouge_l_weighted'))} / {_f(rc.get('rouge_l_weighted'))}",
                         aucs or "-"])
    return rows


def _f(x: Any) -> str:
    return "-" if x is None else f"{x:.3f}"


def write_compare(folders: list[Path], out: Path) -> tuple[list[list[str]], dict[str, Path]]:
    go = require("plotly.graph_objects", "the comparison chart")
    jinja2 = require("jinja2", "the comparison report")
    findings = [collect(f) for f in folders]
    rows = compare_rows(findings)
    fig = go.Figure()
    labels = [f"{r[0]} · {r[1]}" for r in rows[1:]]
    for col, name in ((3, "text reproduced"), (4, "controls reproduced")):
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
