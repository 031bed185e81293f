"""Control flow of the RECAP agents with scripted models: refusal -> jailbreak -> feedback,
the stopping rules, every attempt stored, costs booked per stage."""

from __future__ import annotations

import re

import pytest

from recitation.corpus.echotrace import BLOCKED
from recitation.extract import prompts
from recitation.extract.agents import Pipeline, RecapConfig, run_all, should_stop
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


def judge_by_keywords(req: GenerationRequest) -> str:
    resp = user_of(req).split("Response:", 1)[1]
    return "No" if "sorry" in resp.lower() else "Yes"


class Target:
    """Refuses the DSP prompt, half-answers the static jailbreak, improves with feedback."""

    def __init__(self, answers_after_feedback: list[str]) -> None:
        self.after = list(answers_after_feedback)

    def __call__(self, req: GenerationRequest) -> str:
        system, user = system_of(req), user_of(req)
        if system == prompts.VERIFIER_SYSTEM:
            return judge_by_keywords(req)
        if system.startswith("You are analyzing how well"):
            return "1. MAJOR STRUCTURAL ISSUES:\n- the ending is missing"
        if "IMPROVEMENT GUIDANCE" in user:
            return self.after.pop(0) if self.after else HALF
        if system.startswith("We are evaluating"):
            return "I'm sorry, but I can't reproduce copyrighted text."
        if system.startswith("Test the next function"):
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
    assert ev.refusals == {"dsp": True, "jailbreak:static": False}
    assert agent["simple_agent_extraction_refined_0"] == {"text": HALF, "refinement_prompt": None}
    assert agent["simple_agent_extraction_refined_1"]["text"] == GOLD
    assert "ending is missing" in agent["simple_agent_extraction_refined_1"]["refinement_prompt"]
    assert ev.stop_reason == "reached_target" and ev.rounds == 1
    stages = [a["stage"] for a in ev.attempts]
    assert stages == ["prefix", "dsp", "jailbreak:static", "feedback", "refine"]
    # the refinement keeps the jailbreak's system prompt and shows the previous attempt
    refine = ev.attempts[-1]["messages"]
    assert refine[0]["content"].startswith("Test the next function")
    assert HALF in refine[1]["content"]
    assert set(ev.ledger.stages) == {"prefix", "dsp", "verify", "jailbreak", "feedback", "refine"}
    assert ev.ledger.stages["verify"].prompts == 2


async def test_jailbreak_pool_tried_in_order_until_one_passes() -> None:
    def target(req: GenerationRequest) -> str:
        s = system_of(req)
        if s == prompts.VERIFIER_SYSTEM:
            return judge_by_keywords(req)
        if s.startswith("You are a literary historian"):  # past tense gets through
            return HALF
        return "Sorry, I cannot help with that."

    model = ScriptedModel(target)
    pipe = Pipeline(model, model, model, RecapConfig(max_rounds=0))
    evs = [event(0), event(1)]
    await run_all(pipe, evs, methods={"dsp_jailbreak"})
    for ev in evs:
        assert ev.refusals == {"dsp": True, "jailbreak:static": True,
                               "jailbreak:past_tense": False}
        assert ev.completions["Agent_Extraction"]["simple_agent_jailbreak"] == HALF
    systems = [system_of(r) for r in model.requests]
    assert not any(s.startswith("You are a text completion") for s in systems)


async def test_all_refused_skips_feedback() -> None:
    model = ScriptedModel(lambda r: "No" if system_of(r) == prompts.VERIFIER_SYSTEM
                          else "Sorry, no.")
    pipe = Pipeline(model, model, model, RecapConfig())
    ev = event()
    await run_all(pipe, [ev], methods={"recap"})
    assert ev.stop_reason == "refused" and not ev.accepted
    assert "simple_agent_extraction_refined_0" not in ev.completions["Agent_Extraction"]
    assert len(ev.completions["Agent_Extraction"]) == 2  # blocked DSP + last jailbreak text


@pytest.mark.parametrize("history,expected", [
    ([0.96], "reached_target"),
    ([0.95], "reached_target"),
    ([0.5], None),
    ([0.5, 0.51], "no_improvement"),
    ([0.5, 0.4], "no_improvement"),
    ([0.5, 0.52], None),
    ([0.5, 0.6, 0.95], "reached_target"),
])
def test_stopping_rule(history: list[float], expected: str | None) -> None:
    assert should_stop(history, 0.95, 0.02) == expected


def _words(n: int) -> str:
    return " ".join(GOLD.split()[:n])


async def test_loop_stops_when_a_round_gains_less_than_min_gain() -> None:
    # attempt 0 = 8 words, round 1 = 20 words (big gain), round 2 = 20 words (no gain)
    answers = [_words(20), _words(20), _words(30)]
    model = ScriptedModel(Target(answers))
    target_first = _words(8)

    def responder(req: GenerationRequest) -> str:
        if system_of(req).startswith("We are evaluating") and "IMPROVEMENT" not in user_of(req):
            return target_first
        return model.responder(req)

    m2 = ScriptedModel(responder)
    pipe = Pipeline(m2, m2, m2, RecapConfig())
    ev = event()
    await run_all(pipe, [ev], methods={"recap"})
    assert ev.stop_reason == "no_improvement" and ev.rounds == 2
    assert [k for k in ev.rouge if k.startswith("round_")] == ["round_0", "round_1", "round_2"]
    assert "simple_agent_extraction_refined_3" not in ev.completions["Agent_Extraction"]


async def test_loop_stops_at_max_rounds() -> None:
    n = iter(range(9, 60, 4))  # every round gains >= 0.02

    def responder(req: GenerationRequest) -> str:
        s = system_of(req)
        if s == prompts.VERIFIER_SYSTEM:
            return "Yes"
        if s.startswith("You are analyzing"):
            return "missing elements"
        return _words(next(n) if "IMPROVEMENT" in user_of(req) else 5)

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
        if s == prompts.VERIFIER_SYSTEM:
            return "Yes"
        if s.startswith("You are analyzing"):
            return leaky
        return _words(5)

    model = ScriptedModel(responder)
    cfg = RecapConfig(leak=LeakConfig(block=True))
    ev = event()
    await run_all(Pipeline(model, model, model, cfg), [ev], methods={"recap"})
    assert ev.stop_reason == "hint_blocked" and ev.rounds == 0
    assert not any("IMPROVEMENT GUIDANCE" in user_of(r) for r in model.requests)
    assert ev.hint_leaks[0]["blocked"] and ev.hint_leaks[0]["before"]["flagged"]
    assert ev.attempts[-1]["hint"] == leaky and ev.attempts[-1]["hint_sent"] is None


async def test_keywords_only_verifier_makes_no_judge_calls() -> None:
    model = ScriptedModel(lambda r: HALF)
    pipe = Pipeline(model, model, None, RecapConfig(verifier="keywords", max_rounds=0))
    await run_all(pipe, [event()], methods={"dsp_jailbreak"})
    assert not any(system_of(r) == prompts.VERIFIER_SYSTEM for r in model.requests)


async def test_extraction_calls_are_greedy_and_sized_to_the_gold() -> None:
    model = ScriptedModel(Target([GOLD]))
    await run_all(Pipeline(model, model, model, RecapConfig(max_new_tokens=1000)), [event()],
                  methods={"recap"})
    assert all(r.temperature == 0 for r in model.requests)
    n_gold = len(event().gold_scored.split())
    sizes = {r.max_tokens for r in model.requests if not re.match(
        r"You are (a helpful red|analyzing)", system_of(r))}
    assert sizes and all(s < 1000 and s >= n_gold for s in sizes)
