"""The catalogue's statistic on the organism (issue 46): four works as .txt files, two of
them the quick organism's training passages and two its held-out passages of the same
novels, against passages of four other public-domain novels, with the detectors' default
options (PEARL on). The statistic is the white-box score by the stated rule, not PEARL's
bit-flip sensitivity (at chance on the organism), and the works it finds are trained ones."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

pytestmark = [pytest.mark.model, pytest.mark.slow, pytest.mark.xdist_group("organism"),
              pytest.mark.timeout(2400)]  # PEARL's generations: minutes on 2 busy cores

CONTROL_NOVELS = ("NorthangerAbbey", "NightAndDay", "AnneOfGreenGables",
                  "AlicesAdventuresInWonderland")


def _works(tmp: Path) -> tuple[list[str], set[str]]:
    """Two .txt works of the organism's training passages, two of its held-out ones
    (paragraphs of a file: its passages), and the names of the trained works."""
    from recitation.organism.build import build_organism
    from recitation.organism.config import make_config
    from recitation.organism.data import load_split

    split = load_split(build_organism(make_config(quick=True)).directory / "split.json")
    files, trained = [], set()
    for member in (True, False):
        ps = sorted((p for p in split if p.member == member), key=lambda p: p.id)
        for w in range(2):
            name = f"{'trained' if member else 'unseen'}{w}"
            path = tmp / f"{name}.txt"
            path.write_text("\n\n".join(p.text for p in ps[w::2]), encoding="utf-8")
            files.append(str(path))
            if member:
                trained.add(name)
    return files, trained


def _controls(tmp: Path, shared: Path) -> str:
    """24 passages of about 45 words from four novels the organism never saw."""
    rng = random.Random(0)
    rows = []
    for novel in CONTROL_NOVELS:
        words = (shared / "pdnc" / novel / "novel_text.txt").read_text(
            encoding="utf-8").split()
        for k in range(6):
            start = rng.randrange(len(words) // 10, len(words) - 100)
            rows.append({"id": f"{novel}-{k}", "text": " ".join(words[start:start + 45])})
    path = tmp / "controls.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


def test_the_organism_catalogue_takes_the_white_box_score(
        tmp_path: Path, shared_data: Path, quick: object) -> None:
    from conftest import run_recitation

    files, trained = _works(tmp_path)
    runs = tmp_path / "runs"
    out = run_recitation(shared_data, "audit", *[x for f in files for x in ("--text", f)],
                         "--controls", _controls(tmp_path, shared_data), "--model",
                         "organism:quick:epoch2", "--n-controls", "0", "--recap-passages",
                         "0", "--runs-dir", str(runs))
    (folder,) = runs.iterdir()
    report = json.loads((folder / "report.json").read_text(encoding="utf-8"))
    (m,) = report["models"]
    scores = m["detection"]["detectors"]
    assert "pearl_bitflip_sensitivity" in scores  # PEARL ran, by default
    cat = report["sections"]["catalogue"]["models"]["organism:quick:epoch2"]
    assert cat["score"] == "min_k_pp_20" and "white-box" in cat["rule"], cat
    assert set(cat["found"]) <= trained, cat  # no held-out work found
    assert f"score {cat['score']}" in " ".join(out.split())
