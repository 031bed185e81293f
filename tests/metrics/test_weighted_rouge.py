"""RECAP eq. 2 pieces and the bootstrap over books."""

from __future__ import annotations

import csv
import itertools
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from recitation.metrics.weighted import (
    bootstrap_group_mean,
    gold_word_count,
    strip_given_first_sentence,
    weighted_rouge,
)


def test_first_sentence_removed_only_when_given_away() -> None:
    first = "It was a dark and stormy night."
    assert strip_given_first_sentence(first + "  The rain fell.", first) == "The rain fell."
    # near-identical (ratio > 0.9) still counts as the same sentence
    assert (
        strip_given_first_sentence("It was a dark and stormy night!" + " Rain.", first) == "Rain."
    )
    assert strip_given_first_sentence("Rain fell all night long. " + first, first).startswith(
        "Rain"
    )
    assert strip_given_first_sentence("text", "") == "text"


def test_weighted_rouge_counts_missing_candidates_as_zero() -> None:
    assert weighted_rouge([1.0, None], [10, 30]) == pytest.approx(0.25)
    assert weighted_rouge([], []) == 0.0
    with pytest.raises(ValueError):
        weighted_rouge([1.0], [1, 2])


def test_gold_word_count_is_nltk_tokens() -> None:
    assert gold_word_count("Mr. Smith didn't go. He stayed!") == 9


def _ideal_bootstrap(values: list[float]) -> tuple[float, float, float]:
    """Mean, std and kurtosis of the mean of ``n`` draws with replacement from ``values``:
    the bootstrap distribution with infinitely many resamples (RECAP's group figures are a
    1,000-resample Monte-Carlo estimate of it). From the definition: the mean is the sample
    mean, the variance the population variance / n, the excess kurtosis the sample's excess
    kurtosis (m4 / m2^2 - 3, central moments) / n."""
    x = np.asarray(values, dtype=float)
    d = x - x.mean()
    kurt = 3.0 + (float((d**4).mean() / (d**2).mean() ** 2) - 3.0) / x.size
    return float(x.mean()), float(x.std() / math.sqrt(x.size)), kurt


def _mc_sd(exact_std: float, kurt: float, n_resamples: int) -> tuple[float, float]:
    """Monte-Carlo standard deviations of the mean and of the (ddof=0) std of
    ``n_resamples`` bootstrap means: sd/sqrt(B) and sd * sqrt((kurtosis - 1) / (4 B))."""
    return (exact_std / math.sqrt(n_resamples),
            exact_std * math.sqrt((kurt - 1) / (4 * n_resamples)))


def test_bootstrap_draws_equal_scipy_bootstrap(require: Any) -> None:
    """Same generator and draws as ``scipy.stats.bootstrap``: its bootstrap distribution's
    mean and population std are ours to rounding, for several sizes and seeds."""
    scipy_stats = require.module("scipy.stats", "pip install -e '.[dev]'")
    rng = np.random.default_rng(11)
    for seed in range(4):
        values = rng.uniform(size=int(rng.integers(2, 30))).tolist()
        ref = scipy_stats.bootstrap((values,), np.mean, n_resamples=1000, method="percentile",
                                    rng=np.random.default_rng(seed)).bootstrap_distribution
        res = bootstrap_group_mean(values, n_resamples=1000, seed=seed)
        assert (res.n_items, res.n_resamples, res.seed) == (len(values), 1000, seed)
        assert res.mean == pytest.approx(float(ref.mean()), abs=1e-12)
        assert res.std == pytest.approx(float(ref.std(ddof=0)), abs=1e-12)
    with pytest.raises(ValueError):
        bootstrap_group_mean([])


