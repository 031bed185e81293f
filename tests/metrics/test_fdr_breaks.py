"""Breaks of the catalogue's test (metrics/fdr.py) that a mutation run found, and the named
break of issue 46: Benjamini-Hochberg's ``<=`` made ``<``. References are independent:
statsmodels' ``multipletests(method="fdr_bh")``, counting by hand, numpy's documented
generators."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np
import pytest

from recitation.metrics.fdr import DEFAULT_Q, catalogue_tests, control_units

CONTROLS = [float(i) for i in range(19)]  # 19 control units of one passage: 0 .. 18


@pytest.fixture(scope="module")
def multipletests(require: Any) -> Any:
    mt: ModuleType = require.module("statsmodels.stats.multitest")
    return mt.multipletests


def test_bh_le_made_lt_an_adjusted_p_exactly_equal_to_q(multipletests: Any) -> None:
    """Issue 46's named break. 19 control units and 2 works: a work above every unit has
    p = 1/20, one above 18 of them p = 2/20; BH's adjusted p-values are then both
    min(2 * 1/20 / 1, 2 * 2/20 / 2) = 0.1 = q exactly, and both works are discoveries
    (BH rejects p_(k) <= k q / W: 2/20 <= 2 * 0.1 / 2). With ``<`` neither would be."""
    works = {"above all": [100.0], "above 18": [17.5]}
    tests, k = catalogue_tests(works, CONTROLS, q=DEFAULT_Q, seed=3)
    assert k == 19 and DEFAULT_Q == 0.1
    by = {t.work: t for t in tests}
    assert by["above all"].p_value == 1 / 20 and by["above 18"].p_value == 2 / 20
    reject, adjusted, _, _ = multipletests([1 / 20, 2 / 20], alpha=DEFAULT_Q, method="fdr_bh")
    assert list(adjusted) == [DEFAULT_Q, DEFAULT_Q]  # exactly q, not approximately
    assert [by["above all"].adjusted, by["above 18"].adjusted] == list(adjusted)
    assert [by["above all"].discovered, by["above 18"].discovered] == list(reject) == [True,
                                                                                      True]


def test_bh_against_statsmodels_on_random_catalogues(multipletests: Any) -> None:
    rng = np.random.default_rng(11)
    for trial in range(20):
        controls = list(rng.normal(size=60))
        works = {f"w{i}": list(rng.normal(loc=rng.choice([0.0, 2.0]), size=int(rng.integers(
            3, 6)))) for i in range(int(rng.integers(2, 9)))}
        q = float(rng.choice([0.05, 0.1, 0.2]))
        tests, _ = catalogue_tests(works, controls, q=q, seed=trial)
        reject, adjusted, _, _ = multipletests([t.p_value for t in tests], alpha=q,
                                               method="fdr_bh")
        assert [t.adjusted for t in tests] == pytest.approx(list(adjusted), abs=1e-12)
        assert [t.discovered for t in tests] == list(reject)


def test_each_field_of_a_work_test() -> None:
    tests, k = catalogue_tests({"a": [3.0, 5.0], "b": [1.0, 1.0]}, CONTROLS[:10], 0.1, 0)
    a, b = tests
    assert (a.work, a.passages, a.statistic) == ("a", 2, 4.0)
    assert (b.work, b.passages, b.statistic) == ("b", 2, 1.0)
    assert k == 5  # 10 controls in units of 2
    units = control_units(CONTROLS[:10], 2, 0)
    assert a.p_value == (1 + sum(u >= 4.0 for u in units)) / 6
    assert isinstance(a.adjusted, float) and a.adjusted >= a.p_value


def test_a_larger_work_draws_its_passages_with_the_documented_generator() -> None:
    """A work with more passages than the smallest uses ``m`` of them drawn without
    replacement by one ``numpy.random.default_rng([seed, 1])``, the works in their order
    (pinned: a stored audit's statistic must not change across versions)."""
    small, big = [0.0, 1.0, 2.0], [float(x) for x in range(10)]
    tests, _ = catalogue_tests({"small": small, "big": big}, CONTROLS, 0.1, 5)
    rng = np.random.default_rng([5, 1])
    rng.choice(np.asarray(small), 3, replace=False)
    want = float(np.mean(rng.choice(np.asarray(big), 3, replace=False)))
    assert tests[1].statistic == want
    again, _ = catalogue_tests({"small": [0.0, 1.0, 2.0], "big": big}, CONTROLS, 0.1, 5)
    assert again == tests


def test_the_same_seed_gives_the_same_units_and_verdicts() -> None:
    rng = np.random.default_rng(2)
    controls = list(rng.normal(size=41))
    works = {"a": list(rng.normal(size=4)), "b": list(rng.normal(loc=3.0, size=4))}
    first, _ = catalogue_tests(works, controls, 0.1, 7)
    assert catalogue_tests(works, controls, 0.1, 7)[0] == first
    # the units are control_units(controls, 4, seed) (41 // 4 = 10 of them)
    units = control_units(controls, 4, 7)
    assert first[0].p_value == (1 + sum(u >= first[0].statistic for u in units)) / 11


def test_one_passage_units_are_the_controls_themselves() -> None:
    assert sorted(control_units([3.0, 1.0, 2.0], 1, 0)) == [1.0, 2.0, 3.0]
    assert control_units([3, 1, 2, 6], 2, 0) in ([2.0, 4.0], [4.0, 2.0], [2.5, 3.5], [3.5, 2.5],
                                                 [4.5, 1.5], [1.5, 4.5])
    with pytest.raises(ValueError, match="^a unit needs at least one passage$"):
        control_units([1.0], 0, 0)


@pytest.mark.parametrize("q", [0.0, 1.0, -0.1, 1.5])
def test_q_outside_0_1_is_refused(q: float) -> None:
    with pytest.raises(ValueError, match=r"must lie in \(0, 1\)"):
        catalogue_tests({"a": [1.0], "b": [2.0]}, CONTROLS, q, 0)


def test_the_refusals_say_why() -> None:
    with pytest.raises(ValueError, match="^a catalogue needs at least two works$"):
        catalogue_tests({"a": [1.0]}, CONTROLS, 0.1, 0)
    with pytest.raises(ValueError, match="^every work needs at least one scored passage$"):
        catalogue_tests({"a": [1.0], "b": []}, CONTROLS, 0.1, 0)
    with pytest.raises(ValueError, match="^3 scored controls make no unit of 4 passages$"):
        catalogue_tests({"a": [1.0] * 4, "b": [2.0] * 4}, CONTROLS[:3], 0.1, 0)
    # one passage per work is enough (m = 1)
    tests, k = catalogue_tests({"a": [1.0], "b": [2.0]}, CONTROLS, 0.1, 0)
    assert k == 19 and [t.passages for t in tests] == [1, 1]
