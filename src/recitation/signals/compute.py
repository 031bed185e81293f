"""One scoring pass per (model, text): the texts a store lacks are scored in shards, each
written as it finishes, so a killed job resumed scores only the shards it had not written."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from recitation.models.base import Model, TokenScores
from recitation.signals.store import SignalStore

__all__ = ["SHARD_TEXTS", "Computed", "score_through"]

SHARD_TEXTS = 256
"""Texts per shard: small enough that a kill loses little, large enough that a store of
16,000 passages is 63 files."""


@dataclass(frozen=True)
class Computed:
    texts: int
    scored: int
    shards_written: int
    placements: tuple[tuple[str, str, int], ...] = ()
    """On Ray: (device, the GPUs Ray gave the actor, shards) for each place shards were
    scored (the GPUs as ``CUDA_VISIBLE_DEVICES`` names them; empty where none)."""


async def score_through(store: SignalStore, model: Model, texts: list[str], *,
                        shard: int = SHARD_TEXTS,
                        progress: Callable[[int, int], None] | None = None,
                        read: bool = True) -> tuple[list[TokenScores], Computed]:
    """The signals of ``texts``: those the store lacks are scored by ``model`` in shards of
    ``shard`` texts, each written as soon as it is scored; then all are read from the
    store (so what a detector reads is what the store holds). ``read=False`` (filling a
    store, ``recitation signals``) reads nothing back and returns no signals, so memory
    does not grow with the number of texts."""
    todo = store.missing(texts)
    written = 0
    for start in range(0, len(todo), shard):
        part = todo[start : start + shard]
        store.write(part, await model.score(part))
        written += 1
        if progress:
            progress(min(start + shard, len(todo)), len(todo))
    return (store.read(texts) if read else []), Computed(len(texts), len(todo), written)
