"""Held-out rates at 1% and 0.1% FPR (threshold on one half of the non-members, rates on
the members and the other half; Clopper-Pearson intervals against scipy's binomtest) and
the leaderboard built from them."""

from __future__ import annotations

from typing import Any

import pytest
from scipy.stats import binomtest

from recitation.bench.lowfpr import (
    access_level,
    calibration_half,
    heldout_rates,
    leaderboard_markdown,
    leaderboard_rows,
    winners,
)


def test_calibration_half_is_seeded_and_by_id() -> None:
    ids = [f"n{i}" for i in range(101)]
    a = calibration_half(ids, 0)
    assert len(a) == 50 and a <= set(ids)
    assert a == calibration_half(reversed(ids), 0)  # by id, not by order
    assert a != calibration_half(ids, 1)


def test_rates_by_hand() -> None:
    """200 calibration scores 0..199: at 1%, k = 2, the threshold is the 3rd largest, 197
    (scores above it: 198, 199). At 0.1%, k = 0: the largest, 199 (not exact)."""
    neg = {f"c{i}": float(i) for i in range(200)} | {f"t{i}": float(i) + 0.5 for i in range(200)}
    cal = frozenset(f"c{i}" for i in range(200))
    pos = [196.0, 197.5, 198.0, 200.0, 250.0, 10.0]
    r = heldout_rates(pos, neg, cal)
    assert (r["n_calibration"], r["n_test_nonmembers"]) == (200, 200)
    # tau 197: members above it 197.5, 198, 200, 250 -> 4 of 6; test above: 197.5, 198.5,
    # 199.5 -> 3 of 200
    assert r["heldout_tpr_at_1"] == pytest.approx(4 / 6) and r["heldout_exact_1"]
    assert r["heldout_fpr_at_1"] == pytest.approx(3 / 200)
    # tau 199: members 200, 250 -> 2 of 6; test 199.5 -> 1 of 200
    assert r["heldout_tpr_at_0.1"] == pytest.approx(2 / 6) and not r["heldout_exact_0.1"]
    assert r["heldout_fpr_at_0.1"] == pytest.approx(1 / 200)
    for key, (x, n) in {"heldout_tpr_at_1_ci": (4, 6), "heldout_fpr_at_0.1_ci": (1, 200)}.items():
        ci = binomtest(x, n).proportion_ci(confidence_level=0.95, method="exact")
        assert r[key] == pytest.approx([ci.low, ci.high])
    assert "heldout_tpr_at_1" not in heldout_rates(pos, {"c1": 1.0}, frozenset({"c1"}))


def test_access_levels_from_the_registry() -> None:
    assert access_level("min_k_pp_20") == "full distribution"
    assert access_level("min_k_20") == "log-probabilities"
    assert access_level("ezmia") == "reference model"
    assert access_level("reference") == "reference model"
    assert access_level("samia") == "black-box text"
    assert access_level("pearl_bitflip_sensitivity") == "black-box text"
    assert access_level("camia") == "log-probabilities"


def _row(method: str, family: str, tpr: float, auc: float) -> dict[str, Any]:
    return {"method": method, "family": family, "epoch": 1, "dose": "all", "auc": auc,
            "n_members": 4, "n_nonmembers": 6, "n_calibration": 3, "n_test_nonmembers": 3,
            "heldout_tpr_at_1": tpr, "heldout_tpr_at_1_ci": [0.0, 1.0],
            "heldout_fpr_at_1": 0.0, "heldout_fpr_at_1_ci": [0.0, 0.7],
            "heldout_tpr_at_0.1": tpr / 2, "heldout_tpr_at_0.1_ci": [0.0, 1.0],
            "heldout_fpr_at_0.1": 0.0, "heldout_fpr_at_0.1_ci": [0.0, 0.7],
            "heldout_exact_1": False, "heldout_exact_0.1": False}


def test_leaderboard_ranks_within_access_levels_with_costs() -> None:
    results = {"organism": {"name": "t"}, "detection": [
        _row("loss", "whitebox", 0.25, 0.7), _row("min_k_pp_20", "whitebox", 0.5, 0.8),
        _row("min_k_20", "whitebox", 0.75, 0.9), _row("samia", "samia", 0.1, 0.6),
        _row("ezmia", "ezmia", 0.9, 0.95), _row("dcpdd", "dcpdd", 0.2, 0.6)],
        "length_baseline": [_row("length_chars", "baseline", 0.0, 0.5) | {"epoch": -1}],
        "costs": [{"unit": "whitebox", "epoch": 1, "texts": 10, "calls": 20,
                   "input_tokens": 600, "output_tokens": 0, "cpu_seconds": 5.0},
                  {"unit": "dcpdd", "epoch": 1, "texts": 10, "calls": 10, "from_cache": 10,
                   "input_tokens": 0, "output_tokens": 0, "cpu_seconds": 0.1},
                  {"unit": "samia", "epoch": 1, "texts": 10, "calls": 100, "from_cache": 25,
                   "input_tokens": 300, "output_tokens": 700, "cpu_seconds": 50.0}]}
    rows = leaderboard_rows(results, 1)
    assert [r["method"] for r in rows] == ["samia", "min_k_20", "loss", "dcpdd",
                                           "min_k_pp_20", "ezmia"]
    assert rows[0]["calls_per_text"] == 10 and rows[0]["tokens_per_text"] == 100
    assert rows[1]["cpu_s_per_text"] == 0.5
    assert (rows[0]["cached_share"], rows[1]["cached_share"]) == (0.25, 0.0)
    assert rows[-1]["calls_per_text"] == 0  # no cost recorded for its unit
    assert winners(results, 1) == {"black-box text": "samia", "log-probabilities": "min_k_20",
                                   "full distribution": "min_k_pp_20",
                                   "reference model": "ezmia"}
    md = leaderboard_markdown(results)
    assert "| log-probabilities | `min_k_20` | 4 / 3 / 3 | 0.750* [0.000, 1.000]" in md
    assert "| 10.00 | 100 | 5.000 | 25% |" in md  # samia: calls, tokens, CPU s per text
    assert "| 0.600 | 1.00 | cached | cached | 100% |" in md  # dcpdd: whitebox's calls
    assert ("| none (blind baseline) | `length_chars` | 4 / 3 / 3 | 0.000* [0.000, 1.000]"
            in md and md.rstrip().endswith("| 0.500 | - | - | - | - |"))


