"""The report's numbers against independent references: spans by brute force, tests by
hand-worked examples and scipy, the markup never changing the text."""

from __future__ import annotations

import itertools
import math
import re

import pytest

from recitation.metrics.stats import binom_greater, fisher_greater
from recitation.report.evidence import digest, evidence_item, highlight_spans, span_summary
from recitation.report.html import marks
from recitation.report.numbers import detection
from recitation.report.verdict_inputs import verdict_inputs
from recitation.verdict import decide
from recitation.verdict.pins import pins_now


def verdict(model: dict[str, object], controls: dict[str, object]) -> dict[str, object]:
    """The verdict of one model's findings, as the report decides it."""
    return decide(verdict_inputs(model, {"controls": controls})).as_dict()

GOLD = ("It is a truth universally acknowledged, that a single man in possession of a good "
        "fortune, must be in want of a wife.")


def _brute_runs(a: list[str], b: list[str], k: int) -> set[tuple[int, int]]:
    """(gold start, length) of every maximal common run of >= k words, by brute force."""
    out = set()
    for i, j in itertools.product(range(len(a)), range(len(b))):
        if (i and j and a[i - 1] == b[j - 1]):
            continue  # not maximal on the left
        n = 0
        while i + n < len(a) and j + n < len(b) and a[i + n] == b[j + n]:
            n += 1
        if n >= k:
            out.add((i, n))
    return out


def _norm(t: str) -> list[str]:
    return [w for w in (re.sub(r"[^\w]+", "", x.lower()) for x in t.split()) if w]


def test_highlights_are_the_exact_runs_of_five_words() -> None:
    attempt = ("it is a truth universally known, that a single man in possession of a good "
               "house must be in want")
    spans = highlight_spans(GOLD, attempt)
    got = {(len(_norm(GOLD[:s["gold_start"]])), s["words"]) for s in spans}
    assert got == _brute_runs(_norm(GOLD), _norm(attempt), 5)
    for s in spans:  # the offsets cut the same words out of both texts
        assert _norm(GOLD[s["gold_start"]:s["gold_end"]]) == \
            _norm(attempt[s["cand_start"]:s["cand_end"]])
    assert [s["words"] for s in spans] == [5, 9]
    assert highlight_spans(GOLD, "nothing in common at all here") == []


def test_span_summary_counts_40_token_passages_and_the_longest_span() -> None:
    long_gold = " ".join(f"w{i}" for i in range(100))
    attempt = " ".join(f"w{i}" for i in range(0, 85)) + " zz"
    s = span_summary(long_gold, attempt)
    assert s["longest_span"] == 85 and s["passages"] == 2 and s["reproduced"]
    short = span_summary("one two three", "one two three four")
    assert short["reproduced"] and short["passages"] == 0 and short["longest_span"] == 3
    assert not span_summary("one two three", "one two four")["reproduced"]


def test_redacted_evidence_keeps_statistics_not_text() -> None:
    rec = {"target": GOLD, "continuation": GOLD, "group": "text", "prefix": "p"}
    full = evidence_item("x", rec, {"prompt": "p"}, min_tokens=40, redact=False)
    red = evidence_item("x", rec, {"prompt": "p"}, min_tokens=40, redact=True)
    assert red["gold"] == digest(GOLD) and red["prompt"] is None
    assert GOLD not in repr(red) and red["longest_span"] == full["longest_span"]
    assert [h["words"] for h in red["highlights"]] == [h["words"] for h in full["highlights"]]


def test_marks_cut_without_changing_the_text() -> None:
    spans = [{"gold_start": 3, "gold_end": 8, "cand_start": 0, "cand_end": 1},
             {"gold_start": 10, "gold_end": 12, "cand_start": 2, "cand_end": 4}]
    segs = marks("0123456789abcdef", spans, "gold")
    assert "".join(s for s, _ in segs) == "0123456789abcdef"
    assert [(s, i) for s, i in segs if i is not None] == [("34567", 0), ("ab", 1)]


