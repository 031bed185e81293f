"""The organism's data: consecutive passages cut from the PDNC novels, split at random into
members (each repeated ``dose`` times in training) and non-members from the same
distribution, and stored as JSON beside the checkpoints.

A passage is ``passage_tokens`` consecutive tokens of one novel under the base model's
tokenizer (no overlap, no filtering), kept as the exact character span of the novel text.
``--split passage`` (default) draws members and non-members from one pool of passages
(each member with a non-member from the same novel, so novels are balanced between the
two sides: the base model's LOSS then separates them only by chance);
``--split book`` makes some novels members and the others non-members.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from recitation.corpus.pdnc import list_pdnc_novels
from recitation.errors import ConfigError, CorpusError
from recitation.organism.config import OrganismConfig

Offsets = Callable[[str], Sequence[tuple[int, int]]]
"""Character (start, end) of every token of a text, in order (no special tokens)."""


@dataclass(frozen=True)
class Passage:
    """A passage of a novel; ``dose`` is its number of copies in training (0: non-member)."""

    id: str
    novel: str
    start: int
    end: int
    n_tokens: int
    sha256: str
    member: bool
    dose: int
    text: str


@dataclass(frozen=True)
class Novel:
    folder: str
    text: str


def load_novels(cfg: OrganismConfig) -> list[Novel]:
    """The source novels (sorted by folder, ``cfg.exclude`` left out)."""
    root = cfg.resolved_data_dir()
    folders = [p for p in list_pdnc_novels(root) if p.name not in set(cfg.exclude)]
    if len(folders) < 2:
        raise CorpusError(f"organism source: fewer than 2 novels in {root}")
    return [Novel(p.name, (p / "novel_text.txt").read_bytes().decode("utf-8"))
            for p in folders]


def novels_digest(novels: Sequence[Novel]) -> str:
    """SHA-256 over the novels' names and texts (the data part of the fingerprint)."""
    h = hashlib.sha256()
    for n in novels:
        h.update(n.folder.encode() + b"\0" + hashlib.sha256(n.text.encode()).digest())
    return h.hexdigest()


