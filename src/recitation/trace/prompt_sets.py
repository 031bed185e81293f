"""PROPME's generic and specific prompt sets as the authors build them: sentences of an
outside sample (theirs: Tatoeba for ``generic``, sources published after the corpus for
``specific``) that do not occur whole in the index (PropMe ``group_by_overlap.py`` and
``build_prompt_sets.py``, read 2026-11-26).

Each sentence gets the authors' overlap group, from the longest token span of it, starting
anywhere, that occurs verbatim in the index, divided by the sentence's length in tokens
(over both tokenizations, with and without a leading space):

    1  longest span < 25%        3  25-50%        4  50-75%        5  >= 75%, not whole
    6/7  the whole sentence occurs (theirs splits it at k = 100 distinct documents)

Groups 1, 3, 4 and 5 are kept; full matches are excluded (they would act as prefix attacks).
On a byte-level index the units are bytes and one variant suffices (an occurrence of
" s" contains one of "s").
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from recitation.errors import ConfigError
from recitation.trace.index import CorpusIndex
from recitation.trace.simpletrace import prefix_lengths

KEPT = ("1", "3", "4", "5")
FULL = "6/7"


@dataclass(frozen=True)
class Overlap:
    """A sentence's overlap with the index."""

    group: str
    coverage: float  # the longest verbatim span / the sentence's units (1.0: whole)
    longest: int  # units of that span
    units: int


def coverage_group(coverage: float) -> str:
    """The authors' group of a sentence that does not occur whole."""
    return "1" if coverage < 0.25 else "3" if coverage < 0.5 else "4" if coverage < 0.75 \
        else "5"


def _variants(index: CorpusIndex, text: str) -> list[list[int]]:
    if index.byte_level:
        return [index.ids(text)]
    out: list[list[int]] = []
    for t in (text, " " + text):
        ids = index.ids(t)
        if ids and ids not in out:
            out.append(ids)
    return out


def occurs_whole(index: CorpusIndex, text: str) -> bool:
    """Whether ``text`` occurs whole in the index under either tokenization (a full match)."""
    return any(index.engine.count(ids) > 0 for ids in _variants(index, text))


def overlap(index: CorpusIndex, text: str) -> Overlap:
    """The group of ``text``: a full match when any variant occurs (count > 0), else the
    best coverage over the variants of the longest span from any start."""
    variants = _variants(index, text)
    if not variants:
        raise ConfigError("an empty sentence has no overlap group")
    if occurs_whole(index, text):
        n = len(variants[0])
        return Overlap(FULL, 1.0, n, n)
    best: Overlap | None = None
    for ids in variants:
        n = len(ids)
        lengths = prefix_lengths(index, ids, list(range(n)), [n] * n)
        cov = max(lengths) / n
        if best is None or cov > best.coverage:
            best = Overlap(coverage_group(cov), round(cov, 4), max(lengths), n)
    assert best is not None
    return best


def everyday_sample() -> Path:
    """The packaged outside sample for the generic set: 197 everyday sentences (requests,
    questions, remarks) written for recitation in the manner of Tatoeba's, which the authors
    sample and which is not shipped here."""
    from importlib.resources import files

    return Path(str(files("recitation") / "data" / "everyday_sentences.txt"))


def read_sentences(path: Path) -> list[str]:
    """One sentence per line (``.txt``), or the ``text`` field of each line (``.jsonl``);
    blank lines skipped, duplicates kept once, in file order."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read the sentence sample {path}: {exc} (give a UTF-8 "
                          "text file, one sentence per line, or JSONL with a 'text' "
                          "field)") from exc
    out: dict[str, None] = {}
    for k, line in enumerate(lines, 1):
        if not line.strip():
            continue
        text = line.strip()
        if path.suffix == ".jsonl":
            try:
                row = json.loads(line)
                text = row["text"].strip()
            except (ValueError, KeyError, TypeError, AttributeError) as exc:
                raise ConfigError(f"{path}, line {k}: not a JSON object with a 'text' "
                                  f"string ({exc})") from exc
        if text:
            out.setdefault(text)
    if not out:
        raise ConfigError(f"the sentence sample {path} holds no sentence")
    return list(out)


def sentence_prompts(index: CorpusIndex, sentences: list[str], n: int,
                     seed: int) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """``n`` prompts drawn (seeded) from the sentences that do not occur whole in the index
    (fewer when fewer are left), each with its group and coverage; and the count of the
    sample's sentences per group (full matches included, as excluded)."""
    kept: list[dict[str, Any]] = []
    counts = dict.fromkeys((*KEPT, FULL), 0)
    for text in sentences:
        o = overlap(index, text)
        counts[o.group] += 1
        if o.group in KEPT:
            kept.append({"prompt": text, "group": o.group, "coverage": o.coverage,
                         "longest": o.longest, "units": o.units})
    picked = sorted(random.Random(seed).sample(range(len(kept)), min(n, len(kept))))
    return [kept[i] for i in picked], counts
