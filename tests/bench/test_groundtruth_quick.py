"""``recitation bench groundtruth --quick`` for real: the quick organism (SmolLM2 fine-tuned on
PDNC passages) measured by every detector family, PEARL and prefix probing.

Checks that can fail: after fine-tuning LOSS separates members from non-members and prefix
probing extracts 16x members verbatim, while at epoch 0 (the base model) neither does and no
non-member is ever extracted; the same seed gives the same numbers twice."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from recitation.bench.analysis import benchmark
from recitation.bench.groundtruth import QUICK
from recitation.errors import ConfigError
from recitation.organism.build import BuildResult

pytestmark = [pytest.mark.model, pytest.mark.slow]

GT = QUICK.model_copy(update={"epochs": (0, 2), "cache": True, "pearl_max_intensity": 2})
"""The quick preset on the base model (epoch 0) and the last checkpoint, PEARL to intensity 2
(of the preset's 3): what every check reads (epoch 1 and intensity 3 add run time, no check:
PEARL's unit was 98 of the benchmark's 220 CPU seconds at intensity 3). Its model answers
go through the session's response cache (tests/conftest.py ``SESSION_CACHE``): a first run
of the suite computes them, a second reads them back; every detector, PEARL and prefix
score is computed again from them either way, and the determinism test below recomputes
PEARL's sampled answers with no cache."""


@pytest.fixture(scope="module")
def quick_organism(quick: BuildResult) -> Path:
    return quick.directory


@pytest.fixture(scope="module")
def out_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("gt")


@pytest.fixture(scope="module")
def results(quick_organism: Path, out_dir: Path, session_cache: Path) -> dict[str, Any]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RECITATION_CACHE_DIR", str(session_cache))
        return benchmark(GT, out_dir)


def _det(results: dict[str, Any], method: str, epoch: int, dose: str = "all") -> dict[str, Any]:
    return next(r for r in results["detection"]
                if (r["method"], r["epoch"], r["dose"]) == (method, epoch, dose))


def _ext(results: dict[str, Any], epoch: int, group: str) -> dict[str, Any]:
    return next(r for r in results["extraction"] if (r["epoch"], r["group"]) == (epoch, group))


def test_every_unit_ran_on_every_checkpoint(results: dict[str, Any]) -> None:
    units = {(c["epoch"], c["unit"]) for c in results["costs"]}
    expected = {(e, u) for e in (0, 2) for u in GT.units if u not in ("pearl", "extract")}
    assert units == expected | {(2, "pearl")}  # extract: no helper given
    assert all(c["status"] == "completed" and c["calls"] > 0 for c in results["costs"])
    assert all(0 <= c["from_cache"] <= c["calls"] for c in results["costs"])
    methods = {r["method"] for r in results["detection"]}
    assert {"loss", "zlib", "min_k_20", "recall", "dcpdd", "pearl_bitflip_sensitivity",
            "pearl_synonym_sensitivity", "prefix_lcp_words"} <= methods
    assert "reference" in {r["method"] for r in results["detection"] if r["epoch"] == 2}
    assert results["errors"] == []


def _loss_scores(out_dir: Path, epoch: int) -> tuple[list[int], list[float]]:
    """Member labels and -LOSS of every passage, from the whitebox unit's saved records."""
    unit = json.loads((out_dir / "units" / f"epoch{epoch}-whitebox.json").read_text("utf-8"))
    labels, scores = [], []
    for rec in unit["records"]:
        loss = next(s for s in rec["scores"] if s["detector"] == "loss")
        labels.append(int(rec["sample"]["label"] == "member"))
        scores.append(-float(loss["score"]))
    return labels, scores


