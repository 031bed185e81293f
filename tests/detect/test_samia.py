"""SaMIA (detect/samia.py): the authors' prefix, suffix and ROUGE-1 by hand, the sampling
requests they make (temperature 1, top-k 50, 1,024 tokens with the prompt), a detect run on
a model that gives no log-probabilities, and top-k sampling itself (local backend, served)."""

from __future__ import annotations

import asyncio
import json
import random
import zlib
from pathlib import Path

import pytest

from recitation.detect.results import estimate_calls
from recitation.detect.samia import (
    prefix_of,
    rouge1_recall,
    samia_scores,
    suffix_words,
    words_of,
)
from recitation.models.base import Capabilities, GenerationRequest
from recitation.models.scripted import ScriptedModel
from recitation.runs.config import parse_config
from recitation.runs.jobs import make_job

TEXT = "a b c d e f g"  # 7 words


def test_prefix_and_suffix_as_the_authors_count_words() -> None:
    assert prefix_of(TEXT) == "a b c"  # int(7 * 0.5) = 3 words
    assert suffix_words(TEXT, 0.5, 7) == ["e", "f", "g"]  # round(3.5) = 4 (to even) dropped
    assert suffix_words("a  b c d", 0.5, 4) == ["c", "d"]  # empty strings dropped
    assert suffix_words("w " * 9 + "w", 0.5, 10)[:1] == ["w"]


def test_rouge1_recall_clips_counts_and_divides_by_the_reference() -> None:
    assert rouge1_recall(["x", "x", "y"], ["x", "y", "z", "z"]) == pytest.approx(2 / 4)
    assert rouge1_recall(["z", "z", "z"], ["x", "y", "z", "z"]) == pytest.approx(2 / 4)
    assert rouge1_recall([], ["x"]) == 0.0 and rouge1_recall(["x"], []) == 0.0


def test_samia_by_hand() -> None:
    """Two continuations of "a b c": " d e f g" reproduces the suffix ("e f g" after
    dropping 4 words of "a b c d e f g"), " x y z" shares nothing."""
    got = samia_scores(TEXT, [" d e f g", " x y z"])
    assert got["samia"] == pytest.approx((1.0 + 0.0) / 2)
    assert got["samia_zlib"] == pytest.approx(len(zlib.compress(b"e f g")) / 2)
    with pytest.raises(ValueError, match="at least one"):
        samia_scores(TEXT, [])


def _split_by_hand(text: str, seps: str) -> list[str]:
    """Brute force: a word is a maximal run of characters none of which is in ``seps``."""
    out, cur = [], ""
    for ch in text:
        if ch in seps:
            if cur:
                out.append(cur)
            cur = ""
        else:
            cur += ch
    return out + ([cur] if cur else [])


def test_words_split_on_spaces_or_on_any_whitespace() -> None:
    wrapped = "the cat\nsat on\nthe  mat\n"
    assert words_of(wrapped) == ["the", "cat\nsat", "on\nthe", "mat\n"]  # theirs
    assert words_of(wrapped, "whitespace") == ["the", "cat", "sat", "on", "the", "mat"]
    rng = random.Random(0)
    for _ in range(300):
        text = "".join(rng.choice("ab  \n\t\r") for _ in range(rng.randrange(25)))
        assert words_of(text, "authors") == _split_by_hand(text, " ")
        assert words_of(text, "whitespace") == _split_by_hand(text, " \n\t\r")
    with pytest.raises(ValueError, match="samia_words"):
        words_of("a b", "tabs")  # type: ignore[arg-type]


def test_hard_wrapped_text_by_hand() -> None:
    """n = 8 whitespace words, prefix "a b c d", round(4) = 4 words dropped.
    Reference with a newline: theirs ["a", "b", "c", "d", "e", "f\\ng", "h"] less 4 is
    ["e", "f\\ng", "h"]; the candidate "a b c d e f g h" less 4 is [e, f, g, h]: e and h
    match, 2 / 3; on any whitespace the reference is [e, f, g, h]: 4 / 4.
    A candidate wrapped by the model: theirs ["a", "b", "c", "d\\ne", "f\\ng", "h"] less 4
    is ["f\\ng", "h"] against [e, f, g, h]: 1 / 4; on any whitespace 4 / 4."""
    ref_wrapped = "a b c d e f\ng h"
    assert samia_scores(ref_wrapped, [" e f g h"])["samia"] == pytest.approx(2 / 3)
    assert samia_scores(ref_wrapped, [" e f g h"], words="whitespace")["samia"] == 1.0
    plain = "a b c d e f g h"
    assert samia_scores(plain, ["\ne f\ng h"])["samia"] == pytest.approx(1 / 4)
    got = samia_scores(plain, ["\ne f\ng h"], words="whitespace")
    assert got["samia"] == 1.0
    assert got["samia_zlib"] == pytest.approx(len(zlib.compress(b"e f g h")))
    # without a newline the two splits agree
    assert samia_scores(plain, [" e f x h"]) == samia_scores(plain, [" e f x h"],
                                                             words="whitespace")


class _BlackBox(ScriptedModel):
    """Text only: no log-probabilities. Members are continued with their true second half,
    controls with unrelated words; records every request."""

    capabilities = Capabilities(logprobs=False, full_distribution=False)

    def __init__(self, texts: dict[str, str]) -> None:
        super().__init__(self._answer, name="blackbox")
        self.texts = texts
        self.seen: list[GenerationRequest] = []

    def _answer(self, req: GenerationRequest) -> str:
        self.seen.append(req)
        full = self.texts[req.prompt or ""]
        return full[len(req.prompt or ""):] if "member" in full else " q r s t u v"


