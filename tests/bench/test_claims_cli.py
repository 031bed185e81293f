"""`recitation bench claims` through its command line: the tables from written records
(--analyse-only), a run stopped part-way, and bad settings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_claims_analysis import synthetic  # tests/bench is on sys.path (rootdir conftest)

from recitation.bench.claims_run import RECORDS, ClaimsConfig, organism_name, save_scores
from recitation.cli import main
from recitation.errors import ConfigError


def write(out: Path, seeds: tuple[int, ...]) -> None:
    cfg = ClaimsConfig()
    for seed, dev in [(3, True)] + [(s, False) for s in seeds]:
        org = synthetic(seed, dev, nonmembers=400)
        org.name = organism_name(cfg, seed, dev)
        save_scores(out / org.name / RECORDS, org)


def test_the_tables_come_from_the_records(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path, (0, 1, 2))
    assert main(["bench", "claims", "--out", str(tmp_path), "--analyse-only",
                 "--bootstrap", "200"]) == 0
    res = json.loads((tmp_path / "claims.json").read_text())
    md = (tmp_path / "claims.md").read_text()
    assert [o["name"] for o in res["organisms"]] == ["claims-dev", "claims-s0", "claims-s1",
                                                     "claims-s2"]
    assert res["config"]["nonmembers"] == 10_000 and res["n_boot"] == 200
    assert "Rests on 3 test organism(s)" in md and "`claims-s2`" in md
    assert ("| access | method | scored: members / calibration / test non-members | TPR "
            "`claims-s0` |") in capsys.readouterr().out
    # 200 calibration / 200 test non-members measure neither 1% nor 0.1%: nothing ranked
    assert res["verdicts"] == [] and res["pairs"] == []
    assert "| `claims-s0` | test | 150 | 200 | 200 | none |" in md


def test_a_stopped_run_is_analysed_on_what_it_finished(tmp_path: Path) -> None:
    write(tmp_path, (0,))
    assert main(["bench", "claims", "--out", str(tmp_path), "--analyse-only",
                 "--bootstrap", "100"]) == 0
    md = (tmp_path / "claims.md").read_text()
    assert "Rests on 1 test organism(s) (`claims-s0`) of the 3 configured" in md


def test_without_records_or_with_a_shared_seed_it_says_what_to_do(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "claims", "--out", str(tmp_path), "--analyse-only"]) != 0
    assert "run `recitation bench claims` (it resumes" in capsys.readouterr().err
    assert main(["bench", "claims", "--out", str(tmp_path), "--dev-seed", "0",
                 "--analyse-only"]) != 0
    assert "development seed 0 is also a test seed" in capsys.readouterr().err


def test_test_organisms_share_the_first_ones_nonmembers_and_one_reference(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The first test organism and the development one draw as before (their fingerprints
    kept); the later test organisms take the first one's non-members; a base checkpoint
    whose weights differ from the development organism's is refused as a shared
    reference."""
    from recitation.bench.claims_run import organism_config, shared_reference

    cfg = ClaimsConfig()
    assert organism_config(cfg, 3, True).nonmembers_seed is None
    assert organism_config(cfg, 0, False).nonmembers_seed is None
    assert [organism_config(cfg, s, False).nonmembers_seed for s in (1, 2)] == [0, 0]
    assert organism_config(ClaimsConfig(shared_nonmembers=False), 1, False
                           ).nonmembers_seed is None
    monkeypatch.setenv("RECITATION_MODEL_CACHE_DIR", str(tmp_path / "models"))
    from recitation.organism.paths import organism_dir

    for name, digest in (("claims-dev", "aa"), ("claims-s0", "aa"), ("claims-s1", "bb")):
        organism_dir(name).mkdir(parents=True)
        (organism_dir(name) / "manifest.json").write_text(json.dumps(
            {"epochs": [{"epoch": 0, "digest": digest}, {"epoch": 1, "digest": name}]}))
    assert shared_reference(cfg, "claims-s0", tmp_path) == {
        "signals_dir": str(tmp_path / "signals"), "reference_organism": "claims-dev"}
    with pytest.raises(ConfigError, match="claims-s1's base checkpoint differs"):
        shared_reference(cfg, "claims-s1", tmp_path)
    assert shared_reference(ClaimsConfig(shared_nonmembers=False), "claims-s1", tmp_path) == {}


def test_nothing_to_run_is_refused_with_the_fix(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "claims", "--out", str(tmp_path), "--units"]) != 0
    assert "no units to run: give score units or generating ones" in capsys.readouterr().err


def test_camia_published_takes_the_development_signs_and_needs_them(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """camia@published: the test organisms' CAMIA gets the per-key signs fixed on the
    development organism (kept in its folder, read back); without signs the unit is refused."""
    from recitation.bench import claims_camia
    from recitation.bench.claims_run import camia_signs
    from recitation.bench.groundtruth import LOWFPR, unit_params
    from recitation.detect.camia_signals import KEYS

    signs = {k: (-1 if i % 3 else 1) for i, k in enumerate(KEYS)}
    cfg = ClaimsConfig(generating=("camia@published",))
    assert camia_signs(ClaimsConfig(), tmp_path) == {}
    dev = organism_name(cfg, 3, True)
    (tmp_path / dev).mkdir()
    (tmp_path / dev / claims_camia.SIGNS).write_text(json.dumps({"signs": signs}))
    monkeypatch.setattr("recitation.organism.data.load_split", lambda p: [])
    assert camia_signs(cfg, tmp_path) == {"camia_signs": signs}
    files = {k: tmp_path / f"{k}.jsonl" for k in ("members", "nonmembers", "passages")}
    with pytest.raises(ConfigError, match="camia@published needs the per-key signs"):
        unit_params("camia@published", LOWFPR, files, 1, {0: tmp_path, 1: tmp_path}, 64)
    withs = LOWFPR.model_copy(update={"camia_signs": signs})
    params = unit_params("camia@published", withs, files, 1, {0: tmp_path, 1: tmp_path}, 64)[1]
    assert params["camia_signs"] == signs and params["detectors"] == ["camia"]
    assert "camia_signs" not in unit_params("camia", withs, files, 1, {0: tmp_path}, 64)[1]
