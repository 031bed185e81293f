"""The report's charts (plotly figures from the findings of :mod:`recitation.report.collect`).

Each function returns ``(div id, figure)`` or None when the audit has nothing to show there
(the HTML then says why). Plotly's JavaScript is embedded once by :mod:`.html`, so the file
opens with no network.
"""

from __future__ import annotations

from typing import Any

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


def rouge_chart(f: dict[str, Any]) -> tuple[str, Any] | None:
    go = _go()
    models = [m for m in f["models"] if m.get("extraction")]
    if not models:
        return None
    fig = go.Figure()
    for g in ("text", "control"):
        fig.add_bar(name=GROUP_NAMES[g], marker_color=COLORS[g],
                    x=[f"{m['spec']} · prefix probing" for m in models],
                    y=[m["extraction"][g]["rouge_l_weighted"] or 0 for m in models])
    return "chart-rouge", _layout(fig, "ROUGE-L recall (weighted by gold words) per model "
                                  "and method", yaxis={"range": [0, 1]}, barmode="group")


def passages_chart(f: dict[str, Any]) -> tuple[str, Any] | None:
    go = _go()
    models = [m for m in f["models"] if m.get("extraction")]
    if not models:
        return None
    fig = go.Figure()
    for g in ("text", "control"):
        x = [f"{m['spec']} · prefix probing" for m in models]
        fig.add_bar(name=f"{GROUP_NAMES[g]}: reproduced verbatim", marker_color=COLORS[g],
                    x=x, y=[m["extraction"][g]["reproduced"] for m in models])
        fig.add_bar(name=f"{GROUP_NAMES[g]}: 40-token passages", marker_color=COLORS[g],
                    opacity=0.5, x=x, y=[m["extraction"][g]["passages"] for m in models])
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
            xs += [f"{m['spec']} · {d['detector']}"] * len(d[key])
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
        fig.add_scatter(x=d["roc"]["fpr"], y=d["roc"]["tpr"], mode="lines+markers",
                        line_shape="hv", name=f"{m['spec']} · {d['detector']} "
                        f"(AUC {d['auc']:.2f})" if d.get("auc") is not None else m["spec"])
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
                              name=f"{m['spec']} · {GROUP_NAMES[g]}")
    return "chart-spans", _layout(fig, "Longest verbatim span per attempt (tokens)",
                                  barmode="overlay", xaxis={"title": "tokens"},
                                  yaxis={"title": "attempts"})


def cost_chart(f: dict[str, Any]) -> tuple[str, Any] | None:
    go = _go()
    rows = [(m["spec"], c) for m in f["models"] for c in m.get("costs", [])]
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
    """RECAP's feedback-round gains; None while the audit runs no feedback method."""
    return None


CHARTS = (rouge_chart, passages_chart, feedback_chart, scores_chart, roc_chart, spans_chart,
          cost_chart)
