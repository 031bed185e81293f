"""Calibration and labelled metrics against scikit-learn; the distribution-shift guard."""

from __future__ import annotations

import numpy as np
import pytest

from recitation.detect.calibrate import (
    calibrate,
    fpr_curve,
    labelled_metrics,
    oriented,
    shift_guard,
    verdicts,
)

sklearn_metrics = pytest.importorskip("sklearn.metrics")


def _data(seed: int = 0, n_pos: int = 60, n_neg: int = 80) -> tuple[list[float], list[float]]:
    rng = np.random.default_rng(seed)
    members = (rng.normal(1.0, 1.0, n_pos)).round(2).tolist()  # rounding makes ties
    controls = (rng.normal(0.0, 1.0, n_neg)).round(2).tolist()
    return members, controls


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_auc_tpr_and_roc_match_sklearn(seed: int) -> None:
    members, controls = _data(seed)
    y = [1] * len(members) + [0] * len(controls)
    s = members + controls
    got = labelled_metrics(members, controls, n_boot=200, seed=seed)
    assert got["auc"] == pytest.approx(sklearn_metrics.roc_auc_score(y, s), abs=1e-12)
    fpr, tpr, _ = sklearn_metrics.roc_curve(y, s, drop_intermediate=False)
    for target in (0.01, 0.05):  # the ROC-curve value survives as the in-sample one
        want = tpr[fpr <= target + 1e-12].max()
        assert got[f"tpr_at_{round(target * 100)}pct_fpr_in_sample"] == pytest.approx(want)
    assert got["roc"]["fpr"] == pytest.approx(fpr.tolist())
    assert got["roc"]["tpr"] == pytest.approx(tpr.tolist())
    lo, hi = got["auc_ci"]
    assert lo <= got["auc"] <= hi and 0.5 < lo


@pytest.mark.parametrize("target", [0.0, 0.01, 0.05, 0.1, 0.25])
def test_empirical_threshold_is_the_in_sample_one_and_states_its_real_bound(
        target: float) -> None:
    from recitation.metrics.stats import threshold_at_fpr

    _, controls = _data(3, n_neg=100)
    cal = calibrate(controls, target, method="empirical")
    flagged = sum(c > cal.threshold for c in controls)
    assert cal.threshold == threshold_at_fpr(controls, target)
    assert cal.achieved_fpr == flagged / 100 <= target + 1e-12
    # sklearn's ROC (negatives only as the reference): the FPR at this operating point
    y = [0] * len(controls) + [1]
    fpr, _, thr = sklearn_metrics.roc_curve(y, controls + [1e9], drop_intermediate=False)
    above = [f for f, t in zip(fpr, thr, strict=True) if t > cal.threshold]
    assert max(above) == pytest.approx(cal.achieved_fpr)
    # what it states now: the out-of-sample bound, one more control's worth above target
    assert cal.fpr_bound == pytest.approx((int(target * 100 + 1e-9) + 1) / 101)


def test_fpr_curve_and_verdicts() -> None:
    controls = [0.1, 0.2, 0.2, 0.9]
    assert fpr_curve(controls) == [(0.9, 0.0, 0.2), (0.2, 0.25, 0.4), (0.1, 0.75, 0.8)]
    cal = calibrate(controls, 0.4)  # (n + 1) * 0.4 = 2: the 3rd smallest control
    assert cal.rank == 3 and cal.threshold == 0.2 and cal.fpr_bound == pytest.approx(0.4)
    assert cal.achieved_fpr == 0.25 and cal.resolution == pytest.approx(0.2)
    vs = verdicts({"a": 0.5, "b": 0.2}, cal)
    assert [v["member"] for v in vs] == [True, False]  # a tie with the threshold: not flagged
    assert all(v["fpr"] == pytest.approx(0.4) and v["target_fpr"] == 0.4 for v in vs)
    assert all(v["fpr_ci"] == pytest.approx(list(cal.fpr_ci or ())) for v in vs)
    assert oriented(2.0, False) == -2.0


def test_shift_guard_warns_on_length_and_dates_but_not_on_matched_sets() -> None:
    base = "the quick brown fox jumps over the lazy dog near the river bank"
    members = [f"{base} {i}" for i in range(10)]
    controls = [f"{base} on March {i} 2025 {base}" for i in range(10)]
    out = shift_guard(members, controls)
    assert out["feature_auc"]["length_words"] == 0.0
    assert out["feature_auc"]["date_tokens"] == 0.0
    assert any("length_words" in w for w in out["warnings"])
    assert any("date_tokens" in w for w in out["warnings"])
    same = shift_guard(members[:5], members[5:])
    assert not [w for w in same["warnings"] if "length" in w or "date" in w]


def test_shift_guard_reports_permutation_p_values() -> None:
    rng = np.random.default_rng(0)
    words = "alpha beta gamma delta epsilon zeta eta theta iota kappa".split()
    texts = [" ".join(rng.choice(words, 12)) for _ in range(20)]
    out = shift_guard(texts[:10], texts[10:], permutations=50)
    assert set(out["feature_p"]) == {"length_words", "date_tokens"}  # words: detect/blind.py
    # every feature is checked and its p-value is a permutation p: (hits + 1) / (permutations + 1)
    for name, p in out["feature_p"].items():
        n_perm = 50
        assert p is not None and 0 < p <= 1, name
        assert (p * (n_perm + 1)) == pytest.approx(round(p * (n_perm + 1))), name
    assert out["feature_auc"]["date_tokens"] == 0.5  # no dates on either side
    assert not out["warnings"]  # same distribution: nothing significant


def test_the_blind_baseline_without_scikit_learn_is_an_error(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib

    from recitation.detect.blind import blind_baseline
    from recitation.errors import MissingDependencyError

    real = importlib.import_module

    def no_sklearn(name: str, *a: object) -> object:
        if name.startswith("sklearn"):
            raise ModuleNotFoundError(name)
        return real(name, *a)

    monkeypatch.setattr(importlib, "import_module", no_sklearn)
    with pytest.raises(MissingDependencyError, match=r"recitation\[detect\]"):
        blind_baseline(["a b c"] * 4, ["d e f g"] * 4)


def test_the_shift_guard_is_computed_once_per_set_of_texts() -> None:
    """An audit's detect runs of several models share their texts: the guard's permutation
    tests run once; a caller changing its copy does not change what the next one gets."""
    import importlib

    calibrate = importlib.import_module("recitation.detect.calibrate")  # the module
    members = [f"member passage number {i} about the sea" for i in range(6)]
    controls = [f"control text {i} on the land and hills" for i in range(6)]
    calibrate._shift_guard.cache_clear()
    first = calibrate.shift_guard(members, controls, seed=3)
    first["warnings"].append("changed by a caller")
    second = calibrate.shift_guard(list(members), list(controls), seed=3)
    info = calibrate._shift_guard.cache_info()
    assert (info.hits, info.misses) == (1, 1)
    assert "changed by a caller" not in second["warnings"]
    calibrate._shift_guard.cache_clear()
    assert calibrate.shift_guard(members, controls, seed=3) == second  # recomputed: equal
