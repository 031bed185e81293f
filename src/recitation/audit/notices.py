"""What an audit's defaults did to its inputs, said in one line each.

An audit cuts books into passages of ``passage_words`` words, cuts longer JSONL passages to
that length, and keeps ``passages`` of each work and ``controls`` controls. Each of these
changes what is audited; wherever one did, :func:`input_notices` writes one line saying
what it did and which option changes it. The audit keeps the lines in its manifest
(``notices``) and prints them on stderr when it runs (audit/cli.py).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol


class Passage(Protocol):
    """What the notices read of a passage (audit/inputs.Passage, which imports this module
    to word its error)."""

    @property
    def text(self) -> str: ...
    @property
    def source(self) -> str: ...
    @property
    def chapter(self) -> str: ...

MIN_WORDS = 8
"""The fewest words a passage may have (shorter ones are left out: audit/inputs.py)."""

_PARAGRAPH_BREAK = re.compile(r"\n[ \t\r\f\v]*\n")


def _book_files(spec: str) -> list[Path]:
    """The .txt files a ``--text`` / ``--controls`` spec names (none for JSONL or built-in
    sets)."""
    p = Path(spec)
    if spec.partition(":")[0] in ("kjv", "builtin", "organism"):
        return []
    if p.is_dir():
        return sorted(p.glob("*.txt"))
    return [p] if p.is_file() and p.suffix not in (".jsonl", ".gz") else []


def _book_counts(files: Sequence[Path]) -> tuple[int, int]:
    """(paragraphs, words) of the books' text as the audit reads it (licence stripped)."""
    from recitation.corpus.passages import read_book_text

    paragraphs = words = 0
    for f in files:
        text = read_book_text(f).body
        paragraphs += sum(1 for b in _PARAGRAPH_BREAK.split(text) if b.strip())
        words += len(text.split())
    return paragraphs, words


def no_passage_message(spec: str, passage_words: int) -> str:
    """Why ``spec`` gave no passage, with the option that fixes it."""
    files = _book_files(spec)
    if not files:
        return (f"'{spec}' gave no passage of at least {MIN_WORDS} words (each passage of a "
                f".jsonl is one line's 'text', cut to --passage-words {passage_words})")
    words = _book_counts(files)[1]
    if words < MIN_WORDS:
        return f"'{spec}' has {words} words; a passage needs at least {MIN_WORDS}"
    return (f"'{spec}' has {words} words, fewer than one passage of {passage_words} words "
            f"(--passage-words): give --passage-words {words} or fewer (at least "
            f"{MIN_WORDS}) to audit it")


def cut_notice(group: str, spec: str, passages: Sequence[Passage], passage_words: int,
               jsonl_lengths: Sequence[int] = ()) -> str | None:
    """How ``spec`` was cut into ``passages``: a book's paragraphs re-cut into passages of
    ``passage_words`` words; a JSONL's longer passages cut to that length (their word counts
    ``jsonl_lengths``, read before cutting); None where nothing was cut."""
    change = f"--passage-words N to change; now {passage_words}"
    if files := _book_files(spec):
        paragraphs, words = _book_counts(files)
        left = words - len(passages) * passage_words
        tail = f"; the last {left} words of each book left out" if left > 0 else ""
        return (f"{group} {spec}: {paragraphs} paragraph(s) ({words} words) re-cut into "
                f"{len(passages)} passages of {passage_words} words, across paragraph breaks "
                f"({change}{tail})")
    longer = sum(1 for n in jsonl_lengths if n > passage_words)
    short = sum(1 for n in jsonl_lengths if n < MIN_WORDS)
    parts = ([f"{longer} of {len(jsonl_lengths)} passages cut to their first {passage_words} "
              f"words ({change})"] if longer else []) + (
        [f"{short} passage(s) under {MIN_WORDS} words left out"] if short else [])
    return f"{group} {spec}: {'; '.join(parts)}" if parts else None


def jsonl_lengths(spec: str) -> list[int]:
    """The word count of each passage of a JSONL spec, before cutting (none otherwise)."""
    from recitation.corpus.jsonl import iter_records

    p = Path(spec)
    if p.suffix not in (".jsonl", ".gz") or not p.is_file():
        return []
    return [len(str(rec.get("text") or "").split()) for _, rec in iter_records(p)]


def kept_notices(every: Sequence[Passage], kept: Sequence[Passage], *, by_chapter: bool,
                 seed: int) -> list[str]:
    """One line per work of which the audit keeps only some passages (``--passages``)."""
    total = Counter(p.source for p in every)
    have = Counter(p.source for p in kept)
    chaptered = {p.source for p in every if p.chapter}
    out = []
    for work, n in total.items():
        if have[work] < n:
            random = by_chapter and work in chaptered
            how = f"drawn at random by chapter with seed {seed}" if random else "evenly spaced"
            again = "; --seed for another draw" if random else ""
            out.append(f"text {work}: kept {have[work]} of {n} passages, {how} "
                       f"(--passages N to change, 0: all{again})")
    return out


def controls_notice(found: int, kept: int) -> str | None:
    """The line for controls the audit leaves out (``--n-controls``)."""
    if kept >= found:
        return None
    return (f"controls: kept {kept} of {found} control passages, evenly spaced "
            f"(--n-controls N to change, 0: all)")


def recap_notice(recap: int, n_text: int, n_controls: int) -> list[str]:
    """The line for RECAP run on only the first ``recap`` passages (``--recap-passages``)."""
    if recap >= n_text:
        return []
    ctl = f" and the first {min(recap, n_controls)} of {n_controls} controls" if n_controls else ""
    return [f"RECAP: run on the first {recap} of {n_text} text passages{ctl} (--recap-passages "
            f"N to change, 0: no RECAP)"]
