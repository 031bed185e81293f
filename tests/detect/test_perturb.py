"""Perturbations: intensity (exact amount of change), determinism, nesting."""

from __future__ import annotations

import pytest

from recitation.detect.perturb import (
    TEXT_PERTURBATIONS,
    TokenBitFlip,
    bit_flip,
    case_flip,
    char_swap,
    flip_bits,
    flip_token_bits,
    get_perturbation,
    n_changes,
    synonym_candidates,
    synonym_substitute,
    whitespace,
)
from recitation.errors import ConfigError

TEXT = ("Hear, O ye lamplighters of the city, and give ear unto the word that was spoken at "
        "the gate: for the night is long, and the oil is sold by measure. Ünïcödé ok.")


def _hamming(a: bytes, b: bytes) -> int:
    return sum(bin(x ^ y).count("1") for x, y in zip(a, b, strict=True))


@pytest.mark.parametrize("k", range(6))
def test_bit_flip_flips_exactly_k_percent_of_bits(k: int) -> None:
    data = TEXT.encode("utf-8")
    out = flip_bits(data, k, seed=3)
    assert len(out) == len(data)
    assert _hamming(data, out) == n_changes(8 * len(data), k)
    assert _hamming(data, out) == (0 if k == 0 else round(8 * len(data) * k / 100))


def test_bit_flip_decodes_to_text_and_is_deterministic() -> None:
    a = bit_flip(TEXT, 3, seed=1)
    assert isinstance(a, str) and a != TEXT
    assert a == bit_flip(TEXT, 3, seed=1)
    assert a != bit_flip(TEXT, 3, seed=2)
    assert bit_flip(TEXT, 0, seed=1) == TEXT


def test_bit_flips_are_nested_across_intensities() -> None:
    data = TEXT.encode()
    prev = data
    for k in range(1, 6):
        cur = flip_bits(data, k, seed=7)
        # every bit flipped at k-1 is also flipped at k
        assert _hamming(prev, cur) == _hamming(data, cur) - _hamming(data, prev)
        prev = cur


@pytest.mark.parametrize("k", [1, 3, 5])
def test_token_bit_flip_counts_bits_and_stays_in_vocabulary(k: int) -> None:
    ids = list(range(100, 160))
    out = flip_token_bits(ids, k, seed=0, vocab_size=49152)
    width = 16  # ceil(log2(49152))
    assert all(0 <= t < 49152 for t in out)
    raw = sum(bin(a ^ b).count("1") for a, b in zip(ids, out, strict=True))
    assert raw == n_changes(len(ids) * width, k)  # no wrap-around for these small ids
    assert out == flip_token_bits(ids, k, seed=0, vocab_size=49152)


class _CharTokenizer:
    vocab_size = 256

    def encode(self, text: str) -> list[int]:
        return list(text.encode("latin-1", errors="replace"))

    def decode(self, ids: list[int]) -> str:
        return bytes(ids).decode("latin-1")


def test_token_bit_flip_perturbation_round_trips_through_a_tokenizer() -> None:
    fn = TokenBitFlip(_CharTokenizer())
    assert fn("abc def", 0, 1) == "abc def"
    out = fn("abcdefghij" * 5, 5, 1)
    assert len(out) == 50 and out != "abcdefghij" * 5


def test_get_perturbation_needs_tokenizer_for_token_flips() -> None:
    with pytest.raises(ConfigError):
        get_perturbation("bitflip_tokens")
    with pytest.raises(ConfigError, match="unknown perturbation"):
        get_perturbation("bitflop")


SYN = {"city": ["town", "metropolis"], "night": ["nighttime", "dark"],
       "measure": ["step", "quantity"], "word": ["news"], "gate": ["door"],
       "long": ["prospicient"], "oil": ["petroleum"], "spoken": ["verbal"]}


def _syn(w: str) -> list[str]:
    return SYN.get(w, [])


@pytest.mark.parametrize("k", range(6))
def test_synonym_substitution_replaces_exactly_k_words(k: int) -> None:
    out = synonym_substitute(TEXT, k, seed=5, synonyms=_syn)
    changed = [(a, b) for a, b in zip(TEXT.split(), out.split(), strict=True) if a != b]
    assert len(changed) == k
    for a, b in changed:
        assert b.strip(",.:").lower() in SYN[a.strip(",.:").lower()]
    assert out == synonym_substitute(TEXT, k, seed=5, synonyms=_syn)


def test_synonym_substitution_is_nested_and_keeps_case() -> None:
    outs = [synonym_substitute(TEXT, k, seed=9, synonyms=_syn).split() for k in range(6)]
    words = TEXT.split()

    def changed(out: list[str]) -> set[int]:
        return {i for i, (a, b) in enumerate(zip(words, out, strict=True)) if a != b}

    for k in range(1, 6):
        assert changed(outs[k - 1]) <= changed(outs[k])
    assert synonym_substitute("City walls.", 1, 0, synonyms=_syn).split()[0] in ("Town",
                                                                                "Metropolis")


def test_synonym_substitution_never_touches_function_words() -> None:
    cands = {m.group().lower() for m in synonym_candidates(TEXT, lambda w: ["x"])}
    assert not cands & {"the", "and", "of", "for", "is", "that", "unto"}


def test_synonym_substitution_with_shipped_wordnet() -> None:
    out = synonym_substitute("The shepherd walked across the green meadow at dawn.", 2, 0)
    assert out != "The shepherd walked across the green meadow at dawn."
    assert len(out.split()) == 9


@pytest.mark.parametrize("k", range(6))
def test_case_flip_changes_k_percent_of_letters(k: int) -> None:
    out = case_flip(TEXT, k, seed=2)
    letters = sum(c.isalpha() and c.swapcase() != c for c in TEXT)
    assert out.lower() == TEXT.lower()
    assert sum(a != b for a, b in zip(TEXT, out, strict=True)) == n_changes(letters, k)


@pytest.mark.parametrize("k", range(6))
def test_whitespace_edits_k_percent_of_positions(k: int) -> None:
    out = whitespace(TEXT, k, seed=4)
    assert out.replace(" ", "") == TEXT.replace(" ", "")
    # each edit inserts or removes exactly one whitespace character
    inserted_or_removed = abs(len(out) - len(TEXT))
    assert inserted_or_removed <= n_changes(len(TEXT), k)
    assert (out == TEXT) == (k == 0)


@pytest.mark.parametrize("k", range(6))
def test_char_swap_permutes_characters(k: int) -> None:
    out = char_swap(TEXT, k, seed=8)
    assert sorted(out) == sorted(TEXT)
    assert (out == TEXT) == (k == 0)


@pytest.mark.parametrize("name", sorted(TEXT_PERTURBATIONS))
def test_every_perturbation_is_deterministic_and_identity_at_zero(name: str) -> None:
    fn = TEXT_PERTURBATIONS[name]
    assert fn(TEXT, 0, 11) == TEXT
    for k in (1, 5):
        assert fn(TEXT, k, 11) == fn(TEXT, k, 11)
