"""The numbers behind a verdict: extraction counts per group, calibrated detector results,
and the verdict itself.

Extraction: the share of text passages reproduced verbatim is compared with the controls'
by Fisher's exact test (one-sided, ``scipy.stats.fisher_exact``). Detection: one primary
score per detector family, declared by the family before any run (its
:class:`~recitation.methods.AuditUse`, read from the method registry), so the verdict does
not pick the best of many scores; the text passages flagged at the conformal threshold are
tested against the threshold's FPR bound with a one-sided binomial test
(``scipy.stats.binomtest``), Bonferroni-corrected over the primary scores, with the
Clopper-Pearson interval of the flagged share.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from recitation import methods
from recitation.metrics.stats import clopper_pearson, roc_points
from recitation.records import DetectRecord, oriented_scores
from recitation.report.table import fmt as _f

ALPHA = 0.05


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


def fisher_greater(a: int, n_a: int, b: int, n_b: int) -> float | None:
    """One-sided p that group a's rate exceeds group b's (None without both groups)."""
    if n_a < 1 or n_b < 1:
        return None
    from scipy.stats import fisher_exact

    return float(fisher_exact([[a, n_a - a], [b, n_b - b]], alternative="greater").pvalue)


def binom_greater(k: int, n: int, p: float) -> float:
    from scipy.stats import binomtest

    return float(binomtest(k, n, min(max(p, 1e-12), 1.0), alternative="greater").pvalue)


def _scores(records: list[dict[str, Any]]) -> dict[str, dict[str, list[float]]]:
    """Oriented scores (higher = more member-like) per detector and label, as the detect
    job calibrated them (:func:`recitation.records.oriented_scores`)."""
    typed = [DetectRecord.model_validate(r) for r in records]
    return {name: {label: list(d[label].values()) for label in ("member", "control")}
            for name, d in oriented_scores(typed).items()}


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
    if sc.get("member") and sc.get("control"):
        labels = [1] * len(sc["member"]) + [0] * len(sc["control"])
        fpr, tpr, _ = roc_points(labels, np.array(sc["member"] + sc["control"]))
        out["roc"] = {"fpr": fpr.tolist(), "tpr": tpr.tolist()}
    return out


def detection(report: dict[str, Any], records: list[dict[str, Any]]) -> dict[str, Any]:
    """Each detector's calibrated result and scores; which are primary."""
    scores = _scores(records)
    dets = {name: _detector(name, d, scores.get(name, {}))
            for name, d in (report.get("detectors") or {}).items()}
    primary = first_present(methods.verdict_scores(), dets)
    reported = first_present(methods.reported_scores(), dets)
    m = max(1, len(primary))
    for p in primary:
        pv = dets[p]["p_value"]
        dets[p]["significant"] = pv is not None and pv < ALPHA / m
    shift = report.get("shift") or {}
    return {"detectors": dets, "primary": primary, "reported": reported, "alpha": ALPHA,
            "target_fpr": report.get("target_fpr"), "n_text": report.get("n_members"),
            "n_controls": report.get("n_controls"),
            "shift_warnings": list(shift.get("warnings") or []),
            "warnings": list(report.get("warnings") or [])}


def first_present(families: dict[str, tuple[str, ...]], dets: dict[str, Any]) -> list[str]:
    """The score that stands for each family: the first of its declared list the run has
    (e.g. Min-K%++ at 20% where the backend gives the full distribution, else Min-K%)."""
    return [next(p for p in prefs if p in dets) for prefs in families.values()
            if any(p in dets for p in prefs)]