def _p(pid: str, dose: int) -> Any:
    from recitation.organism.data import Passage

    return Passage(id=pid, novel="N", start=0, end=3, n_tokens=1, sha256="x",
                   member=dose > 0, dose=dose, text="w w")


def test_stratified_subsample_and_the_units_that_use_it(tmp_path: Any) -> None:
    from recitation.bench.groundtruth import LOWFPR, sample_files, subsample, unit_params

    passages = ([_p(f"a{i}", 1) for i in range(10)] + [_p(f"b{i}", 4) for i in range(3)]
                + [_p(f"n{i}", 0) for i in range(20)])
    few = subsample(passages, 4, 7, seed=0)
    by = {d: [p for p in few if p.dose == d] for d in (0, 1, 4)}
    assert (len(by[1]), len(by[4]), len(by[0])) == (4, 3, 7)  # dose 4 has only 3
    assert few == [p for p in passages if p in few]  # the passages' order
    assert {p.id for p in subsample(passages[::-1], 4, 7, seed=0)} == {p.id for p in few}
    assert {p.id for p in few} != {p.id for p in subsample(passages, 4, 7, seed=1)}
    cfg = LOWFPR.model_copy(update={"subsample_members": 4, "subsample_nonmembers": 7})
    files = sample_files(passages, tmp_path, None, cfg)
    assert len(files["members_sub"].read_text().splitlines()) == 7
    ckpts = {0: tmp_path, 1: tmp_path}
    for unit, want in (("samia", "members_sub"), ("neighbourhood", "members_sub"),
                       ("camia", "members"), ("whitebox", "members")):
        assert unit_params(unit, cfg, files, 1, ckpts, 64)[1]["members"] == [
            str(files[want])], unit
    assert unit_params("samia", cfg, files, 1, ckpts, 64)[1]["samia_max_tokens"] == 64
    # SaMIA's published setting: the detector's own 1,024-token room, whitespace words, on
    # the subsample only when the variant itself is a subsampled unit
    pub = unit_params("samia@published", cfg, files, 1, ckpts, 64)[1]
    assert "samia_max_tokens" not in pub and pub["samia_words"] == "whitespace"
    assert pub["detectors"] == ["samia"] and pub["members"] == [str(files["members"])]
    sub = cfg.model_copy(update={"subsample_units": ("samia@published",)})
    assert unit_params("samia@published", sub, files, 1, ckpts, 64)[1]["members"] == [
        str(files["members_sub"])]
    assert unit_params("samia", sub, files, 1, ckpts, 64)[1]["members"] == [
        str(files["members"])]
    ez = unit_params("ezmia", cfg, files, 1, ckpts, 64)[1]
    assert ez["reference_model"]["model"] == "organism:lowfpr:epoch0"
    assert "dtype" not in ez["reference_model"]  # float32 units keep their saved keys
    bf = cfg.model_copy(update={"dtype": "bfloat16"})
    assert unit_params("ezmia", bf, files, 1, ckpts, 64)[1]["reference_model"]["dtype"] == (
        "bfloat16")
    from recitation.bench.groundtruth import unit_epochs

    assert unit_epochs("ezmia", cfg, [0, 1]) == [1] and unit_epochs("camia", cfg, [0, 1]) == [0, 1]
    from recitation.bench.groundtruth import GroundTruthConfig, unit_batch_size

    # the generating units decode 128 rows at once (docs/groundtruth-results.md: faster than
    # 64); scoring units keep the default batch (so their saved outcomes' keys do not change)
    assert [unit_batch_size(u, cfg) for u in ("samia", "pearl", "whitebox", "camia")] == [
        128, 128, 16, 16]
    assert unit_batch_size("samia", GroundTruthConfig()) == 16


def test_the_lowfpr_organism_preset() -> None:
    from recitation.organism.config import make_config
    from recitation.organism.paths import build_command

    cfg = make_config(preset="lowfpr")
    assert (cfg.members, cfg.n_nonmembers, cfg.doses, cfg.epochs) == (500, 1000, (1, 4), 1)
    assert build_command("lowfpr") == "recitation organism build --preset lowfpr"
    from recitation.errors import ConfigError

    with pytest.raises(ConfigError, match="unknown organism preset"):
        make_config(preset="huge")
