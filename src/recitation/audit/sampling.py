"""Which passages of a whole book an audit reads: a stratified random sample by chapter.

A book is cut into consecutive passages (audit/inputs.py), each labelled with the chapter
it starts in. The audit samples ``n`` of them (audit setting ``passages``, per work when it reads
several) at random within
strata, so that what it finds stands for the whole book, with a known error
(metrics/sampling.py):

* **Strata** are the chapters of each book (the heading rule of corpus/text.py; the text
  before the first heading is a stratum of its own). With fewer passages to draw than
  chapters, consecutive chapters (of one book or, at a book's end, the next) are merged
  into ``n`` strata of about equal size, so every part of the text is drawn from.
* **Allocation**: one passage per stratum, the rest in proportion to the strata's sizes
  (largest remainder), never more than a stratum holds.
* **Draw**: without replacement within each stratum, seeded by the audit's ``seed``, so the
  same settings read the same passages.

Each sampled passage stands for ``N_h / n_h`` passages of the book (its stratum's size over
its draws); the manifest keeps every stratum's size, draws and passage ids, so the report
can weigh what it finds back to the whole book.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from recitation.audit.inputs import Passage, pick

DESIGN = "stratified by chapter"


@dataclass(frozen=True)
class Stratum:
    work: str
    chapters: str  # the first and last chapter merged into it
    size: int  # passages of the book in it (N_h)
    ids: tuple[str, ...]  # the passages drawn from it (n_h of them)


def _chapters(passages: Sequence[Passage]) -> list[list[Passage]]:
    """Consecutive runs of passages of one book and one chapter, in text order."""
    groups: list[list[Passage]] = []
    for p in passages:
        if groups and (groups[-1][0].source, groups[-1][0].chapter) == (p.source, p.chapter):
            groups[-1].append(p)
        else:
            groups.append([p])
    return groups


def merge(groups: list[list[Passage]], n: int) -> list[list[Passage]]:
    """``groups`` merged into ``n`` runs of consecutive groups of about equal size: the
    k-th cut falls at the group boundary nearest ``k / n`` of the passages."""
    if len(groups) <= n:
        return groups
    ends = list(itertools.accumulate(len(g) for g in groups))
    cuts: list[int] = []
    for k in range(1, n):
        target = ends[-1] * k / n
        first = cuts[-1] + 1 if cuts else 0
        cuts.append(min(range(first, len(groups) - (n - k)),
                        key=lambda j: (abs(ends[j] - target), j)))
    out, start = [], 0
    for j in [*cuts, len(groups) - 1]:
        out.append([p for g in groups[start:j + 1] for p in g])
        start = j + 1
    return out


def allocate(sizes: Sequence[int], n: int) -> list[int]:
    """Draws per stratum: one each, the other ``n - len(sizes)`` in proportion to the sizes
    by largest remainder (ties to the earlier stratum); a stratum whose share exceeds what
    it has left gets all of it and the rest is shared again among the others."""
    take = [1] * len(sizes)
    open_ = [i for i, s in enumerate(sizes) if s > 1]
    while (left := n - sum(take)) > 0 and open_:
        free = sum(sizes[i] for i in open_)
        quota = {i: left * sizes[i] / free for i in open_}
        full = [i for i in open_ if quota[i] >= sizes[i] - take[i]]
        if full:  # exhausted strata first, then share again
            for i in full:
                take[i] = sizes[i]
            open_ = [i for i in open_ if i not in full]
            continue
        for i in open_:
            take[i] += int(quota[i])
        order = sorted(open_, key=lambda i: (-(quota[i] - int(quota[i])), i))
        for i in order[: n - sum(take)]:
            take[i] += 1
        break
    return take


def stratified_sample(passages: Sequence[Passage], n: int, seed: int
                      ) -> tuple[list[Passage], list[Stratum]]:
    """``n`` passages drawn by chapter (module docstring), in text order, and the strata;
    every passage (a census) when ``n`` is 0 or not below their number."""
    groups = _chapters(passages)
    if n <= 0 or n >= len(passages):  # a census: every chapter, every passage
        return list(passages), [_stratum(g, g) for g in groups]
    strata = merge(groups, n)
    rng = np.random.default_rng([seed, len(passages), n])
    sample: list[Passage] = []
    out = []
    for group, k in zip(strata, allocate([len(s) for s in strata], n), strict=True):
        drawn = [group[i] for i in sorted(rng.choice(len(group), size=k, replace=False))]
        sample += drawn
        out.append(_stratum(group, drawn))
    return sample, out


def _stratum(group: Sequence[Passage], drawn: Sequence[Passage]) -> Stratum:
    first, last = group[0].chapter, group[-1].chapter
    works = " + ".join(dict.fromkeys(p.source for p in group))
    return Stratum(works, first if first == last else f"{first} .. {last}",
                   len(group), tuple(p.id for p in drawn))


def sampling_record(strata: Sequence[Stratum], seed: int) -> dict[str, Any]:
    """What the audit manifest keeps of the design (the report weighs by it)."""
    return {"design": DESIGN, "seed": seed,
            "population": sum(s.size for s in strata),
            "strata": [asdict(s) | {"ids": list(s.ids)} for s in strata]}



def select_passages(passages: Sequence[Passage], n: int, *, by_chapter: bool, seed: int
                    ) -> tuple[list[Passage], dict[str, Any] | None]:
    """``n`` passages of each work (its ``source``: a book, a file), drawn by chapter where
    ``by_chapter`` and the work is a book, else spread evenly (audit/inputs.pick); and the
    design's record of the books drawn by chapter (None without any)."""
    works: dict[str, list[Passage]] = {}
    for p in passages:
        works.setdefault(p.source, []).append(p)
    chosen: list[Passage] = []
    strata: list[Stratum] = []
    for ps in works.values():
        if by_chapter and all(p.chapter for p in ps):
            drawn, st = stratified_sample(ps, n, seed)
            chosen += drawn
            strata += st
        else:
            chosen += pick(ps, n)
    return chosen, sampling_record(strata, seed) if strata else None