def test_fine_tuned_organism_is_found_and_base_model_is_not(results: dict[str, Any],
                                                            out_dir: Path) -> None:
    from scipy.stats import mannwhitneyu
    from sklearn.metrics import roc_auc_score

    assert _det(results, "loss", 2)["auc"] > 0.9
    assert _det(results, "loss", 2, "16")["tpr_at_5"] > 0.5
    assert _ext(results, 2, "dose16")["exact"] >= 1  # some 16x members recited verbatim
    p = {}
    for epoch in (0, 2):  # the AUC against scikit-learn's, from the per-passage scores
        labels, scores = _loss_scores(out_dir, epoch)
        assert sum(labels) == 15 and len(labels) == 30
        assert _det(results, "loss", epoch)["auc"] == pytest.approx(
            roc_auc_score(labels, scores), abs=1e-12)
        p[epoch] = mannwhitneyu([s for s, y in zip(scores, labels, strict=True) if y],
                                [s for s, y in zip(scores, labels, strict=True) if not y]
                                ).pvalue
    # the base model never saw the members: LOSS does not tell them from the others at the
    # 5% level (two-sided Mann-Whitney; measured p = 0.12); after fine-tuning it does, far
    # below 0.1% (measured 3.4e-6)
    assert p[0] > 0.05 and p[2] < 1e-3, p
    assert all(r["exact"] == 0 for r in results["extraction"] if r["epoch"] == 0)
    assert all(r["exact"] == 0 for r in results["extraction"] if r["group"] == "nonmember")
    base, tuned = _det(results, "loss", 0, "16"), _det(results, "loss", 2, "16")
    assert tuned["auc"] > base["auc_ci"][1] or tuned["auc"] == 1.0


def test_same_seed_same_numbers(results: dict[str, Any], out_dir: Path,
                                tmp_path: Path) -> None:
    """PEARL again in a fresh directory (every call made again: no cache, no saved unit) on
    the last checkpoint, with sampled generation: the same answers as the first run
    (computed in this run, or read from the session's response cache, written by an earlier
    run of the suite: then the check spans two processes and runs). The second run stops at
    intensity 1: an intensity's perturbed inputs and each output's sampling seed do not
    depend on how many intensities run, and a seeded answer not on the rest of its batch
    (tests/models/test_local.py), so intensities 0 and 1 of every passage must repeat
    exactly, at two thirds of the cost of a full second run. (Scoring, the white-box unit, and
    greedy decoding, the prefix unit, are deterministic by construction: a forward pass per
    step with no draw, tested against transformers in tests/models/test_local.py.)"""
    cfg = QUICK.model_copy(update={"epochs": (2,), "units": ("pearl",),
                                   "pearl_max_intensity": 1})
    assert not cfg.cache and GT.pearl_max_intensity == 2
    again_dir = tmp_path / "again"
    again = benchmark(cfg, again_dir)
    assert all(c["calls"] > 0 and c["from_cache"] == 0 for c in again["costs"])

    def per_intensity(folder: Path) -> dict[str, Any]:
        unit = json.loads((folder / "units" / "epoch2-pearl.json").read_text("utf-8"))
        return {r["item_id"]: {p: {k: r["pearl"][p][k][:2] for k in ("perf_mean", "perf_std")}
                               | {"input_k1": r["pearl"][p]["perturbed_inputs"][0],
                                  "output_k0": r["pearl"][p]["example_output_k0"]}
                               for p in ("bitflip", "synonym")}
                for r in unit["records"]}

    first, second = per_intensity(out_dir), per_intensity(again_dir)
    assert len(first) == 30 and second == first
    # the answers vary with the intensity somewhere (the comparison is not of constants)
    assert any(len({v[p]["perf_mean"][0], v[p]["perf_mean"][1]}) == 2
               for v in first.values() for p in v)


def test_saved_units_are_reused_and_analysed_alone(results: dict[str, Any], out_dir: Path,
                                                   tmp_path: Path) -> None:
    again = benchmark(GT, out_dir, run=False)  # nothing runs: every unit is saved
    assert json.dumps(again, sort_keys=True) == json.dumps(results, sort_keys=True)
    partial = GT.model_copy(update={"n_bootstrap": 7})  # other statistics, same units
    assert benchmark(partial, out_dir, run=False)["costs"] == results["costs"]
    changed = GT.model_copy(update={"pearl_outputs": 2})  # another PEARL: not saved
    units = {c["unit"] for c in benchmark(changed, out_dir, run=False)["costs"]}
    assert units == set(GT.units) - {"pearl", "extract"}
    with pytest.raises(ConfigError, match="no finished unit"):
        benchmark(GT, tmp_path / "empty", run=False)


