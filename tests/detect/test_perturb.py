"""Perturbations: intensity (exact amount of change), determinism, nesting."""

from __future__ import annotations

from typing import Any

import pytest

from recitation.detect.perturb import (
    TEXT_PERTURBATIONS,
    PublishedBitFlip,
    TokenBitFlip,
    bit_flip,
    case_flip,
    char_swap,
    flip_bits,
    flip_id_bits,
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


# pearl-v2 table 8's 18-word sentence and its o200k_base ids (21 tokens, 212 bits)
QUOTE = ("In the end, we will remember not the words of our enemies, but the silence of our "
         "friends.")
QUOTE_O200K = [637, 290, 1268, 11, 581, 738, 8203, 625, 290, 6391, 328, 1039, 33974, 11, 889,
               290, 37184, 328, 1039, 5664, 13]
O200K_VOCAB = 199_998


def test_published_flips_stay_in_each_ids_width_and_vocabulary() -> None:
    assert flip_id_bits(QUOTE_O200K, 0, 1, O200K_VOCAB) == QUOTE_O200K
    ids = [0, 1, 5, 131_071, 199_000, 199_997] * 20  # near the top: some flips leave the vocab
    for seed in range(30):
        out = flip_id_bits(ids, 40, seed, O200K_VOCAB)
        assert all(0 <= t < O200K_VOCAB for t in out)
        # a flip stays inside the id's own binary width (format(id, "b"), "0" for id 0)
        assert all((a ^ b).bit_length() <= max(1, a.bit_length())
                   for a, b in zip(ids, out, strict=True))


def test_published_flips_are_nested_and_deterministic() -> None:
    ids = [0, 3, 290, 8203, 131_072, 199_997, 150_000] * 10
    for seed in range(20):
        prev = [0] * len(ids)
        for k in range(0, 60, 5):
            out = flip_id_bits(ids, k, seed, O200K_VOCAB)
            assert out == flip_id_bits(ids, k, seed, O200K_VOCAB)
            masks = [a ^ b for a, b in zip(ids, out, strict=True)]
            # every flip made at the previous intensity is kept
            assert all(m & p == p for m, p in zip(masks, prev, strict=True))
            prev = masks


def _changed_tokens(seed: int, k: int) -> int:
    out = flip_id_bits(QUOTE_O200K, k, seed, O200K_VOCAB)
    return sum(a != b for a, b in zip(QUOTE_O200K, out, strict=True))


def _changed_tokens_law(k: int, seeds: int) -> tuple[float, float]:
    """Mean and sd of the seed-average of changed tokens of QUOTE_O200K at intensity k, from
    the released definition: each of a token's b bits flips with probability p = k / 1000,
    independently, so the token changes with probability 1 - (1 - p)^b (its ids stay below
    2^16 < the vocabulary: no flip is skipped), independently of the other tokens."""
    probs = [1 - (1 - k / 1000) ** max(1, t.bit_length()) for t in QUOTE_O200K]
    return sum(probs), (sum(q * (1 - q) for q in probs) / seeds) ** 0.5


def test_published_scale_changes_few_tokens_of_an_18_word_sentence() -> None:
    n = 4000
    bits = sum(max(1, t.bit_length()) for t in QUOTE_O200K)
    assert bits == 212 and max(QUOTE_O200K) < 2**16 < O200K_VOCAB
    # 0.21 tokens on average at k = 1 (the released code's p = 1/1000 per bit): about 1 in
    # 5 seeds changes a token; table 8 shows 1 changed token at k = 1 and 2-3 at k = 2..4
    # on the authors' ~200-word inputs. Each mean is within 4 sd of the exact expectation
    # (the seeds are fixed, so this is deterministic; 4 sd is 13% of the mean at k = 4).
    expected1, sd1 = _changed_tokens_law(1, n)
    mean1 = sum(_changed_tokens(s, 1) for s in range(n)) / n
    assert abs(mean1 - expected1) < 4 * sd1, (mean1, expected1)
    expected4, sd4 = _changed_tokens_law(4, n // 4)
    mean4 = sum(_changed_tokens(s, 4) for s in range(n // 4)) / (n // 4)
    assert abs(mean4 - expected4) < 4 * sd4, (mean4, expected4)  # 0.83 tokens
    # the utf8-percent variant damages ~40x more at k = 1 (7 bits of 720)
    words = QUOTE.split()
    hit = sum(a != b for a, b in zip(words, bit_flip(QUOTE, 1, 0).split(), strict=False))
    assert hit >= 3


class _O200kLike:
    """QUOTE's ids, as the o200k encoding gives them (no o200k needed for this test)."""

    vocab_size = O200K_VOCAB

    def encode(self, text: str) -> list[int]:
        return list(QUOTE_O200K) if text == QUOTE else [ord(c) for c in text]

    def decode(self, ids: list[int]) -> str:
        return " ".join(str(i) for i in ids)


def test_published_bit_flip_returns_the_input_when_no_bit_flips() -> None:
    fn = PublishedBitFlip(_O200kLike())
    outs = [fn(QUOTE, 1, s) for s in range(200)]
    assert sum(o == QUOTE for o in outs) > 100  # most seeds flip nothing at k = 1
    assert all(o == fn(QUOTE, 1, s) for s, o in enumerate(outs))
    assert fn(QUOTE, 0, 5) == QUOTE


def test_o200k_encoding_when_installed(require: Any) -> None:
    from recitation.detect.o200k import load_o200k

    enc = load_o200k()
    require(enc is not None, "no offline o200k encoding installed: bash scripts/setup.sh "
            "all,dev puts the official file in .venv/share/recitation/tiktoken (pip install "
            "'recitation[detect]' gives rs-bpe's copy)")
    assert enc is not None
    assert enc.encode(QUOTE) == QUOTE_O200K
    assert enc.decode(enc.encode(TEXT)) == TEXT
    fn = PublishedBitFlip(enc)
    outs = [fn(QUOTE, k, 3) for k in range(6)]
    assert outs[0] == QUOTE and all(isinstance(o, str) for o in outs)
    changed = [sum(a != b for a, b in zip(QUOTE_O200K, enc.encode(o), strict=False))
               for o in outs[1:]]
    assert max(changed) <= 8


def test_rs_bpe_matches_tiktoken_with_the_official_file(require: Any) -> None:
    from recitation.detect import o200k

    require(o200k.local_o200k_file() is not None and o200k._from_rs_bpe() is not None,
            "needs both rs-bpe and a local o200k_base.tiktoken for tiktoken: "
            "bash scripts/setup.sh all,dev installs them")
    tk, rs = o200k._from_tiktoken(), o200k._from_rs_bpe()
    assert tk is not None and rs is not None
    for text in (TEXT, QUOTE, "naïve café — 123456\n\n  def f(x):\n    return x**2  # ok"):
        assert tk.encode(text) == rs.encode(text)
    ids = [8203 ^ 1, 636, 5, 199_997]
    assert tk.decode(ids) == rs.decode(ids)


def test_get_perturbation_bitflip_scales() -> None:
    with pytest.raises(ConfigError, match="tokenizer"):
        get_perturbation("bitflip")  # published scale: token ids needed
    assert get_perturbation("bitflip", bitflip_scale="utf8-percent") is bit_flip
    assert isinstance(get_perturbation("bitflip", _O200kLike()), PublishedBitFlip)
    with pytest.raises(ConfigError, match="scale"):
        get_perturbation("bitflip", bitflip_scale="percent")  # type: ignore[arg-type]


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
