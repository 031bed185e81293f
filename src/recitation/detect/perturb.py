"""Seeded, reproducible input perturbations for PEARL.

Every perturbation is a function ``(text, k, seed) -> text`` where ``k`` is the intensity
(PEARL uses k = 0..5) and ``k == 0`` returns the text unchanged. The same ``(text, k, seed)``
always gives the same output (``random.Random`` seeded with a string is stable across
Python versions and processes).

Perturbations are *nested*: the edits made at intensity k are a subset of those made at
k + 1 (one seeded order of positions, cut at the intensity's count), so a sample's
performance curve over k reflects growing damage rather than fresh noise at every step.

Intensity units
---------------
* ``bitflip`` (scale ``published``, the default) — as the PEARL authors' released code: the
  input is tokenized (OpenAI ``o200k_base`` ids when an offline copy is installed, see
  :mod:`recitation.detect.o200k`; else the target model's own tokenizer) and every bit of
  every token id, written in its own binary width (``format(id, "b")``), is flipped with
  probability ``k / 1000``; decoded back. A flip that would leave the vocabulary is skipped
  (the authors redraw the token), which keeps the edits nested. On an 18-word sentence
  (21 o200k tokens, 212 bits) k = 1 changes 0.21 tokens on average; on the authors'
  ~200-word inputs about 2.
* ``bitflip`` (scale ``utf8-percent``) — our earlier variant: k percent of the UTF-8 *bits*
  of the input are flipped (exactly ``n_changes(8 * len(bytes), k)`` distinct bits), then
  decoded back with ``errors`` (default ``"replace"``: invalid sequences become U+FFFD) —
  the wording of PEARL v1 section 3.1; about 10x stronger per step than the released code.
* ``bitflip_tokens`` — k percent of the bits of the target's token ids (each id written with
  ``ceil(log2(vocab_size))`` bits) are flipped; ids that land outside the vocabulary wrap
  modulo its size; decoded back.
* ``synonym`` — k words replaced with a WordNet 3.0 synonym (PEARL v2, "replacing k words
  with synonyms from a predefined dictionary"); function words are never replaced.
* ``whitespace`` / ``char_swap`` / ``case_flip`` — k percent of the character positions
  (respectively: a space inserted before the character, or the whitespace character
  removed; two adjacent characters swapped; a letter's case flipped).

``n_changes(n, k)`` is ``max(1, round(n * k / 100))`` for k > 0 (capped at ``n``), so any
k > 0 changes the input (all perturbations but the published bit flip, whose k = 1 often
changes nothing on a short input, as in the released code).
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from recitation.errors import ConfigError

Perturb = Callable[[str, int, int], str]
BitflipScale = Literal["published", "utf8-percent"]
BITFLIP_SCALES: tuple[BitflipScale, ...] = ("published", "utf8-percent")

STOPWORDS = frozenset(
    "a an the and or but nor for so yet of in on at by to from with into unto upon over under"
    " i me my mine we us our ours you your yours thou thee thy thine ye he him his she her hers"
    " it its they them their theirs this that these those who whom whose which what there here"
    " be is am are was were been being have has hath had do does doth did not no shall will"
    " would should can could may might must as if than then when while also all any some each"
    " every very too only just more most such own same other let up out off again".split())
_WORD = re.compile(r"[A-Za-z]+(?:'[A-Za-z]+)?")


def n_changes(n: int, k: int) -> int:
    """How many of ``n`` units intensity ``k`` (percent) changes: 0 for k = 0, else >= 1."""
    if k < 0:
        raise ValueError(f"intensity must be >= 0, got {k}")
    if k == 0 or n == 0:
        return 0
    return min(n, max(1, round(n * k / 100)))


def _order(n: int, seed: int, salt: str) -> list[int]:
    """One seeded permutation of range(n); cutting it at any count gives nested edit sets."""
    idx = list(range(n))
    random.Random(f"{salt}:{seed}:{n}").shuffle(idx)
    return idx


def flip_bits(data: bytes, k: int, seed: int) -> bytes:
    """Flip exactly ``n_changes(8 * len(data), k)`` distinct bits of ``data``."""
    buf = bytearray(data)
    for pos in _order(len(buf) * 8, seed, "bitflip")[: n_changes(len(buf) * 8, k)]:
        buf[pos // 8] ^= 1 << (pos % 8)
    return bytes(buf)


def bit_flip(text: str, k: int, seed: int, *, errors: str = "replace") -> str:
    """The ``utf8-percent`` bit flip: k percent of the text's UTF-8 bits (our variant)."""
    if k == 0:
        return text
    return flip_bits(text.encode("utf-8"), k, seed).decode("utf-8", errors=errors)


