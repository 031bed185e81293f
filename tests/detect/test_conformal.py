"""Calibrated verdicts: the stated FPR holds out of sample (conformal threshold), checked by
simulation against a binomial tolerance; the former in-sample threshold fails that check."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from recitation.detect.calibrate import (
    calibrate,
    labelled_metrics,
    oriented,
    threshold_from_rank,
    threshold_rank,
    verdicts,
)
from recitation.metrics import stats as _stats

scipy_stats = pytest.importorskip("scipy.stats")

DRAWS = 10_000
CASES = [(n, a) for n in (12, 20, 50) for a in (0.05, 0.1)]
# one-sided level per comparison: all 12 comparisons together fail by chance < 1e-3
DELTA = 1e-3 / (2 * len(CASES))


def _simulate(n: int, alpha: float, method: str, seed: int,
              discrete: bool = False) -> tuple[int, float, float]:
    """(fresh controls flagged out of DRAWS, mean stated bound, mean in-sample FPR)."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(DRAWS, n + 1))
    if discrete:
        x = np.round(x * 2)  # heavy ties
    rank = threshold_rank(n, alpha, method)  # type: ignore[arg-type]
    hits = 0
    bounds, in_sample = [], []
    for row in x:
        controls, fresh = row[:n].tolist(), float(row[n])
        t = threshold_from_rank(sorted(controls), rank)
        hits += fresh > t
        bounds.append(0.0 if rank is None else (n + 1 - rank) / (n + 1))
        in_sample.append(sum(c > t for c in controls) / n)
    return hits, float(np.mean(bounds)), float(np.mean(in_sample))


def _upper(p: float) -> int:
    """Largest count of flagged fresh controls consistent with a true FPR p."""
    return int(scipy_stats.binom.ppf(1 - DELTA, DRAWS, p))


@pytest.mark.parametrize(("n", "alpha"), CASES)
def test_conformal_fpr_holds_out_of_sample(n: int, alpha: float) -> None:
    hits, bound, _ = _simulate(n, alpha, "conformal", seed=n * 100 + int(alpha * 100))
    assert bound <= alpha + 1e-12
    assert hits <= _upper(bound), (hits / DRAWS, bound)
    # and it is not vacuous: the bound is attained for continuous scores
    assert hits >= scipy_stats.binom.ppf(DELTA, DRAWS, bound)


@pytest.mark.parametrize(("n", "alpha"), CASES)
def test_the_former_in_sample_threshold_misstates_its_fpr(n: int, alpha: float) -> None:
    hits, bound, in_sample = _simulate(n, alpha, "empirical", seed=n * 100 + int(alpha * 100))
    # what it used to state (the FPR on the controls, at most the target) is exceeded
    assert in_sample <= alpha + 1e-12
    assert hits > _upper(in_sample), (hits / DRAWS, in_sample)
    assert hits > _upper(alpha) or n == 50  # n = 50: 3/51, 6/51 are within 2 points of target
    # the bound it states now is honest
    assert hits <= _upper(bound)


@pytest.mark.parametrize(("n", "alpha"), [(12, 0.1), (20, 0.05)])
def test_ties_are_never_flagged_so_the_bound_still_holds(n: int, alpha: float) -> None:
    hits, bound, _ = _simulate(n, alpha, "conformal", seed=7, discrete=True)
    assert hits <= _upper(bound)


def test_issue_figures_for_the_former_threshold() -> None:
    # "with 20 controls at a 5% target the real out-of-sample FPR is about 9.5%; with 12
    # controls it says 0% for 7.7%"
    assert calibrate(list(range(20)), 0.05, "empirical").fpr_bound == pytest.approx(2 / 21)
    twelve = calibrate(list(range(12)), 0.05, "empirical")
    assert twelve.achieved_fpr == 0 and twelve.fpr_bound == pytest.approx(1 / 13)


def test_clopper_pearson_interval_covers_the_threshold_fpr() -> None:
    """For uniform controls the FPR of threshold t is exactly 1 - t: the stated 95% CP
    interval covers it in at least 95% of draws (binomial tolerance)."""
    n, alpha, draws = 20, 0.1, 4000
    rng = np.random.default_rng(1)
    cover = 0
    for row in rng.uniform(size=(draws, n)):
        cal = calibrate(row.tolist(), alpha)
        lo, hi = cal.fpr_ci or (0.0, 1.0)
        cover += lo <= 1 - cal.threshold <= hi
    assert cover >= scipy_stats.binom.ppf(1e-4, draws, 0.95)
    k = n - (cal.rank or 0)  # controls above the threshold; CP from the beta quantiles
    want = (scipy_stats.beta.ppf(0.025, k, n - k + 1) if k else 0.0,
            scipy_stats.beta.ppf(0.975, k + 1, n - k) if k < n else 1.0)
    assert cal.fpr_ci == pytest.approx(want)


def test_unreachable_target_flags_nothing_and_says_so() -> None:
    controls = np.linspace(0, 1, 20).tolist()
    cal = calibrate(controls, 0.01)
    assert not cal.reachable and cal.threshold == math.inf and cal.fpr_bound == 0
    assert cal.note == ("a 1% FPR is not reachable with 20 controls (needs at least 99); "
                        "no sample is flagged")
    vs = verdicts({"a": 1e9}, cal)
    assert vs[0]["member"] is False and vs[0]["note"] == cal.note and vs[0]["threshold"] is None
    # the smallest reachable control sets
    assert _stats.controls_needed(0.05) == 19 and calibrate(controls[:19], 0.05).reachable
    assert not calibrate(controls[:18], 0.05).reachable
    assert _stats.controls_needed(0.1) == 9 and _stats.controls_needed(0.01) == 99


