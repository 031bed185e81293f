"""`recitation bench claims` through its command line: the tables from written records
(--analyse-only), a run stopped part-way, and bad settings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_claims_analysis import synthetic  # tests/bench is on sys.path (rootdir conftest)

from recitation.bench.claims_run import RECORDS, ClaimsConfig, organism_name, save_scores
from recitation.cli import main


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
    assert "| access | method | TPR `claims-s0` |" in capsys.readouterr().out
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
