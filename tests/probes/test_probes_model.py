"""A small real version on the embedded SmolLM2: every probe, the task and the analysis on
one PDNC novel (few samples, short generations) and the tiny PDNC-format novel."""

from __future__ import annotations

import ast
import asyncio
import csv
import re
from pathlib import Path
from typing import Any

import pytest

from recitation.probes import analysis
from recitation.runs.jobs import make_job

pytestmark = pytest.mark.model
TINY = Path(__file__).parent / "data" / "tiny_novel"


def run(job: Any, model: Any) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = asyncio.run(job.run_items(job.items(), model))
    return out


def _csv_rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def _names_by_character(folder: Path) -> dict[str, set[str]]:
    """Main name -> main name and aliases, read from character_info.csv directly."""
    return {r["Main Name"]: {r["Main Name"], *ast.literal_eval(r["Aliases"])}
            for r in _csv_rows(folder / "character_info.csv")}


def _min_k_brute_force(loaded: Any, text: str) -> tuple[int, dict[str, float]]:
    """Token count and Min-K% (k = 5, 10, 20, 30, 40, 50) of ``text`` with transformers
    directly: one text, no padding, log-softmax of the logits at each position, the next
    token's entry; the mean of the floor(n k / 100) lowest (at least one) of the n scored
    tokens."""
    import torch

    ids = loaded.tokenizer(text, return_tensors="pt")["input_ids"]
    with torch.inference_mode():
        logits = loaded.model(input_ids=ids).logits[0, :-1].double()
    lp = torch.log_softmax(logits, dim=-1).gather(-1, ids[0, 1:, None])[:, 0]
    low = sorted(lp.tolist())
    out = {}
    for k in (5, 10, 20, 30, 40, 50):  # the authors' k_perc
        n = max(1, len(low) * k // 100)
        out[str(k)] = sum(low[:n]) / n
    return ids.shape[1], out


def test_small_real_run_on_smollm2(local_model, shared_data: Path) -> None:  # type: ignore[no-untyped-def]
    folder = shared_data / "pdnc" / "Persuasion"
    novel = str(folder)
    names = _names_by_character(folder)
    name_words = {w for ns in names.values() for n in ns for w in n.split()}
    flat_text = " ".join((folder / "novel_text.txt").read_text(encoding="utf-8").split())

    nc = run(make_job("name_cloze", {"novels": [novel], "n": 2, "max_new_tokens": 10}, 0),
             local_model)
    assert len(nc) == 2 and all(r["output"].strip() for r in nc)
    for r in nc:
        # the masked word is a character's name word, and unmasked the passage is the novel's
        assert r["answer"] in name_words and r["passage"].count("[MASK]") == 1
        assert r["passage"].replace("[MASK]", r["answer"]) in flat_text
        tag = re.search(r"<name>\s*\[?([^<>\]]*?)\]?\s*</name>", r["output"])
        if tag:  # the prompt's answer format: exact match with the masked name
            assert r["correct"] == (tag.group(1) == r["answer"]), r["output"]
        assert not r["correct"] or re.search(rf"\b{re.escape(r['answer'])}\b", r["output"])

    cs = run(make_job("csg", {"novels": [novel], "n": 1, "max_new_tokens": 10}, 0),
             local_model)
    assert {r["quote_type"] for r in cs} == {"Explicit", "Anaphoric", "Implicit"}
    quotes = {q["quoteID"]: q for q in _csv_rows(folder / "quotation_info.csv")}
    for r in cs:
        speaker = quotes[r["quote_id"]]["speaker"]  # the annotated speaker, from the CSV
        true_names = names[speaker]
        # the names the replacement table replaces (the authors' answers): the speaker's
        # names and the words of them
        replaced = true_names | {w for n in true_names for w in n.split()}
        assert r["speaker"] == speaker and set(r["gold"]) <= replaced and speaker in r["gold"]
        # memorization: the answer is one of them (none survives in the corrupted
        # passage); reasoning: one of the replacement names
        assert r["memorization"] == (r["prediction"] in r["gold"]), r["output"]
        assert r["reasoning"] == (r["prediction"] in r["corrupted"]
                                  and r["prediction"] not in r["gold"])
        assert not (set(r["corrupted"]) & replaced)

    ct = run(make_job("contamination", {"novels": [novel], "max_records": 3}, 0), local_model)
    scored = [r for r in ct if not r["skipped"]]
    assert scored
    loaded = local_model.load()
    for r in scored:
        row = next(q for q in quotes.values() if r["text"].startswith(
            f"quoteID: {q['quoteID']}; quoteText: {q['quoteText']}; "))
        assert r["text"].endswith(f"; mentionEntitiesList: {row['mentionEntitiesList']}")
        n_tokens, want = _min_k_brute_force(loaded, r["text"])
        assert r["tokens"] == n_tokens
        # a float32 batched (left-padded) forward vs this single one, log-softmax in float64:
        # they differ by about 6e-6; a token scored at the wrong position moves Min-K% by > 0.1
        assert set(r["min_k"]) == set(want)
        for k in want:
            assert r["min_k"][k] == pytest.approx(want[k], abs=5e-5), (k, r["min_k"], want)
        lows = [r["min_k"][k] for k in ("5", "10", "20", "30", "40", "50")]
        assert lows == sorted(lows) and lows[-1] < 0

    task = run(make_job("quote_attribution", {"novels": [str(TINY)], "chunk_tokens": 200,
                                              "stride_tokens": 50, "min_quotes": 1,
                                              "max_new_tokens": 40}, 0), local_model)
    quotes_tiny = {q["quoteID"]: q for q in _csv_rows(TINY / "quotation_info.csv")}
    chars = {r["Character ID"]: r["Main Name"] for r in _csv_rows(TINY / "character_info.csv")}
    tiny_names = _names_by_character(TINY)
    attributed = [q for r in task for q in r["quotes"]]
    spans = {k: len(ast.literal_eval(r["quoteByteSpans"])) for k, r in quotes_tiny.items()}
    assert sorted(q["id"] for q in attributed) == sorted(  # each sub-quote once (the unit)
        f"{k}-{i}" for k, n in spans.items() for i in range(n))
    for q in attributed:
        row = quotes_tiny[q["id"].rsplit("-", 1)[0]]
        assert (q["type"], chars[str(q["speaker"])]) == (row["quoteType"], row["speaker"])
        assert q["speaker_quotes"] == sum(spans[k] for k, x in quotes_tiny.items()
                                          if x["speaker"] == row["speaker"])
        if q["predicted_id"] is not None:  # the answer is a name of the predicted character
            assert q["prediction"] in tiny_names[chars[str(q["predicted_id"])]]
        assert q["correct"] == (q["predicted_id"] is not None
                                and chars[str(q["predicted_id"])] == row["speaker"])

    figures = analysis.per_novel_figures([
        ("name_cloze", {}, nc), ("csg", {}, cs), ("contamination", {}, ct),
        ("quote_attribution", {"min_quotes": 1}, task)])
    # by hand: accuracy = share correct; CSG-M = mean over the 3 quote types of the share
    # memorized (one quote each); Min-K% = mean over the scored records; attribution = share
    # of the 12 quotes correct
    assert figures["Persuasion"]["name_cloze"] == sum(r["correct"] for r in nc) / 2
    assert figures["Persuasion"]["csg_m"] == pytest.approx(sum(r["memorization"] for r in cs) / 3)
    assert figures["Persuasion"]["min_k_10"] == pytest.approx(
        sum(r["min_k"]["10"] for r in scored) / len(scored))
    assert figures["tiny_novel"]["all"] == pytest.approx(
        sum(q["correct"] for q in attributed) / len(quotes_tiny))
    text, _ = analysis.report(figures)
    assert "| Persuasion | 1 |" in text
