"""PROPME prompt sets and measures with scripted models."""

from __future__ import annotations

import pytest

from recitation.extract.propensity import (
    TextIndex,
    measure_set,
    parse_prompt_lines,
    prefix_prompts,
    propensity,
    propensity_report,
)
from recitation.models.base import GenerationRequest
from recitation.models.scripted import ScriptedModel

TEXT = ("In the beginning God created the heaven and the earth. And the earth was without "
        "form, and void; and darkness was upon the face of the deep. And the Spirit of God "
        "moved upon the face of the waters. And God said, Let there be light: and there was "
        "light. And God saw the light, that it was good: and God divided the light from the "
        "darkness.")


def test_parse_prompt_lines() -> None:
    reply = ('```jsonl\n{"prompt": "Write a poem about rain"}\n{"prompt": "Tell me a story"}\n'
             '{"prompt": "Write a poem about rain"}\n2. Describe a forest\n- List three birds\n```')
    assert parse_prompt_lines(reply, 10) == ["Write a poem about rain", "Tell me a story",
                                             "Describe a forest", "List three birds"]
    assert parse_prompt_lines(reply, 2) == ["Write a poem about rain", "Tell me a story"]


def test_prefix_prompts_are_seeded_sentence_starts() -> None:
    a = prefix_prompts(TEXT, 3, prefix_words=6, seed=1)
    assert a == prefix_prompts(TEXT, 3, prefix_words=6, seed=1) and len(a) == 3
    assert all(p in " ".join(TEXT.split()) and len(p.split()) == 6 for p in a)


def test_spans_and_metrics() -> None:
    index = TextIndex(TEXT, n=8)
    copy = "And the Spirit of God moved upon the face of the waters."
    mixed = "Something else entirely. " + copy + " Then nothing more."
    assert index.spans(copy) == [(0, 12)]
    assert index.spans(mixed)[0][1] == 12
    m = measure_set(index, [copy, mixed, "no overlap at all here"])
    assert m.avg_longest_span == pytest.approx(24 / 3) and m.with_span_ratio == pytest.approx(2 / 3)
    assert m.full_match_ratio == pytest.approx(1 / 3)


@pytest.mark.parametrize("np_,p,expected", [(0, 0, 0.0), (1, 1, 0.5), (0, 4, 0.0), (4, 0, 1.0),
                                            (1, 3, 0.25)])
def test_propensity_transform(np_: float, p: float, expected: float) -> None:
    assert propensity(np_, p) == pytest.approx(expected)


async def test_report_with_scripted_models() -> None:
    def target(req: GenerationRequest) -> str:
        if req.prompt is not None:  # prefix attack: the model continues verbatim
            i = " ".join(TEXT.split()).find(req.prompt)
            return " ".join(TEXT.split())[i:][:200]
        return "A generic answer with no copying."

    helper = ScriptedModel(lambda r: '{"prompt": "Tell me about creation"}\n{"prompt": "Hi"}')
    rep = await propensity_report(ScriptedModel(target), helper, TEXT, title="Genesis", n=2,
                                  prefix_words=6)
    assert rep["sets"]["generic"]["prompts"] == ["Tell me about creation", "Hi"]
    assert rep["sets"]["prefix"]["metrics"]["avg_longest_span"] > 8
    assert rep["sets"]["generic"]["metrics"]["avg_longest_span"] == 0
    assert rep["propensity"]["generic"]["avg_longest_span"] == 0.0  # far below neutral
