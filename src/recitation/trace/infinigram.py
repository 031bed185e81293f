"""The infini-gram engine (the ``infini-gram`` package: C++, multi-threaded) as a
:class:`~recitation.trace.engine.QueryEngine`.

It opens the same files as :class:`~recitation.trace.engine.NumpyEngine` (an index built here
or by infini-gram's own indexer, sharded included; several directories at once). Prefetching
is off: infini-gram 2.6.0's deep default prefetch makes a 20-byte count take ~21 ms on a
local disk instead of 0.03-0.09 ms (NOTES). A byte-level index is opened with
``vocab_size=255, eos_token_id=0``.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from recitation.errors import CorpusError, RecitationError, require
from recitation.trace.engine import DocWindow, FindResult
from recitation.trace.formats import BYTE_VOCAB, DTYPES


def _engine_module() -> ModuleType | None:
    """``infini_gram.engine``, or ``None`` when the ``infini-gram`` package is not installed.

    An installed package that fails to import (a broken binary wheel, a shared library or a
    dependency of its own missing: any exception, ``ImportError`` included) raises
    :class:`RecitationError` naming the cause: it is never taken for "not installed"."""
    if importlib.util.find_spec("infini_gram") is None:
        return None
    try:
        return importlib.import_module("infini_gram.engine")
    except Exception as e:
        raise RecitationError(
            f"the infini-gram package is installed but its engine does not import "
            f"({type(e).__name__}: {e}); reinstall it (pip install --force-reinstall "
            f"'infini-gram') or uninstall it to use the numpy engine") from e


def available() -> bool:
    """Whether the infini-gram engine can be imported here: ``False`` when the package is
    not installed; an installed one that fails to import raises :class:`RecitationError`
    (a broken install is an error to fix, not a silent fallback to the numpy engine)."""
    return _engine_module() is not None


def _check(result: Any) -> Any:
    if isinstance(result, dict) and "error" in result:
        raise CorpusError(f"infini-gram engine: {result['error']}")
    return result


class InfiniGramEngine:
    """:class:`QueryEngine` through ``infini_gram.engine.InfiniGramEngine``."""

    def __init__(self, index_dirs: str | Path | Sequence[str | Path], token_width: int,
                 vocab_size: int | None = None) -> None:
        mod = _engine_module() or require("infini_gram.engine", "the infini-gram engine")
        dirs = [str(index_dirs)] if isinstance(index_dirs, str | Path) else [
            str(d) for d in index_dirs]
        self.token_width = token_width
        vocab = BYTE_VOCAB if token_width == 1 else (vocab_size or 2 ** (8 * token_width) - 1)
        self._e = mod.InfiniGramEngine(
            index_dir=dirs, eos_token_id=0, vocab_size=vocab, version=4,
            token_dtype=DTYPES[token_width], ds_prefetch_depth=0, sa_prefetch_depth=0,
            od_prefetch_depth=0)
        self.num_shards = int(self._e.engine.get_num_shards())
        self._tok_cnt = [int(self._e.engine.get_tok_cnt(s=s)) for s in range(self.num_shards)]

    def find(self, ids: list[int]) -> FindResult:
        r = _check(self._e.find(input_ids=list(ids)))
        segs = tuple((int(a), int(b)) for a, b in r["segment_by_shard"])
        return FindResult(int(r["cnt"]), segs)

    def count(self, ids: list[int]) -> int:
        return int(_check(self._e.count(input_ids=list(ids)))["count"])

    def longest_prefix(self, ids: list[int]) -> int:
        if not ids:
            return 0
        return self._longest(list(ids))

    def spans_ends(self, ids: list[int]) -> list[int]:
        """For every start ``l``, the length of the longest match of ``ids[l:]``."""
        rs = _check(self._e.creativity(input_ids=list(ids)))["rs"]
        return [int(r) - i for i, r in enumerate(rs)]

    def prefix_lengths(self, ids: list[int], starts: list[int], ends: list[int]) -> list[int]:
        """Per start: one ``find`` of ``ids[start:end]``; when absent, the common prefix with
        the two suffixes beside its insertion point (as the engine's own
        ``compute_longest_prefix_len``, which the package does not expose on its own)."""
        return [self._longest(ids[a:b]) for a, b in zip(starts, ends, strict=True)]

    def _longest(self, q: list[int]) -> int:
        if not q:
            return 0
        r = _check(self._e.find(input_ids=q))
        if r["cnt"]:
            return len(q)
        best = 0
        for shard, (lo, _hi) in enumerate(r["segment_by_shard"]):
            tok_cnt = self._tok_cnt[shard]
            for rank in (lo - 1, lo):
                if 0 <= rank < tok_cnt:
                    d = self._e.get_doc_by_rank_2(s=shard, rank=rank, needle_len=len(q),
                                                  max_ctx_len=0)
                    got = _check(d)["token_ids"]
                    k = 0
                    while k < len(got) and got[k] == q[k]:
                        k += 1
                    best = max(best, k)
        return best

    def total_tokens(self) -> int:
        return int(sum(self._e.engine.get_tok_cnt(s=s) for s in range(self.num_shards)))

    def total_docs(self) -> int:
        return int(self._e.get_total_doc_cnt())

    def _doc(self, d: Any) -> DocWindow:
        d = _check(d)
        return DocWindow(int(d["doc_ix"]), int(d["doc_len"]), int(d["needle_offset"]),
                         tuple(int(t) for t in d["token_ids"]), str(d["metadata"]))

    def doc_by_rank(self, shard: int, rank: int, needle_len: int, ctx_len: int) -> DocWindow:
        return self._doc(self._e.get_doc_by_rank_2(s=shard, rank=rank, needle_len=needle_len,
                                                   max_ctx_len=ctx_len))

    def doc_by_ix(self, doc_ix: int, max_len: int) -> DocWindow:
        return self._doc(self._e.get_doc_by_ix(doc_ix=doc_ix, max_disp_len=max(1, max_len)))
