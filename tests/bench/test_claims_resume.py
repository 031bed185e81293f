"""``recitation bench claims`` resumes by unit: a unit in an organism's records is never run
again, new units merge into the records, and ``--keep`` carries the records to a fresh
output folder (another machine) and back. The organism and its scoring are scripted here
(control flow only); tests/bench/test_claims_quick.py resumes a real run from kept records.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from test_claims_analysis import synthetic  # tests/bench is on sys.path (rootdir conftest)

from recitation.bench import claims_run
from recitation.bench.claims_run import (
    RECORDS,
    ClaimsConfig,
    OrganismScores,
    load_scores,
    measure_all,
    measure_organism,
    merged,
    organism_name,
    save_scores,
)
from recitation.bench.claims_tables import markdown
from recitation.errors import ConfigError

CFG = ClaimsConfig()
UNIT_SCORES = {"whitebox": ("loss", "zlib", "min_k_10", "min_k_20", "min_k_30", "reference"),
               "dcpdd": ("blind_bow",), "ezmia": ("ezmia",), "recall": ("length_chars",)}


def scripted(calls: list[tuple[str, tuple[str, ...]]], digest: str = "w1"):
    """A stand-in for building and scoring: the synthetic organism's scores of ``todo``'s
    units only, each unit marked as scoring weights ``digest``; every call logged."""
    def run(cfg, seed, dev, out, todo, progress):  # noqa: ANN001, ANN202 (scripted)
        calls.append((organism_name(cfg, seed, dev), todo))
        full = synthetic(seed, dev, nonmembers=400)
        names = [s for u in todo for s in UNIT_SCORES[u]]
        return OrganismScores(organism_name(cfg, seed, dev), seed, dev, full.passages,
                              {n: full.scores[n] for n in names},
                              [{"unit": u, "wall_seconds": 1.0} for u in todo],
                              {u: {"weights": {"1": digest}, "host": f"host-{digest}",
                                   "dtype": cfg.dtype} for u in todo})
    return run


def test_units_in_the_records_are_not_run_again(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[str, tuple[str, ...]]] = []
    monkeypatch.setattr(claims_run, "_run_units", scripted(calls))
    first = measure_organism(CFG, 0, False, tmp_path, units=("whitebox", "dcpdd", "ezmia"))
    assert calls == [("claims-s0", ("whitebox", "dcpdd", "ezmia"))]
    assert "loss" in first.scores and "length_chars" not in first.scores
    both = measure_organism(CFG, 0, False, tmp_path)  # every unit: only ReCaLL is missing
    assert calls[1] == ("claims-s0", ("recall",))
    assert set(both.scores) == {s for names in UNIT_SCORES.values() for s in names}
    assert both.scores["loss"] == first.scores["loss"]
    stored = load_scores(tmp_path / "claims-s0" / RECORDS)
    assert set(stored.units) == set(UNIT_SCORES) and stored.builds() == 1
    measure_organism(CFG, 0, False, tmp_path)
    assert len(calls) == 2  # nothing left to run: no build, no scoring


def test_kept_records_resume_a_fresh_output_folder(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[str, tuple[str, ...]]] = []
    monkeypatch.setattr(claims_run, "_run_units", scripted(calls))
    keep = tmp_path / "kept"
    cfg = CFG.model_copy(update={"seeds": (0,)})
    orgs = measure_all(cfg, tmp_path / "machine1", keep=keep)
    assert [c[0] for c in calls] == ["claims-dev", "claims-dev", "claims-s0", "claims-s0"]
    kept = sorted(p.name for p in keep.iterdir())
    assert kept == ["claims-dev.json.gz", "claims-s0.json.gz"]
    first_bytes = (keep / "claims-s0.json.gz").read_bytes()
    assert json.loads(gzip.decompress(first_bytes))["units"]["recall"]["host"] == "host-w1"
    again = measure_all(cfg, tmp_path / "machine2", keep=keep)  # a fresh folder
    assert len(calls) == 4  # restored: nothing ran
    assert [o.scores for o in again] == [o.scores for o in orgs]
    assert (keep / "claims-s0.json.gz").read_bytes() == first_bytes  # same records, same bytes


def test_a_partly_kept_organism_resumes_at_its_first_missing_unit(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[str, tuple[str, ...]]] = []
    monkeypatch.setattr(claims_run, "_run_units", scripted(calls, "w1"))
    keep = tmp_path / "kept"
    measure_organism(CFG, 0, False, tmp_path / "m1", units=("whitebox", "dcpdd", "ezmia"))
    claims_run.keep_records(tmp_path / "m1" / "claims-s0" / RECORDS, keep / "claims-s0.json.gz")
    monkeypatch.setattr(claims_run, "_run_units", scripted(calls, "w2"))  # another host
    claims_run.restore_kept(CFG, tmp_path / "m2", keep, None)
    res = measure_organism(CFG, 0, False, tmp_path / "m2")
    assert calls[-1] == ("claims-s0", ("recall",))
    assert res.builds() == 2
    rows = {"name": res.name, "seed": 0, "dev": False, "members": 150, "calibration": 200,
            "test": 200, "costs": [], "builds": res.builds(),
            "hosts": sorted({u["host"] for u in res.units.values()})}
    md = markdown({"organisms": [rows], "alphas": [0.01], "n_boot": 100, "pairs": [],
                   "rows": [], "verdicts": [],
                   "development": {"organism": "claims-dev", "variants": []}})
    assert "`claims-s0`'s units scored 2 builds of it" in md


def test_records_of_another_split_or_weight_type_are_refused(tmp_path: Path) -> None:
    a = synthetic(0, False, nonmembers=400)
    a.units = {"whitebox": {"weights": {"1": "w1"}, "dtype": "float32"}}
    b = synthetic(1, False, nonmembers=400)
    with pytest.raises(ConfigError, match="another split of passages"):
        merged(a, b, "float32")
    with pytest.raises(ConfigError, match="rerun with --dtype float32"):
        merged(a, synthetic(0, False, nonmembers=400), "bfloat16")


def test_records_of_the_first_format_know_their_units_from_their_costs(tmp_path: Path) -> None:
    org = synthetic(0, False, nonmembers=400)
    org.costs = [{"unit": "whitebox", "wall_seconds": 1.0},
                 {"unit": "organism", "wall_seconds": 2.0}]
    save_scores(tmp_path / RECORDS, org)
    doc = json.loads((tmp_path / RECORDS).read_text())
    del doc["units"]
    doc["format"] = 1
    (tmp_path / RECORDS).write_text(json.dumps(doc))
    assert set(load_scores(tmp_path / RECORDS).units) == {"whitebox"}


def test_a_unit_that_scored_nothing_is_refused_and_runs_again(tmp_path: Path) -> None:
    from types import SimpleNamespace

    from recitation.bench.claims_run import refuse_unscored
    from recitation.errors import ConfigError

    withheld = "whitebox: the log-probability integrity check of 'organism:x' failed"
    units = tmp_path / "claims-s2" / "units"
    units.mkdir(parents=True)
    saved = units / "epoch1-whitebox.json"
    saved.write_text("{}")
    failed = SimpleNamespace(epoch=1, unit="whitebox", records=[
        {"scores": [], "errors": [withheld]} for _ in range(3)])
    partly = SimpleNamespace(epoch=1, unit="recall", records=[
        {"scores": [], "errors": ["too short"]}, {"scores": [{"score": 1.0}], "errors": []}])
    prefix = SimpleNamespace(epoch=1, unit="prefix", records=[{"lcp_words": 3}])
    refuse_unscored([partly, prefix], tmp_path / "claims-s2")  # some scores: kept
    with pytest.raises(ConfigError, match=r"unit whitebox \(epoch 1\) scored none of its 3 "
                       r"items.*integrity check"):
        refuse_unscored([partly, failed], tmp_path / "claims-s2")
    assert not saved.exists()


def test_the_development_signs_travel_with_the_kept_records(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """camia@published on another machine: the development organism's records and its
    per-key signs come back from --keep, so a test organism's unit reads the signs without
    the development organism (not built there: its split is never read, no model loads)."""
    from recitation.bench import claims_camia
    from recitation.detect.camia_signals import KEYS

    signs = {k: (1 if i % 2 else -1) for i, k in enumerate(KEYS)}
    cfg = CFG.model_copy(update={"seeds": (0,), "units": (),
                                 "generating": ("camia", "camia@published")})
    dev = organism_name(cfg, 3, True)
    seen: list[dict[str, int]] = []

    def run(cfg, seed, dev_, out, todo, progress):  # noqa: ANN001, ANN202 (scripted)
        if not dev_:  # as _run_units: a test organism's unit gets the development signs
            seen.append(claims_run.camia_signs(cfg, out)["camia_signs"])
        else:  # the development organism's signs, written where development_signs writes
            (out / dev).mkdir(parents=True, exist_ok=True)
            (out / dev / claims_camia.SIGNS).write_text(json.dumps({"signs": signs}))
        full = synthetic(seed, dev_, nonmembers=400)
        return OrganismScores(organism_name(cfg, seed, dev_), seed, dev_, full.passages,
                              {f"{u}-score": full.scores["ezmia"] for u in todo}, [],
                              {u: {"weights": {"1": "w1"}, "dtype": cfg.dtype} for u in todo})

    monkeypatch.setattr(claims_run, "_run_units", run)
    keep = tmp_path / "kept"
    with monkeypatch.context() as m:  # machine 1 measures the development organism alone
        m.setattr(claims_run, "organisms", lambda cfg: [(3, True)])
        with pytest.raises(ConfigError, match="no records of the development organism and"):
            measure_all(cfg, tmp_path / "m1", keep=keep)  # kept; no test organism to table
    assert json.loads((keep / f"{dev}-{claims_camia.SIGNS}").read_text())["signs"] == signs
    assert (keep / f"{dev}.json.gz").exists() and seen == []

    def no_split(path: Path) -> None:
        raise AssertionError(f"the development organism's split was read: {path}")

    monkeypatch.setattr("recitation.organism.data.load_split", no_split)
    monkeypatch.setattr("recitation.models.local.LocalModel", None)
    measure_all(cfg, tmp_path / "m2", keep=keep)  # another machine: a fresh folder
    assert seen == [signs]
    assert (tmp_path / "m2" / dev / claims_camia.SIGNS).exists()
    (keep / f"{dev}-{claims_camia.SIGNS}").write_text('{"signs": {"nope": 3}}')
    with pytest.raises(ConfigError, match="remove the file to measure them again"):
        claims_run.measure_all(cfg, tmp_path / "m3", keep=keep)
