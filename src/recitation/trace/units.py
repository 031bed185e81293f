"""A generation as the index sees it: its ids, where words start, where a span may end, and
where sentences end.

Byte-level index: the ids are the UTF-8 bytes; a word is a run of word characters (letters,
digits, ``_``: ``str.isalnum``), classified per character, so a multi-byte character is never
split and an em dash or a curly quote is not part of a word. Token-level index: the ids are
the target's tokens; each token's text as it reads inside the generation decides
(:func:`token_texts`: what decoding it after the token before it adds, so the space that a
SentencePiece/Llama decoder strips from a text's first token is kept): a token starts a word
when its first non-space character is a word character and it begins with a space or follows
a token that ends in a non-word character.

- ``starts``: the positions where a span may start (word starts);
- ``boundary[p]``: a span may end at ``p`` (``p`` is the end, or the units on either side are
  not both inside one word, and ``p`` does not split a character); a span never ends on
  whitespace (``space``);
- ``next_end[p]``: one past the first unit at or after ``p`` holding a sentence end (``len``
  when none): in text mode a span from ``p`` stops there. A sentence end is one of ``. ! ?``
  or a paragraph break (a line break followed by a blank line); a single line break is
  whitespace, so a copy of hard-wrapped text is one span across its line breaks.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

SENTENCE_ENDS = frozenset(".!?")
_PARAGRAPH = re.compile(r"\n(?=[ \t\r]*\n)")
"""Sentence-ending characters; a paragraph break ends a sentence too (:func:`sentence_ends`)."""


def sentence_ends(text: str) -> list[bool]:
    """Per character: it ends a sentence (one of :data:`SENTENCE_ENDS`, or a line break whose
    next line is blank: only spaces, tabs or carriage returns before the next line break)."""
    out = [c in SENTENCE_ENDS for c in text]
    for m in _PARAGRAPH.finditer(text):
        out[m.start()] = True
    return out


def is_word_char(c: str) -> bool:
    return c.isalnum() or c == "_"


@dataclass(frozen=True)
class Units:
    ids: tuple[int, ...]
    starts: list[int]
    boundary: list[bool]  # len(ids) + 1 entries
    space: list[bool]  # unit is whitespace
    next_end: list[int]
    word_index: list[int]  # words started before each position (len(ids) + 1 entries)

    def __len__(self) -> int:
        return len(self.ids)

    def words(self, a: int, b: int) -> int:
        """Words starting in ``[a, b)``."""
        return self.word_index[b] - self.word_index[a]


def _units(ids: list[int], first: np.ndarray, last: np.ndarray, lead: np.ndarray,
           unit_start: np.ndarray, space: np.ndarray, sent: np.ndarray) -> Units:
    """Units from per-unit flags: ``first``/``last``: the unit's first/last character is a
    word character; ``lead``: it starts a word; ``unit_start``: a boundary may fall before it
    (False inside a UTF-8 character); ``space``; ``sent``: holds a sentence end."""
    n = len(ids)
    boundary = np.ones(n + 1, dtype=bool)
    if n > 1:
        boundary[1:n] = unit_start[1:] & ~(last[:-1] & first[1:])
    ends = np.where(sent, np.arange(1, n + 1), n)
    next_end = np.minimum.accumulate(ends[::-1])[::-1] if n else ends
    word_index = np.concatenate([[0], np.cumsum(lead)])
    return Units(tuple(ids), np.flatnonzero(lead).tolist(), boundary.tolist(), space.tolist(),
                 next_end.tolist(), word_index.tolist())


def byte_units(text: str) -> Units:
    """The generation's UTF-8 bytes, each character's flags on its first byte."""
    raw = text.encode("utf-8")
    word = np.array([is_word_char(c) for c in text], dtype=bool)
    if len(raw) == len(text):  # ASCII: one byte per character
        pos = np.arange(len(text))
    else:
        pos = np.concatenate([[0], np.cumsum([len(c.encode("utf-8")) for c in text])[:-1]]
                             ).astype(np.int64) if text else np.zeros(0, dtype=np.int64)
    n = len(raw)

    def spread(flags: np.ndarray) -> np.ndarray:
        out = np.zeros(n, dtype=bool)
        out[pos] = flags
        return out

    prev = np.concatenate([[False], word[:-1]])
    return _units(list(raw), spread(word), spread(word), spread(word & ~prev),
                  spread(np.ones(len(text), dtype=bool)),
                  spread(np.array([c.isspace() for c in text], dtype=bool)),
                  spread(np.array(sentence_ends(text), dtype=bool)))


def token_texts(ids: list[int], decode: Callable[[list[int]], str]) -> list[str]:
    """Each token's text as it reads inside the generation: what it adds to the decoded text
    of the tokens before it, from the last one that reads as something alone (``decode`` of
    ``ids[j:k + 1]`` past ``ids[j:k]``; ``j = k - 1`` but after a token that decodes to
    nothing alone: a skipped special token, SentencePiece's bare ``▁``). Decoded alone, a
    token is its text's first token, whose space SentencePiece decoders drop (Llama's
    ``Strip``, ``Metaspace``): ``▁the`` reads ``the`` alone, `` the`` after another token.
    The first token, and one whose text does not extend what precedes it (a byte completing a
    multi-byte character), keep their text decoded alone. Byte-level BPE (``Ġ``) decoders
    keep the space either way: their tokens read as they do alone."""
    alone = [decode([i]) for i in ids]
    texts = alone[:1]
    j = 0
    for k in range(1, len(ids)):
        if alone[k - 1]:
            j = k - 1
        head = alone[j] if j == k - 1 else decode(list(ids[j:k]))
        full = decode(list(ids[j:k + 1]))
        extends = len(full) > len(head) and full.startswith(head)
        texts.append(full[len(head):] if extends else alone[k])
    return texts


def token_units(ids: list[int], decode: Callable[[list[int]], str]) -> Units:
    """Token ids with each token's text (:func:`token_texts`) deciding word starts and
    boundaries."""
    texts = token_texts(ids, decode)
    pieces = [p or "\0" for p in texts]
    first = np.array([is_word_char(p[0]) for p in pieces], dtype=bool)
    last = np.array([is_word_char(p[-1]) for p in pieces], dtype=bool)
    lead = np.zeros(len(ids), dtype=bool)
    for k, piece in enumerate(pieces):
        stripped = piece.lstrip()
        if stripped and is_word_char(stripped[0]) and (
                k == 0 or piece[0].isspace() or not last[k - 1]):
            lead[k] = True
    return _units(list(ids), first, last, lead, np.ones(len(ids), dtype=bool),
                  np.array([p.strip() == "" for p in pieces], dtype=bool),
                  _piece_ends(texts))


def _piece_ends(texts: list[str]) -> np.ndarray:
    """Per token: its text holds a sentence end (:func:`sentence_ends` over the whole text, so
    a paragraph break split over two tokens is seen)."""
    flags = sentence_ends("".join(texts))
    out = np.zeros(len(texts), dtype=bool)
    at = 0
    for k, p in enumerate(texts):
        out[k] = any(flags[at:at + len(p)])
        at += len(p)
    return out