def flip_token_bits(ids: Sequence[int], k: int, seed: int, vocab_size: int) -> list[int]:
    """Flip k percent of the bits of ``ids`` (``ceil(log2(vocab_size))`` bits per id)."""
    if vocab_size < 2:
        raise ValueError("vocab_size must be >= 2")
    width = max(1, math.ceil(math.log2(vocab_size)))
    out = list(ids)
    n = len(out) * width
    for pos in _order(n, seed, "tokbits")[: n_changes(n, k)]:
        out[pos // width] ^= 1 << (pos % width)
    return [t % vocab_size for t in out]


class Tokenizer(Protocol):
    """What the token-level bit flips need from a tokenizer."""

    @property
    def vocab_size(self) -> int: ...

    def encode(self, text: str) -> list[int]: ...

    def decode(self, ids: list[int]) -> str: ...


def flip_id_bits(ids: Sequence[int], k: int, seed: int, vocab_size: int) -> list[int]:
    """The released PEARL bit flip: each bit of each id (in the id's own binary width) flips
    with probability ``k / 1000``.

    Every bit gets one seeded uniform draw u; at intensity k the bits with u < k/1000 are
    flipped in increasing u, skipping a flip that would give an id >= ``vocab_size`` — so the
    flips at k are a subset of those at k + 1.
    """
    if k < 0:
        raise ValueError(f"intensity must be >= 0, got {k}")
    out = list(ids)
    if k == 0:
        return out
    rng = random.Random(f"idbits:{seed}:{len(out)}")
    chosen = []
    for t, tok in enumerate(out):
        for bit in range(max(1, int(tok).bit_length())):
            u = rng.random()
            if u < k / 1000:
                chosen.append((u, t, bit))
    for _, t, bit in sorted(chosen):
        if (flipped := out[t] ^ (1 << bit)) < vocab_size:
            out[t] = flipped
    return out


@dataclass(frozen=True)
class TokenBitFlip:
    """``bitflip_tokens``: k% of the bits of the target's token ids (our variant)."""

    tokenizer: Tokenizer

    def __call__(self, text: str, k: int, seed: int) -> str:
        if k == 0:
            return text
        ids = self.tokenizer.encode(text)
        return self.tokenizer.decode(flip_token_bits(ids, k, seed, self.tokenizer.vocab_size))


@dataclass(frozen=True)
class PublishedBitFlip:
    """``bitflip`` at the published scale: per-bit probability k/1000 on token ids."""

    tokenizer: Tokenizer

    def __call__(self, text: str, k: int, seed: int) -> str:
        if k == 0:
            return text
        ids = self.tokenizer.encode(text)
        new = flip_id_bits(ids, k, seed, self.tokenizer.vocab_size)
        return text if new == ids else self.tokenizer.decode(new)


def _match_case(word: str, like: str) -> str:
    if like.isupper() and len(like) > 1:
        return word.upper()
    if like[:1].isupper():
        return word[:1].upper() + word[1:]
    return word


def synonym_candidates(text: str, synonyms: Callable[[str], Sequence[str]]) -> list[re.Match[str]]:
    """Words of ``text`` that can be replaced: not function words, with a synonym."""
    return [m for m in _WORD.finditer(text)
            if m.group().lower() not in STOPWORDS and len(m.group()) > 2
            and synonyms(m.group().lower())]


def synonym_substitute(text: str, k: int, seed: int,
                       synonyms: Callable[[str], Sequence[str]] | None = None) -> str:
    """Replace ``k`` words (fewer if the text has fewer candidates) with a synonym.

    The synonym is drawn (seeded per word position) from the word's first three synonyms
    in WordNet sense order; case is kept.
    """
    if k == 0:
        return text
    if synonyms is None:
        from recitation.detect.wordnet import WordNet

        synonyms = WordNet.load().synonyms
    cands = synonym_candidates(text, synonyms)
    chosen = sorted((cands[i] for i in _order(len(cands), seed, "synonym")[:k]),
                    key=lambda m: m.start())
    out, last = [], 0
    for m in chosen:
        options = list(synonyms(m.group().lower()))[:3]
        pick = random.Random(f"syn:{seed}:{m.start()}").choice(options)
        out += [text[last : m.start()], _match_case(pick, m.group())]
        last = m.end()
    return "".join(out) + text[last:]


def whitespace(text: str, k: int, seed: int) -> str:
    """At k percent of positions: drop the whitespace character there, else insert a space."""
    cut = set(_order(len(text), seed, "ws")[: n_changes(len(text), k)])
    out = []
    for i, ch in enumerate(text):
        if i in cut:
            if ch.isspace():
                continue
            out.append(" ")
        out.append(ch)
    return "".join(out)


def char_swap(text: str, k: int, seed: int) -> str:
    """Swap k percent of characters with their right neighbour (positions 0..n-2)."""
    chars = list(text)
    n = max(0, len(chars) - 1)
    for i in _order(n, seed, "swap")[: n_changes(n, k)]:
        chars[i], chars[i + 1] = chars[i + 1], chars[i]
    return "".join(chars)


def case_flip(text: str, k: int, seed: int) -> str:
    """Flip the case of k percent of the letters."""
    letters = [i for i, c in enumerate(text) if c.isalpha() and c.swapcase() != c]
    chars = list(text)
    for j in _order(len(letters), seed, "case")[: n_changes(len(letters), k)]:
        i = letters[j]
        chars[i] = chars[i].swapcase()
    return "".join(chars)


TEXT_PERTURBATIONS: dict[str, Perturb] = {
    "bitflip": bit_flip,
    "synonym": synonym_substitute,
    "whitespace": whitespace,
    "char_swap": char_swap,
    "case_flip": case_flip,
}
ALL_PERTURBATIONS = (*TEXT_PERTURBATIONS, "bitflip_tokens")


def get_perturbation(name: str, tokenizer: Tokenizer | None = None, *,
                     bitflip_scale: BitflipScale = "published") -> Perturb:
    """The perturbation called ``name``. ``bitflip`` at the published scale needs a
    tokenizer (o200k or the target's); ``bitflip_tokens`` needs the target's tokenizer."""
    if name == "bitflip" and bitflip_scale == "published":
        if tokenizer is None:
            raise ConfigError("the published bit flip needs a tokenizer: install the o200k "
                              "encoding (pip install rs-bpe) or use a local model, or choose "
                              "bitflip_scale 'utf8-percent'")
        return PublishedBitFlip(tokenizer)
    if name == "bitflip" and bitflip_scale not in BITFLIP_SCALES:
        raise ConfigError(f"unknown bitflip scale '{bitflip_scale}'; choose from "
                          f"{list(BITFLIP_SCALES)}")
    if name == "bitflip_tokens":
        if tokenizer is None:
            raise ConfigError("perturbation 'bitflip_tokens' needs the model's tokenizer; "
                              "only the local backend exposes one (use 'bitflip' otherwise)")
        return TokenBitFlip(tokenizer)
    if name not in TEXT_PERTURBATIONS:
        raise ConfigError(f"unknown perturbation '{name}'; choose from {list(ALL_PERTURBATIONS)}")
    return TEXT_PERTURBATIONS[name]
