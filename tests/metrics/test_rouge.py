"""ROUGE-L against the rouge-score package (the reference implementation)."""

from __future__ import annotations

import json
import random
import string
from pathlib import Path

import pytest

from recitation.metrics.rouge import RougeScore, lcs_length, rouge_l, rouge_l_batch, rouge_tokenize

rouge_scorer = pytest.importorskip("rouge_score.rouge_scorer")

WORDS = (
    "the running runs ran runner cat cats caresses ponies happily happiness "
    "relational conditional generously a an I it's don't Über naïve 1999 3.14 "
    "well-known e-mail CAPS MiXeD"
).split()


def _random_text(rng: random.Random, n: int) -> str:
    parts = []
    for _ in range(n):
        w = (
            rng.choice(WORDS)
            if rng.random() < 0.8
            else "".join(
                rng.choice(string.ascii_letters + string.digits + "’'-,.!?é")
                for _ in range(rng.randint(1, 8))
            )
        )
        parts.append(w)
    return rng.choice([" ", "  ", "\n"]).join(parts)


def _assert_equal(ours: RougeScore, ref: object) -> None:
    assert abs(ours.precision - ref.precision) <= 1e-9  # type: ignore[attr-defined]
    assert abs(ours.recall - ref.recall) <= 1e-9  # type: ignore[attr-defined]
    assert abs(ours.fmeasure - ref.fmeasure) <= 1e-9  # type: ignore[attr-defined]


@pytest.mark.parametrize("use_stemmer", [False, True])
def test_random_texts_match_rouge_score(use_stemmer: bool) -> None:
    rng = random.Random(1234)
    scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=use_stemmer)
    for _ in range(300):
        ref = _random_text(rng, rng.randint(0, 60))
        cand = _random_text(rng, rng.randint(0, 60))
        _assert_equal(
            rouge_l(ref, cand, use_stemmer=use_stemmer), scorer.score(ref, cand)["rougeL"]
        )


@pytest.mark.parametrize("use_stemmer", [False, True])
def test_real_texts_match_rouge_score(shared_data: Path, use_stemmer: bool) -> None:
    book = shared_data / "echotrace/books/Alice_Adventures_in_Wonderland_-_Lewis_Carroll"
    path = next((book / "Extractions").glob("*deepseek-chat*.json"))
    data = json.loads(path.read_text(encoding="utf-8"))
    pairs = []
    for ch in data["chapters"][:4]:
        for ev in ch["events"]:
            pairs.append((ev["text_segment"], ev["LLM_completions"]["prefix-probing"]))
            pairs.append(
                (
                    ev["text_segment"],
                    ev["LLM_completions"]["Agent_Extraction"]["simple_agent_extraction"],
                )
            )
    scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=use_stemmer)
    ours = rouge_l_batch([p[0] for p in pairs], [p[1] for p in pairs], use_stemmer=use_stemmer)
    assert len(ours) == len(pairs) > 20
    for (ref, cand), score in zip(pairs, ours, strict=True):
        _assert_equal(score, scorer.score(ref, cand)["rougeL"])


def test_tokenizer_matches_rouge_score() -> None:
    from rouge_score import tokenizers

    rng = random.Random(7)
    for stem in (False, True):
        tok = tokenizers.DefaultTokenizer(use_stemmer=stem)
        for _ in range(200):
            text = _random_text(rng, 30)
            assert rouge_tokenize(text, use_stemmer=stem) == tok.tokenize(text)


def test_lcs_against_dynamic_programming() -> None:
    rng = random.Random(3)
    for _ in range(200):
        a = [rng.choice("abcd") for _ in range(rng.randint(0, 25))]
        b = [rng.choice("abcd") for _ in range(rng.randint(0, 25))]
        table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
        for i in range(1, len(a) + 1):
            for j in range(1, len(b) + 1):
                table[i][j] = (
                    table[i - 1][j - 1] + 1
                    if a[i - 1] == b[j - 1]
                    else max(table[i - 1][j], table[i][j - 1])
                )
        assert lcs_length(a, b) == table[-1][-1]


def test_empty_and_mismatched_inputs() -> None:
    assert rouge_l("", "anything") == RougeScore(0.0, 0.0, 0.0)
    assert rouge_l("!!!", "...") == RougeScore(0.0, 0.0, 0.0)
    assert rouge_l("a b c", "a b c") == RougeScore(1.0, 1.0, 1.0)
    with pytest.raises(ValueError):
        rouge_l_batch(["a"], ["a", "b"])
