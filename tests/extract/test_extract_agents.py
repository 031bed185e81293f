"""Control flow of the RECAP agents with scripted models: refusal -> jailbreak -> feedback,
the released keep/stop rule, the continued refinement conversation, attempt sizes, every
attempt stored, costs booked per stage."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from recitation.corpus.echotrace import BLOCKED
from recitation.extract.agents import (
    REFINE_TURN,
    Pipeline,
    RecapConfig,
    attempt_allowance,
    rouge_recall,
    round_decision,
    run_all,
)
from recitation.extract.job import state_of
from recitation.extract.leak import LeakConfig
from recitation.extract.records import EventState
from recitation.models.base import GenerationRequest
from recitation.models.scripted import ScriptedModel

GOLD = ("Call me Ishmael. Some years ago, never mind how long precisely, having little or "
        "no money in my purse, and nothing particular to interest me on shore, I thought I "
        "would sail about a little and see the watery part of the world.")
FIRST = "Call me Ishmael."
HALF = "Call me Ishmael. Some years ago, never mind how long precisely, having little money."


def event(i: int = 0, gold: str = GOLD) -> EventState:
    return state_of(f"b/ch000/ev{i:03d}", {
        "work_title": "Moby Dick", "chapter_title": "Loomings", "characters": ["Ishmael"],
        "summary": ["The narrator explains why he goes to sea"], "first_sentence": FIRST,
        "text": gold})


def system_of(req: GenerationRequest) -> str:
    return next((m.content for m in req.messages or () if m.role == "system"), "")


def user_of(req: GenerationRequest) -> str:
    return next((m.content for m in reversed(req.messages or ()) if m.role == "user"), "")


def is_judge(req: GenerationRequest) -> bool:
    return system_of(req).startswith("You are a helpful red teaming")


def is_refine(req: GenerationRequest) -> bool:
    user = user_of(req)
    return "Leverage these new informations" in user or "IMPROVEMENT GUIDANCE" in user


def judge_by_keywords(req: GenerationRequest) -> str:
    resp = user_of(req).split("Response:", 1)[1]
    return "No" if "sorry" in resp.lower() else "Yes"


class Target:
    """Refuses the DSP prompt, half-answers the static jailbreak, improves with feedback."""

    def __init__(self, answers_after_feedback: list[str]) -> None:
        self.after = list(answers_after_feedback)

    def __call__(self, req: GenerationRequest) -> str:
        system = system_of(req)
        if is_judge(req):
            return judge_by_keywords(req)
        if system.startswith("You are analyzing how well"):
            return "1. MAJOR STRUCTURAL ISSUES:\n- the ending is missing"
        if is_refine(req):
            return self.after.pop(0) if self.after else HALF
        if system.startswith("We are evaluating"):
            return "I'm sorry, but I can't reproduce copyrighted text."
        if "Test the next function" in system:
            return HALF
        return "Continue: " + FIRST


async def test_refusal_then_jailbreak_then_feedback_to_target() -> None:
    model = ScriptedModel(Target([GOLD]))
    pipe = Pipeline(model, model, model, RecapConfig())
    ev = event()
    await run_all(pipe, [ev], methods={"prefix", "dsp", "dsp_jailbreak", "recap"})
    agent = ev.completions["Agent_Extraction"]
    assert agent["simple_agent_extraction"] == BLOCKED
    assert agent["simple_agent_jailbreak"] == HALF
    assert ev.refusals["dsp"] is True and ev.refusals["jailbreak:static"] is False
    assert agent["simple_agent_extraction_refined_0"] == {"text": HALF, "refinement_prompt": None}
    assert agent["simple_agent_extraction_refined_1"]["text"] == GOLD
    assert "ending is missing" in agent["simple_agent_extraction_refined_1"]["refinement_prompt"]
    assert ev.stop_reason == "reached_target" and ev.rounds == 1
    stages = [a["stage"] for a in ev.attempts]
    assert stages == ["prefix", "dsp", "jailbreak:static", "feedback", "refine"]
    # the refinement continues the jailbreak's conversation (released structure): its
    # system and user turns, the accepted text as the assistant turn, then the hints
    jb, refine = ev.attempts[2]["messages"], ev.attempts[-1]["messages"]
    assert refine[:2] == jb and "Test the next function" in refine[0]["content"]
    assert refine[2:] == [{"role": "assistant", "content": HALF}, {
        "role": "user", "content": REFINE_TURN.format(hints=ev.attempts[-2]["hint"])}]
    assert set(ev.ledger.stages) >= {"prefix", "dsp", "verify", "jailbreak", "feedback", "refine"}
    assert ev.ledger.stages["verify"].prompts == 2


async def test_jailbreak_pool_tried_in_order_until_one_passes() -> None:
    def target(req: GenerationRequest) -> str:
        s = system_of(req)
        if is_judge(req):
            return judge_by_keywords(req)
        if s.startswith("You are a literary historian"):  # past tense gets through
            return HALF
        return "Sorry, I cannot help with that."

    model = ScriptedModel(target)
    cfg = RecapConfig(max_rounds=0, jailbreaks=("static", "past_tense", "continuation"))
    pipe = Pipeline(model, model, model, cfg)
    evs = [event(0), event(1)]
    await run_all(pipe, evs, methods={"dsp_jailbreak"})
    for ev in evs:
        assert ev.refusals == {"dsp": True, "jailbreak:static": True,
                               "jailbreak:past_tense": False}
        assert ev.completions["Agent_Extraction"]["simple_agent_jailbreak"] == HALF
    systems = [system_of(r) for r in model.requests]
    assert not any(s.startswith("You are a text completion") for s in systems)


async def test_all_refused_skips_feedback() -> None:
    model = ScriptedModel(lambda r: "No" if is_judge(r) else "Sorry, no.")
    pipe = Pipeline(model, model, model, RecapConfig())
    ev = event()
    await run_all(pipe, [ev], methods={"recap"})
    assert ev.stop_reason == "refused" and not ev.accepted
    assert "simple_agent_extraction_refined_0" not in ev.completions["Agent_Extraction"]
    assert len(ev.completions["Agent_Extraction"]) == 2  # blocked DSP + the jailbreak


@pytest.mark.parametrize("best,score,expected", [
    (0.5, 0.52, (False, "no_improvement")),  # must beat the best by MORE than 0.02
    (0.5, 0.5201, (True, "")),
    (0.5, 0.4, (False, "no_improvement")),
    (0.5, 0.95, (True, "")),  # the target is "above 0.95", as released
    (0.5, 0.951, (True, "reached_target")),
    (0.94, 0.951, (False, "no_improvement")),
])
def test_round_decision_is_the_released_rule(best: float, score: float,
                                             expected: tuple[bool, str]) -> None:
    assert round_decision(best, score, RecapConfig()) == expected


def _words(n: int) -> str:
    return " ".join(GOLD.split()[:n])


async def test_loop_stops_when_a_round_gains_less_than_min_gain() -> None:
    # attempt 0 = 8 words, round 1 = 20 words (big gain), round 2 = 20 words (no gain)
    answers = [_words(20), _words(20), _words(30)]
    model = ScriptedModel(Target(answers))
    target_first = _words(8)

    def responder(req: GenerationRequest) -> str:
        if system_of(req).startswith("We are evaluating") and not is_refine(req):
            return target_first
        return model.responder(req)

    m2 = ScriptedModel(responder)
    pipe = Pipeline(m2, m2, m2, RecapConfig())
    ev = event()
    await run_all(pipe, [ev], methods={"recap"})
    assert ev.stop_reason == "no_improvement" and ev.rounds == 2
    assert [k for k in ev.rouge if k.startswith("round_")] == ["round_0", "round_1", "round_2"]
    agent = ev.completions["Agent_Extraction"]
    assert "simple_agent_extraction_refined_1" in agent  # kept
    assert "simple_agent_extraction_refined_2" not in agent  # no gain: run, stored, not kept
    assert [a.get("kept") for a in ev.attempts if a["stage"] == "refine"] == [True, False]


async def test_loop_stops_at_max_rounds() -> None:
    n = iter(range(9, 60, 4))  # every round gains >= 0.02

    def responder(req: GenerationRequest) -> str:
        s = system_of(req)
        if is_judge(req):
            return "Yes"
        if s.startswith("You are analyzing"):
            return "missing elements"
        return _words(next(n) if is_refine(req) else 5)

    model = ScriptedModel(responder)
    pipe = Pipeline(model, model, model, RecapConfig(max_rounds=3))
    ev = event()
    await run_all(pipe, [ev], methods={"recap"})
    assert ev.rounds == 3 and ev.stop_reason == "max_rounds"
    assert sum(a["stage"] == "refine" for a in ev.attempts) == 3


async def test_blocked_hint_never_reaches_the_target() -> None:
    leaky = "You forgot: " + _words(30)

    def responder(req: GenerationRequest) -> str:
        s = system_of(req)
        if is_judge(req):
            return "Yes"
        if s.startswith("You are analyzing"):
            return leaky
        return _words(5)

    model = ScriptedModel(responder)
    cfg = RecapConfig(leak=LeakConfig(block=True))
    ev = event()
    await run_all(Pipeline(model, model, model, cfg), [ev], methods={"recap"})
    assert ev.stop_reason == "hint_blocked" and ev.rounds == 0
    assert not any(is_refine(r) for r in model.requests)
    assert ev.hint_leaks[0]["blocked"] and ev.hint_leaks[0]["before"]["flagged"]
    assert ev.attempts[-1]["hint"] == leaky and ev.attempts[-1]["hint_sent"] is None
    # the guard's numbers, worked by hand: the hint is "you forgot" + gold words 1-30; words
    # 1-3 ("Call me Ishmael", the given-away first sentence) do not count, so the longest
    # copied run is words 4-30 (27 >= max_span 12); of its 25 distinct 8-grams the 23 that
    # do not touch "you forgot" are in the gold (>= max_shared 1)
    before = ev.hint_leaks[0]["before"]
    assert (before["longest_span"], before["shared_ngrams"], before["total_ngrams"]) == (
        27, 23, 25)
    assert ev.hint_leaks[0]["after"]["longest_span"] == 0  # nothing was left to send


async def test_keywords_only_verifier_makes_no_judge_calls() -> None:
    model = ScriptedModel(lambda r: HALF)
    pipe = Pipeline(model, model, None, RecapConfig(verifier="keywords", max_rounds=0))
    await run_all(pipe, [event()], methods={"dsp_jailbreak"})
    assert not any(is_judge(r) for r in model.requests)


# -- issue 8: the reported attempt, the refinement conversation, attempt sizes -------------
WORDS40 = " ".join(f"w{i}" for i in range(40))


def counted_event() -> EventState:
    """A 40-word gold passage, no first sentence given away: recall = words reproduced/40."""
    return state_of("b/ch000/ev000", {
        "work_title": "W", "chapter_title": "C", "characters": [], "summary": ["s"],
        "first_sentence": "", "text": WORDS40})


def scripted_rounds(first: str, rounds: list[str], hints: list[str] | None = None,
                    ) -> ScriptedModel:
    todo, notes = list(rounds), list(hints or [f"hint {i}" for i in range(1, 9)])

    def responder(req: GenerationRequest) -> str:
        if is_judge(req):
            return "Yes"
        if system_of(req).startswith("You are analyzing"):
            return notes.pop(0)
        return todo.pop(0) if is_refine(req) else first

    return ScriptedModel(responder)


def _w(a: int, b: int) -> str:
    return " ".join(f"w{i}" for i in range(a, b))


async def test_reported_attempt_is_the_best_kept_one_not_the_last() -> None:
    """Rounds scoring 0.25 -> 0.75 -> 0.025: the export reports 0.75 (refined_1); the
    0.025 attempt stays in the run record and attempts.jsonl, not in the EchoTrace file."""
    from recitation.corpus.echotrace import candidate_text
    from recitation.corpus.model import Book, Chapter, Event
    from recitation.evaluate import EvaluateConfig, evaluate_book
    from recitation.extract.export import build_book

    model = scripted_rounds(_w(0, 10), [_w(0, 30), "w39"])
    ev = counted_event()
    await run_all(Pipeline(model, model, model, RecapConfig()), [ev], methods={"recap"})
    assert ev.loop_scores == pytest.approx([0.25, 0.75, 0.025])
    assert ev.stop_reason == "no_improvement" and ev.rounds == 2 and ev.reported_round == 1
    agent = ev.completions["Agent_Extraction"]
    assert sorted(k for k in agent if "refined" in k) == [
        "simple_agent_extraction_refined_0", "simple_agent_extraction_refined_1"]
    assert ev.rouge["recap"] == pytest.approx(0.75) and ev.rouge["round_2"] == 0.025
    refines = [a for a in ev.attempts if a["stage"] == "refine"]
    assert [a["text"] for a in refines] == [_w(0, 30), "w39"]

    source = Book(id="b", title="W", chapters=[Chapter(id="ch000", title="C", events=[
        Event(id="b/ch000/ev000", title="t", text=WORDS40)])])
    book = build_book(source, [("b/ch000/ev000", {"kind": "event", **ev.to_record()})])
    exported = book.chapters[0].events[0]
    assert candidate_text(exported, "simple_agent_extraction_refined_best") == _w(0, 30)
    scores = evaluate_book(book, EvaluateConfig(mode="recap-compat"))["rouge_scores"]
    assert scores["simple_agent_extraction_refined_best"] == pytest.approx(0.75)


async def test_round_two_continues_the_conversation() -> None:
    model = scripted_rounds(_w(0, 10), [_w(0, 20), _w(0, 30), _w(0, 30)], ["h1", "h2", "h3"])
    ev = counted_event()
    await run_all(Pipeline(model, model, model, RecapConfig()), [ev], methods={"recap"})
    dsp = next(r for r in model.requests if system_of(r).startswith("We are evaluating"))
    refines = [r for r in model.requests if is_refine(r)]
    assert len(refines) == 3
    msgs = [(m.role, m.content) for m in refines[1].messages or ()]
    assert msgs == [(m.role, m.content) for m in dsp.messages or ()] + [
        ("assistant", _w(0, 10)), ("user", REFINE_TURN.format(hints="h1")),
        ("assistant", _w(0, 20)), ("user", REFINE_TURN.format(hints="h2"))]
    # the helper is shown the last attempt
    helper = [r for r in model.requests if system_of(r).startswith("You are analyzing")]
    assert user_of(helper[1]).rsplit("COMPLETION:", 1)[1].strip() == _w(0, 20)


async def test_restate_option_sends_system_and_one_user_turn() -> None:
    model = scripted_rounds(_w(0, 10), [_w(0, 20), _w(0, 20)], ["h1", "h2"])
    cfg = RecapConfig(refine_conversation="restate")
    await run_all(Pipeline(model, model, model, cfg), [counted_event()], methods={"recap"})
    second = [r for r in model.requests if is_refine(r)][1]
    roles = [m.role for m in second.messages or ()]
    assert roles == ["system", "user"] and _w(0, 20) in user_of(second) and "h2" in user_of(
        second)


async def test_attempts_get_the_released_allowance_and_hints_are_not_cut() -> None:
    model = scripted_rounds(_w(0, 10), [_w(0, 20), _w(0, 20)])
    ev = counted_event()
    await run_all(Pipeline(model, model, model, RecapConfig()), [ev], methods={"recap"})
    target = [r for r in model.requests
              if not is_judge(r) and not system_of(r).startswith("You are analyzing")]
    assert target and {r.max_tokens for r in target} == {40 + 1000}
    assert all(r.temperature == 0 for r in model.requests)
    helper = [r for r in model.requests if system_of(r).startswith("You are analyzing")]
    assert {r.max_tokens for r in helper} == {4096}


@pytest.mark.parametrize("cfg,refine,expected", [
    (RecapConfig(), False, 1040),
    (RecapConfig(max_new_tokens=128), False, 128),  # a named cap (e.g. quick CPU runs)
    (RecapConfig(max_new_tokens=512, length_factor=1.5), False, int((56 + 8) * 1.5)),
])
def test_attempt_allowance(cfg: RecapConfig, refine: bool, expected: int) -> None:
    assert attempt_allowance(WORDS40, cfg, refine=refine) == expected


def test_refinement_allowance_counts_words_as_released() -> None:
    gold = "one  two\nthree"  # released refinements count gold.split(" ")
    assert attempt_allowance(gold, RecapConfig(), refine=False) == 3 + 1000
    assert attempt_allowance(gold, RecapConfig(), refine=True) == 3 + 1000
    assert attempt_allowance("a  b", RecapConfig(), refine=True) == 3 + 1000


async def test_loop_scores_against_the_full_gold_by_default() -> None:
    model = scripted_rounds(HALF, [HALF])
    ev = event()
    await run_all(Pipeline(model, model, model, RecapConfig()), [ev], methods={"recap"})
    assert ev.loop_scores[0] == rouge_recall(ev.gold, HALF)
    assert ev.rouge["round_0"] == rouge_recall(ev.gold_scored, HALF)
    ev2, model = event(), scripted_rounds(HALF, [HALF])
    cfg = RecapConfig(loop_gold="scored")
    await run_all(Pipeline(model, model, model, cfg), [ev2], methods={"recap"})
    assert ev2.loop_scores[0] == rouge_recall(ev2.gold_scored, HALF) != ev.loop_scores[0]


# KJV, Genesis 1:1-3 (public domain)
GENESIS = ("In the beginning God created the heaven and the earth. And the earth was without "
           "form, and void; and darkness was upon the face of the deep. And the Spirit of God "
           "moved upon the face of the waters. And God said, Let there be light: and there was "
           "light.")


@pytest.mark.slow
@pytest.mark.model
async def test_feedback_loop_on_the_real_model_reports_no_less_than_dsp(
        local_model) -> None:  # type: ignore[no-untyped-def]
    """What the scripted tests above show with a target that answers better on cue (the word
    GUIDANCE in its prompt), on the embedded SmolLM2 as target and helper: the real helper's
    hints reach the target in the continued conversation, every kept round beats the best
    before it by more than ``min_gain``, so the reported RECAP attempt is never below DSP."""
    cfg = RecapConfig(verifier="keywords", max_rounds=1, max_new_tokens=48,
                      feedback_max_tokens=48)
    pipe = Pipeline(local_model, local_model, None, cfg)
    ev = state_of("genesis/ch000/ev000", {
        "work_title": "The Holy Bible, King James Version", "chapter_title": "Genesis 1",
        "characters": ["God"], "summary": ["God creates the heaven, the earth and light"],
        "first_sentence": "In the beginning God created the heaven and the earth.",
        "text": GENESIS})
    await run_all(pipe, [ev], methods={"dsp", "recap"})
    assert ev.accepted, ev.completions
    hints = [a for a in ev.attempts if a["stage"] == "feedback"]
    refines = [a for a in ev.attempts if a["stage"] == "refine"]
    assert len(hints) == 1 and hints[0]["hint"].strip()  # the real helper wrote a hint
    # The guard only measures here (``leak.block`` is off by default): whatever the hint
    # quotes, it is sent whole, so the refinement turn always happens.
    assert cfg.leak.block is False
    assert hints[0]["leak"]["blocked"] is False and hints[0]["leak"]["removed_lines"] == 0
    assert hints[0]["hint_sent"] == hints[0]["hint"]
    assert ev.stop_reason != "hint_blocked" and len(refines) == 1 and ev.rounds == 1
    assert refines[0]["messages"][-1]["content"] == REFINE_TURN.format(hints=hints[0]["hint"])
    assert refines[0]["messages"][-2] == {"role": "assistant", "content": ev.agent[
        "simple_agent_extraction_refined_0"]["text"]}  # the continued conversation
    # the loop's scores against the full gold, from the rouge-score package itself
    from rouge_score import rouge_scorer

    scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)
    refined_0 = ev.agent["simple_agent_extraction_refined_0"]["text"]
    assert ev.loop_scores == pytest.approx(
        [scorer.score(GENESIS, refined_0)["rougeL"].recall,
         scorer.score(GENESIS, refines[0]["text"])["rougeL"].recall], abs=1e-12)
    kept = ev.loop_scores[1] > ev.loop_scores[0] + cfg.min_gain
    assert refines[0]["kept"] is kept and ev.reported_round == int(kept)
    assert ev.stop_reason == ("no_improvement" if not kept else "reached_target"
                              if ev.loop_scores[1] > cfg.stop_rouge else "max_rounds")
    assert ev.rouge["recap"] >= ev.rouge["dsp"]


def _extract_args(*extra: str) -> argparse.Namespace:
    from recitation.extract.cli import add_extract_parser

    parser = argparse.ArgumentParser(prog="recitation")
    add_extract_parser(parser.add_subparsers(dest="command"))
    return parser.parse_args(["extract", *extra])


def test_cli_defaults_to_the_released_allowance_and_uncut_hints(tmp_path: Path) -> None:
    from recitation.extract.cli import build_params, request_timeout_for
    from recitation.extract.job import ExtractParams

    book = tmp_path / "b.txt"
    book.write_text("word " * 300, encoding="utf-8")
    args = _extract_args("--book", str(book), "--target", "scripted:x")
    params = ExtractParams.model_validate(build_params(args))
    assert params.recap.max_new_tokens is None and params.recap.length_factor is None
    assert params.recap.feedback_max_tokens == 4096
    # a plain-text book is segmented: the summary agent's 16k-token limit sets the timeout
    assert request_timeout_for(args) == 60 + 16384 / 20
    capped = _extract_args("--book", str(book), "--target", "scripted:x",
                           "--max-new-tokens", "128", "--feedback-max-tokens", "400",
                           "--timeout", "30")
    params = ExtractParams.model_validate(build_params(capped))
    assert params.recap.max_new_tokens == 128 and params.recap.feedback_max_tokens == 400
    assert request_timeout_for(capped) == 30


def test_cli_timeout_scales_with_the_longest_event(shared_data: Path) -> None:
    from recitation.corpus.echotrace import load_echotrace
    from recitation.extract.cli import request_timeout_for

    folder = shared_data / "echotrace/books/A_Christmas_Carol_-_Charles_Dickens"
    book = next(folder.glob("*_summary_*.json"))
    longest = max(len(e.text.split()) for e in load_echotrace(book).events())
    args = _extract_args("--book", str(book), "--target", "scripted:x")
    assert request_timeout_for(args) == 60 + max(longest + 1000, 4096) / 20
