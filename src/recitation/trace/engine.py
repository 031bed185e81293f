"""The query layer over an index directory: :class:`QueryEngine`, and its memory-mapped numpy
implementation :class:`NumpyEngine` (the fallback when the infini-gram engine is not
installed, and the tests' oracle for it).

Queries are token ids (bytes 0-254 for a byte-level index). The operations, as infini-gram's:

- ``find(ids)``: the count and, per shard, the suffix-array range ``[lo, hi)`` of the
  suffixes that start with ``ids``;
- ``count(ids)``;
- ``doc_by_rank(shard, rank, needle_len, ctx_len)``: the document holding the suffix at
  ``rank``, with a window of ``ctx_len`` tokens either side of the ``needle_len`` matched
  tokens (``get_doc_by_rank_2``), and ``doc_by_ix(doc_ix, max_len)`` from a document's start;
- ``longest_prefix(ids)``: the length of the longest prefix of ``ids`` that occurs in the
  corpus, the maximal-span primitive: one binary search for the insertion point of ``ids``,
  then the common prefix with the two neighbouring suffixes (the suffixes closest to ``ids``
  in sorted order share the longest prefix with it).

Suffixes compare byte-wise over the little-endian token bytes, as the files are sorted
(:mod:`recitation.trace.formats`). A match never crosses a document boundary: the separator
(all ``0xff`` bytes) is not a token id a query may hold.
"""

from __future__ import annotations

import mmap
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np

from recitation.errors import CorpusError
from recitation.trace.formats import NUMPY, shard_ids, shard_path


@dataclass(frozen=True)
class FindResult:
    count: int
    segments: tuple[tuple[int, int], ...]  # per shard: suffix-array ranks [lo, hi)


@dataclass(frozen=True)
class DocWindow:
    """Part of a document: ``token_ids`` of the window, the match at ``needle_offset``."""

    doc_ix: int
    doc_len: int  # tokens in the whole document
    needle_offset: int  # tokens from the window's start to the match
    token_ids: tuple[int, ...]
    metadata: str  # the document's metadata line (JSON), "" when the index has none


class QueryEngine(Protocol):
    token_width: int
    num_shards: int

    def find(self, ids: list[int]) -> FindResult: ...

    def count(self, ids: list[int]) -> int: ...

    def doc_by_rank(self, shard: int, rank: int, needle_len: int,
                    ctx_len: int) -> DocWindow: ...

    def doc_by_ix(self, doc_ix: int, max_len: int) -> DocWindow: ...

    def longest_prefix(self, ids: list[int]) -> int: ...

    def prefix_lengths(self, ids: list[int], starts: list[int], ends: list[int]) -> list[int]:
        """For each ``(start, end)``: the longest prefix of ``ids[start:end]`` in the corpus."""
        ...

    def total_tokens(self) -> int: ...

    def total_docs(self) -> int: ...


def _map(path: Path) -> mmap.mmap:
    with path.open("rb") as f:
        return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)


def lcp(a: bytes, b: bytes) -> int:
    """Length of the common prefix of two byte strings (a binary search over prefix
    comparisons: each a memcmp)."""
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    lo, hi = 0, n  # a[:lo] == b[:lo], a[:hi] != b[:hi]
    while hi - lo > 1:
        mid = (lo + hi) >> 1
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid
    return lo


class _Shard:
    """One shard's files, memory-mapped."""

    def __init__(self, d: Path, s: int, width: int) -> None:
        self.ds = _map(shard_path(d, "tokenized", s))
        self.sa = _map(shard_path(d, "table", s))
        self.od = np.frombuffer(_map(shard_path(d, "offset", s)), dtype="<u8")
        self.width = width
        self.tok_cnt = len(self.ds) // width
        if not self.tok_cnt or len(self.sa) % self.tok_cnt:
            raise CorpusError(f"{d}: table.{s} does not fit tokenized.{s}")
        self.ptr_size = len(self.sa) // self.tok_cnt
        self.mt: mmap.mmap | None = None
        self.om: np.ndarray | None = None
        if shard_path(d, "metadata", s).exists() and shard_path(d, "metadata", s).stat().st_size:
            self.mt = _map(shard_path(d, "metadata", s))
            self.om = np.frombuffer(_map(shard_path(d, "metaoff", s)), dtype="<u8")

    def ptr(self, rank: int) -> int:
        p = self.ptr_size
        return int.from_bytes(self.sa[rank * p:(rank + 1) * p], "little")

    def suffix(self, rank: int, n: int) -> bytes:
        ptr = self.ptr(rank)
        return self.ds[ptr:ptr + n]

    def lower_bound(self, q: bytes, lo: int = 0, hi: int | None = None) -> int:
        """First rank whose suffix (cut to len(q)) is >= q."""
        hi = self.tok_cnt if hi is None else hi
        sa, ds, p, n, frombytes = self.sa, self.ds, self.ptr_size, len(q), int.from_bytes
        while lo < hi:
            mid = (lo + hi) >> 1
            ptr = frombytes(sa[mid * p:mid * p + p], "little")
            if ds[ptr:ptr + n] < q:
                lo = mid + 1
            else:
                hi = mid
        return lo

    def upper_bound(self, q: bytes, lo: int = 0, hi: int | None = None) -> int:
        """First rank whose suffix (cut to len(q)) is > q."""
        hi = self.tok_cnt if hi is None else hi
        sa, ds, p, n, frombytes = self.sa, self.ds, self.ptr_size, len(q), int.from_bytes
        while lo < hi:
            mid = (lo + hi) >> 1
            ptr = frombytes(sa[mid * p:mid * p + p], "little")
            if ds[ptr:ptr + n] <= q:
                lo = mid + 1
            else:
                hi = mid
        return lo

    def find(self, q: bytes) -> tuple[int, int]:
        if not q:
            return 0, self.tok_cnt
        lo = self.lower_bound(q)
        return lo, self.upper_bound(q, lo)

    def longest_prefix(self, q: bytes) -> int:
        """Bytes of the longest prefix of ``q`` found in this shard (whole tokens)."""
        at = self.lower_bound(q)
        best = 0
        for rank in (at - 1, at):
            if 0 <= rank < self.tok_cnt:
                best = max(best, lcp(self.suffix(rank, len(q)), q))
        return best - best % self.width

    def doc_of(self, ptr: int) -> int:
        return int(np.searchsorted(self.od, ptr, side="right")) - 1

    def doc_bounds(self, local_ix: int) -> tuple[int, int]:
        start = int(self.od[local_ix]) + self.width
        end = int(self.od[local_ix + 1]) if local_ix + 1 < len(self.od) else len(self.ds)
        return start, end

    def metadata(self, local_ix: int) -> str:
        if self.mt is None or self.om is None:
            return ""
        a = int(self.om[local_ix])
        b = int(self.om[local_ix + 1]) if local_ix + 1 < len(self.om) else len(self.mt)
        return self.mt[a:b].decode("utf-8")

    def ids(self, a: int, b: int) -> tuple[int, ...]:
        return tuple(np.frombuffer(self.ds[a:b], dtype=NUMPY[self.width]).tolist())