def _jsonl(path: Path, texts: list[str]) -> str:
    path.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in
                            enumerate(texts)), encoding="utf-8")
    return str(path)


def test_a_detect_run_on_a_model_without_log_probabilities(tmp_path: Path) -> None:
    members = [f"member text {i} one two three four five six seven eight" for i in range(3)]
    controls = [f"control words {i} alpha beta gamma delta epsilon zeta eta" for i in range(3)]
    params = {"members": [_jsonl(tmp_path / "m.jsonl", members)],
              "controls": [_jsonl(tmp_path / "c.jsonl", controls)], "detectors": ["samia"],
              "samia_samples": 4, "n_bootstrap": 0}
    model = _BlackBox({prefix_of(t): t for t in members + controls})
    job = make_job("detect", params, seed=0)
    records = asyncio.run(job.run_items(job.items(), model))
    scores = {r["sample"]["id"]: {s["detector"]: s["score"] for s in r["scores"]}
              for r in records}
    assert all(scores[f"m:{i}"]["samia"] == 1.0 for i in range(3))
    assert all(scores[f"c:{i}"]["samia"] == 0.0 for i in range(3))
    assert not any(r["errors"] for r in records)  # no score call was needed or made
    assert len(model.seen) == 6 * 4 and not model.scored
    r0 = model.seen[0]
    assert (r0.temperature, r0.top_k, r0.top_p) == (1.0, 50, 1.0)
    assert r0.max_tokens == 1024 - max(1, len(r0.prompt or "") // 4)
    assert len({r.seed for r in model.seen}) == 24  # one seed per sample and draw
    cfg = parse_config({"job": "detect", "model": {"backend": "scripted"}, "params": params})
    est = estimate_calls(make_job("detect", params, seed=0), cfg)  # type: ignore[arg-type]
    assert est["generate_calls"] == 24 and est["score_calls"] == 0


@pytest.mark.model
def test_top_k_one_samples_the_greedy_token(local_model) -> None:  # type: ignore[no-untyped-def]
    greedy = GenerationRequest(prompt="The LORD is my shepherd;", max_tokens=12)
    sampled = GenerationRequest(prompt="The LORD is my shepherd;", max_tokens=12,
                                temperature=1.0, top_k=1, seed=5)
    a, b = local_model.generate_sync([greedy, sampled])
    assert a.text == b.text
    wide = [GenerationRequest(prompt="The LORD is my shepherd;", max_tokens=12,
                              temperature=1.0, top_k=50, seed=s) for s in range(4)]
    assert len({g.text for g in local_model.generate_sync(wide)}) > 1


def test_top_k_reaches_a_served_model_through_the_openai_backend() -> None:
    from recitation.models.openai_backend import OpenAIModel
    from recitation.serve import start_server

    seen: list[GenerationRequest] = []

    def answer(req: GenerationRequest) -> str:
        seen.append(req)
        return "ok"

    with start_server(ScriptedModel(answer)) as h:
        m = OpenAIModel("scripted", base_url=h.url, api_key_env=None)
        req = GenerationRequest(prompt="x y", max_tokens=3, temperature=1.0, top_k=50, seed=1)
        (g,) = asyncio.run(m.generate([req]))
    assert g.text == "ok" and seen[0].top_k == 50
    assert "top_k" not in GenerationRequest(prompt="x").to_dict()  # cache keys unchanged


class _Wrapping(_BlackBox):
    """Continues members with their true second half, hard-wrapped: one word a line."""

    def _answer(self, req: GenerationRequest) -> str:
        got = super()._answer(req)
        return " " + got[1:].replace(" ", "\n")


@pytest.mark.parametrize(("words", "member_score"), [("authors", 0.0), ("whitespace", 1.0)])
def test_samia_words_and_max_tokens_reach_the_detector(tmp_path: Path, words: str,
                                                       member_score: float) -> None:
    """11 words, prefix of 5, 6 dropped. The continuation " three\\nfour...\\neight" makes
    the candidate's 6th space-separated word the whole rest: theirs leaves no candidate
    word (0.0); on any whitespace, the member's own words (1.0)."""
    members = [f"member text {i} one two three four five six seven eight" for i in range(3)]
    controls = [f"control words {i} alpha beta gamma delta epsilon zeta eta" for i in range(3)]
    params = {"members": [_jsonl(tmp_path / "m.jsonl", members)],
              "controls": [_jsonl(tmp_path / "c.jsonl", controls)], "detectors": ["samia"],
              "samia_samples": 2, "samia_max_tokens": 1024, "samia_words": words,
              "n_bootstrap": 0}
    model = _Wrapping({prefix_of(t): t for t in members + controls})
    job = make_job("detect", params, seed=0)
    records = asyncio.run(job.run_items(job.items(), model))
    scores = {r["sample"]["id"]: {s["detector"]: s["score"] for s in r["scores"]}
              for r in records}
    assert all(scores[f"m:{i}"]["samia"] == member_score for i in range(3))
    assert {r.max_tokens for r in model.seen} == {1024}  # the authors' 1,024 new tokens


def test_samia_words_refuses_other_splits() -> None:
    from recitation.errors import ConfigError

    with pytest.raises(ConfigError, match="samia_words"):
        make_job("detect", {"detectors": ["samia"], "samia_words": "tabs"}, seed=0)
