"""A generation as the index sees it: its ids, where words start, where a span may end, and
where sentences end.

Byte-level index: the ids are the UTF-8 bytes; a word is a run of word characters (letters,
digits, ``_``: ``str.isalnum``), classified per character, so a multi-byte character is never
split and an em dash or a curly quote is not part of a word. Token-level index: the ids are
the target's tokens; each token's text (decoded alone) decides: a token starts a word when
its first non-space character is a word character and it begins with a space or follows a
token that ends in a non-word character.

- ``starts``: the positions where a span may start (word starts);
- ``boundary[p]``: a span may end at ``p`` (``p`` is the end, or the units on either side are
  not both inside one word); a span never ends on whitespace;
- ``sentence_end[p]``: unit ``p`` holds one of ``. ! ? \\n`` (text mode: no span holds one
  except as its last unit).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

SENTENCE_ENDS = frozenset(".!?\n")


def is_word_char(c: str) -> bool:
    return c.isalnum() or c == "_"


@dataclass(frozen=True)
class Units:
    ids: tuple[int, ...]
    starts: tuple[int, ...]
    boundary: tuple[bool, ...]  # len(ids) + 1 entries
    space: tuple[bool, ...]  # unit is whitespace only
    sentence_end: tuple[bool, ...]
    word_index: tuple[int, ...]  # words started at or before each position (len(ids) + 1)

    def __len__(self) -> int:
        return len(self.ids)

    def words(self, a: int, b: int) -> int:
        """Words starting in ``[a, b)``."""
        return self.word_index[b] - self.word_index[a]


def _finish(ids: list[int], pieces: list[str], starts: list[int]) -> Units:
    """Units from each unit's text (a byte-level unit carries its character, or "" inside one)."""
    n = len(ids)
    boundary = [True] * (n + 1)
    for p in range(1, n):
        prev, cur = pieces[p - 1], pieces[p]
        inside_char = cur == "" or prev == ""  # a UTF-8 continuation byte
        joined = (bool(prev) and bool(cur) and is_word_char(prev[-1]) and is_word_char(cur[0]))
        boundary[p] = not inside_char and not joined
    word_index = [0] * (n + 1)
    starts_set = set(starts)
    for p in range(n):
        word_index[p + 1] = word_index[p] + (p in starts_set)
    return Units(tuple(ids), tuple(starts), tuple(boundary),
                 tuple(p != "" and p.strip() == "" for p in pieces),
                 tuple(any(c in SENTENCE_ENDS for c in p) for p in pieces),
                 tuple(word_index))


def byte_units(text: str) -> Units:
    """The generation's UTF-8 bytes; each character's text on its first byte."""
    ids: list[int] = []
    pieces: list[str] = []
    starts: list[int] = []
    prev_word = False
    for c in text:
        b = c.encode("utf-8")
        word = is_word_char(c)
        if word and not prev_word:
            starts.append(len(ids))
        prev_word = word
        ids.extend(b)
        pieces.append(c)
        pieces.extend([""] * (len(b) - 1))
    return _finish(ids, pieces, starts)


def token_units(ids: list[int], decode: Callable[[list[int]], str]) -> Units:
    """Token ids with each token's own text deciding word starts and boundaries."""
    pieces = [decode([i]) or "\0" for i in ids]
    starts = []
    for p, piece in enumerate(pieces):
        stripped = piece.lstrip()
        if not stripped or not is_word_char(stripped[0]):
            continue
        if p == 0 or piece[0].isspace() or not is_word_char(pieces[p - 1][-1]):
            starts.append(p)
    return _finish(list(ids), pieces, starts)
