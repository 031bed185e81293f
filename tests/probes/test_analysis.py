"""The analysis' statistics against independent computations (formulas by hand, numpy,
brute force), and the report built from real run records."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from recitation.probes import analysis as an
from recitation.probes.contamination import verbalize


def _ranks(x: list[float]) -> np.ndarray:
    order = sorted(range(len(x)), key=lambda i: x[i])
    r = np.empty(len(x))
    for rank, i in enumerate(order):
        r[i] = rank + 1
    return r


def _novels(n: int, seed: int = 0) -> dict[str, dict[str, float]]:
    rng = random.Random(seed)
    return {f"N{i:02d}": {"csg_m": rng.random(), "name_cloze": rng.random(),
                          "min_k_10": -rng.random() * 5, "all": rng.random(),
                          "explicit": rng.random(), "other": rng.random()} for i in range(n)}


def test_spearman_is_pearson_of_ranks() -> None:
    nov = _novels(12)
    x = {n: v["csg_m"] for n, v in nov.items()}
    y = {n: v["all"] for n, v in nov.items()}
    names = sorted(nov)
    rx, ry = _ranks([x[n] for n in names]), _ranks([y[n] for n in names])
    rho = float(np.corrcoef(rx, ry)[0, 1])
    got = an.spearman(x, y)
    assert got["rho"] == pytest.approx(rho) and got["n"] == 12
    # p from the t distribution with n - 2 degrees of freedom (scipy's method)
    from scipy.stats import t as tdist

    tt = rho * math.sqrt(10 / (1 - rho * rho))
    assert got["p"] == pytest.approx(2 * tdist.sf(abs(tt), 10))


def test_a_constant_accuracy_has_no_rank_correlation_and_says_so() -> None:
    import warnings

    nov = _novels(8)
    for v in nov.values():
        v["all"] = 0.0  # a model that never attributes a quote correctly
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # scipy's ConstantInputWarning would surface here
        got = an.spearman({n: v["csg_m"] for n, v in nov.items()},
                          {n: v["all"] for n, v in nov.items()})
        text, numbers = an.table2(nov, ["csg_m"])
    assert math.isnan(got["rho"]) and got["constant"] and got["n"] == 8
    assert "same for every novel" in text and "csg_m/all" in text


def test_top_bottom_is_students_t_by_hand() -> None:
    nov = _novels(14, seed=3)
    m = {n: v["name_cloze"] for n, v in nov.items()}
    acc = {n: v["all"] for n, v in nov.items()}
    got = an.top_bottom(m, acc)
    ranked = sorted(nov, key=lambda n: -m[n])
    a = np.array([acc[n] for n in ranked[:5]])
    b = np.array([acc[n] for n in ranked[-5:]])
    sp = math.sqrt(((a.var(ddof=1) + b.var(ddof=1)) / 2) * (2 / 5))
    assert got["top"] == ranked[:5] and got["bottom"] == ranked[-5:]
    assert got["t"] == pytest.approx((a.mean() - b.mean()) / sp)
    assert an.top_bottom(dict(list(m.items())[:3]), acc)["k"] == 1  # too few novels


def test_propensity_matching_by_brute_force() -> None:
    nov = _novels(16, seed=5)
    group2 = {"N01", "N04", "N09", "N13"}
    cov = {n: [v["csg_m"], v["name_cloze"], v["min_k_10"], v["all"]] for n, v in nov.items()}
    out = an.propensity_match(cov, group2, {"min_k_10": {n: v["min_k_10"]
                                                         for n, v in nov.items()}})
    ps = out["propensity"]
    x = np.array([cov[n] for n in sorted(nov)])
    x = (x - x.mean(0)) / x.std(0)
    y = np.array([n in group2 for n in sorted(nov)], dtype=float)
    p = np.array([ps[n] for n in sorted(nov)])
    # the default fit is the plain maximum-likelihood logistic regression: its propensities
    # solve the score equations 1'(y - p) = 0 and X'(y - p) = 0 (no penalty term)
    assert abs(float((y - p).sum())) < 1e-4 and np.abs(x.T @ (y - p)).max() < 1e-4
    l2 = an.propensity_match(cov, group2, {}, penalty="l2")["propensity"]
    p2 = np.array([l2[n] for n in sorted(nov)])
    # scikit-learn's L2 (C = 1): the intercept's equation holds, the others are X'(y-p) = w
    assert abs(float((y - p2).sum())) < 1e-3 and np.abs(x.T @ (y - p2)).max() > 1e-2
    for a, b in out["matches"].items():  # nearest group-1 propensity, brute force
        best = min((n for n in nov if n not in group2), key=lambda n: abs(ps[n] - ps[a]))
        assert abs(ps[b] - ps[a]) == pytest.approx(abs(ps[best] - ps[a]))
    d = np.array([nov[a]["min_k_10"] - nov[b]["min_k_10"] for a, b in out["matches"].items()])
    t = d.mean() / (d.std(ddof=1) / math.sqrt(len(d)))
    assert out["tests"]["min_k_10"]["t"] == pytest.approx(t)
    assert len(x) == 16
    with pytest.raises(ValueError, match="penalty"):
        an.propensity_match(cov, group2, {}, penalty="l1")


def test_paired_p_is_the_papers_one_sided_form() -> None:
    """Appendix E reports t = 0.54, p = 0.3 and t = 0.75, p = 0.25 (paired, 5 or 6 matched
    novels): the one-sided tail of Student's t, not the two-sided p (0.61, 0.49)."""
    from scipy.stats import t as student

    for target, paper in ((0.54, 0.3), (0.75, 0.25)):
        for n in (5, 6):
            z = np.array([0.3, -1.2, 0.8, 1.9, -0.4, 0.7][:n])
            z = (z - z.mean()) / z.std(ddof=1)  # mean 0, sd 1: t = c * sqrt(n)
            d = z + target / math.sqrt(n)
            got = an.paired_t(list(d), [0.0] * n)
            assert got["t"] == pytest.approx(target)
            assert got["p"] == pytest.approx(float(student.sf(target, n - 1)))
            assert got["p_two_sided"] == pytest.approx(2 * float(student.sf(target, n - 1)))
            assert abs(got["p"] - paper) < 0.01 < abs(got["p_two_sided"] - paper)