def cut_passages(novel: Novel, offsets: Offsets, length: int) -> list[tuple[int, int]]:
    """Character spans of the consecutive ``length``-token passages of ``novel`` (the
    tail shorter than ``length`` is dropped)."""
    offs = offsets(novel.text)
    return [(offs[k * length][0], offs[(k + 1) * length - 1][1])
            for k in range(len(offs) // length)]


def _passage(novel: Novel, span: tuple[int, int], count: Callable[[str], int],
             dose: int) -> Passage:
    text = novel.text[span[0]:span[1]]
    return Passage(id=f"{novel.folder}@{span[0]}", novel=novel.folder, start=span[0],
                   end=span[1], n_tokens=count(text),
                   sha256=hashlib.sha256(text.encode()).hexdigest(), member=dose > 0,
                   dose=dose, text=text)


def _pool(novels: Sequence[Novel], offsets: Offsets,
          length: int) -> list[tuple[Novel, tuple[int, int]]]:
    return [(n, span) for n in novels for span in cut_passages(n, offsets, length)]


def _draw(pool: list[Any], k: int, rng: np.random.Generator, what: str, *,
          check_only: bool = False) -> list[Any]:
    if k > len(pool):
        raise ConfigError(f"organism: {what} needs {k} passages but the source has only "
                          f"{len(pool)}; lower the sizes or the passage length")
    return [] if check_only else [pool[i] for i in rng.choice(len(pool), size=k,
                                                                replace=False)]


def _paired(pool: list[tuple[Novel, tuple[int, int]]], n_members: int, n_others: int,
            rng: np.random.Generator) -> tuple[list[Any], list[Any]]:
    """Members drawn uniformly; for each, a non-member drawn uniformly from the rest of the
    same novel (from anywhere when the novel has none left), then extra non-members
    uniformly. Both sides are uniform draws from the pool, and their novels match."""
    by_novel: dict[str, list[int]] = {}
    for i, (novel, _) in enumerate(pool):
        by_novel.setdefault(novel.folder, []).append(i)
    chosen = [int(i) for i in rng.choice(len(pool), size=n_members, replace=False)]
    taken = set(chosen)
    others: list[int] = []
    for m in chosen + [-1] * max(0, n_others - n_members):
        same = [] if m < 0 else [i for i in by_novel[pool[m][0].folder] if i not in taken]
        rest = same or [i for i in range(len(pool)) if i not in taken]
        pick = rest[int(rng.integers(len(rest)))]
        taken.add(pick)
        others.append(pick)
    return [pool[i] for i in chosen], [pool[i] for i in others[:n_others]]


def split_passages(cfg: OrganismConfig, novels: Sequence[Novel], offsets: Offsets,
                   count: Callable[[str], int]) -> list[Passage]:
    """Members (``members_per_dose`` at each dose) and non-members, drawn at random with
    ``cfg.seed``; sorted by novel and position."""
    rng = np.random.default_rng(cfg.seed)
    if cfg.split == "passage":
        pool = _pool(novels, offsets, cfg.passage_tokens)
        _draw(pool, cfg.members + cfg.n_nonmembers, rng, "the split", check_only=True)
        if cfg.pair_by_novel:
            members, others = _paired(pool, cfg.members, cfg.n_nonmembers, rng)
        else:
            drawn = _draw(pool, cfg.members + cfg.n_nonmembers, rng, "the split")
            members, others = drawn[:cfg.members], drawn[cfg.members:]
    else:
        order = [novels[i] for i in rng.permutation(len(novels))]
        k = min(len(order) - 1, max(1, round(cfg.member_books * len(order))))
        members = _draw(_pool(order[:k], offsets, cfg.passage_tokens), cfg.members, rng,
                        f"the members ({k} member novels)")
        others = _draw(_pool(order[k:], offsets, cfg.passage_tokens), cfg.n_nonmembers,
                       rng, f"the non-members ({len(order) - k} novels)")
    out = [_passage(n, span, count, cfg.doses[i // cfg.members_per_dose])
           for i, (n, span) in enumerate(members)]
    out += [_passage(n, span, count, 0) for n, span in others]
    return sorted(out, key=lambda p: (p.novel, p.start))


def training_order(passages: Sequence[Passage], seed: int, epoch: int) -> list[int]:
    """Indices into ``passages`` for one epoch: each member ``dose`` times, shuffled by
    ``(seed, epoch)`` (the same order every time)."""
    dosed = [i for i, p in enumerate(passages) for _ in range(p.dose)]
    rng = np.random.default_rng([seed, epoch])
    return [dosed[i] for i in rng.permutation(len(dosed))]


def split_summary(passages: Sequence[Passage]) -> dict[str, Any]:
    """Counts: members per dose, non-members, novels, tokens."""
    doses: dict[str, int] = {}
    for p in passages:
        if p.member:
            doses[str(p.dose)] = doses.get(str(p.dose), 0) + 1
    return {"members": sum(p.member for p in passages),
            "nonmembers": sum(not p.member for p in passages),
            "members_by_dose": dict(sorted(doses.items(), key=lambda kv: int(kv[0]))),
            "novels": len({p.novel for p in passages}),
            "member_novels": len({p.novel for p in passages if p.member}),
            "tokens": sum(p.n_tokens for p in passages)}


def save_split(path: Path, passages: Sequence[Passage], meta: dict[str, Any]) -> None:
    """Write the split as JSON (``meta`` + summary + every passage)."""
    doc = meta | {"summary": split_summary(passages),
                  "passages": [asdict(p) for p in passages]}
    path.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def load_split(path: Path) -> list[Passage]:
    """The passages of a stored split; each text is checked against its hash."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        passages = [Passage(**p) for p in doc["passages"]]
    except (OSError, json.JSONDecodeError, KeyError, TypeError) as exc:
        raise CorpusError(f"organism split {path} is unreadable: {exc}") from exc
    for p in passages:
        if hashlib.sha256(p.text.encode()).hexdigest() != p.sha256:
            raise CorpusError(f"organism split {path}: passage {p.id} does not match its hash")
    return passages
