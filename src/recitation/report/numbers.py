"""The numbers the verdict and the report read: extraction counts per group, the
reproduction null's spans, calibrated detector results. The verdict itself is decided in
:mod:`recitation.verdict` from these.

Detection: one primary score per detector family, pinned in the audit's manifest when it
was created (:mod:`recitation.verdict.pins`), so the verdict does not pick the best of many
scores and a later registry change does not move an old audit's verdict; the text passages
flagged at the conformal threshold are tested against the threshold's FPR bound with a
one-sided binomial test (``scipy.stats.binomtest``), with the Clopper-Pearson interval of
the flagged share.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from recitation.metrics.stats import binom_greater, clopper_pearson, roc_points
from recitation.records import DetectRecord, oriented_scores
from recitation.verdict.pins import Pins, first_present


def extraction_stats(evidence: list[dict[str, Any]]) -> dict[str, Any]:
    """Counts over the attempts of one group (text or control)."""
    n = len(evidence)
    longest = [int(e["longest_span"]) for e in evidence]
    return {"n": n, "reproduced": sum(bool(e["reproduced"]) for e in evidence),
            "passages": sum(int(e["passages"]) for e in evidence),
            "longest_span": max(longest, default=0), "longest_spans": longest,
            "gold_tokens": sum(int(e["gold_tokens"]) for e in evidence)}


def null_summary(evidence: list[dict[str, Any]], alpha: float) -> dict[str, Any]:
    """The reproduction null over the text passages (extract/null.py): each verbatim span's
    probability under the reference model, the threshold ``alpha / N`` fixed by the
    settings, and the passages reproduced beyond chance."""
    from recitation.metrics.null import beyond_chance

    n = len(evidence)
    spans = []
    for e in evidence:
        if not (nul := e.get("null")):
            continue
        lp = nul.get("logprob")
        spans.append({"id": e["id"], "words": nul.get("span_words"), "tokens": nul.get(
            "tokens"), "log10_p": nul.get("log10_p"), "error": nul.get("error"),
            "beyond_chance": beyond_chance(lp, n, alpha)})
    model = next((e["null"].get("model") for e in evidence if e.get("null")), None)
    return {"model": model, "alpha": alpha, "n": n,
            "threshold_log10": math.log10(alpha / n) if n else None, "spans": spans,
            "beyond_chance": sum(s["beyond_chance"] for s in spans)}


def _scores(records: Sequence[DetectRecord]) -> dict[str, dict[str, list[float]]]:
    """Oriented scores (higher = more member-like) per detector and label, as the detect
    job calibrated them (:func:`recitation.records.oriented_scores`)."""
    return {name: {label: list(d[label].values()) for label in ("member", "control")}
            for name, d in oriented_scores(records).items()}


def _detector(name: str, d: dict[str, Any], sc: dict[str, list[float]]) -> dict[str, Any]:
    cal = d.get("calibration") or {}
    lab = d.get("labelled") or {}
    n = int(d.get("n_members") or 0)
    k = int(d.get("flagged") or 0)
    reachable = bool(cal.get("reachable"))
    bound = cal.get("fpr_bound")
    out: dict[str, Any] = {
        "detector": name, "n": n, "flagged": k, "auc": lab.get("auc"),
        "auc_ci": lab.get("auc_ci"), "reachable": reachable, "fpr_bound": bound,
        "fpr_ci": cal.get("fpr_ci"), "target_fpr": cal.get("target_fpr"),
        "threshold": cal.get("threshold_oriented"), "note": cal.get("note"),
        "flagged_ci": list(clopper_pearson(k, n)) if n else None,
        "p_value": binom_greater(k, n, float(bound)) if reachable and n and bound else None,
        "text_scores": sc.get("member", []), "control_scores": sc.get("control", [])}
    if (roc := lab.get("roc")) and roc.get("fpr"):  # computed once, by the detect job
        out["roc"] = {"fpr": list(roc["fpr"]), "tpr": list(roc["tpr"])}
    elif sc.get("member") and sc.get("control"):  # a run stored before it kept its curve
        labels = [1] * len(sc["member"]) + [0] * len(sc["control"])
        fpr, tpr, _ = roc_points(labels, np.array(sc["member"] + sc["control"]))
        out["roc"] = {"fpr": fpr.tolist(), "tpr": tpr.tolist()}
    return out


def detection(report: dict[str, Any], records: Sequence[DetectRecord],
              pins: Pins) -> dict[str, Any]:
    """Each detector's calibrated result and scores; which are primary (``pins``)."""
    scores = _scores(records)
    dets = {name: _detector(name, d, scores.get(name, {}))
            for name, d in (report.get("detectors") or {}).items()}
    primary = first_present(pins.primary, dets)
    reported = first_present(pins.reported, dets)
    shift = report.get("shift") or {}
    return {"detectors": dets, "primary": primary, "reported": reported,
            "target_fpr": report.get("target_fpr"), "n_text": report.get("n_members"),
            "n_controls": report.get("n_controls"),
            "shift_warnings": list(shift.get("warnings") or []),
            "blind": report.get("blind"),
            "warnings": list(report.get("warnings") or [])}
