"""``recitation bench claims`` for real, at CI size (``--preset lowfpr-quick``): three real
fine-tunes of SmolLM2 (a development organism and two test organisms), every score-based
unit, the tables from their records.

Checks that can fail: the second test organism's non-members are exactly the first one's and
its members its own; the base model, the one reference of every organism, answers each text
once (a reference per organism, or non-members drawn again, calls it more); and every
organism's records hold the scores the tables read."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from recitation.bench.claims_run import RECORDS, ClaimsConfig, load_scores, organism_name
from recitation.cli import main
from recitation.organism.data import load_split
from recitation.organism.paths import SPLIT, organism_dir

pytestmark = [pytest.mark.model, pytest.mark.slow]

CFG = ClaimsConfig(preset="lowfpr-quick", nonmembers=40, dev_nonmembers=30, seeds=(0, 1))


@pytest.fixture(scope="module")
def out(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from recitation.models.local import model_cache_dir

    folder = tmp_path_factory.mktemp("claims")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RECITATION_DATA", str(shared_data))
        # the organisms in the shared model cache (built once), the answers in a fresh
        # response cache: every call below is counted as made or answered by this run
        mp.setenv("RECITATION_MODEL_CACHE_DIR", os.environ.get("RECITATION_MODEL_CACHE_DIR")
                  or str(model_cache_dir()))
        mp.setenv("RECITATION_CACHE_DIR", str(folder / "cache"))
        mp.setenv("RECITATION_RUNS_DIR", str(folder / "runs"))
        assert main(["bench", "claims", "--preset", "lowfpr-quick", "--nonmembers", "40",
                     "--dev-nonmembers", "30", "--seeds", "0", "1", "--bootstrap", "200",
                     "--out", str(folder), "--keep", str(folder / "kept")]) == 0
    return folder


def _split(seed: int, dev: bool = False) -> dict[str, Any]:
    passages = load_split(organism_dir(organism_name(CFG, seed, dev)) / SPLIT)
    return {"members": {p.id for p in passages if p.member},
            "nonmembers": {p.id for p in passages if not p.member},
            "texts": {p.text for p in passages}}


def test_later_test_organisms_take_the_first_ones_nonmembers(out: Path) -> None:
    s0, s1 = _split(0), _split(1)
    assert len(s0["nonmembers"]) == 40 and s1["nonmembers"] == s0["nonmembers"]
    assert len(s1["members"]) == 10 and s1["members"] != s0["members"]
    assert not s1["members"] & s1["nonmembers"]


def _costs(out: Path, seed: int, dev: bool = False) -> dict[str, dict[str, Any]]:
    org = load_scores(out / organism_name(CFG, seed, dev) / RECORDS)
    return {c["unit"]: c for c in org.costs}


def test_one_reference_model_answers_each_text_once_for_every_organism(out: Path) -> None:
    """The white-box unit scores each text with the organism (the text, its lowercased
    form) and with the reference model; the reference's answers to texts an earlier organism
    had are read back (the same model: the development organism's base checkpoint), so
    the second test organism's shared non-members cost the base model nothing."""
    checks = [json.loads((f / "logprob_check.json").read_text())["report"]["model"]
              for f in (out / "signals" / "epoch1").iterdir()]
    dev = organism_name(CFG, 3, True)
    assert [m for m in checks if m.endswith(":epoch0")] == [f"organism:{dev}:epoch0"]
    d, s0, s1 = _split(3, True)["texts"], _split(0)["texts"], _split(1)["texts"]
    for seed, texts, before in ((0, s0, d), (1, s1, d | s0)):
        wb = _costs(out, seed)["whitebox"]
        assert wb["calls"] == 3 * len(texts)
        assert wb["from_cache"] == len(texts & before), seed
    assert _costs(out, 1)["whitebox"]["from_cache"] >= 40  # every shared non-member


def test_every_organism_has_records_and_the_tables_rest_on_two(out: Path) -> None:
    res = json.loads((out / "claims.json").read_text())
    assert [o["name"] for o in res["organisms"]] == [organism_name(CFG, s, d) for s, d in
                                                     ((3, True), (0, False), (1, False))]
    for seed, dev in ((3, True), (0, False), (1, False)):
        org = load_scores(out / organism_name(CFG, seed, dev) / RECORDS)
        members = org.members("all")
        assert len(members) == 10
        for score in ("loss", "reference", "ezmia", "dcpdd", "recall", "blind_bow"):
            assert all(i in org.scores[score] for i in members), (org.name, score)
    assert "Rests on 2 test organism(s)" in (out / "claims.md").read_text()


def test_camia_signs_are_measured_on_the_development_organism_once(
        quick: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """camia@published's per-key signs from a real checkpoint's members and non-members (the
    quick organism stands in for a development organism): one sign per key of the authors'
    25, kept, and read back without a model."""
    from recitation.bench.claims_camia import development_signs
    from recitation.detect.camia_signals import KEYS

    passages = load_split(quick.directory / SPLIT)
    texts = ([(p.text, True) for p in passages if p.dose == 16][:4]
             + [(p.text, False) for p in passages if not p.member][:4])
    path = tmp_path / "camia-signs.json"
    signs = development_signs("quick", 2, texts, path)
    assert sorted(signs) == sorted(KEYS) and set(signs.values()) <= {-1, 1}
    kept = json.loads(path.read_text())
    assert kept["signs"] == signs and kept["texts"] == 8 and kept["with_signals"] == 8
    monkeypatch.setattr("recitation.models.local.LocalModel", None)  # no model from here on
    assert development_signs("quick", 2, texts, path) == signs


def test_a_fresh_folder_resumes_from_the_kept_records_and_runs_nothing(
        out: Path, shared_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another machine: a fresh output folder, no response cache, no signal store; the kept
    records of the real run give every organism back, so no unit runs (no store is made,
    no call is cached) and the tables are the same."""
    monkeypatch.setenv("RECITATION_DATA", str(shared_data))
    monkeypatch.setenv("RECITATION_CACHE_DIR", str(tmp_path / "cache"))
    fresh = tmp_path / "fresh"
    assert main(["bench", "claims", "--preset", "lowfpr-quick", "--nonmembers", "40",
                 "--dev-nonmembers", "30", "--seeds", "0", "1", "--bootstrap", "200",
                 "--out", str(fresh), "--keep", str(out / "kept")]) == 0
    assert not (fresh / "signals").exists() and not (tmp_path / "cache").exists()
    before, after = (json.loads((d / "claims.json").read_text()) for d in (out, fresh))
    assert after["rows"] == before["rows"] and after["pairs"] == before["pairs"]
    for seed, dev in ((3, True), (0, False), (1, False)):
        org = load_scores(fresh / organism_name(CFG, seed, dev) / RECORDS)
        assert set(org.units) == {"whitebox", "dcpdd", "ezmia", "recall"}
        assert org.builds() == 1
