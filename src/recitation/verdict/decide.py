"""The verdict: one function, :func:`decide`, from typed inputs to a typed finding.

The rules (:data:`RULES`, version :data:`RULES_VERSION`), each stating its error rate:

* **with controls** — every test the audit can make is one test of one family, corrected
  together (Bonferroni over the ``m`` tests made, family-wise error at most :data:`ALPHA`;
  a test too small to reach ``ALPHA / m`` whatever its outcome is not counted: Tarone's
  modified Bonferroni for discrete tests, :func:`tarone`): for each extraction method
  (prefix probing; RECAP after feedback), the share of text passages reproduced verbatim
  against the controls' (one-sided Fisher exact test); for each primary detector score
  pinned in the manifest whose controls reach the target FPR, the text passages flagged
  against the threshold's FPR bound (one-sided binomial test). A significant extraction
  test: *memorized* (high); else a significant detector: *signs of training* (medium); else
  *no evidence found* (low).
* **controls that differ from the text** — on simple features (length, dates: the shift
  guard) or in words a classifier without the model sees (the blind baseline,
  :mod:`recitation.detect.blind`, its AUC interval above its threshold): a detector would
  measure that difference, so the detectors are not counted and the verdict says why, naming
  the telling words; reproduction against the controls still counts (it does not rest on
  the controls being alike in words). No extraction test: no verdict.
* **without controls** — verbatim reproduction judged against the reference model's null
  (:mod:`recitation.metrics.null`: family-wise error at most ``alpha`` over the passages);
  no reference model: no verdict.
* **incomplete** — runs that did not finish: the verdict says so and on how many passages.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from recitation.metrics.stats import binom_greater, fisher_greater
from recitation.verdict.types import Counts, Finding, Inputs, Level, Null

ALPHA = 0.05
RULES_VERSION = 3
"""1: the rules before the verdict module (a verbatim span of 40 tokens; reproduction
beyond any control's counted whatever its p-value; detectors corrected apart). 2: controls
that differed on simple features gave no verdict at all, reproduction included; no blind
baseline."""

RULES = {
    "no_method": "no method ran: nothing to judge",
    "shifted_controls": "controls differ from the text (simple features or the blind "
                        "baseline) and no extraction test was made: no verdict",
    "no_test": "no test could be made with these runs and controls",
    "reproduction": "verbatim reproduction above the controls' (Fisher exact, Bonferroni)",
    "detectors": "primary detectors flag the text above their FPR bound (binomial, "
                 "Bonferroni)",
    "nothing_found": "no test significant at the family-wise level",
    "shifted_nothing": "no extraction test significant at the family-wise level; detectors "
                       "not counted: the controls differ from the text",
    "null_no_model": "no controls and no reference model: nothing to judge reproduction by",
    "null_reproduction": "verbatim spans improbable under the reference model (null, "
                         "Bonferroni over the passages)",
    "null_nothing": "no verbatim span improbable under the reference model",
}

CONTROLS_REPRODUCED = ("the model also reproduced control text it cannot have seen: read "
                       "reproduction with care (formulaic or predictable text)")
NULL_DOES_NOT_MEAN = ("a span reproduced beyond chance shows the model memorized that "
                      "text, not where from: a passage quoted widely elsewhere is memorized "
                      "too, not necessarily from this edition")


def fmt(x: float | int | None) -> str:
    """A number as the reports print it: 3 significant digits, ``n/a`` for None."""
    if x is None:
        return "n/a"
    return f"{x:.3g}" if isinstance(x, float) else str(x)


def _finding(rule: str, label: str, level: Level, **kw: object) -> Finding:
    return Finding.model_validate({"rule": rule, "rule_text": RULES[rule], "label": label,
                                   "level": level, "rules_version": RULES_VERSION, **kw})


def _extraction_reasons(i: Inputs) -> list[str]:
    out = []
    for name, pair in (("prefix probing", i.prefix), ("RECAP", i.recap)):
        if pair is not None:
            t, c = pair
            out.append(f"{name}: {t.reproduced} of {t.n} text passages reproduced verbatim "
                       f"(controls: {c.reproduced} of {c.n}); {t.passages} 40-token "
                       f"passages; longest span {t.longest_span} tokens (controls: "
                       f"{c.longest_span})")
    return out


Test = tuple[str, str, float, float]
"""``(kind, name, p, smallest p the test could give)`` of one test of the verdict."""


def _tests(i: Inputs) -> list[Test]:
    """Every test the verdict makes (controls present), with the smallest p-value its design
    allows whatever the outcome (:func:`tarone`)."""
    out: list[Test] = []
    for name, pair in (("prefix probing", i.prefix), ("RECAP", i.recap)):
        if pair is not None and (p := fisher_greater(
                pair[0].reproduced, pair[0].n, pair[1].reproduced, pair[1].n)) is not None:
            out.append(("extraction", name, p, 1 / math.comb(pair[0].n + pair[1].n,
                                                             pair[0].n)))
    for d in i.detectors:
        p, floor = i.detector_p.get(d.name), 0.0
        if d.reachable and d.fpr_bound is not None and d.n:
            floor = min(max(d.fpr_bound, 1e-12), 1.0) ** d.n  # all n flagged
            p = binom_greater(d.flagged, d.n, d.fpr_bound) if p is None else p
        if p is not None:
            out.append(("detector", d.name, p, floor))
    return out


def tarone(floors: list[float], alpha: float) -> int:
    """Tarone's modified Bonferroni (1990, Biometrics 46:515): the smallest ``k >= 1`` such
    that at most ``k`` of the tests could reach ``alpha / k`` at all (``floors``: each
    test's smallest possible p); the others can never reject, so correcting over ``k``
    keeps the family-wise error at most ``alpha``."""
    for k in range(1, len(floors) + 1):
        if sum(f <= alpha / k for f in floors) <= k:
            return k
    return max(1, len(floors))


def set_aside(i: Inputs) -> list[str]:
    """Why the detectors are not counted (empty: they are): the controls differ from the
    text on simple features or in words (the blind baseline)."""
    out = []
    if i.shift_warnings:
        out.append("the controls differ from the text on simple features (" +
                   "; ".join(i.shift_warnings) + ")")
    if i.blind is not None and i.blind.separates:
        out.append(i.blind.describe())
    if out:
        out.append("a detector would measure that difference, not memorization: detectors "
                   "not counted (reproduction still counts); give controls of the same kind "
                   "(era, genre, edition, length)")
    return out


def _with_controls(i: Inputs, reasons: list[str]) -> Finding:
    aside = set_aside(i)
    tests = [t for t in _tests(i) if not (aside and t[0] == "detector")]
    if not tests:
        why = "; ".join(aside) if aside else (
            "no test could be made: no extraction run with text and controls, and no "
            "primary detector reached its target FPR with these controls (more controls "
            "or a higher --target-fpr)")
        return _finding("shifted_controls" if aside else "no_test", "no verdict", "none",
                        why_none=why, reasons=reasons + [why])
    m = tarone([t[3] for t in tests], ALPHA)
    cut = ALPHA / m
    hits = [t for t in tests if t[2] <= cut]
    numbers: dict[str, float | int | None] = {"alpha": ALPHA, "tests": m, "threshold": cut}
    numbers |= {f"p {name}": p for _, name, p, _ in tests}
    rate = f"family-wise error at most {ALPHA:g} (Bonferroni over {m} test(s))"
    p_ex = min((t[2] for t in tests if t[0] == "extraction"), default=None)
    sig = [t[1] for t in hits if t[0] == "detector"]
    common = {"reasons": reasons + _test_reasons(i, tests, m, cut, aside),
              "error_rate": rate, "numbers": numbers, "p_extraction": p_ex,
              "significant": sig}
    if any(t[0] == "extraction" for t in hits):
        return _finding("reproduction", "memorized: reproduces the text verbatim", "high",
                        evidence="reproduction against controls", **common)
    if sig:
        return _finding("detectors", "signs of training on the text (detectors), no "
                        "verbatim reproduction", "medium",
                        evidence="detectors against controls", **common)
    if aside:
        return _finding("shifted_nothing", "no verbatim reproduction found (detectors not "
                        "counted: the controls differ from the text)", "low",
                        evidence="reproduction against controls", **common)
    return _finding("nothing_found", "no evidence of memorization found", "low",
                    evidence="reproduction and detectors against controls", **common)


def _test_reasons(i: Inputs, tests: list[Test], m: int, cut: float,
                  aside: list[str]) -> list[str]:
    out = _detector_reasons(i) + aside + [
        f"{m} test(s), each at {fmt(cut)} (Bonferroni: family-wise error at most "
        f"{ALPHA:g}): " + ", ".join(f"{name} p {fmt(p)}" for _, name, p, _ in tests)]
    if not aside and i.blind is not None:
        out.append(i.blind.describe())
    if idle := [name for _, name, _, floor in tests if floor > cut]:
        out.append(f"not counted (Tarone 1990): {', '.join(idle)}, too few passages to "
                   f"reach p {fmt(cut)} whatever the outcome")
    if any(c.reproduced for c in _controls(i)):
        out.append(CONTROLS_REPRODUCED)
    return out


def _controls(i: Inputs) -> list[Counts]:
    return [pair[1] for pair in (i.prefix, i.recap) if pair is not None]


def _detector_reasons(i: Inputs) -> list[str]:
    return [f"{d.name}: {d.flagged} of {d.n} text passages flagged at FPR bound "
            f"{fmt(d.fpr_bound)}, ROC AUC {fmt(d.auc)}" if d.reachable else
            f"{d.name}: the controls do not reach the target FPR: no test"
            for d in i.detectors]


def _rule_text(null: Null) -> str:
    return (f"rule fixed before the run: a verbatim span whose probability after the same "
            f"prefix under {null.model} (a model that cannot have memorized the text) is "
            f"at most alpha / N = {null.alpha:g} / {null.n} (log10 "
            f"{fmt(null.threshold_log10)}); family-wise false-positive rate at most "
            f"{null.alpha:g} when the audited model writes unseen text no more readily "
            f"than the reference")


def _without_controls(i: Inputs, reasons: list[str]) -> Finding:
    null = i.null
    if null is None:
        why = (f"no controls ({i.controls_reason or 'none given'}) and no reference model "
               "to judge reproduction by: give controls (--controls) or a reference model "
               "(--null-model)")
        return _finding("null_no_model", "no verdict", "none", why_none=why,
                        reasons=reasons + [why])
    hits = [s for s in null.spans if s.beyond_chance]
    rate = f"null: family-wise error at most {null.alpha:g} (Bonferroni over {null.n} passages)"
    numbers: dict[str, float | int | None] = {"alpha": null.alpha, "passages": null.n,
                                              "beyond_chance": len(hits)}
    common = {"error_rate": rate, "numbers": numbers,
              "evidence": "reproduction against the reference model's null"}
    if hits:
        spans = "; ".join(f"{s.id}: {s.words} words, log10 p {fmt(s.log10_p)}"
                          for s in hits[:5])
        return _finding("null_reproduction", "memorized: reproduces the text verbatim, "
                        "improbable by chance", "high", reasons=reasons + [
                            f"{len(hits)} of {null.n} text passages reproduced verbatim "
                            f"beyond chance ({spans})", _rule_text(null),
                            NULL_DOES_NOT_MEAN], **common)
    return _finding("null_nothing", "no reproduction beyond chance found (no controls: "
                    "detectors not run)", "low", reasons=reasons + [
                        f"{len(null.spans)} verbatim span(s), none beyond chance",
                        _rule_text(null)], **common)


def _incomplete(f: Finding, i: Inputs) -> Finding:
    probed = i.prefix[0].n if i.prefix is not None else 0
    what = (f"incomplete audit ({probed} of {i.text_passages} text passages probed; runs "
            f"not completed: {', '.join(i.incomplete)})")
    return f.model_copy(update={"label": f"{what}: {f.label}", "complete": False,
                                "reasons": [what + "; 'recitation audit --resume' "
                                            "finishes it", *f.reasons]})


def decide(i: Inputs) -> Finding:
    """The verdict for one text and model (module docstring)."""
    reasons = _extraction_reasons(i)
    if i.prefix is None and i.recap is None and not i.detectors and i.null is None:
        why = "no method ran for this model (see the methods not run)"
        f = _finding("no_method", "no verdict", "none", why_none=why, reasons=[why])
    else:
        rule: Callable[[Inputs, list[str]], Finding] = (
            _with_controls if i.controls else _without_controls)
        f = rule(i, reasons)
    return _incomplete(f, i) if i.incomplete else f


__all__ = ["ALPHA", "RULES", "RULES_VERSION", "decide", "fmt", "set_aside"]
