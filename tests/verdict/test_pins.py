"""An audit's verdict rests on what its manifest pinned when it was created: a later change
to the method registry does not move an old audit's primary scores, catalogue statistic or
verdict; a format-1 manifest (no pins) is read with the registry of its time; a newer format
is refused by name (control flow on the scripted model, a real audit folder)."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from recitation import methods
from recitation.errors import StoreError
from recitation.report.collect import collect
from recitation.runs.audits import MANIFEST, load_manifest
from recitation.verdict.decide import RULES_VERSION
from recitation.verdict.pins import V1_PINS, pins_now, pins_of


def _jsonl(path: Path, rows: list[str]) -> str:
    path.write_text("".join(json.dumps({"id": i, "text": t}) + "\n"
                            for i, t in enumerate(rows)), encoding="utf-8")
    return str(path)


def _passage(rng: random.Random, lengths: tuple[int, int]) -> str:
    return " ".join("".join(rng.choice("abcdefghij") for _ in range(rng.randint(*lengths)))
                    for _ in range(30))


@pytest.fixture(scope="module")
def audit(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two works (one in short words, which the scripted model's pseudo log-probabilities
    favour) against 24 controls: a detect run with the white-box scores, and a catalogue."""
    from recitation.cli import main

    tmp = tmp_path_factory.mktemp("pins")
    rng = random.Random(5)
    texts = [_jsonl(tmp / f"{w}.jsonl", [_passage(rng, ln) for _ in range(4)])
             for w, ln in (("short", (1, 2)), ("plain", (4, 7)))]
    controls = _jsonl(tmp / "controls.jsonl", [_passage(rng, (4, 7)) for _ in range(24)])
    assert main(["audit", *[x for t in texts for x in ("--text", t)], "--controls", controls,
                 "--model", "scripted:echo", "--passages", "0", "--n-controls", "0",
                 "--passage-words", "30", "--recap-passages", "0", "--no-pearl",
                 "--no-cache", "--runs-dir", str(tmp / "runs")]) == 0
    (folder,) = (tmp / "runs").iterdir()
    return folder


def _verdict(folder: Path) -> tuple[object, ...]:
    f = collect(folder)
    (m,) = f["models"]
    cat = f["sections"]["catalogue"]["models"]["scripted:echo"]
    return m["detection"]["primary"], m["detection"]["reported"], cat["score"], m["verdict"]


def test_the_manifest_pins_what_the_verdict_rests_on(audit: Path) -> None:
    manifest = load_manifest(audit)
    assert manifest["format"] == 2
    pins = pins_of(manifest)
    assert pins == pins_now() and "whitebox" in pins.primary
    primary, _, score, verdict = _verdict(audit)
    assert primary == ["min_k_20"] and score == "min_k_20"  # white-box ranks first
    assert verdict["rules_version"] == RULES_VERSION and verdict["rule"] in (
        "reproduction", "detectors", "nothing_found")


@pytest.fixture
def registry_restored() -> Iterator[None]:
    """The method registry as it was, in its order, after the test (monkeypatch's delitem
    puts a line back at the end, and the order is the registry's: commands and docs read
    it)."""
    saved = dict(methods.METHODS)
    yield
    methods.METHODS.clear()
    methods.METHODS.update(saved)


def _drop_whitebox() -> None:
    for name, entry in list(methods.METHODS.items()):
        if entry.family == "whitebox":
            del methods.METHODS[name]


def test_an_old_audit_keeps_its_verdict_after_a_registry_change(
        audit: Path, registry_restored: None) -> None:
    before = _verdict(audit)
    _drop_whitebox()  # the white-box family's lines gone
    assert "whitebox" not in pins_now().primary  # the registry did change
    assert _verdict(audit) == before


def test_a_format_1_manifest_is_read_with_the_registry_of_its_time(
        audit: Path, tmp_path: Path, registry_restored: None) -> None:
    import shutil

    old = tmp_path / "old"
    shutil.copytree(audit, old)
    manifest = json.loads((old / MANIFEST).read_text(encoding="utf-8"))
    del manifest["verdict"]
    manifest["format"] = 1
    (old / MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
    assert pins_of(load_manifest(old)) == V1_PINS
    _drop_whitebox()
    primary, reported, score, _ = _verdict(old)
    assert primary == ["min_k_20"] and reported == ["recall"] and score == "min_k_20"


def test_a_newer_manifest_is_refused_by_name(audit: Path, tmp_path: Path) -> None:
    import shutil

    new = tmp_path / "new"
    shutil.copytree(audit, new)
    manifest = json.loads((new / MANIFEST).read_text(encoding="utf-8"))
    manifest["format"] = 3
    (new / MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
    with pytest.raises(StoreError, match="manifest format 3; this recitation reads formats "
                       "1 to 2: upgrade recitation"):
        load_manifest(new)
    manifest["format"], manifest["verdict"] = 2, {"rules_version": 2}
    (new / MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
    with pytest.raises(StoreError, match="verdict pins do not read"):
        pins_of(load_manifest(new))


def test_a_report_parses_each_detect_run_once(audit: Path) -> None:
    """The verdict's numbers and the catalogue read the same typed records (report/stores.py):
    one parse of the detect run per report, none for a second report of the same run."""
    from recitation.report import stores

    stores._detect.cache_clear()
    collect(audit)
    assert stores.parses() == 1
    collect(audit)
    assert stores.parses() == 1


def test_the_roc_curve_is_read_as_the_detect_job_stored_it(
        audit: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Curves are computed once, by the detect job, and read back by the report; they are
    scikit-learn's ROC curve of the oriented text and control scores."""
    from sklearn.metrics import roc_curve

    from recitation.report import numbers

    def recomputed(*_: object) -> object:
        raise AssertionError("the report recomputed a stored ROC curve")

    monkeypatch.setattr(numbers, "roc_points", recomputed)
    (m,) = collect(audit)["models"]
    d = m["detection"]["detectors"]["min_k_20"]
    labels = [1] * len(d["text_scores"]) + [0] * len(d["control_scores"])
    fpr, tpr, _ = roc_curve(labels, d["text_scores"] + d["control_scores"],
                            drop_intermediate=False)
    assert d["roc"]["fpr"] == pytest.approx(list(fpr))
    assert d["roc"]["tpr"] == pytest.approx(list(tpr))
