"""Whole-book extraction by continuation (extract/continue_book.py) on scripted models whose
memory is known: a model that holds the whole book, one that holds only its first chapter,
one that refuses, one that crashes mid-way (resume), and Best-of-N's augmentations. The
share each run reports is checked against the words the scripted model was given, counted
here by hand."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path
from typing import Any

import pytest

from recitation.extract.bon import augment
from recitation.extract.continue_book import CONTINUE, ContinueJob, ContinueParams
from recitation.models.base import GenerationRequest
from recitation.models.scripted import ScriptedModel
from recitation.runs import runner
from recitation.runs.config import parse_config
from recitation.runs.jobs import WorkItem
from recitation.runs.store import RunStore

RNG = random.Random(5)
VOCAB = [f"{a}{b}" for a in ("lo", "ma", "pe", "ri", "su", "ta", "ve") for b in
         ("rn", "sk", "lt", "mp", "nd", "st", "ck", "ff")]
CH1 = [RNG.choice(VOCAB) for _ in range(600)]
CH2 = [RNG.choice(VOCAB) for _ in range(500)]
BOOK = CH1 + CH2


def _book_file(tmp_path: Path) -> Path:
    path = tmp_path / "book.txt"
    path.write_text("CHAPTER I\n\n" + " ".join(CH1) + "\n\nCHAPTER II\n\n" + " ".join(CH2)
                    + "\n", encoding="utf-8")
    return path


def _last_words(req: GenerationRequest) -> list[str]:
    if req.prompt is not None:
        return req.prompt.split()
    msgs = req.messages or ()
    said = [m.content for m in msgs if m.role == "assistant"]
    return (said[-1] if said else msgs[-1].content).split()


def memorizer(known: list[str], chunk: int = 80, after: str = "") -> Any:
    """Continues the book from the last 6 words it was shown, as far as ``known`` goes;
    past that (or when lost) it says ``after``."""
    def reply(req: GenerationRequest) -> str:
        tail = [w.rstrip(".") for w in _last_words(req)[-6:]]
        for i in range(len(known) - len(tail) + 1):
            if known[i:i + len(tail)] == tail:
                nxt = known[i + len(tail):i + len(tail) + chunk]
                return " ".join(nxt) if nxt else after
        return after
    return reply


def _job(tmp_path: Path, **kw: Any) -> tuple[ContinueJob, WorkItem]:
    params = ContinueParams(book=str(_book_file(tmp_path)), opening_words=10, **kw)
    job = ContinueJob(params, seed=0)
    return job, job.items()[0]


def _run(job: ContinueJob, item: WorkItem, reply: Any) -> dict[str, Any]:
    return asyncio.run(job.extract(item, ScriptedModel(reply)))


def test_a_model_that_holds_the_book_gives_it_all_back(tmp_path: Path) -> None:
    job, item = _job(tmp_path, mode="completion", max_calls=40)
    rec = _run(job, item, memorizer(BOOK))
    assert rec["stop_reason"] == "end_of_book" and rec["phase1_succeeded"]
    # every word after the 10 given, in one near-verbatim stretch
    assert rec["covered_words"] == len(BOOK) - 10 and rec["book_words"] == len(BOOK)
    assert rec["chapters"] == [{"title": "CHAPTER I", "words": 600, "covered": 590},
                               {"title": "CHAPTER II", "words": 500, "covered": 500}]
    assert rec["calls"] == 14 and len(rec["steps"]) == 14  # ceil(1090 / 80)


def test_a_model_that_holds_one_chapter_stops_when_it_no_longer_matches(
        tmp_path: Path) -> None:
    job, item = _job(tmp_path, mode="completion", max_calls=40, stop_window=2)
    junk = " ".join(f"x{i}" for i in range(50))
    rec = _run(job, item, memorizer(CH1, after=junk))
    assert rec["stop_reason"] == "no_match"
    assert rec["covered_words"] == 590 and rec["nv_recall"] == pytest.approx(590 / 1100)
    assert [c["covered"] for c in rec["chapters"]] == [590, 0]
    assert rec["longest_block_words"] == 590 and rec["longest_run_words"] == 590
    # 8 answers of the chapter, then two that add nothing: the window of 2 stops the run
    assert [s["new_words"] > 0 for s in rec["steps"]][-3:] == [True, False, False]


def test_the_model_continues_from_its_own_output_never_from_the_book(tmp_path: Path) -> None:
    wrong = list(BOOK)
    wrong[95:100] = ["zz"] * 5  # the model's own version differs from the book here
    job, item = _job(tmp_path, mode="completion", max_calls=4, context_words=80)
    model = ScriptedModel(memorizer(wrong))
    asyncio.run(job.extract(item, model))
    prompts = [r.prompt or "" for r in model.requests]
    assert "zz zz" in prompts[2] and all(len(p.split()) <= 80 for p in prompts[1:])


def test_chat_requests_keep_the_first_turn_and_the_last_exchanges(tmp_path: Path) -> None:
    job, item = _job(tmp_path, mode="chat", max_calls=5, keep_turns=2)
    model = ScriptedModel(memorizer(BOOK))
    rec = asyncio.run(job.extract(item, model))
    last = model.requests[-1].messages or ()
    assert [m.role for m in last] == ["user", "assistant", "user", "assistant", "user"]
    assert last[0].content.endswith(" ".join(BOOK[:10]))
    assert last[-1].content == CONTINUE and last[-2].content == rec["steps"][-2]["response"]
    assert rec["stop_reason"] == "max_calls" and rec["calls"] == 5


def test_a_refusing_model_gets_best_of_n_variants_then_the_probe_fails(
        tmp_path: Path) -> None:
    job, item = _job(tmp_path, mode="chat", best_of_n=3)
    model = ScriptedModel(lambda req: "I'm sorry, but I can't reproduce copyrighted text.")
    rec = asyncio.run(job.extract(item, model))
    assert rec["stop_reason"] == "probe_failed" and rec["phase1_attempts"] == 4
    assert rec["covered_words"] == 0 and all(s["refused"] for s in rec["steps"])
    firsts = [(r.messages or ())[0].content.split(":\n\n")[0] for r in model.requests]
    assert len(set(firsts)) == 4  # the plain request, then three different variants
    assert all(f.lower() != firsts[0].lower() or f == firsts[0] for f in firsts)


def test_a_variant_that_works_is_the_conversation_that_goes_on(tmp_path: Path) -> None:
    def reply(req: GenerationRequest) -> str:
        first = (req.messages or ())[0].content
        if first.startswith("Continue the following"):  # the plain request is refused
            return "I cannot reproduce that text."
        return memorizer(BOOK)(req)

    job, item = _job(tmp_path, mode="chat", best_of_n=2, max_calls=3)
    model = ScriptedModel(reply)
    rec = asyncio.run(job.extract(item, model))
    assert rec["phase1_attempts"] == 2 and rec["phase1_succeeded"]
    assert (model.requests[-1].messages or ())[0] == (model.requests[1].messages or ())[0]


def test_augment_is_seeded_and_only_scrambles_recases_and_nudges() -> None:
    text = "Continue the following text exactly as it appears"
    assert augment(text, 3) == augment(text, 3) != augment(text, 4)
    for seed in range(20):
        out = augment(text, seed)
        assert len(out) == len(text)
        if len(out.split(" ")) != len(text.split(" ")):
            continue  # a noised space joined two words
        for got, word in zip(out.split(" "), text.split(" "), strict=True):
            # the same letters (scrambled inside), up to case and one-code-point nudges
            assert len(got) == len(word)
            assert abs(ord(got[0].lower()) - ord(word[0].lower())) <= 1


def test_resume_after_a_crash_replays_the_stored_calls(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    book = _book_file(tmp_path)
    calls: list[str] = []
    crash = {"at": 5}

    def reply(req: GenerationRequest) -> str | BaseException:
        calls.append(req.prompt or "")
        if crash["at"] and len(calls) == crash["at"]:
            return KeyboardInterrupt()
        return memorizer(BOOK)(req)

    monkeypatch.setattr("recitation.models.registry.build_backend",
                        lambda cfg: ScriptedModel(reply))
    cfg = parse_config({"job": "continue", "model": {"backend": "scripted"}, "cache": False,
                        "params": {"book": str(book), "mode": "completion",
                                   "opening_words": 10, "max_calls": 8}})
    run_dir = runner.create_run(cfg, tmp_path / "runs")
    with pytest.raises(KeyboardInterrupt):
        asyncio.run(runner.execute(run_dir))
    crash["at"] = 0
    calls.clear()
    out = asyncio.run(runner.execute(run_dir))
    assert out.status == "completed"
    assert len(calls) == 4  # calls 1-4 from the run store; 5-8 asked now
    with RunStore(run_dir) as s:
        (_, rec), = list(s.results("continue"))
    assert rec["calls"] == 8 and rec["covered_words"] == 8 * 80


def test_paid_calls_wait_for_yes_after_the_estimate(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from recitation.cli import main

    asked: list[GenerationRequest] = []
    monkeypatch.setattr("recitation.models.registry.build_backend",
                        lambda cfg: ScriptedModel(lambda r: asked.append(r) or "x"))
    monkeypatch.setenv("RECITATION_TEST_KEY", "sk-test-not-used")
    code = main(["extract", "--methods", "continue", "--book", str(_book_file(tmp_path)),
                 "--target", "openai:gpt-4.1", "--target-key-env", "RECITATION_TEST_KEY",
                 "--max-calls", "5", "--runs-dir", str(tmp_path / "runs")])
    out, err = capsys.readouterr()
    assert code == 1 and "paid calls; nothing was called" in err
    assert "estimate for openai:gpt-4.1: 5 model calls" in out and "about $" in out
    assert asked == []
