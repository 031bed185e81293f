"""What the verdict says, word for word, and the edges of Tarone's count (issue 46 item 6: the
mutants of verdict/decide.py that tests/verdict/test_verdict.py left alive). Every finding
here is worked by hand from the rules in decide.py's docstring: the p-values from their
definitions (Fisher's one-sided p of k of k against 0 of m is 1 / C(k + m, k); the binomial
p of 1 or more of 4 at rate 0.1 is 1 - 0.9^4), the texts as a user reads them (fast: no
model)."""

from __future__ import annotations

import pytest

from recitation.verdict import Counts, Detector, Inputs, Null, NullSpan, decide
from recitation.verdict.decide import CONTROLS_REPRODUCED, NULL_DOES_NOT_MEAN, fmt, tarone

RATE = "family-wise error at most 0.05 (Bonferroni over {} test(s))"


def _c(n: int, k: int, passages: int = 0, span: int = 0) -> Counts:
    return Counts(n=n, reproduced=k, passages=passages, longest_span=span)


def _rule_text(model: str, n: int, log10: str) -> str:
    return (f"rule fixed before the run: a verbatim span whose probability after the same "
            f"prefix under {model} (a model that cannot have memorized the text) is at most "
            f"alpha / N = 0.05 / {n} (log10 {log10}); family-wise false-positive rate at most "
            f"0.05 when the audited model writes unseen text no more readily than the "
            f"reference")


def test_fmt_three_significant_digits_ints_as_they_are_none_as_n_a() -> None:
    assert fmt(None) == "n/a"
    assert fmt(1 / 70) == "0.0143" and fmt(0.25) == "0.25" and fmt(-2.0) == "-2"
    assert fmt(12) == "12" and fmt(1234) == "1234"  # an int is not rounded (1.23e+03)
    assert fmt(0) == "0"


def test_memorized_by_reproduction_word_for_word() -> None:
    """Prefix probing 4 of 4 against 0 of 9 (p = 1 / C(13, 4) = 1/715), a reachable detector
    flagging 1 of 4 at FPR bound 0.1 (p = 1 - 0.9^4 = 0.3439, smallest p 0.1^4) and one whose
    controls do not reach the target FPR (no test): Tarone counts both tests (each could
    reach 0.025), so each is judged at 0.05 / 2."""
    f = decide(Inputs(controls=9, prefix=(_c(4, 4, 6, 52), _c(9, 0, 0, 3)), detectors=[
        Detector(name="loss", n=4, flagged=1, reachable=True, fpr_bound=0.1, auc=0.75),
        Detector(name="zlib", n=4, flagged=0, reachable=False, auc=0.5)]))
    assert (f.rule, f.level) == ("reproduction", "high")
    assert f.label == "memorized: reproduces the text verbatim"
    assert f.evidence == "reproduction against controls"
    assert f.error_rate == RATE.format(2) and f.why_none is None
    assert f.reasons == [
        "prefix probing: 4 of 4 text passages reproduced verbatim (controls: 0 of 9); 6 "
        "40-token passages; longest span 52 tokens (controls: 3)",
        "loss: 1 of 4 text passages flagged at FPR bound 0.1, ROC AUC 0.75",
        "zlib: the controls do not reach the target FPR: no test",
        "2 test(s), each at 0.025 (Bonferroni: family-wise error at most 0.05): "
        "prefix probing p 0.0014, loss p 0.344"]
    assert f.numbers == {"alpha": 0.05, "tests": 2, "threshold": 0.025,
                         "p prefix probing": pytest.approx(1 / 715),
                         "p loss": pytest.approx(1 - 0.9 ** 4)}
    assert f.p_extraction == pytest.approx(1 / 715) and f.significant == []