@pytest.mark.xdist_group("model")  # the other worker's share (tests/conftest.py)
def test_extract_unit_runs_dsp_and_recap_on_the_organism(quick_organism: Path,
                                                         tmp_path: Path,
                                                         session_responses: Path) -> None:
    """DSP, RECAP and RECAP + filter with the organism as target and the embedded model as
    helper (one passage per group, one feedback round, short helper replies: CI-sized):
    every passage gets an extraction, the costs are ordered as the methods nest, and no
    non-member is extracted."""
    cfg = QUICK.model_copy(update={
        "helper": "smollm2", "units": ("extract",), "epochs": (2,), "extract_passages": 1,
        "extract_rounds": 1, "helper_max_tokens": 48, "filter_epochs": 2, "cache": True})
    res = benchmark(cfg, tmp_path / "extract")
    rows = res["agentic"]
    groups = ("dose1", "dose4", "dose16", "nonmember")
    assert {(r["method"], r["group"]) for r in rows} == {
        (m, g) for m in ("dsp", "recap", "recap_filter") for g in groups}
    assert all(r["n"] == 1 and 0 <= r["mean_rouge_l"] <= 1 for r in rows)
    assert res["errors"] == []  # every passage has its event record
    assert all(r["exact"] == 0 for r in rows if r["group"] == "nonmember")
    cost = {c["method"]: c["prompts"] for c in res["agentic_costs"]}
    assert cost["dsp"] >= 8  # a summary and a DSP attempt per passage at least
    assert cost["dsp"] <= cost["recap_filter"] <= cost["recap"]
    assert [c["unit"] for c in res["costs"]] == ["extract"]


def test_new_detector_units_and_the_leaderboard(quick_organism: Path, tmp_path: Path,
                                                session_responses: Path) -> None:
    """EZ-MIA (the base model as reference, so from epoch 1 only) and CAMIA as units of the
    benchmark: both find the fine-tuned organism's members; every row carries the held-out
    rates; `--analyse-only --leaderboard` rebuilds the leaderboard from the saved units."""
    from recitation.cli import main

    cfg = QUICK.model_copy(update={"units": ("ezmia", "camia"), "epochs": (0, 2),
                                   "cache": True})
    out = tmp_path / "new"
    res = benchmark(cfg, out)
    assert {(c["epoch"], c["unit"]) for c in res["costs"]} == {
        (0, "camia"), (2, "camia"), (2, "ezmia")}
    ez, cam = _det(res, "ezmia", 2), _det(res, "camia", 2)
    assert cam["auc"] > 0.9 and _det(res, "camia", 0)["auc"] < cam["auc"]
    # EZ-MIA as the authors' code: the members seen 4 and 16 times are known so well that
    # none loses probability in the error zone, or almost none is wrong, and they score 0.0
    # (the record says which); no non-member falls back
    recs = next(o for o in res["costs"] if o["unit"] == "ezmia")
    fell = _ezmia_fallbacks(Path(recs["run_dir"]))
    assert fell["dose4"] == fell["dose16"] == 5 and fell["nonmember"] == 0, fell
    assert _det(res, "ezmia", 2, "1")["auc"] > ez["auc"]
    assert cam["n_nonmembers"] == 11  # 4 of the 15 non-members calibrate CAMIA
    assert {"heldout_tpr_at_1", "heldout_fpr_at_0.1_ci"} <= ez.keys()
    assert main(["bench", "groundtruth", "--quick", "--units", "ezmia", "camia", "--epochs",
                 "0", "2", "--analyse-only", "--leaderboard", "--out", str(out)]) == 0
    board = (out / "leaderboard.md").read_text()
    assert "| reference model | `ezmia` |" in board and "| log-probabilities | `camia` |" in board
    assert "| none (blind baseline) | `length_chars` |" in board


def _ezmia_fallbacks(run_dir: Path) -> dict[str, int]:
    """Per group (dose or non-member): EZ-MIA records that fell back to 0.0."""
    from recitation.bench.analysis import passage_id
    from recitation.bench.groups import group_of
    from recitation.organism.data import load_split
    from recitation.organism.paths import SPLIT, organism_dir
    from recitation.runs.store import RunStore

    groups = {p.id: group_of(p) for p in load_split(organism_dir("quick") / SPLIT)}
    out = dict.fromkeys(("dose1", "dose4", "dose16", "nonmember"), 0)
    with RunStore(run_dir) as store:
        for _, r in store.results("detect"):
            pid = passage_id(str(r["sample"]["id"]))
            out[groups[pid]] += bool(r.get("ezmia_fallback"))
    return out
