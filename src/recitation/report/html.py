"""One self-contained HTML file from the findings (:mod:`recitation.report.collect`).

Plotly's JavaScript is embedded once (``plotly.offline.get_plotlyjs``), so the file opens
with no network. Every text from a model or a user file goes through Jinja2's autoescaping:
a reply containing ``<script>`` is shown as text. Verbatim spans are marked with
``<mark class="span" data-i=N>`` over the character offsets the findings give.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from recitation.errors import require
from recitation.report.charts import CHARTS
from recitation.report.sections import html_sections
from recitation.report.table import MISSING, ci, fmt

CHART_NOTES = {
    "chart-feedback": "Feedback-round gains (RECAP figure 6) need the RECAP feedback loop; "
                      "this audit ran no RECAP (--recap-passages 0, or no model could run "
                      "it), so there is nothing to show.",
}

TEMPLATE = "report.html.j2"
"""The page template, beside this module (package data)."""


def marks(text: str, spans: list[dict[str, Any]], side: str) -> list[tuple[str, int | None]]:
    """``text`` cut into (segment, span index or None) at the spans' offsets."""
    out: list[tuple[str, int | None]] = []
    pos = 0
    for i, s in sorted(enumerate(spans), key=lambda x: x[1][f"{side}_start"]):
        a, b = s[f"{side}_start"], s[f"{side}_end"]
        if a < pos:  # overlapping on this side: leave it unmarked
            continue
        if a > pos:
            out.append((text[pos:a], None))
        out.append((text[a:b], i))
        pos = b
    if pos < len(text):
        out.append((text[pos:], None))
    return out


def _date(t: Any) -> str:
    if not t:
        return MISSING
    return dt.datetime.fromtimestamp(float(t), tz=dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def render_html(findings: dict[str, Any]) -> str:
    jinja2 = require("jinja2", "the HTML report")
    offline = require("plotly.offline", "the HTML report's charts")
    charts = []
    for make in CHARTS:
        made = make(findings)
        if made is None:
            charts.append((f"chart-{make.__name__.removesuffix('_chart')}", None))
            continue
        cid, fig = made
        charts.append((cid, fig.to_html(full_html=False, include_plotlyjs=False, div_id=cid,
                                        config={"displaylogo": False, "responsive": True})))
    env = jinja2.Environment(autoescape=True)
    from importlib.resources import files

    tpl = env.from_string((files("recitation.report") / TEMPLATE).read_text("utf-8"))
    return str(tpl.render(f=findings, charts=charts, notes=CHART_NOTES, fmt=fmt, ci=ci,
                          date=_date, marks=marks, zip=zip, sections=html_sections(findings),
                          plotlyjs=offline.get_plotlyjs(),
                          generated=_date(dt.datetime.now(dt.UTC).timestamp())))