def test_outcome_left_out_of_its_own_matching() -> None:
    nov = _novels(16, seed=5)
    group2 = {"N01", "N04", "N09", "N13"}
    names = ["csg_m", "name_cloze", "min_k_10", "all"]
    cov = {n: [v[c] for c in names] for n, v in nov.items()}
    outcomes = {o: {n: v[o] for n, v in nov.items()} for o in ("all", "explicit")}
    out = an.propensity_match(cov, group2, outcomes, covariate_names=names,
                              leave_outcome_out=True)
    reduced = {n: v[:3] for n, v in cov.items()}  # the same novels, "all" not a covariate
    alone = an.propensity_match(reduced, group2, outcomes)
    assert out["matches_without_outcome"] == {"all": alone["matches"]}
    assert out["tests"]["all"] == alone["tests"]["all"]
    assert out["tests"]["explicit"] == an.propensity_match(cov, group2, outcomes)["tests"][
        "explicit"]  # not a covariate: matched on all four


def test_ties_at_the_top_bottom_cut_are_listed() -> None:
    acc = {f"N{i}": 0.1 * i for i in range(10)}
    m = {"N0": 9.0, "N1": 8.0, "N2": 7.0, "N3": 6.0, "N4": 5.0, "N5": 5.0, "N6": 3.0,
         "N7": 2.0, "N8": 1.0, "N9": 0.0}
    got = an.top_bottom(m, acc, k=3)  # no tie at either cut of 3
    assert got["ties_at_cut"] == []
    got = an.top_bottom(m, acc, k=5)  # N4 and N5 share the 5th value: N4 in by name only
    assert got["top"][-1] == "N4" and got["bottom"][0] == "N5"
    assert got["ties_at_cut"] == ["N4", "N5"]
    text, _ = an.table2({n: {"name_cloze": m[n], "all": acc[n], "explicit": acc[n],
                             "other": acc[n]} for n in m}, ["name_cloze"])
    assert "Tied at a top/bottom cut" in text and "name_cloze/all: N4, N5" in text


def test_report_has_table2_and_matching() -> None:
    nov = _novels(12, seed=7)
    text, numbers = an.report(nov, frozenset({"N00", "N03", "N05"}))
    assert "## Table 2" in text and "propensity-score matching" in text
    assert set(numbers["table2"]) == {f"{m}/{a}" for m in ("name_cloze", "csg_m", "min_k_10")
                                      for a in ("all", "explicit", "other")}


def test_verbalize_as_figure_4() -> None:
    row = {"quoteID": "Q0", "quoteText": "and what is the use", "speaker": "Alice"}
    assert verbalize(row, ["quoteID", "quoteText", "speaker"]) == (
        "quoteID: Q0; quoteText: and what is the use; speaker: Alice")
