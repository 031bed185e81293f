"""The verdict module against hand-worked cases and scipy: each rule fires where it should
and not one step before, the Bonferroni correction spans every test the verdict makes, every
"no verdict" says why, an incomplete audit says so. The named breaks of issue 46 each fail a
test here (fast: no model)."""

from __future__ import annotations

import itertools
import math

import pytest
from pydantic import ValidationError
from scipy.stats import binomtest, fisher_exact

from recitation.verdict import ALPHA, RULES, Counts, Detector, Inputs, Null, NullSpan, decide


def _c(n: int, k: int) -> Counts:
    return Counts(n=n, reproduced=k)


def _det(name: str, n: int, flagged: int, bound: float = 0.1) -> Detector:
    return Detector(name=name, n=n, flagged=flagged, reachable=True, fpr_bound=bound)


def test_reproduction_against_controls_by_fishers_exact_test() -> None:
    """4 of 4 reproduced against 0 of 9: p = 1 / C(13, 4), scipy's Fisher exact test."""
    f = decide(Inputs(controls=9, prefix=(_c(4, 4), _c(9, 0))))
    ref = fisher_exact([[4, 0], [0, 9]], alternative="greater").pvalue
    assert f.p_extraction == pytest.approx(ref) == pytest.approx(1 / math.comb(13, 4))
    assert (f.level, f.rule) == ("high", "reproduction") and f.label.startswith("memorized")
    assert f.error_rate == "family-wise error at most 0.05 (Bonferroni over 1 test(s))"


def test_break_reproduction_beyond_zero_controls_is_not_enough() -> None:
    """One text passage reproduced and no control: Fisher p = 4 / 13 (0.31) is no evidence;
    the rules before this module called it memorized (any reproduction beyond controls that
    reproduced nothing)."""
    f = decide(Inputs(controls=9, prefix=(_c(4, 1), _c(9, 0))))
    assert f.p_extraction == pytest.approx(4 / 13) and f.level == "low"


def test_break_bonferroni_dropped() -> None:
    """Two detectors, each p = 0.03 (< 0.05 alone, > 0.05 / 3 with the extraction test):
    corrected, nothing is significant; a verdict without the correction says 'signs of
    training'. The threshold is alpha over every test made, extraction included."""
    i = Inputs(controls=20, prefix=(_c(10, 0), _c(20, 0)),
               detectors=[_det("a", 10, 3), _det("b", 10, 3)],
               detector_p={"a": 0.03, "b": 0.03})
    f = decide(i)
    assert f.level == "low" and f.significant == [] and f.numbers["tests"] == 3
    assert f.numbers["threshold"] == pytest.approx(ALPHA / 3)
    one = decide(i.model_copy(update={"detectors": i.detectors[:1], "prefix": None}))
    assert one.level == "medium" and one.significant == ["a"]  # 0.03 < 0.05 / 1


def test_break_bonferroni_threshold_is_inclusive_at_the_boundary() -> None:
    """A p-value equal to alpha / m rejects (a level-alpha test rejects at p <= alpha);
    one just above does not."""
    base = Inputs(controls=20, detectors=[_det("a", 10, 5), _det("b", 10, 0)],
                  detector_p={"a": ALPHA / 2, "b": 1.0})
    assert decide(base).significant == ["a"]
    above = base.model_copy(update={"detector_p": {"a": math.nextafter(ALPHA / 2, 1),
                                                   "b": 1.0}})
    assert decide(above).significant == []


def test_detector_p_from_the_binomial_test_when_not_given() -> None:
    """3 of 4 flagged at an FPR bound of 0.1: scipy's one-sided binomial p = 0.0037."""
    f = decide(Inputs(controls=19, detectors=[_det("loss", 4, 3)]))
    ref = binomtest(3, 4, 0.1, alternative="greater").pvalue
    assert f.numbers["p loss"] == pytest.approx(ref) and f.significant == ["loss"]
    assert f.level == "medium"


def test_break_controls_rule_off_by_one() -> None:
    """One control passage is an audit with controls (Fisher's test, not the null); none is
    an audit without (the null, not Fisher's)."""
    null = Null(model="ref", alpha=0.05, n=4, spans=[
        NullSpan(id="a", words=20, log10_p=-30.0, beyond_chance=True)])
    with_one = decide(Inputs(controls=1, prefix=(_c(4, 4), _c(1, 0)), null=null))
    assert with_one.rule == "nothing_found"  # p = 1 / C(5, 4) = 0.2
    assert with_one.p_extraction == pytest.approx(0.2)
    without = decide(Inputs(controls=0, prefix=(_c(4, 4), _c(0, 0)), null=null))
    assert without.rule == "null_reproduction" and without.level == "high"


def test_every_no_verdict_says_why() -> None:
    cases = [
        Inputs(controls=0, prefix=(_c(4, 1), _c(0, 0))),  # no controls, no reference model
        Inputs(controls=12, detectors=[_det("loss", 10, 9)], shift_warnings=["length AUC 0.12"]),
        Inputs(controls=12, detectors=[Detector(name="loss", n=4, flagged=0,
                                                reachable=False)]),
        Inputs(controls=12),
    ]
    rules = []
    for i in cases:
        f = decide(i)
        assert f.label == "no verdict" and f.level == "none" and f.why_none
        assert f.why_none in f.reasons and f.rule in RULES
        rules.append(f.rule)
    assert rules == ["null_no_model", "shifted_controls", "no_test", "no_method"]
    assert "length AUC 0.12" in decide(cases[1]).why_none  # type: ignore[operator]


