"""The blind baseline through the command line (issue 48): an audit of King James verses
against controls from two novels, with the embedded model, which memorized neither. The
words alone tell the sets apart, so the verdict does not count the detectors (it names the
telling words) while prefix probing's reproduction test still counts; without the baseline
the same numbers would read "no evidence of memorization found" on detectors that measure
the genre (LOSS and ReCaLL separate the sets)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

pytestmark = [pytest.mark.model, pytest.mark.slow, pytest.mark.timeout(1800)]


def _passages(words: list[str], n: int, tag: str, path: Path, seed: int) -> str:
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        start = rng.randrange(len(words) - 50)
        rows.append({"id": f"{tag}{i}", "text": " ".join(words[start:start + 50])})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


def test_an_audit_of_another_genre_sets_the_detectors_aside(tmp_path: Path,
                                                            shared_data: Path) -> None:
    from conftest import run_recitation

    from recitation.corpus.kjv import kjv_verses
    from recitation.corpus.pdnc import load_pdnc_novel
    from recitation.report.verdict_inputs import verdict_inputs
    from recitation.runs.audits import load_manifest
    from recitation.verdict import decide

    kjv = " ".join(kjv_verses().values()).split()
    novels = [w for n in ("NorthangerAbbey", "Emma")
              for w in load_pdnc_novel(shared_data / "pdnc" / n).text.split()]
    runs = tmp_path / "runs"
    text = _passages(kjv, 12, "kjv", tmp_path / "kjv.jsonl", 0)
    out = run_recitation(shared_data, "audit", "--text", text,
                         "--controls", _passages(novels, 16, "nov", tmp_path / "nov.jsonl", 1),
                         "--model", "local:smollm2", "--n-controls", "0",
                         "--recap-passages", "0", "--no-pearl", "--runs-dir", str(runs))
    (folder,) = runs.iterdir()
    report = json.loads((folder / "report.json").read_text(encoding="utf-8"))
    (m,) = report["models"]
    blind, v = m["detection"]["blind"], m["verdict"]
    assert blind["separates"] and blind["auc_ci"][0] > blind["threshold"], blind
    assert v["rule"] == "shifted_nothing" and v["level"] == "low", v
    assert "detectors not counted" in v["label"] and v["significant"] == []
    said = " ".join(v["reasons"])
    assert {w["ngram"] for w in blind["words"]} & {"unto", "god", "lord", "shall", "she",
                                                   "had", "her"}
    assert all(f"'{w['ngram']}'" in said for w in blind["words"])
    assert "p prefix probing" in v["numbers"] and not any(k.startswith("p min_k")
                                                          for k in v["numbers"])
    assert "separates: detectors not counted" in " ".join(out.split())
    md = (folder / "report.md").read_text(encoding="utf-8")
    assert "## Do the controls differ from the text? (blind baseline)" in md
    assert "the verdict does not count the detectors" in md
    # the same audit's numbers without the baseline: the detectors would count
    inputs = verdict_inputs(m, load_manifest(folder))
    assert decide(inputs.model_copy(update={"blind": None})).rule in ("nothing_found",
                                                                      "detectors")
    assert max(d["auc"] for d in m["detection"]["detectors"].values()) > 0.8  # genre
