"""Cut texts into N-token passages (40 by default, as RECAP and the name-cloze studies).

With no tokenizer, tokens are whitespace-separated words and passages keep character
offsets into the source text (their ``text`` is the exact source slice). With a tokenizer
(any ``text -> sequence of tokens`` callable, e.g. a model tokenizer's ``encode`` or
:func:`recitation.corpus.tokenize.word_tokenize`), passages hold token offsets; their text
is ``detokenize(tokens)`` when a detokenizer is given, else the tokens joined by spaces.
``stride`` (default ``n``: no overlap) sets the step between passage starts; a final
passage shorter than ``min_tokens`` (default ``n``) is dropped.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from recitation.corpus.model import Book, Passage, passage_id
from recitation.corpus.tokenize import Tokenizer
from recitation.errors import CorpusError

_WORD = re.compile(r"\S+")


def split_at_word(text: str, k: int) -> tuple[str, str]:
    """The first ``k`` whitespace words of ``text`` (original spacing kept) and the rest
    (stripped): the prefix / target split of prefix probes and PEARL's completion task.
    ``k`` must leave at least one word on each side."""
    spans = list(_WORD.finditer(text))
    if len(spans) < 2:
        raise CorpusError(f"text too short to split into a prefix and a target: {text!r}")
    if not 1 <= k < len(spans):
        raise CorpusError(f"cannot split {len(spans)} words after word {k}")
    cut = spans[k - 1].end()
    return text[:cut], text[cut:].strip()


def _windows(n_tokens: int, n: int, stride: int, min_tokens: int) -> Iterator[tuple[int, int]]:
    start = 0
    while start < n_tokens:
        end = min(start + n, n_tokens)
        if end - start >= min_tokens:
            yield start, end
        if end == n_tokens:
            break
        start += stride


def chunk_text(
    text: str,
    *,
    parent_id: str = "text",
    n: int = 40,
    stride: int | None = None,
    min_tokens: int | None = None,
    tokenizer: Tokenizer | None = None,
    detokenize: Callable[[Sequence[Any]], str] | None = None,
) -> list[Passage]:
    """Passages of ``n`` tokens from ``text`` (see the module docstring)."""
    step = n if stride is None else stride
    minimum = n if min_tokens is None else min_tokens
    if n <= 0 or step <= 0 or minimum <= 0:
        raise CorpusError(f"passage length, stride and minimum must be positive (n={n})")
    out: list[Passage] = []
    if tokenizer is None:
        words = list(_WORD.finditer(text))
        for i, (a, b) in enumerate(_windows(len(words), n, step, minimum)):
            cs, ce = words[a].start(), words[b - 1].end()
            out.append(
                Passage(
                    id=passage_id(parent_id, i),
                    parent_id=parent_id,
                    index=i,
                    text=text[cs:ce],
                    start=a,
                    end=b,
                    char_start=cs,
                    char_end=ce,
                )
            )
        return out
    tokens = list(tokenizer(text))
    for i, (a, b) in enumerate(_windows(len(tokens), n, step, minimum)):
        piece = tokens[a:b]
        body = detokenize(piece) if detokenize else " ".join(str(t) for t in piece)
        out.append(
            Passage(
                id=passage_id(parent_id, i), parent_id=parent_id, index=i, text=body, start=a, end=b
            )
        )
    return out


def chunk_book(
    book: Book,
    *,
    n: int = 40,
    stride: int | None = None,
    min_tokens: int | None = None,
    tokenizer: Tokenizer | None = None,
    detokenize: Callable[[Sequence[Any]], str] | None = None,
) -> list[Passage]:
    """Passages of every event's gold text, or of every chapter's text when a chapter has
    no events; ids derive from the event / chapter ids."""
    out: list[Passage] = []
    for chapter in book.chapters:
        sources = [(e.id, e.text) for e in chapter.events] or [(chapter.id, chapter.text)]
        for node_id, text in sources:
            out.extend(
                chunk_text(
                    text,
                    parent_id=node_id,
                    n=n,
                    stride=stride,
                    min_tokens=min_tokens,
                    tokenizer=tokenizer,
                    detokenize=detokenize,
                )
            )
    return out