def test_the_null_without_controls() -> None:
    spans = [NullSpan(id="a", words=20, log10_p=-30.0, beyond_chance=True),
             NullSpan(id="b", words=9, log10_p=-1.0, beyond_chance=False)]
    f = decide(Inputs(controls=0, prefix=(_c(10, 2), _c(0, 0)),
                      null=Null(model="smollm2", alpha=0.05, n=10, spans=spans)))
    assert f.rule == "null_reproduction" and f.numbers["beyond_chance"] == 1
    assert "under smollm2" in " ".join(f.reasons) and "None" not in " ".join(f.reasons)
    quiet = decide(Inputs(controls=0, null=Null(model="smollm2", alpha=0.05, n=10,
                                                spans=spans[1:])))
    assert quiet.rule == "null_nothing" and quiet.level == "low"


def test_an_incomplete_audit_says_so_in_its_verdict() -> None:
    f = decide(Inputs(controls=9, prefix=(_c(8, 8), _c(9, 0)), text_passages=24,
                      incomplete=["prefix_probe"]))
    assert not f.complete and f.label.startswith("incomplete audit (8 of 24 text passages")
    assert f.level == "high" and "--resume" in f.reasons[0]
    assert decide(Inputs(controls=9, prefix=(_c(8, 8), _c(9, 0)))).complete


def test_recap_and_prefix_probing_are_two_tests() -> None:
    """RECAP 4 of 4 against 0 of 4 (p = 1/70 = 0.0143) with prefix probing 0 of 4: two
    tests, threshold 0.025: memorized by RECAP."""
    f = decide(Inputs(controls=4, prefix=(_c(4, 0), _c(4, 0)), recap=(_c(4, 4), _c(4, 0))))
    assert f.numbers["tests"] == 2 and f.rule == "reproduction"
    assert f.numbers["p RECAP"] == pytest.approx(1 / 70)
    assert any(r.startswith("RECAP: 4 of 4") for r in f.reasons)


def test_controls_that_reproduce_are_noted() -> None:
    f = decide(Inputs(controls=9, prefix=(_c(4, 4), _c(9, 1))))
    assert any("also reproduced control text" in r for r in f.reasons)
    assert not any("also reproduced control text" in r
                   for r in decide(Inputs(controls=9, prefix=(_c(4, 4), _c(9, 0)))).reasons)


def test_inputs_and_findings_refuse_unknown_keys() -> None:
    with pytest.raises(ValidationError, match="reproducd"):
        Counts.model_validate({"n": 4, "reproducd": 2})
    with pytest.raises(ValidationError, match="reproduced"):
        Counts.model_validate({"n": 4})
    f = decide(Inputs(controls=9, prefix=(_c(4, 4), _c(9, 0))))
    with pytest.raises(ValidationError):
        type(f).model_validate(f.as_dict() | {"lable": "x"})


def test_fishers_smallest_possible_p_against_every_table() -> None:
    """The floor Tarone's rule uses for Fisher's test, 1 / C(n_t + n_c, n_t), is the
    smallest p scipy gives over every table with those group sizes."""
    for n_t, n_c in [(1, 1), (4, 4), (3, 9), (6, 2)]:
        ps = [fisher_exact([[k, n_t - k], [c, n_c - c]], alternative="greater").pvalue
              for k in range(n_t + 1) for c in range(n_c + 1)]
        assert min(ps) == pytest.approx(1 / math.comb(n_t + n_c, n_t))


def test_tarone_counts_only_tests_that_could_reject() -> None:
    from recitation.verdict.decide import tarone

    assert tarone([0.001, 0.5], 0.05) == 1  # the second can never reach 0.05
    assert tarone([0.001, 0.001], 0.05) == 2
    assert tarone([0.02, 0.02, 0.02], 0.05) == 3  # at 3 none reaches 0.0167: all idle
    assert tarone([], 0.05) == 1
    # RECAP on one passage of each group (p >= 1/2) does not halve prefix probing's level
    f = decide(Inputs(controls=4, prefix=(_c(4, 4), _c(4, 0)), recap=(_c(1, 1), _c(1, 0))))
    assert f.numbers["tests"] == 1 and f.rule == "reproduction"
    assert any(r.startswith("not counted (Tarone 1990): RECAP") for r in f.reasons)


@pytest.mark.parametrize("rate", [0.05, 0.3, 0.6, 0.9])
def test_the_family_wise_error_holds_exactly(rate: float) -> None:
    """Under the null (text and controls reproduced alike, each passage with probability
    ``rate``, independently), the chance that the verdict says 'memorized' is at most
    ALPHA, computed exactly over every outcome of two extraction tests (prefix probing 6
    vs 6, RECAP 2 vs 2) with scipy's binomial probabilities."""
    from scipy.stats import binom

    def pmf(n: int, k: int) -> float:
        return float(binom.pmf(k, n, rate))

    total = 0.0
    for kt, kc, rt, rc in itertools.product(range(7), range(7), range(3), range(3)):
        f = decide(Inputs(controls=6, prefix=(_c(6, kt), _c(6, kc)),
                          recap=(_c(2, rt), _c(2, rc))))
        if f.rule == "reproduction":
            total += pmf(6, kt) * pmf(6, kc) * pmf(2, rt) * pmf(2, rc)
    assert total <= ALPHA
