"""Per-position statistics over the vocabulary for the local backend's scoring (torch only).

For each scored position: log p of the text's token, the vocabulary mean and standard
deviation of log p under the model's distribution (Min-K%++), its maximum (Gap-K%) and the
token's rank. Computed in float32 on chunks of :func:`stats_elements` logits so the float32
copies never grow with vocabulary x batch x length.

On a GPU the chunk's arithmetic is memory-bound: eager torch reads and writes a float32 copy
of the logits about a dozen times. There the same function is compiled by ``torch.compile``
(Triton kernels that read the bfloat16 logits a few times and keep the float32 values in
registers); the GPU check measures it (docs/benchmarks.md, "GPU check"). A compile that fails
falls back to eager torch with a warning; ``RECITATION_COMPILE_STATS=0`` turns it off. On a
CPU the eager functions run (no compiler is needed)."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable

import torch

from recitation.models.device import is_out_of_memory

log = logging.getLogger(__name__)

STATS_ELEMENTS = 1 << 24
"""Logits (positions x vocabulary) turned into float32 at a time on a CPU: 64 MB; a 49k
vocabulary gives 341 positions a chunk, a 128k one 130."""

CUDA_STATS_ELEMENTS = 1 << 27
"""The same on a GPU: 512 MB a float32 copy (eager: two at most), 1,046 positions of a 128k
vocabulary; one chunk's kernels, not their launches, take the time."""

Stats = Callable[[torch.Tensor, torch.Tensor, torch.Tensor], tuple[torch.Tensor, ...]]


def stats_elements(logits: torch.Tensor) -> int:
    """Logits turned into float32 at a time: :data:`STATS_ELEMENTS` on a CPU,
    :data:`CUDA_STATS_ELEMENTS` on a GPU (fewer, larger kernels)."""
    return CUDA_STATS_ELEMENTS if logits.is_cuda else STATS_ELEMENTS


def position_stats(logits: torch.Tensor, gold: torch.Tensor, elements: int | None = None,
                   index: torch.Tensor | None = None) -> tuple[torch.Tensor, ...]:
    """Per position of ``logits`` ([n, V], any float type; with ``index``, its rows
    ``index``): log p of the ``gold`` token, the vocabulary mean and standard deviation of
    log p, its maximum, and the gold token's rank; computed in float32 on chunks of positions
    holding at most ``elements`` logits (:func:`stats_elements`). Each position is its own
    reduction: the same numbers in any chunking."""
    if index is None:
        index = torch.arange(logits.shape[0], device=logits.device)
    vocab = logits.shape[-1]
    step = max(1, (elements or stats_elements(logits)) // max(vocab, 1))
    fn = _kernel(logits.device)
    parts = [fn(logits, index[a:a + step], gold[a:a + step])
             for a in range(0, max(len(index), 1), step)]
    return tuple(torch.cat(cols) for cols in zip(*parts, strict=True))


def normalised(logits: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """Per row of ``logits``: the float32 logits less their maximum (``z``, a copy), log of
    the sum of ``exp(z)`` (so log p = ``z - log_s``), and the mean and standard deviation of
    log p under p. Log p is shifted ``z``, so its spread is ``z``'s:
    ``E_p[z^2] - E_p[z]^2``, with ``E_p[f] = sum(exp(z) f) / sum(exp(z))``. Two float32
    copies of the rows at most."""
    z = logits.to(torch.float32, copy=True)
    z -= z.amax(-1, keepdim=True)
    ez = z.exp()
    s = ez.sum(-1)
    log_s = s.log()
    ez *= z
    mean_z = ez.sum(-1) / s
    ez *= z  # exp(z) z^2, in place again: a row's own sum, the same in any chunk
    sigma = (ez.sum(-1) / s - mean_z.pow(2)).clamp(min=0).sqrt()
    return z, log_s, mean_z - log_s, sigma


def chunk_stats(logits: torch.Tensor, index: torch.Tensor,
                gold: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """:func:`position_stats` of rows ``index`` of ``logits``: log p of ``gold``, mean, std,
    maximum (the likeliest token's: ``-log_s``), rank (1 + the tokens likelier than
    ``gold``)."""
    z, log_s, mu, sigma = normalised(logits[index])
    zg = z.gather(-1, gold.unsqueeze(-1)).squeeze(-1)
    return zg - log_s, mu, sigma, -log_s, rank_of(z, zg)


_COMPILED: dict[str, Stats] = {}


def _kernel(device: torch.device) -> Stats:
    """:func:`chunk_stats`, compiled on a GPU (module docstring), eager elsewhere."""
    if device.type != "cuda" or os.environ.get("RECITATION_COMPILE_STATS", "1") == "0":
        return chunk_stats
    if "cuda" not in _COMPILED:
        _COMPILED["cuda"] = _guarded(torch.compile(chunk_stats, dynamic=True))
    return _COMPILED["cuda"]


def _guarded(compiled: Stats) -> Stats:
    """``compiled``, or eager :func:`chunk_stats` from its first failure on (a warning)."""
    state = {"ok": True}

    def run(logits: torch.Tensor, index: torch.Tensor, gold: torch.Tensor
            ) -> tuple[torch.Tensor, ...]:
        if state["ok"]:
            try:
                return compiled(logits, index, gold)
            except Exception as exc:  # noqa: BLE001 - any compiler failure: eager is exact
                if is_out_of_memory(exc):
                    raise
                state["ok"] = False
                log.warning("compiled vocabulary statistics failed (%s: %s); eager torch "
                            "from now on", type(exc).__name__, str(exc).splitlines()[0][:200])
        return chunk_stats(logits, index, gold)

    return run


def rank_of(logp: torch.Tensor, gold: torch.Tensor) -> torch.Tensor:
    """Per row of ``logp``: 1 + how many tokens are likelier than the ``gold`` one."""
    return (logp > gold.unsqueeze(-1)).sum(-1) + 1