class NumpyEngine:
    """:class:`QueryEngine` over the memory-mapped files of an index directory (any number of
    shards), in Python and numpy."""

    def __init__(self, index_dir: str | Path, token_width: int) -> None:
        d = Path(index_dir)
        self.token_width = token_width
        self.shards = [_Shard(d, s, token_width) for s in shard_ids(d)]
        if not self.shards:
            raise CorpusError(f"{d}: no tokenized.<i> file: not an index directory")
        self.num_shards = len(self.shards)
        self._doc_base = np.concatenate([[0], np.cumsum([len(s.od) for s in self.shards])])
        self._encoded: tuple[list[int], bytes] | None = None

    def encode(self, ids: list[int]) -> bytes:
        return np.asarray(ids, dtype=NUMPY[self.token_width]).tobytes()

    def find(self, ids: list[int]) -> FindResult:
        q = self.encode(ids)
        segs = tuple(s.find(q) for s in self.shards)
        return FindResult(sum(hi - lo for lo, hi in segs), segs)

    def count(self, ids: list[int]) -> int:
        return self.find(ids).count

    def longest_prefix(self, ids: list[int]) -> int:
        q = self.encode(ids)
        return max(s.longest_prefix(q) for s in self.shards) // self.token_width

    def prefix_lengths(self, ids: list[int], starts: list[int], ends: list[int]) -> list[int]:
        last = self._encoded  # one read: another thread may replace it meanwhile
        if last is None or last[0] != ids:  # SimpleTrace asks about the same ids in rounds
            last = self._encoded = (list(ids), self.encode(ids))
        q = last[1]
        w = self.token_width
        return [max(s.longest_prefix(q[a * w:b * w]) for s in self.shards) // w
                for a, b in zip(starts, ends, strict=True)]

    def total_tokens(self) -> int:
        return sum(s.tok_cnt for s in self.shards)

    def total_docs(self) -> int:
        return int(self._doc_base[-1])

    def doc_by_rank(self, shard: int, rank: int, needle_len: int, ctx_len: int) -> DocWindow:
        s = self.shards[shard]
        if not 0 <= rank < s.tok_cnt:
            raise CorpusError(f"rank {rank} out of range for shard {shard} ({s.tok_cnt})")
        return self._window(shard, s.ptr(rank), needle_len, ctx_len)

    def _window(self, shard: int, ptr: int, needle_len: int, ctx_len: int) -> DocWindow:
        s, w = self.shards[shard], self.token_width
        local = s.doc_of(ptr)
        start, end = s.doc_bounds(local)
        a = max(start, ptr - w * ctx_len)
        b = min(end, ptr + w * (needle_len + ctx_len))
        return DocWindow(int(self._doc_base[shard]) + local, (end - start) // w,
                         (ptr - a) // w, s.ids(a, b), s.metadata(local))

    def doc_by_ix(self, doc_ix: int, max_len: int) -> DocWindow:
        if not 0 <= doc_ix < self.total_docs():
            raise CorpusError(f"document {doc_ix} out of range ({self.total_docs()})")
        shard = int(np.searchsorted(self._doc_base, doc_ix, side="right")) - 1
        s, local = self.shards[shard], doc_ix - int(self._doc_base[shard])
        start, end = s.doc_bounds(local)
        b = min(end, start + self.token_width * max_len)
        return DocWindow(doc_ix, (end - start) // self.token_width, 0, s.ids(start, b),
                         s.metadata(local))
