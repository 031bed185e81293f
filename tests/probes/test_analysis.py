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
    # the fitted model: L2-penalized logistic regression on standardized covariates;
    # its propensities satisfy the first-order condition X'(y - p) = w / C (C = 1)
    x = np.array([cov[n] for n in sorted(nov)])
    x = (x - x.mean(0)) / x.std(0)
    y = np.array([n in group2 for n in sorted(nov)], dtype=float)
    p = np.array([ps[n] for n in sorted(nov)])
    assert abs(float((y - p).sum())) < 1e-3  # the intercept is not penalized
    for a, b in out["matches"].items():  # nearest group-1 propensity, brute force
        best = min((n for n in nov if n not in group2), key=lambda n: abs(ps[n] - ps[a]))
        assert abs(ps[b] - ps[a]) == pytest.approx(abs(ps[best] - ps[a]))
    d = np.array([nov[a]["min_k_10"] - nov[b]["min_k_10"] for a, b in out["matches"].items()])
    t = d.mean() / (d.std(ddof=1) / math.sqrt(len(d)))
    assert out["tests"]["min_k_10"]["t"] == pytest.approx(t)
    assert len(x) == 16


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
