"""The report's charts (plotly figures from the findings of :mod:`recitation.report.collect`).

Each function returns ``(div id, figure)`` or None when the audit has nothing to show there
(the HTML then says why). Plotly's JavaScript is embedded once by :mod:`.html`, so the file
opens with no network.
"""

from __future__ import annotations

from typing import Any

from recitation.report.table import short_spec

GROUP_NAMES = {"text": "audited text", "control": "controls"}
COLORS = {"text": "#c0392b", "control": "#2e86c1"}
PALETTE = ["#c0392b", "#2e86c1", "#e67e22", "#16a085", "#8e44ad", "#7f8c8d"]


def _go() -> Any:
    from recitation.errors import require

    return require("plotly.graph_objects", "the HTML report's charts")


def _layout(fig: Any, title: str, **kw: Any) -> Any:
    fig.update_layout(title=title, template="plotly_white", height=360,
                      margin={"l": 60, "r": 20, "t": 50, "b": 60}, **kw)
    return fig


def _methods(f: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(x label, {group: stats}) per model and extraction method: prefix probing, RECAP's
    first attempt and RECAP after feedback."""
    out = []
    for m in f["models"]:
        if m.get("extraction"):
            out.append((f"{short_spec(m['spec'])} · prefix probing", m["extraction"]))
        groups = (m.get("recap") or {}).get("groups") or {}
        for stage, label in (("first", "RECAP first attempt"), ("final", "RECAP after feedback")):
            if groups:
                out.append((f"{short_spec(m['spec'])} · {label}",
                            {g: v[stage] for g, v in groups.items()}))
    return out


def rouge_chart(f: dict[str, Any]) -> tuple[str, Any] | None:
    go = _go()
    rows = _methods(f)
    if not rows:
        return None
    fig = go.Figure()
    for g in ("text", "control"):
        sel = [(x, s[g]) for x, s in rows if g in s]
        fig.add_bar(name=GROUP_NAMES[g], marker_color=COLORS[g], x=[x for x, _ in sel],
                    y=[s["rouge_l_weighted"] or 0 for _, s in sel])
    return "chart-rouge", _layout(fig, "ROUGE-L recall (weighted by gold words) per model "
                                  "and method", yaxis={"range": [0, 1]}, barmode="group")


def passages_chart(f: dict[str, Any]) -> tuple[str, Any] | None:
    go = _go()
    rows = _methods(f)
    if not rows:
        return None
    fig = go.Figure()
    for g in ("text", "control"):
        sel = [(x, s[g]) for x, s in rows if g in s]
        x = [x for x, _ in sel]
        fig.add_bar(name=f"{GROUP_NAMES[g]}: reproduced verbatim", marker_color=COLORS[g],
                    x=x, y=[s["reproduced"] for _, s in sel])
        fig.add_bar(name=f"{GROUP_NAMES[g]}: 40-token passages", marker_color=COLORS[g],
                    opacity=0.5, x=x, y=[s["passages"] for _, s in sel])
    return "chart-passages", _layout(fig, "Passages reproduced per model and method",
                                     barmode="group")


def _primary(f: dict[str, Any]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    out = []
    for m in f["models"]:
        det = m.get("detection") or {}
        for p in det.get("primary", []):
            out.append((m, det["detectors"][p]))
    return out


def scores_chart(f: dict[str, Any]) -> tuple[str, Any] | None:
    go = _go()
    pairs = _primary(f)
    if not pairs:
        return None
    fig = go.Figure()
    for g, key in (("text", "text_scores"), ("control", "control_scores")):
        xs, ys = [], []
        for m, d in pairs:
            xs += [f"{short_spec(m['spec'])} · {d['detector']}"] * len(d[key])
            ys += d[key]
        fig.add_box(name=GROUP_NAMES[g], x=xs, y=ys, marker_color=COLORS[g],
                    boxpoints="all", jitter=0.4, pointpos=0)
    return "chart-scores", _layout(fig, "Detector scores (higher = more member-like), "
                                   "text vs controls", boxmode="group")


def roc_chart(f: dict[str, Any]) -> tuple[str, Any] | None:
    go = _go()
    pairs = [(m, d) for m, d in _primary(f) if d.get("roc")]
    if not pairs:
        return None
    fig = go.Figure()
    fig.add_scatter(x=[0, 1], y=[0, 1], mode="lines", name="chance",
                    line={"dash": "dot", "color": "#999"})
    for m, d in pairs:
        spec = short_spec(m["spec"])
        fig.add_scatter(x=d["roc"]["fpr"], y=d["roc"]["tpr"], mode="lines+markers",
                        line_shape="hv", name=f"{spec} · {d['detector']} "
                        f"(AUC {d['auc']:.2f})" if d.get("auc") is not None else spec)
    return "chart-roc", _layout(fig, "ROC: text (positive) vs controls", xaxis={
        "title": "false-positive rate (controls flagged)"}, yaxis={
        "title": "true-positive rate (text flagged)"})


def spans_chart(f: dict[str, Any]) -> tuple[str, Any] | None:
    go = _go()
    models = [m for m in f["models"] if m.get("extraction")]
    if not models:
        return None
    fig = go.Figure()
    palette = iter(PALETTE * len(models))
    for m in models:
        for g in ("text", "control"):
            fig.add_histogram(x=m["extraction"][g]["longest_spans"], opacity=0.6,
                              marker_color=next(palette), xbins={"size": 2},
                              name=f"{short_spec(m['spec'])} · {GROUP_NAMES[g]}")
    return "chart-spans", _layout(fig, "Longest verbatim span per attempt (tokens)",
                                  barmode="overlay", xaxis={"title": "tokens"},
                                  yaxis={"title": "attempts"})


def cost_chart(f: dict[str, Any]) -> tuple[str, Any] | None:
    go = _go()
    rows = [(short_spec(m["spec"]), c) for m in f["models"] for c in m.get("costs", [])]
    if not rows:
        return None
    fig = go.Figure()
    for method in sorted({c["method"] for _, c in rows}):
        sel = [(s, c) for s, c in rows if c["method"] == method]
        fig.add_bar(name=method, x=[s for s, _ in sel], y=[c["seconds"] for _, c in sel],
                    customdata=[[c["calls"], c["cost_usd"]] for _, c in sel],
                    hovertemplate="%{y:.1f} s, %{customdata[0]} calls, "
                    "$%{customdata[1]:.4f}<extra>" + method + "</extra>")
    return "chart-cost", _layout(fig, "Cost per method: model seconds (calls and dollars on "
                                 "hover)", barmode="group", yaxis={"title": "seconds"})


def feedback_chart(f: dict[str, Any]) -> tuple[str, Any] | None:
    """RECAP's feedback-round gains (figure 6): mean best-so-far ROUGE-L after each round,
    per model and group; None when the audit ran no RECAP."""
    go = _go()
    lines = [(short_spec(m["spec"]), g, v["rounds"]) for m in f["models"]
             for g, v in ((m.get("recap") or {}).get("groups") or {}).items() if v["rounds"]]
    if not lines:
        return None
    fig = go.Figure()
    palette = iter(PALETTE * len(lines))
    for spec, g, ys in lines:
        fig.add_scatter(x=list(range(len(ys))), y=ys, mode="lines+markers",
                        marker_color=next(palette), name=f"{spec} · {GROUP_NAMES[g]}",
                        line={"dash": "solid" if g == "text" else "dot"})
    return "chart-feedback", _layout(fig, "RECAP feedback rounds: mean best ROUGE-L so far",
                                     xaxis={"title": "feedback round (0: first attempt)",
                                            "dtick": 1}, yaxis={"range": [0, 1]})


CHARTS = (rouge_chart, passages_chart, feedback_chart, scores_chart, roc_chart, spans_chart,
          cost_chart)
