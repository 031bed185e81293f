"""RECAP eq. 2 pieces and the bootstrap over books."""

from __future__ import annotations

import csv
from pathlib import Path

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


def test_bootstrap_matches_explicit_loop() -> None:
    values = [0.2, 0.5, 0.9, 0.4, 0.7]
    res = bootstrap_group_mean(values, n_resamples=1000, seed=7)
    rng = np.random.default_rng(7)
    idx = rng.integers(0, len(values), size=(1000, len(values)))
    means = np.asarray(values)[idx].mean(axis=1)
    assert res.mean == pytest.approx(means.mean()) and res.std == pytest.approx(means.std())
    with pytest.raises(ValueError):
        bootstrap_group_mean([])


def test_bootstrap_agrees_with_released_group_table(shared_data: Path) -> None:
    """Released per-book ROUGE-L -> our bootstrap ~ released category mean and std."""
    res_dir = shared_data / "echotrace/paper_results"
    model, col = "gpt-4.1-2025-04-14", "RougeL_simple_agent_extraction_refined_best"
    with (res_dir / "all_results_feedback_gpt-4.1-2025-04-14.csv").open() as fh:
        rows = [
            r
            for r in csv.DictReader(fh)
            if r["Model"] == model and r["Category"] == "Public_Domain"
        ]
    with (res_dir / "category_model_stats_feedback_gpt-4.1-2025-04-14.csv").open() as fh:
        ref = next(
            r
            for r in csv.DictReader(fh)
            if r["Model"] == model and r["Category"] == "Public_Domain"
        )
    ours = bootstrap_group_mean([float(r[col]) for r in rows], seed=0)
    assert ours.n_items == 15
    assert ours.mean == pytest.approx(float(ref[col + "_mean"]), abs=0.01)
    assert ours.std == pytest.approx(float(ref[col + "_std"]), rel=0.15)  # Monte-Carlo noise
