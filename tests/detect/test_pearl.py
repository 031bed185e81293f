"""PEARL formulas on hand-computed cases, task splits, request planning and the job's
control flow (scripted model)."""

from __future__ import annotations

import pytest

from recitation.detect.pearl import (
    PearlSettings,
    RequestPool,
    expected_positive_drop,
    generalization_failure_density,
    make_task,
    output_seed,
    plan_sample,
    sensitivity,
    split_words,
)
from recitation.detect.perturb import get_perturbation

# PEARL v1 Annex table 4 / v2 Table 6 rows: per-intensity mean performance k = 0..5
ROW_262 = [0.65, 0.18, 0.18, 0.09, 0.10, 0.09]  # Bible #262, published sensitivity 0.47
ROW_17 = [0.42, 0.23, 0.51, 0.18, 0.21, 0.25]  # LBPP #17, published 0.32 (rounded inputs)


def test_sensitivity_is_the_largest_consecutive_drop() -> None:
    assert sensitivity(ROW_262) == pytest.approx(0.47)
    # drops 0.19, -0.28, 0.33, -0.03, -0.04 -> 0.33 (the paper prints 0.32 from unrounded means)
    assert sensitivity(ROW_17) == pytest.approx(0.33)
    assert sensitivity([0.2, 0.5, 0.9]) == pytest.approx(-0.3)  # performance only rising
    with pytest.raises(ValueError):
        sensitivity([0.5])


def test_gfd_counts_neighbours_that_fall_more_than_tau() -> None:
    # drops from perf[0]: 0.47, 0.47, 0.56, 0.55, 0.56 -> all > 0.2
    assert generalization_failure_density(ROW_262, 0.2) == 1.0
    # drops: 0.19, -0.09, 0.24, 0.21, 0.17 -> 2 of 5 above 0.2
    assert generalization_failure_density(ROW_17, 0.2) == pytest.approx(0.4)
    assert generalization_failure_density(ROW_17, 0.5) == 0.0
    assert generalization_failure_density([0.5, 0.25, 0.3], 0.25) == 0.0  # strict >
    assert generalization_failure_density([0.5, 0.25, 0.25], 0.2) == 1.0


def test_expected_positive_drop() -> None:
    assert expected_positive_drop(ROW_17) == pytest.approx((0.19 + 0 + 0.24 + 0.21 + 0.17) / 5)
    assert expected_positive_drop(ROW_262) == pytest.approx((0.47 + 0.47 + 0.56 + 0.55 + 0.56) / 5)
    assert expected_positive_drop([0.1, 0.3, 0.4]) == 0.0


def test_split_80_20_keeps_original_spacing() -> None:
    text = "one two  three four five six seven eight nine ten"
    inp, ref = split_words(text)
    assert inp == "one two  three four five six seven eight"
    assert ref == "nine ten"
    with pytest.raises(ValueError):
        split_words("single")


def test_code_task_uses_explicit_prompt_and_solution() -> None:
    t = make_task("code", "def f():\n    return 1\n", prompt="def f():\n",
                  reference="    return 1\n")
    assert (t.input, t.reference) == ("def f():\n", "    return 1\n")
    s = make_task("summarization", "Some text here.")
    assert s.reference is None and s.input == "Some text here."


def _plan(settings: PearlSettings, task: str = "completion") -> tuple[RequestPool, object]:
    pool = RequestPool()
    ti = make_task(task, "In the beginning God created the heaven and the earth. And the "  # type: ignore[arg-type]
                   "earth was without form, and void; and darkness was upon the deep.")
    perts = {n: get_perturbation(n) for n in settings.perturbations}
    return pool, plan_sample(pool, "s1", ti, perts, settings, seed=0)


def test_plan_counts_and_shares_the_unperturbed_input() -> None:
    s = PearlSettings(perturbations=("bitflip", "case_flip"), max_intensity=5, outputs=4)
    pool, plan = _plan(s)
    inputs = {x for xs in plan.inputs.values() for x in xs}  # type: ignore[attr-defined]
    # k = 0 is shared by both perturbations; on a short text two intensities can round to
    # the same edit count (case_flip k=1 and k=2 here) and the identical calls are made once
    assert 1 + 2 * 5 - 2 <= len(inputs) <= 1 + 2 * 5
    assert len(pool.requests) == len(inputs) * 4
    seeds = {r.seed for r in pool.requests}
    assert seeds == {output_seed(0, j) for j in range(4)}
    assert all(r.temperature == 0.7 for r in pool.requests)


def test_greedy_plan_makes_one_call_per_input() -> None:
    s = PearlSettings(perturbations=("bitflip",), outputs=10, temperature=0.0)
    pool, _ = _plan(s)
    assert len(pool.requests) == 6 and all(r.seed is None for r in pool.requests)


def test_summarization_plan_adds_one_greedy_reference_call() -> None:
    s = PearlSettings(perturbations=("case_flip",), max_intensity=2, outputs=3)
    pool, plan = _plan(s, "summarization")
    assert len(pool.requests) == 3 * 3 + 1
    ref = pool.requests[plan.reference_call]  # type: ignore[attr-defined]
    assert ref.temperature == 0 and ref.is_chat
