"""A catalogue audited in one command: several works against one control set, each with
a conformal p-value, Benjamini-Hochberg over them, in every report format and on the
console (report/catalogue.py)."""

from __future__ import annotations

import json
import random
from pathlib import Path

from recitation.cli import main
from recitation.metrics.fdr import control_units
from recitation.records import DetectRecord, oriented_scores
from recitation.runs.audits import load_manifest
from recitation.runs.store import RunStore


def _jsonl(path: Path, rows: list[str]) -> str:
    path.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in
                            enumerate(rows)), encoding="utf-8")
    return str(path)


def _passage(rng: random.Random, lengths: tuple[int, int]) -> str:
    return " ".join("".join(rng.choice("abcdefghij") for _ in range(rng.randint(*lengths)))
                    for _ in range(30))


def test_a_catalogue_finds_the_work_that_stands_out_with_fdr_control(
        tmp_path: Path, capsys: object) -> None:
    """Three works of 4 passages on the scripted model (its pseudo log-probabilities favour
    short words): 'short' is written in short words, the two others like the 60 controls.
    m = 4, so 15 control units and p >= 1/16; at q = 0.2 over 3 works BH finds 'short'
    alone, its p the smallest possible; the p-values are those counted by hand from the
    stored scores."""
    rng = random.Random(3)
    works = {"short": (1, 2), "plain1": (4, 7), "plain2": (4, 7)}
    texts = [_jsonl(tmp_path / f"{w}.jsonl", [_passage(rng, ln) for _ in range(4)])
             for w, ln in works.items()]
    controls = _jsonl(tmp_path / "controls.jsonl", [_passage(rng, (4, 7)) for _ in range(60)])
    args = ["audit", *[x for t in texts for x in ("--text", t)], "--controls", controls,
            "--model", "scripted:echo", "--passages", "0", "--n-controls", "0",
            "--passage-words", "30", "--recap-passages", "0", "--no-pearl", "--fdr-q", "0.2",
            "--no-cache", "--runs-dir", str(tmp_path / "runs")]
    assert main(args) == 0
    out = capsys.readouterr().out  # type: ignore[attr-defined]
    assert "catalogue, scripted:echo: 1 of 3 works found, false discovery rate at most " \
        "0.2: short" in " ".join(out.split())
    (folder,) = (tmp_path / "runs").iterdir()
    report = json.loads((folder / "report.json").read_text(encoding="utf-8"))
    cat = report["sections"]["catalogue"]["models"]["scripted:echo"]
    assert cat["found"] == ["short"] and cat["units"] == 15 and cat["m"] == 4
    by_work = {w["work"]: w for w in cat["works"]}
    assert by_work["short"]["p_value"] == 1 / 16
    # by hand from the stored scores: the units of the controls, the works' means
    run = folder / "runs" / load_manifest(folder)["models"][0]["runs"]["detect"]
    with RunStore(run) as store:
        scores = oriented_scores(DetectRecord.model_validate(r)
                                 for _, r in store.results("detect"))[cat["score"]]
    units = control_units(list(scores["control"].values()), 4, seed=0)
    for w in works:
        mine = [v for k, v in scores["member"].items() if k.startswith(f"text:{w}:")]
        assert len(mine) == 4
        stat = sum(mine) / len(mine)
        assert by_work[w]["statistic"] == __import__("pytest").approx(stat)
        assert by_work[w]["p_value"] == (1 + sum(u >= stat for u in units)) / 16
    md = (folder / "report.md").read_text(encoding="utf-8")
    assert "## Catalogue" in md and "| short | 4 |" in md
    assert "false discovery rate at most 0.2" in (folder / "report.html").read_text(
        encoding="utf-8")


def test_one_work_is_no_catalogue(tmp_path: Path) -> None:
    rng = random.Random(4)
    text = _jsonl(tmp_path / "one.jsonl", [_passage(rng, (4, 7)) for _ in range(4)])
    controls = _jsonl(tmp_path / "c.jsonl", [_passage(rng, (4, 7)) for _ in range(8)])
    assert main(["audit", "--text", text, "--controls", controls, "--model", "scripted:echo",
                 "--passage-words", "30", "--recap-passages", "0", "--no-pearl", "--no-cache",
                 "--runs-dir", str(tmp_path / "runs")]) == 0
    (folder,) = (tmp_path / "runs").iterdir()
    report = json.loads((folder / "report.json").read_text(encoding="utf-8"))
    assert "catalogue" not in report["sections"]