def test_conformal_threshold_is_the_order_statistic_in_both_directions() -> None:
    rng = np.random.default_rng(3)
    raw = rng.normal(size=50).round(1).tolist()  # ties
    k = math.ceil(51 * 0.9)
    for higher in (True, False):
        o = [oriented(x, higher) for x in raw]
        cal = calibrate(o, 0.1)
        assert cal.rank == k and cal.threshold == sorted(o)[k - 1]
        assert cal.fpr_bound == pytest.approx(5 / 51)
        flagged = {x for x in set(raw) if oriented(x, higher) > cal.threshold}
        raw_t = oriented(cal.threshold, higher)  # back on the raw scale
        assert flagged == {x for x in set(raw) if (x > raw_t if higher else x < raw_t)}


def _exact_bootstrap_tpr(members: list[float], controls: list[float]) -> np.ndarray:
    """P(TPR* = k / m), k = 0..m, for the stratified bootstrap of the TPR at the conformal 5%
    threshold with n = 20 controls (rank 20: the largest control). From the definition: the
    resampled controls' maximum is the j-th smallest control with probability
    (j/n)^n - ((j-1)/n)^n; given it, each of the m resampled members lies above it with
    probability q_j (the share of members above), independently: K ~ Binomial(m, q_j)."""
    n, m = len(controls), len(members)
    pmf = np.zeros(m + 1)
    for j, c in enumerate(sorted(controls), start=1):
        q = sum(x > c for x in members) / m
        pmf += ((j / n) ** n - ((j - 1) / n) ** n) * scipy_stats.binom.pmf(np.arange(m + 1), m, q)
    return pmf


def _percentile_range(pmf: np.ndarray, n_boot: int, level: float, delta: float
                      ) -> tuple[float, float]:
    """Where ``np.quantile`` of ``n_boot`` draws from ``pmf`` (values k / (len - 1)) at
    ``level`` lies, except with probability < 2 delta: it interpolates between the j-th and
    (j + 1)-th smallest draws, j = floor(level (n_boot - 1)); the number of draws below a
    value is Binomial(n_boot, F), so the j-th is >= v unless Bin(F(v-)) > j, and the
    (j + 1)-th is <= v unless Bin(F(v)) <= j + 1 (scipy's binomial tails)."""
    grid = np.arange(pmf.size) / (pmf.size - 1)
    cdf = np.minimum(np.cumsum(pmf), 1.0)
    below = np.r_[0.0, cdf[:-1]]
    j = math.floor(level * (n_boot - 1))
    low = max(v for v, f in zip(grid, below, strict=True)
              if scipy_stats.binom.sf(j, n_boot, f) < delta)
    high = min(v for v, f in zip(grid, cdf, strict=True)
               if scipy_stats.binom.cdf(j + 1, n_boot, f) < delta)
    return float(low), float(high)


def test_labelled_metrics_report_the_calibrated_tpr_and_its_meaning(require: Any) -> None:
    skm = require.module("sklearn.metrics", "pip install -e '.[dev]'")
    rng = np.random.default_rng(0)
    members, controls = rng.normal(1, 1, 20).tolist(), rng.normal(0, 1, 20).tolist()
    n_boot = 1000
    got = labelled_metrics(members, controls, n_boot=n_boot)
    t = sorted(controls)[19]  # k = ceil(21 * 0.95) = 20: the largest control
    assert got["tpr_at_5pct_fpr"] == sum(m > t for m in members) / 20 == 0.2
    assert got["fpr_bound_5pct"] == pytest.approx(1 / 21)
    assert got["tpr_at_1pct_fpr"] is None and got["fpr_bound_1pct"] is None
    assert "not reachable with 20 controls" in got["tpr_at_1pct_fpr_note"]
    # the ROC-curve values, kept and named: sklearn's curve, largest TPR at FPR <= target
    fpr, tpr, _ = skm.roc_curve([1] * 20 + [0] * 20, members + controls,
                                drop_intermediate=False)
    for target, key in ((0.01, "tpr_at_1pct_fpr_in_sample"), (0.05, "tpr_at_5pct_fpr_in_sample")):
        assert got[key] == pytest.approx(float(tpr[fpr <= target].max()), abs=1e-12)
    # by hand: no control may be flagged at 1% (members above the largest control), one at
    # 5% (members above the second largest)
    assert got["tpr_at_1pct_fpr_in_sample"] == 4 / 20
    assert got["tpr_at_5pct_fpr_in_sample"] == sum(m > sorted(controls)[18] for m in members) / 20
    # the bootstrap interval: its ends are percentiles of n_boot draws of TPR*, whose exact
    # law is known; each end lies in the range n_boot draws allow (< 4e-4 to fail by chance)
    pmf = _exact_bootstrap_tpr(members, controls)
    assert pmf.sum() == pytest.approx(1.0)
    lo, hi = got["tpr_at_5pct_fpr_ci"]
    lo_range, hi_range = (_percentile_range(pmf, n_boot, q, 1e-4) for q in (0.025, 0.975))
    assert lo_range[0] <= lo <= lo_range[1], (lo, lo_range)
    assert hi_range[0] <= hi <= hi_range[1], (hi, hi_range)
    # and the ranges are narrow (former check: lo <= 0.2 <= hi): at most 3 steps of 1/20
    assert lo_range == (0.05, 0.05) and hi_range == (0.5, 0.65)
