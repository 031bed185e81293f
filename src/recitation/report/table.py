"""The verdict table, built once: one row per model, one formatter for every number.

``report.json`` (``verdict_table``), ``report.md``, ``report.html``, the console table of
``recitation audit`` / ``demo`` / ``run`` and ``recitation compare`` all print these rows,
so a missing value reads the same everywhere (:data:`MISSING`)."""

from __future__ import annotations

from typing import Any

MISSING = "n/a"
"""What every format prints for a value the audit does not have (no controls, no run)."""

VERDICT_COLUMNS = ["model", "verdict", "evidence (error rate)", "text reproduced",
                   "controls reproduced",
                   "40-token passages", "longest span (text / controls)",
                   "ROUGE-L (text / controls)", "flagged (primary detectors)",
                   "blind baseline AUC (text vs controls, no model)"]


def short_spec(spec: str) -> str:
    """A model spec for a chart label: an endpoint after ``@`` (a URL or a host) left out,
    so ``openai:NAME@http://127.0.0.1:8011/v1`` reads ``openai:NAME``; a device
    (``smollm2@cuda:1``) kept."""
    head, at, tail = spec.partition("@")
    return head if at and ("://" in tail or "." in tail or tail.startswith("localhost")) \
        else spec


def fmt(x: Any) -> str:
    """One number: 3 significant digits for a float, as is for an int, :data:`MISSING`
    for None."""
    if x is None:
        return MISSING
    return f"{x:.3g}" if isinstance(x, float) else str(x)


def ci(interval: Any) -> str:
    """An interval as ``[lo, hi]`` (2 decimals), or "" when there is none."""
    if not interval or interval[0] is None:
        return ""
    return f"[{interval[0]:.2f}, {interval[1]:.2f}]"


def of(k: Any, n: Any) -> str:
    """``k/n`` (e.g. passages reproduced of those tried), :data:`MISSING` when none was
    tried (no run, or no controls)."""
    return MISSING if k is None or not n else f"{k}/{n}"


def pair(a: Any, b: Any) -> str:
    """``a / b`` (text / controls)."""
    return f"{fmt(a)} / {fmt(b)}"


def flagged(det: dict[str, Any]) -> str:
    """The primary detectors' flagged text passages, e.g. ``min_k_pp_20 3/12``."""
    cells = [f"{p} {of(det['detectors'][p]['flagged'], det['detectors'][p]['n'])}"
             for p in det.get("primary", [])]
    return ", ".join(cells) or MISSING


def verdict_row(m: dict[str, Any]) -> list[str]:
    """One model's cells, in :data:`VERDICT_COLUMNS` order."""
    ex = m.get("extraction") or {}
    # a group with no passage has no longest span or ROUGE-L either (not 0)
    t, c = ({} if not (g := ex.get(k) or {}).get("n") else g for k in ("text", "control"))
    v = m["verdict"]
    evidence = (f"{v['evidence']} ({v['error_rate']})" if v.get("error_rate")
                else v.get("evidence") or MISSING)
    return [m["spec"], v["label"], evidence, of(t.get("reproduced"), t.get("n")),
            of(c.get("reproduced"), c.get("n")), fmt(t.get("passages")),
            pair(t.get("longest_span"), c.get("longest_span")),
            pair(t.get("rouge_l_weighted"), c.get("rouge_l_weighted")),
            flagged(m.get("detection") or {}), blind((m.get("detection") or {}).get("blind"))]


def blind(b: dict[str, Any] | None) -> str:
    """The blind baseline's AUC with its interval, and whether it separates the sets."""
    if not b:
        return MISSING
    return f"{fmt(b['auc'])} {ci(b['auc_ci'])}" + (" (separates: detectors not counted)"
                                                   if b["separates"] else "")


def verdict_table(models: list[dict[str, Any]]) -> dict[str, Any]:
    """``{"columns": [...], "rows": [[...], ...]}`` for the findings' models."""
    return {"columns": list(VERDICT_COLUMNS), "rows": [verdict_row(m) for m in models]}


def verdict_lines(findings: dict[str, Any]) -> list[str]:
    """The verdict for a console, one model at a time, each number on a line of its own, so
    it reads at 80 columns as at 140: the verdict, its evidence and error rate, why there is
    none, then the verdict table's cells under their column names."""
    out = []
    for m, row in zip(findings["models"], findings["verdict_table"]["rows"], strict=True):
        v = m["verdict"]
        out += [f"{row[0]}", f"  verdict: {row[1]}"]
        if v.get("why_none"):
            out.append(f"  why no verdict: {v['why_none']}")
        out.append(f"  evidence: {row[2]}")
        out += [f"  {col}: {cell}" for col, cell in zip(VERDICT_COLUMNS[3:], row[3:],
                                                          strict=True)]
    return out