def verdict(model: dict[str, Any], controls: dict[str, Any]) -> dict[str, Any]:
    """The plain verdict for one text and model, with its reasons."""
    ex = model.get("extraction") or {}
    t, c = ex.get("text") or {}, ex.get("control") or {}
    reasons: list[str] = []
    if t:
        reasons.append(f"{t['reproduced']} of {t['n']} text passages reproduced verbatim "
                       f"(controls: {c.get('reproduced', 0)} of {c.get('n', 0)}); "
                       f"{t['passages']} 40-token passages; longest span "
                       f"{t['longest_span']} tokens (controls: {c.get('longest_span', 0)})")
    verbatim, p_ex = _verbatim(t, c)
    if not controls.get("n"):
        return _without_controls(t.get("null"), reasons + [controls.get("reason",
                                                                        "no controls")])
    det = model.get("detection") or {}
    if det.get("shift_warnings"):
        return {"label": "no verdict", "level": "none", "p_extraction": p_ex, "evidence": None,
                "reasons": reasons + ["the controls differ from the text on simple features "
                                      "(" + "; ".join(det["shift_warnings"]) + ")"]}
    flagged = [det["detectors"][p] for p in det.get("primary", [])
               if det["detectors"][p].get("significant")]
    for p in det.get("primary", []):
        d = det["detectors"][p]
        reasons.append(f"{p}: {d['flagged']} of {d['n']} text passages flagged at FPR bound "
                       f"{_f(d['fpr_bound'])} (binomial p {_f(d['p_value'])}), ROC AUC "
                       f"{_f(d['auc'])}")
    rg = (model.get("recap") or {}).get("groups") or {}
    by_recap, p_recap = _verbatim((rg.get("text") or {}).get("final") or {},
                                  (rg.get("control") or {}).get("final") or {})
    if by_recap:
        reasons.append(f"RECAP reproduced text verbatim that it did not reproduce for the "
                       f"controls (Fisher exact p {_f(p_recap)})")
    det_rate = _detector_rate(det)
    if verbatim or by_recap:
        label, level = "memorized: reproduces the text verbatim", "high"
        kind = "reproduction against controls"
        ps = [p for p in (p_ex if verbatim else None, p_recap if by_recap else None)
              if p is not None]
        rate = f"Fisher exact p {_f(min(ps))}" if ps else ""
    elif flagged:
        label, level = "signs of training on the text (detectors), no verbatim reproduction", \
            "medium"
        kind, rate = "detectors against controls", det_rate
    else:
        label, level = "no evidence of memorization found", "low"
        kind, rate = "reproduction and detectors against controls", det_rate
    reasons += [CONTROLS_REPRODUCED] if c.get("reproduced") else []
    return {"label": label, "level": level, "reasons": reasons, "p_extraction": p_ex,
            "evidence": kind, "error_rate": rate}


CONTROLS_REPRODUCED = ("the model also reproduced control text it cannot have seen: read "
                       "reproduction with care (formulaic or predictable text)")


def _detector_rate(det: dict[str, Any]) -> str:
    """The detectors' error rate as the verdict states it (empty without detectors)."""
    primary = [det["detectors"][p] for p in det.get("primary", [])]
    bounds = [d["fpr_bound"] for d in primary
              if d.get("reachable") and d.get("fpr_bound") is not None]
    if primary and not bounds:
        return "no detector reached its target FPR with these controls: none could flag"
    return (f"FPR bound {_f(max(bounds))} per detector, Bonferroni over {len(primary)}"
            if bounds else "")


NULL_DOES_NOT_MEAN = ("a span reproduced beyond chance shows the model memorized that "
                     "text, not where from: a passage quoted widely elsewhere is memorized "
                     "too, not necessarily from this edition")


def _without_controls(null: dict[str, Any] | None, reasons: list[str]) -> dict[str, Any]:
    """The verdict of an audit with no controls: reproduction judged against the reference
    model's null (extract/null.py), else none."""
    if not null:
        return {"label": "no verdict", "level": "none", "reasons": reasons,
                "p_extraction": None, "evidence": None}
    hits = [s for s in null["spans"] if s["beyond_chance"]]
    rule = (f"rule fixed before the run: a verbatim span whose probability after the same "
            f"prefix under {null['model']} (a model that cannot have memorized the text) is "
            f"at most alpha / N = {null['alpha']:g} / {null['n']} (log10 "
            f"{_f(null['threshold_log10'])}); family-wise false-positive rate at most "
            f"{null['alpha']:g} when the audited model writes unseen text no more readily "
            f"than the reference")
    spans = "; ".join(f"{s['id']}: {s['words']} words, log10 p {_f(s['log10_p'])}"
                      for s in hits[:5])
    if hits:
        return {"label": "memorized: reproduces the text verbatim, improbable by chance",
                "level": "high", "p_extraction": None, "evidence": "reproduction",
                "error_rate": f"null: family-wise <= {null['alpha']:g}",
                "reasons": reasons + [f"{len(hits)} of {null['n']} text passages reproduced "
                                      f"verbatim beyond chance ({spans})", rule,
                                      NULL_DOES_NOT_MEAN]}
    return {"label": "no reproduction beyond chance found (no controls: detectors not run)",
            "level": "low", "p_extraction": None, "evidence": "reproduction",
            "error_rate": f"null: family-wise <= {null['alpha']:g}",
            "reasons": reasons + [f"{len(null['spans'])} verbatim span(s), none beyond "
                                  "chance", rule]}


def _verbatim(t: dict[str, Any], c: dict[str, Any]) -> tuple[bool, float | None]:
    """Whether one extraction method reproduced text passages verbatim beyond what it
    reproduced for the controls, and the one-sided Fisher exact p of that."""
    p = fisher_greater(t.get("reproduced", 0), t.get("n", 0), c.get("reproduced", 0),
                       c.get("n", 0)) if t and c else None
    hit = t.get("reproduced", 0) > 0 and (c.get("reproduced", 0) == 0 or
                                          (p is not None and p < ALPHA))
    return hit, p

