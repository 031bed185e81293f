"""Replay of the released RECAP runs through our pipeline (issue 8, item 7).

The 24 shared extraction files (12 EchoTrace books x gpt-4.1 and deepseek-chat targets, gpt-4.1
feedback) are replayed event by event (:mod:`recitation.extract.replay`): the target answers
with the released texts (prefix probe, DSP, jailbreak, then the kept refinements in order),
the judge says "No" exactly where the release stored ``MODEL_RESPONSE_BLOCKED``, and the
feedback helper answers with the released ``refinement_prompt`` hints.

What is checkable. The released loop (``feedback_agent.py``) stores a round only when its
ROUGE-L recall against the *full* gold passage beats the best so far by more than 0.02, stops
at the first round that does not, and stops once a stored round scores above 0.95 (at most 5
rounds). So the file holds ``refined_0..k`` and nothing of round k+1, which the released code
ran (unless k = 5 or refined_k > 0.95) but did not store; its text and hint are unknown. The
replay answers that round with refined_k again (a stand-in that gains nothing) and a
placeholder hint. Checked per event:

* the rounds we keep are exactly the released ``refined_1..k`` (same texts, same hints): every
  released round passes our keep rule in order, and the stand-in round is not kept;
* ``refined_best`` of our export reports the released attempt;
* every refinement was asked in the released conversation: the opening (DSP, or the
  jailbreak that got through) system and user turns, ``refined_0`` as the assistant turn, then
  per round the hints (released wording) and the kept attempt;
* at most one round past the kept ones was run, and every run round is in the run record
  (and so in ``.attempts.jsonl``).

Not checkable: whether the released run really asked round k+1 (it is not stored) and what
it answered; the prompts' exact wording (the target's replies are fixed, whatever we ask).
Per file, our export gives the evaluation exactly what the released file gives it: per event
in order, the gold text, the first sentence given away and every RECAP method's candidate
(:func:`recitation.evaluate.evaluate_book` reads nothing else). So ``recitation evaluate
--mode recap-compat`` on our export equals its result on the released file, which
tests/test_evaluate.py checks against the released Metrics JSON (ROUGE-L per method and
every span statistic) for the same 24 files; the scoring is not run twice.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from recitation.corpus.echotrace import (
    RECAP_METHODS,
    candidate_text,
    load_echotrace,
    parse_extraction_path,
)
from recitation.extract.replay import replay_file

TARGETS = ("gpt-4.1-2025-04-14", "deepseek-chat")


def data_dir() -> Path:  # as tests/conftest.py (needed at collection time)
    repo = Path(__file__).resolve().parents[2]
    return Path(os.environ.get("RECITATION_DATA", repo.parent / "shared" / "data"))


def _released_files() -> list[Path]:
    books = data_dir() / "echotrace" / "books"
    return sorted(p for p in books.glob("*/Extractions/*_extraction_*_feedback_*.json")
                  if parse_extraction_path(p).model in TARGETS)


def _ids() -> list[str]:
    return [p.name.split("_extraction_")[0][:30] + "/" + parse_extraction_path(p).model
            for p in _released_files()] or ["no-data"]


def test_all_24_released_files_are_replayed(shared_data: Path) -> None:
    files = _released_files()
    assert len(files) == 24
    assert {parse_extraction_path(p).model for p in files} == set(TARGETS)


@pytest.mark.parametrize("index", range(len(_ids())), ids=_ids())
def test_replay_makes_the_released_decisions(index: int, shared_data: Path,
                                             tmp_path: Path) -> None:
    files = _released_files()
    assert index < len(files), "no released extraction files"
    path = files[index]
    replay = replay_file(path, tmp_path)
    assert replay.events and not replay.mismatches, [
        (e.event_id, e.released_kept, e.kept, e.same_texts, e.same_reported, e.conversation_ok)
        for e in replay.mismatches[:5]]
    for e in replay.events:
        refine_rounds = [a["round"] for a in e.record["attempts"] if a["stage"] == "refine"]
        assert refine_rounds == list(range(1, e.rounds + 1))
        assert e.kept <= e.rounds <= e.kept + 1
    attempts = replay.export.with_suffix(".attempts.jsonl") if replay.export else None
    assert attempts is not None and attempts.is_file()
    with attempts.open(encoding="utf-8") as fh:
        assert sum(1 for _ in fh) == len(replay.events)

    assert replay.export is not None
    ours, theirs = _scored(replay.export), _scored(path)
    assert len(ours) == len(theirs) > 0
    for k, (a, b) in enumerate(zip(ours, theirs, strict=True)):
        assert a == b, (k, a, b)
    exported = json.loads(replay.export.read_text(encoding="utf-8"))
    assert sum(len(ch["events"]) for ch in exported["chapters"]) == len(replay.events)


def _scored(path: Path) -> list[tuple[str, str | None, list[str]]]:
    """What the evaluation reads of each scored event, in order: the gold text, the first
    sentence given away, and the candidate each RECAP method is scored on (an event with no
    gold text is not scored)."""
    return [(e.text, e.first_sentence, [candidate_text(e, m) for m in RECAP_METHODS])
            for e in load_echotrace(path).events() if e.text.strip()]
