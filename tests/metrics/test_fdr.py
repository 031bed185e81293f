"""Catalogue verdicts (metrics/fdr.py): conformal p-values against shared control units
and Benjamini-Hochberg, checked by hand, against a step-up written from the paper's
definition, and by their error rates in repeated draws."""

from __future__ import annotations

import numpy as np
import pytest

from recitation.metrics.fdr import catalogue_tests, conformal_pvalue, control_units


def bh_by_definition(ps: list[float], q: float) -> set[int]:
    """Benjamini and Hochberg (1995): reject the k smallest, k the largest with
    p_(k) <= k q / W."""
    order = sorted(range(len(ps)), key=lambda i: ps[i])
    k = max((r for r in range(1, len(ps) + 1) if ps[order[r - 1]] <= r * q / len(ps)),
            default=0)
    return set(order[:k])


def test_a_conformal_p_value_counts_the_units_at_least_as_high() -> None:
    units = [0.1, 0.5, 0.5, 0.9]
    assert conformal_pvalue(0.5, units) == pytest.approx(4 / 5)  # by hand: 1 + 3 of 4
    assert conformal_pvalue(1.0, units) == pytest.approx(1 / 5)
    assert conformal_pvalue(0.0, units) == pytest.approx(1.0)


def test_control_units_are_disjoint_means() -> None:
    scores = [float(i) for i in range(10)]
    units = control_units(scores, 3, seed=4)
    assert len(units) == 3  # 10 // 3; one control left over
    order = np.random.default_rng(4).permutation(10)
    assert units == pytest.approx([np.mean(order[i * 3:(i + 1) * 3]) for i in range(3)])


def test_works_found_are_bh_by_its_definition() -> None:
    rng = np.random.default_rng(0)
    controls = list(rng.normal(size=200))
    works = {f"w{i}": list(rng.normal(loc=2.0 if i < 4 else 0.0, size=3)) for i in range(12)}
    tests, k = catalogue_tests(works, controls, q=0.1, seed=1)
    assert k == 66 and all(t.passages == 3 for t in tests)
    ps = [t.p_value for t in tests]
    assert {i for i, t in enumerate(tests) if t.discovered} == bh_by_definition(ps, 0.1)
    assert {t.work for t in tests if t.discovered} <= {f"w{i}" for i in range(12)}


def test_larger_works_use_as_many_passages_as_the_smallest() -> None:
    works = {"a": [1.0, 1.0, 1.0, 1.0], "b": [0.0, 0.0]}
    tests, _ = catalogue_tests(works, [0.5] * 10, q=0.1, seed=0)
    assert {t.work: t.passages for t in tests} == {"a": 2, "b": 2}


def test_bad_catalogues_are_refused() -> None:
    with pytest.raises(ValueError, match="two works"):
        catalogue_tests({"a": [1.0]}, [0.0] * 4, 0.1, 0)
    with pytest.raises(ValueError, match="no unit"):
        catalogue_tests({"a": [1.0, 2.0, 3.0], "b": [1.0, 2.0, 3.0]}, [0.0, 1.0], 0.1, 0)
    with pytest.raises(ValueError, match="q must"):
        catalogue_tests({"a": [1.0], "b": [1.0]}, [0.0] * 4, 1.5, 0)


def test_false_discoveries_stay_below_q_over_repeated_catalogues() -> None:
    """2,000 catalogues of 20 works, 6 of them shifted (memorized), passages and controls
    exchangeable otherwise (heavy-tailed scores): the mean false discovery proportion stays
    at or below q = 0.1 (Bates et al. 2023), and a work with no signal gets p <= t at most
    about t of the time; the shifted works are found most of the time."""
    rng = np.random.default_rng(7)
    fdp, power, small = [], [], 0
    for rep in range(2000):
        controls = list(rng.standard_t(3, size=150))
        works = {f"w{i}": list(rng.standard_t(3, size=3) + (3.0 if i < 6 else 0.0))
                 for i in range(20)}
        tests, _ = catalogue_tests(works, controls, q=0.1, seed=rep)
        found = [int(t.work[1:]) for t in tests if t.discovered]
        false = sum(i >= 6 for i in found)
        fdp.append(false / max(1, len(found)))
        power.append(sum(i < 6 for i in found) / 6)
        small += next(t for t in tests if t.work == "w19").p_value <= 0.1
    se = np.std(fdp) / np.sqrt(len(fdp))
    assert np.mean(fdp) <= 0.1 + 2 * se, np.mean(fdp)
    assert small / 2000 <= 0.1 + 3 * np.sqrt(0.09 / 2000)
    assert np.mean(power) > 0.5
