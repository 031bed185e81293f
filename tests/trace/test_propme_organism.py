"""PROPME end to end on real models (issue 11): an index of the PDNC novels (a document per
chapter) plus the quick ground-truth organism's training passages; the organism and its base
model (the embedded SmolLM2) each answer the three prompt sets (generic prompts drawn from
the packaged everyday-sentence sample as the authors draw theirs from Tatoeba, specific ones
written by SmolLM2, prefixes cut from the organism's training passages); every generation is
traced. The organism's capability (prefix prompts) is above its propensity (generic,
specific), and above the base model's capability. A small version of
``benchmarks/propme_organism.py`` (docs/tracing.md has the full-size figures)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from recitation.cli import main
from recitation.runs.runner import execute, stored_report

N = 3  # prompts per set
FLAGS = ["--helper", "smollm2", "--n", str(N), "--prefix-words", "16", "--max-new-tokens",
         "40", "--domain", "English novels of the 19th and early 20th century", "--engine",
         "numpy"]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory, shared_data: Path, quick: Any) -> Path:
    from recitation.organism.data import load_split
    from recitation.trace.sources import iter_corpus

    built = quick
    members = [p for p in load_split(built.directory / "split.json") if p.member]
    work = tmp_path_factory.mktemp("propme")
    (work / "corpus").mkdir()
    with (work / "corpus" / "a_pdnc.jsonl").open("w", encoding="utf-8") as f:
        for d in iter_corpus(shared_data / "pdnc", chapters=True):
            f.write(json.dumps({"text": d.text, "source": "pdnc", **d.metadata}) + "\n")
    # the most-repeated passages first: prefixes are cut from the first N documents
    members.sort(key=lambda p: (-p.dose, p.id))
    lines = "".join(json.dumps({"text": p.text, "id": p.id, "dose": p.dose}) + "\n"
                    for p in members)
    (work / "corpus" / "b_organism.jsonl").write_text(lines, encoding="utf-8")
    (work / "train.jsonl").write_text(lines, encoding="utf-8")
    assert main(["index", "build", str(work / "corpus"), str(work / "idx")]) == 0
    return work


def _propme(work: Path, target: str, definitions: str = "propme") -> dict[str, Any]:
    runs = work / f"runs-{target.replace(':', '-')}-{definitions}"
    assert main(["propme", "--index", str(work / "idx"), "--target", target, "--prefix-docs",
                 str(work / "train.jsonl"), "--runs-dir", str(runs), "--definitions",
                 definitions, *FLAGS]) == 0
    run_dir = next(runs.iterdir())
    report = stored_report(run_dir)
    if report is None:  # the run's report, computed once from the store
        asyncio.run(execute(run_dir))
        report = stored_report(run_dir)
    assert report is not None
    return report


@pytest.mark.model
@pytest.mark.slow
@pytest.mark.xdist_group("model")  # the other worker's share (tests/conftest.py)
def test_organism_capability_above_propensity_and_above_base(corpus: Path,
                                                            session_responses: Path) -> None:
    """The authors' definitions (the default), then ours (``--definitions recitation``)
    on the same prompts and replies (the second pass reads them from the response cache).
    The answers go through the session's response cache (conftest.py): computed by a first
    run of the suite, read back by a second; the tracing runs either way.

    Measured (2026-11-27, N = 3, after issue 47 made ``propme`` the authors' computation
    exactly): under the authors' definitions the organism's prefix replies keep only short
    common spans (NVR 0.00, as the base model's): each is a copy over sentence ends and
    line breaks, which their rule drops; one generic reply is found whole (NVR 1.00). The
    'specific' prompts SmolLM2 writes copy the corpus (67% whole), so its
    propensity NVR (0.61) is not ordinary use (a warning says so). Under ours the prefix
    NVR is 0.33 (the best document per generation). Since issue 47 (D5) the generic and
    specific prompts go as plain completions under the authors' definitions, as chat under
    ours."""
    org = _propme(corpus, "organism:quick:epoch2")
    base = _propme(corpus, "smollm2")
    g, b = org["groups"], base["groups"]
    # identical generations count once, as the authors' results (keyed by text) do: two of
    # SmolLM2's generic prompts may get the same reply; each prefix gets its own
    assert set(g) == {"generic", "specific", "prefix"} and g["prefix"]["total_generations"] == N
    assert all(1 <= g[s]["total_generations"] <= N for s in g), g
    # the authors' exact computation (issue 47: D1-D3) keeps no span of a copy that runs
    # over a sentence end or a line break, so the prefix replies, multi-sentence copies of
    # hard-wrapped novels, keep only short common spans (measured 2026-11-27, N = 3: prefix
    # NVR 0.00 for both models); the organism's copy shows where it is found whole: one
    # generic reply (a plain completion) continues with its training text, NVR 1.00
    best = max(g[s]["max_nv_recall"] for s in g)
    assert best > 0.5 and max(b[s]["max_nv_recall"] for s in b) == 0.0, (g, b)
    # the authors' protocol: every set as a plain completion, the reply stripped. The
    # organism, an LM fine-tuned on plain passages, then continues ordinary sentences with
    # its training text too (measured 2026-11-27, N = 3: generic batch NVR 0.36, one reply
    # found whole, against 0.07 for the prefixes), which chat (ours, below) hides
    assert set(org["protocol"]) == set(g) and all(
        c["chat"] == 0 and c["stripped"] == c["completion"] for c in org["protocol"].values())
    _prompt_checks(org)

    ours = _propme(corpus, "organism:quick:epoch2", "recitation")
    ours_base = _propme(corpus, "smollm2", "recitation")
    g, b = ours["groups"], ours_base["groups"]
    cap = g["prefix"]["avg_nv_recall"]
    assert cap >= 0.25, g["prefix"]  # the organism continues its training passages (0.33)
    # ordinary use leaks less than prefix attacks: the generic set (the specific prompts
    # SmolLM2 writes from document openings quote them: the one of three not refused as a
    # whole copy still draws a near-copy, NVR 0.56 with ours, measured)
    assert g["generic"]["avg_nv_recall"] < cap, g["generic"]
    assert ours["propensity"]["generic"]["nvr"] < 0.5, ours["propensity"]
    assert g["prefix"]["average_longest_span_length"] > b["prefix"][
        "average_longest_span_length"]
    assert cap > b["prefix"]["avg_nv_recall"] + 0.2, (g["prefix"], b["prefix"])
    _prompt_checks(ours)


def _prompt_checks(org: dict[str, Any]) -> None:
    """The paper's check on the prompts: prefixes overlap the corpus more than the others.
    A helper-written prompt copied whole from the corpus is refused (SmolLM2 copies some of
    its specific prompts: measured 2 of 3), so none of those sent is copied, and each set
    with refusals gets its warning."""
    po = org["prompt_overlap"]
    sent = [s for s in ("generic", "specific") if s in po]
    assert sent and po["prefix"]["avg_nv_recall"] > max(po[s]["avg_nv_recall"] for s in sent)
    assert all(po[s]["full_match_ratio"] == 0 for s in sent), po
    refused = [w for w in org["warnings"] if "refused: copied whole" in w]
    assert not [w for w in org["warnings"] if "prompts are copied whole" in w]
    assert len(refused) <= 2 and all(w.split()[1] in ("generic", "specific") for w in refused)