def test_fisher_and_binomial_against_hand_worked_values() -> None:
    # 3 of 3 against 0 of 3: p = 1 / C(6, 3) = 0.05 (hypergeometric tail)
    assert fisher_greater(3, 3, 0, 3) == pytest.approx(1 / math.comb(6, 3))
    assert fisher_greater(0, 3, 0, 3) == pytest.approx(1.0)
    assert fisher_greater(1, 0, 0, 3) is None
    # 2 of 2 flagged at FPR 0.1: p = 0.1 ** 2
    assert binom_greater(2, 2, 0.1) == pytest.approx(0.01)
    assert binom_greater(0, 5, 0.1) == pytest.approx(1.0)


def _report(flagged: int, n: int = 4) -> dict[str, object]:
    return {"target_fpr": 0.1, "n_members": n, "n_controls": 9, "shift": {"warnings": []},
            "detectors": {"loss": {"n_members": n, "flagged": flagged, "labelled": {
                "auc": 0.9, "auc_ci": [0.7, 1.0]}, "calibration": {
                "reachable": True, "fpr_bound": 0.1, "fpr_ci": [0.0, 0.4],
                "target_fpr": 0.1}}}}


def test_verdict_levels() -> None:
    controls = {"n": 9, "reason": "given"}
    # 4 of 4 reproduced against 0 of 9: Fisher p = 1 / C(13, 4) = 0.0014
    ex = {"text": {"n": 4, "reproduced": 4, "passages": 0, "longest_span": 30},
          "control": {"n": 9, "reproduced": 0, "passages": 0, "longest_span": 4}}
    det = detection(_report(4), [], pins_now())
    assert det["primary"] == ["loss"] and det["detectors"]["loss"]["p_value"] < 0.025
    assert verdict({"extraction": ex, "detection": det}, controls)["level"] == "high"
    none = {"text": dict(ex["text"], reproduced=0), "control": ex["control"]}
    assert verdict({"extraction": none, "detection": det}, controls)["level"] == "medium"
    quiet = detection(_report(0), [], pins_now())
    assert verdict({"extraction": none, "detection": quiet}, controls)["level"] == "low"
    assert verdict({"extraction": ex}, {"n": 0, "reason": "none fit"})["label"] == "no verdict"
    shifted = dict(det, shift_warnings=["length differs"])  # reproduction still counts,
    assert verdict({"extraction": ex, "detection": shifted}, controls)["level"] == "high"
    v = verdict({"extraction": none, "detection": shifted}, controls)  # detectors do not
    assert (v["level"], v["rule"]) == ("low", "shifted_nothing")
    assert verdict({"detection": shifted}, controls)["level"] == "none"


def test_verdict_counts_recap_reproduction() -> None:
    """Text RECAP reproduces verbatim (and not for the controls) makes the verdict 'memorized'
    even when prefix probing found nothing; RECAP reproducing controls as often does not."""
    controls = {"n": 9, "reason": "given"}
    none = {"text": {"n": 4, "reproduced": 0, "passages": 0, "longest_span": 3},
            "control": {"n": 9, "reproduced": 0, "passages": 0, "longest_span": 4}}
    quiet = detection(_report(0), [], pins_now())

    def recap(text: int, control: int) -> dict[str, object]:
        return {"groups": {"text": {"final": {"n": 4, "reproduced": text}},
                           "control": {"final": {"n": 4, "reproduced": control}}}}

    # 4 of 4 against 0 of 4: Fisher p = 1 / C(8, 4) = 0.014 <= 0.05 / 3 (three tests)
    v = verdict({"extraction": none, "detection": quiet, "recap": recap(4, 0)}, controls)
    assert v["level"] == "high" and any("RECAP" in r for r in v["reasons"])
    assert v["p_extraction"] == pytest.approx(1 / math.comb(8, 4))
    v = verdict({"extraction": none, "detection": quiet, "recap": recap(2, 2)}, controls)
    assert v["level"] == "low" and v["rule"] == "nothing_found"
    assert verdict({"extraction": none, "detection": quiet}, controls)["level"] == "low"
