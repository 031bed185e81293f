"""PEARL formulas on hand-computed cases, task splits, request planning and the job's
control flow (scripted model)."""

from __future__ import annotations

from pathlib import Path

import pytest

from recitation.detect.pearl import (
    PearlSettings,
    RequestPool,
    expected_positive_drop,
    generalization_failure_density,
    make_task,
    n_input,
    output_seed,
    plan_sample,
    sensitivity,
    short_reference,
    split_words,
)
from recitation.detect.perturb import get_perturbation

# PEARL v1 Annex table 4 / v2 Table 6 rows: per-intensity mean performance k = 0..5
ROW_262 = [0.65, 0.18, 0.18, 0.09, 0.10, 0.09]  # Bible #262, published sensitivity 0.47
ROW_17 = [0.42, 0.23, 0.51, 0.18, 0.21, 0.25]  # LBPP #17, published 0.32 (rounded inputs)


def test_sensitivity_is_the_largest_absolute_consecutive_change_by_default() -> None:
    assert sensitivity(ROW_262) == pytest.approx(0.47)
    # changes 0.19, -0.28, 0.33, -0.03, -0.04 -> 0.33 (the paper prints 0.32 from unrounded means)
    assert sensitivity(ROW_17) == pytest.approx(0.33)
    assert sensitivity([0.2, 0.5, 0.9]) == pytest.approx(0.4)  # a rise counts (eval.py: abs)
    assert sensitivity([0.2, 0.5, 0.9], "signed") == pytest.approx(-0.3)  # largest drop
    with pytest.raises(ValueError):
        sensitivity([0.5])
    with pytest.raises(ValueError):
        sensitivity([0.5, 0.4], "relative")  # type: ignore[arg-type]


TABLE4 = Path(__file__).parent / "data" / "pearl_table4.tsv"
# the published per-intensity means and the sensitivity are each rounded to 2 decimals
# (computed from unrounded means): a difference of two rounded means is off by <= 0.01 and
# the printed sensitivity by <= 0.005 more
ROUNDING = 0.015


def _table4() -> list[tuple[str, list[float], float]]:
    rows = []
    for line in TABLE4.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#") or "\t" not in line:
            continue
        f = line.split("\t")
        rows.append((f[0], [float(x) for x in f[2:8]], float(f[8])))
    return rows


def test_published_table_reproduced_by_absolute_sensitivity_27_of_27() -> None:
    rows = _table4()
    assert len(rows) == 27
    absolute = [rid for rid, perf, pub in rows if abs(sensitivity(perf) - pub) <= ROUNDING]
    signed = [rid for rid, perf, pub in rows
              if abs(sensitivity(perf, "signed") - pub) <= ROUNDING]
    assert len(absolute) == 27
    # the signed drop misses #58 (a rise of 0.30 from k=0 to 1) and #113 (rise of 0.52)
    assert len(signed) == 25
    assert sorted({r for r, _, _ in rows} - set(signed)) == ["#113", "#58"]


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


@pytest.mark.parametrize("n,n_in", [(10, 8), (12, 10), (13, 10), (14, 11), (17, 14),
                                    (2, 1), (3, 2), (262, 210), (263, 210)])
def test_split_is_n_minus_round_fifth(n: int, n_in: int) -> None:
    # the authors' Truncation.from_end(20): lim = n - round(n * 20 / 100); the old
    # ceil(0.8 n) gave 11 of 13 and 15 of 17 words
    assert n_input(n) == n_in
    inp, ref = split_words(" ".join(f"w{i}" for i in range(n)))
    assert len(inp.split()) == n_in and len(ref.split()) == n - n_in


def test_short_reference_flags_references_under_40_words() -> None:
    sixty = " ".join(["word"] * 60)  # reference 12 words
    assert short_reference(make_task("completion", sixty))
    long = " ".join(["word"] * 250)  # reference 50 words
    assert not short_reference(make_task("completion", long))
    assert not short_reference(make_task("summarization", sixty))


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
    perts = {n: get_perturbation(n, bitflip_scale="utf8-percent")
             for n in settings.perturbations}
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
    assert all(r.temperature == 0.3 for r in pool.requests)  # the papers' default


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


def test_report_notes_state_the_definitions_and_short_references() -> None:
    from recitation.detect.pearl import pearl_report_notes

    rec = {"sample": {"id": "a"}, "pearl": {
        "bitflip_scale": "published", "bitflip_tokenizer": "o200k_base via rs-bpe",
        "sensitivity_mode": "absolute", "ncd": "zlib", "temperature": 0.3,
        "warnings": ["reference of 9 words (< 40)"]}}
    ok = {"sample": {"id": "b"}, "pearl": {**rec["pearl"], "warnings": []}}  # type: ignore[dict-item]
    notes = pearl_report_notes([rec, ok, {"sample": {"id": "c"}}])
    assert notes["bitflip_tokenizer"] == "o200k_base via rs-bpe"
    assert notes["short_references"] == ["a"] and "1 of 2 samples" in notes["warning"]
    assert pearl_report_notes([{"sample": {"id": "c"}}]) == {}