def test_signs_of_training_and_nothing_found_word_for_word() -> None:
    """3 of 4 flagged at FPR bound 0.1: p = 4 * 0.1^3 * 0.9 + 0.1^4 = 0.0037 < 0.05."""
    f = decide(Inputs(controls=19, detectors=[
        Detector(name="loss", n=4, flagged=3, reachable=True, fpr_bound=0.1)]))
    assert (f.rule, f.level) == ("detectors", "medium")
    assert f.label == "signs of training on the text (detectors), no verbatim reproduction"
    assert f.evidence == "detectors against controls" and f.significant == ["loss"]
    assert f.numbers["p loss"] == pytest.approx(4 * 0.1 ** 3 * 0.9 + 0.1 ** 4)
    assert f.reasons[0] == "loss: 3 of 4 text passages flagged at FPR bound 0.1, ROC AUC n/a"
    g = decide(Inputs(controls=9, prefix=(_c(4, 0), _c(9, 0))))
    assert (g.rule, g.level) == ("nothing_found", "low")
    assert g.label == "no evidence of memorization found"
    assert g.evidence == "reproduction and detectors against controls"
    assert g.p_extraction == 1.0 and g.error_rate == RATE.format(1)


def test_tests_that_cannot_reject_are_named_as_not_counted() -> None:
    """RECAP on one passage of each group (smallest p 1/2) and a detector on one passage at
    FPR bound 0.5 (smallest p 0.5) cannot reach 0.05: not counted, and named."""
    f = decide(Inputs(controls=4, prefix=(_c(4, 4), _c(4, 0)), recap=(_c(1, 1), _c(1, 0)),
                      detectors=[Detector(name="x", n=1, flagged=1, reachable=True,
                                          fpr_bound=0.5)]))
    assert f.numbers["tests"] == 1 and f.rule == "reproduction"
    assert f.reasons[-1] == ("not counted (Tarone 1990): RECAP, x, too few passages to reach p "
                             "0.05 whatever the outcome")
    assert f.reasons[-2] == ("1 test(s), each at 0.05 (Bonferroni: family-wise error at most "
                             "0.05): prefix probing p 0.0143, RECAP p 0.5, x p 0.5")


def test_a_test_whose_smallest_p_equals_the_threshold_is_counted() -> None:
    """Prefix probing 3 of 3 against 0 of 3: the smallest p it could give, 1 / C(6, 3), is
    0.05 itself, which a level-0.05 test can reach (p <= alpha): it is counted, never listed
    as unable to reject."""
    f = decide(Inputs(controls=3, prefix=(_c(3, 3), _c(3, 0))))
    assert f.numbers["tests"] == 1 and f.numbers["threshold"] == 0.05
    assert not any(r.startswith("not counted") for r in f.reasons)


def test_two_tests_that_can_each_reach_alpha_are_both_counted() -> None:
    """Prefix probing and RECAP each 3 of 3 against 0 of 3 (smallest p 1/20 = alpha each):
    at k = 1 two tests could reach 0.05, more than one, so Tarone's k is 2 and each is judged
    at 0.025; p = 1/20 for both: nothing significant."""
    assert tarone([1 / 20, 1 / 20], 0.05) == 2
    f = decide(Inputs(controls=3, prefix=(_c(3, 3), _c(3, 0)), recap=(_c(3, 3), _c(3, 0))))
    assert f.numbers["tests"] == 2 and f.rule == "nothing_found"


def test_tarone_by_hand() -> None:
    """k = 1: three floors at most 0.05 (> 1); k = 2: two at most 0.025 (<= 2): k = 2."""
    assert tarone([0.001, 0.001, 0.03], 0.05) == 2
    assert tarone([0.05], 0.05) == 1 and tarone([0.2, 0.3], 0.05) == 1


def test_a_detector_whose_p_is_given_without_a_design_is_counted() -> None:
    """A detector p-value given from outside (no FPR bound: its smallest p unknown) counts in
    the correction: with prefix probing, two tests."""
    f = decide(Inputs(controls=9, prefix=(_c(4, 4), _c(9, 0)),
                      detectors=[Detector(name="ext", n=0, flagged=0, reachable=False)],
                      detector_p={"ext": 0.5}))
    assert f.numbers["tests"] == 2 and f.numbers["p ext"] == 0.5


def test_an_unreachable_detector_makes_no_test_whatever_it_flagged() -> None:
    f = decide(Inputs(controls=12, detectors=[
        Detector(name="loss", n=4, flagged=4, reachable=False, fpr_bound=0.01)]))
    assert f.rule == "no_test"
    assert f.why_none == (
        "no test could be made: no extraction run with text and controls, and no primary "
        "detector reached its target FPR with these controls (more controls or a higher "
        "--target-fpr)")