def test_bootstrap_converges_to_the_exact_bootstrap() -> None:
    """Hand-worked: [0, 1] resampled twice gives means 0, 1/2, 1/2, 1 (each 1/4): mean 1/2,
    std sqrt(1/8). A brute-force enumeration of all 5^5 resamples of five values gives the
    exact moments too. With 200,000 resamples ours is within 4 Monte-Carlo sd of both (0.6%
    of the std), so resampling n - 1 books (+3.5% on the std of 15 books) fails.
    """
    res = bootstrap_group_mean([0.0, 1.0], n_resamples=200_000, seed=1)
    sd_mean, sd_std = _mc_sd(math.sqrt(1 / 8), 2.0, 200_000)  # kurtosis of {0, .5, .5, 1}: 2
    assert res.mean == pytest.approx(0.5, abs=4 * sd_mean)
    assert res.std == pytest.approx(math.sqrt(1 / 8), abs=4 * sd_std)
    values = [0.2, 0.5, 0.9, 0.4, 0.7]
    means = [sum(r) / 5 for r in itertools.product(values, repeat=5)]  # all 3,125 resamples
    exact_mean = sum(means) / len(means)
    exact_std = math.sqrt(sum((m - exact_mean) ** 2 for m in means) / len(means))
    m, s, kurt = _ideal_bootstrap(values)
    assert (m, s) == pytest.approx((exact_mean, exact_std), abs=1e-12)  # the closed form
    res = bootstrap_group_mean(values, n_resamples=200_000, seed=7)
    sd_mean, sd_std = _mc_sd(exact_std, kurt, 200_000)
    assert abs(res.mean - exact_mean) <= 4 * sd_mean
    assert abs(res.std - exact_std) <= 4 * sd_std


def _released_groups(shared_data: Path, col: str) -> list[tuple[str, list[float], float, float]]:
    """(group, released per-book values, released bootstrap mean, released std) for every
    category and target model of the GPT-4.1-feedback tables."""
    res_dir = shared_data / "echotrace/paper_results"
    with (res_dir / "all_results_feedback_gpt-4.1-2025-04-14.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    with (res_dir / "category_model_stats_feedback_gpt-4.1-2025-04-14.csv").open() as fh:
        refs = list(csv.DictReader(fh))
    return [(f"{r['Category']}/{r['Model']}",
             [float(b[col]) for b in rows
              if (b["Category"], b["Model"]) == (r["Category"], r["Model"])],
             float(r[col + "_mean"]), float(r[col + "_std"])) for r in refs]


def test_bootstrap_agrees_with_released_group_table(shared_data: Path) -> None:
    """Released per-book ROUGE-L -> our bootstrap ~ released category mean and std.

    Both are 1,000-resample Monte-Carlo estimates (ours seeded, the release's generator
    unknown) of the exact bootstrap moments (:func:`_ideal_bootstrap`), so each is compared
    with those, within the Monte-Carlo sd of 1,000 resamples (about 0.0015 ROUGE-L for the
    mean, 2.2% of the std): per group at 4 sd (6e-5 per comparison by chance, < 0.5% for
    all 64 together; the largest here is 2.4 sd), and over the 16 groups the released std's
    mean z-score within 3.3 / sqrt(16), which a 3.5% bias (e.g. an n - 1 divisor over 15
    books: +1.6 sd per group) exceeds. The former check (ours vs released std, rel=0.15)
    let such a bias through.
    """
    groups = _released_groups(shared_data, "RougeL_simple_agent_extraction_refined_best")
    assert len(groups) == 16
    z_std_released = []
    for name, values, ref_mean, ref_std in groups:
        assert len(values) == 15, name
        mean, std, kurt = _ideal_bootstrap(values)
        sd_mean, sd_std = _mc_sd(std, kurt, 1000)
        ours = bootstrap_group_mean(values, seed=0)
        for got_mean, got_std, who in ((ours.mean, ours.std, "ours"),
                                       (ref_mean, ref_std, "released")):
            assert abs(got_mean - mean) <= 4 * sd_mean, (name, who, got_mean, mean)
            assert abs(got_std - std) <= 4 * sd_std, (name, who, got_std, std)
        z_std_released.append((ref_std - std) / sd_std)
    assert abs(sum(z_std_released) / len(groups)) <= 3.3 / math.sqrt(len(groups))