def test_every_no_verdict_why_word_for_word() -> None:
    f = decide(Inputs(controls=12, detectors=[
        Detector(name="loss", n=4, flagged=4, reachable=True, fpr_bound=0.01)],
                      shift_warnings=["length AUC 0.12", "date AUC 0.2"]))
    assert f.why_none == (
        "the controls differ from the text on simple features (length AUC 0.12; date "
        "AUC 0.2); a detector would measure that difference, not memorization: detectors "
        "not counted (reproduction still counts); give controls of the same kind (era, "
        "genre, edition, length)")
    assert decide(Inputs(controls=12)).why_none == (
        "no method ran for this model (see the methods not run)")
    for reason, said in [("", "none given"), ("the text is its own control", "the text is its "
                                               "own control")]:
        g = decide(Inputs(controls=0, controls_reason=reason, prefix=(_c(4, 1), _c(0, 0))))
        assert g.why_none == (
            f"no controls ({said}) and no reference model to judge reproduction by: give "
            "controls (--controls) or a reference model (--null-model)")


def test_the_null_word_for_word() -> None:
    """Six spans beyond chance out of ten passages: five are named. alpha / N = 0.005,
    log10 -2.30."""
    spans = [NullSpan(id=f"s{j}", words=10 + j, log10_p=-20.0 - j, beyond_chance=True)
             for j in range(6)] + [NullSpan(id="q", words=8, log10_p=-1.0, beyond_chance=False)]
    f = decide(Inputs(controls=0, null=Null(model="ref", alpha=0.05, n=10, spans=spans)))
    assert (f.rule, f.level) == ("null_reproduction", "high")
    assert f.label == "memorized: reproduces the text verbatim, improbable by chance"
    assert f.evidence == "reproduction against the reference model's null"
    assert f.error_rate == "null: family-wise error at most 0.05 (Bonferroni over 10 passages)"
    assert f.numbers == {"alpha": 0.05, "passages": 10, "beyond_chance": 6}
    assert f.reasons == [
        "6 of 10 text passages reproduced verbatim beyond chance (s0: 10 words, log10 p -20; "
        "s1: 11 words, log10 p -21; s2: 12 words, log10 p -22; s3: 13 words, log10 p -23; "
        "s4: 14 words, log10 p -24)", _rule_text("ref", 10, "-2.3"), NULL_DOES_NOT_MEAN]
    g = decide(Inputs(controls=0, null=Null(model="ref", alpha=0.05, n=1000, spans=spans[6:])))
    assert (g.rule, g.level) == ("null_nothing", "low")
    assert g.label == "no reproduction beyond chance found (no controls: detectors not run)"
    assert g.evidence == "reproduction against the reference model's null"
    assert g.numbers == {"alpha": 0.05, "passages": 1000, "beyond_chance": 0}
    assert g.reasons == ["1 verbatim span(s), none beyond chance",
                         _rule_text("ref", 1000, "-4.3")]


def test_an_incomplete_audit_word_for_word() -> None:
    """No prefix probing ran to the end: 0 passages probed, both runs named."""
    f = decide(Inputs(controls=0, null=Null(model="ref", alpha=0.05, n=0, spans=[]),
                      text_passages=5, incomplete=["prefix_probe", "recap"]))
    what = ("incomplete audit (0 of 5 text passages probed; runs not completed: prefix_probe, "
            "recap)")
    assert f.label == (what + ": no reproduction beyond chance found (no controls: "
                       "detectors not run)")
    assert f.reasons[0] == what + "; 'recitation audit --resume' finishes it"
    assert f.reasons[1:] == ["0 verbatim span(s), none beyond chance",
                             _rule_text("ref", 0, "n/a")]
    assert not f.complete


def test_controls_reproduced_note_word_for_word() -> None:
    f = decide(Inputs(controls=9, recap=(_c(4, 4), _c(9, 2))))
    assert f.reasons[-1] == CONTROLS_REPRODUCED
    assert CONTROLS_REPRODUCED.startswith("the model also reproduced control text")

