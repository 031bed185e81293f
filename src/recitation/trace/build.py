"""``recitation index build``: an infini-gram index built in process.

Documents are encoded (UTF-8 bytes for a byte-level index, the target's tokenizer for a
token-level one: u16 below 65,535 ids, else u32), written with their separators, offsets,
metadata lines and unigram counts, and the suffix array is built by libdivsufsort
(``pydivsufsort``) over the shard's bytes. Suffixes are ordered byte-wise, as the infini-gram
engine compares them; for u16/u32 shards only the suffixes at token boundaries are kept (a
byte-level suffix array restricted to aligned offsets is the token suffix array in that
order). For a byte-level index the files are byte-identical to infini-gram's indexer's
(tested).

A shard holds at most ``max_shard_bytes`` of ``tokenized`` bytes (default: what fits the
memory available, about 10 bytes of memory per byte of corpus); a larger corpus is split into
several shards, each a complete index the engines search together. Every size is checked
after the build (:func:`validate_index`). A tiny corpus (even one document of one byte) gets
1-byte pointers, the smallest infini-gram reads.
"""

from __future__ import annotations

import concurrent.futures
import logging
import os
import shutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from recitation.errors import ConfigError, CorpusError, require
from recitation.models.tokenizer import Tokenizer
from recitation.trace.formats import (
    BYTE_VOCAB,
    FILES,
    MANIFEST,
    NUMPY,
    WIDTHS,
    Manifest,
    TokenDtype,
    dtype_for_vocab,
    metadata_line,
    ptr_size,
    shard_ids,
    shard_path,
)
from recitation.trace.sources import SourceDoc

logger = logging.getLogger(__name__)

Progress = Callable[[str, int, int], None]
"""``progress(stage, done, total)``: stage "documents" (bytes read so far, total 0 when
unknown) or "suffix array" (shard done, shards)."""

MIN_PARALLEL_SHARD = 32 * 2**20  # smallest shard cut for parallel suffix arrays
BYTES_PER_CORPUS_BYTE = 10  # text + int32/int64 suffix array + packed pointers, with margin


def default_shard_bytes() -> int:
    """The largest shard whose suffix array is built in the memory available now."""
    try:
        avail = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        avail = 8 * 2**30
    return max(2**20, int(avail * 0.8) // BYTES_PER_CORPUS_BYTE)


@dataclass
class _Shard:
    """One shard being filled."""

    width: int
    data: bytearray = field(default_factory=bytearray)
    offsets: list[int] = field(default_factory=list)
    meta: bytearray = field(default_factory=bytearray)
    metaoffs: list[int] = field(default_factory=list)

    def add(self, payload: bytes, meta_line: bytes) -> None:
        self.offsets.append(len(self.data))
        self.data += b"\xff" * self.width
        self.data += payload
        self.metaoffs.append(len(self.meta))
        self.meta += meta_line

    def split(self, parts: int) -> list[_Shard]:
        """This shard cut at document boundaries into up to ``parts`` shards of similar
        size."""
        cuts = sorted({int(np.searchsorted(self.offsets, len(self.data) * k // parts))
                       for k in range(1, parts)} - {0, len(self.offsets)})
        out = []
        for a, b in zip([0, *cuts], [*cuts, len(self.offsets)], strict=True):
            d0 = self.offsets[a]
            d1 = self.offsets[b] if b < len(self.offsets) else len(self.data)
            m0 = self.metaoffs[a]
            m1 = self.metaoffs[b] if b < len(self.metaoffs) else len(self.meta)
            out.append(_Shard(self.width, self.data[d0:d1],
                              [o - d0 for o in self.offsets[a:b]], self.meta[m0:m1],
                              [o - m0 for o in self.metaoffs[a:b]]))
        return out


class Encoder:
    """Text -> the bytes stored in ``tokenized`` (UTF-8, or token ids little-endian)."""

    def __init__(self, tokenizer: Tokenizer | None = None) -> None:
        self.tokenizer = tokenizer
        self.dtype: TokenDtype = "u8"
        self.vocab_size = BYTE_VOCAB
        if tokenizer is not None:
            self.vocab_size = int(tokenizer.vocab_size)
            self.dtype = dtype_for_vocab(self.vocab_size)
        self.width = WIDTHS[self.dtype]
        self.sep_id = 2 ** (8 * self.width) - 1

    def ids(self, text: str) -> np.ndarray:
        if self.tokenizer is None:
            return np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
        ids = np.asarray(self.tokenizer.encode(text), dtype=np.int64)
        if ids.size and (ids.min() < 0 or ids.max() >= self.sep_id):
            raise CorpusError(f"token id {int(ids.max())} out of range for a {self.dtype} "
                              f"index (the separator is {self.sep_id})")
        return ids.astype(NUMPY[self.width])

    def encode(self, text: str) -> bytes:
        if self.tokenizer is None:
            return text.encode("utf-8")  # UTF-8 never holds the separator byte 0xff
        return self.ids(text).tobytes()


def suffix_array(data: bytearray | bytes, width: int) -> np.ndarray:
    """Byte offsets of the suffixes of ``data`` at multiples of ``width``, sorted byte-wise."""
    divsufsort = require("pydivsufsort", "building a corpus index").divsufsort
    buf = data if isinstance(data, bytearray) else bytearray(data)
    sa = np.asarray(divsufsort(buf) if len(buf) else np.zeros(0, dtype=np.int64))
    if width > 1:
        sa = sa[sa % width == 0]
    return sa


def pack_pointers(sa: np.ndarray, size: int) -> np.ndarray:
    """``sa`` (non-negative) as little-endian pointers of ``size`` bytes each (a flat uint8
    array; a view without a copy when ``size`` is the array's item size)."""
    if sa.size and int(sa.max()) >= 2 ** (8 * size):
        raise CorpusError(f"pointer {int(sa.max())} does not fit {size} bytes")
    item = sa.dtype.itemsize
    unsigned = sa.view(f"<u{item}") if sa.dtype.byteorder in "<=|" else sa.astype(f"<u{item}")
    if size == item:
        return unsigned.view(np.uint8)
    wide = unsigned if item >= size else unsigned.astype("<u8")
    return np.ascontiguousarray(wide.view(np.uint8).reshape(-1, wide.dtype.itemsize)[:, :size]
                                ).reshape(-1)


def unigram_counts(tokens: np.ndarray) -> list[tuple[int, int]]:
    """(token id, count) of every id present, sorted by id."""
    if tokens.dtype.itemsize <= 2:  # in chunks: bincount widens its input to intp
        counts = np.zeros(2 ** (8 * tokens.dtype.itemsize), dtype=np.int64)
        for a in range(0, tokens.size, 1 << 22):
            chunk = tokens[a:a + (1 << 22)]
            counts[:] += np.bincount(chunk, minlength=counts.size)
        ids = np.flatnonzero(counts)
        return list(zip(ids.tolist(), counts[ids].tolist(), strict=True))
    uniq, cnt = np.unique(tokens, return_counts=True)
    return list(zip(uniq.tolist(), cnt.tolist(), strict=True))


def _write_shard(out: Path, n: int, shard: _Shard, enc: Encoder) -> int:
    """Write every file of shard ``n`` (suffix array included); the number of tokens. Runs in
    a worker thread: libdivsufsort and numpy release the GIL."""
    if not shard.offsets:
        raise CorpusError("no documents to index")
    data = shard.data
    shard_path(out, "tokenized", n).write_bytes(data)
    np.asarray(shard.offsets, dtype="<u8").tofile(shard_path(out, "offset", n))
    shard_path(out, "metadata", n).write_bytes(shard.meta)
    np.asarray(shard.metaoffs, dtype="<u8").tofile(shard_path(out, "metaoff", n))
    tokens = np.frombuffer(data, dtype=NUMPY[enc.width])
    lines = [f"{i} {c}\n" for i, c in unigram_counts(tokens)]
    shard_path(out, "unigram", n).write_text("".join(lines), encoding="utf-8")
    sa = suffix_array(data, enc.width)
    pack_pointers(sa, ptr_size(len(data))).tofile(shard_path(out, "table", n))
    return int(tokens.size)


class _ShardWriter:
    """Shards written as they fill, up to ``workers`` at once in threads (each holds its
    shard's text and suffix array in memory until written)."""

    def __init__(self, out: Path, enc: Encoder, workers: int,
                 progress: Progress | None) -> None:
        self.out, self.enc, self.progress = out, enc, progress
        self.workers = max(1, workers)
        self.pool = concurrent.futures.ThreadPoolExecutor(self.workers)
        self.jobs: list[concurrent.futures.Future[int]] = []
        self.documents = 0

    def submit(self, shard: _Shard) -> None:
        running = [j for j in self.jobs if not j.done()]
        if len(running) >= self.workers:  # bound the memory: wait for a slot
            concurrent.futures.wait(running, return_when=concurrent.futures.FIRST_COMPLETED)
        self.documents += len(shard.offsets)
        self.jobs.append(self.pool.submit(_write_shard, self.out, len(self.jobs), shard,
                                          self.enc))

    def abort(self) -> None:
        """Wait for the shards under way, start no other."""
        self.pool.shutdown(wait=True, cancel_futures=True)

    def finish(self) -> int:
        """Wait for every shard; the number of tokens written (the first error re-raised)."""
        tokens = 0
        try:
            for done, job in enumerate(concurrent.futures.as_completed(self.jobs), 1):
                tokens += job.result()
                if self.progress:
                    self.progress("suffix array", done, len(self.jobs))
        finally:
            self.pool.shutdown(wait=True, cancel_futures=True)
        return tokens


def _prepare_dir(out: Path, overwrite: bool) -> None:
    existing = [p for p in out.iterdir() if p.name.split(".")[0] in FILES
                or p.name == MANIFEST] if out.exists() else []
    if existing and not overwrite:
        raise ConfigError(f"{out} already holds an index ({existing[0].name}); choose an empty "
                          "directory or pass --overwrite")
    for p in existing:
        p.unlink() if p.is_file() else shutil.rmtree(p)
    out.mkdir(parents=True, exist_ok=True)


def build_index(docs: Iterable[SourceDoc], out: str | Path, *,
                tokenizer: Tokenizer | None = None, tokenizer_name: str | None = None,
                max_shard_bytes: int | None = None, overwrite: bool = False,
                progress: Progress | None = None, sources: Iterable[str] = (),
                workers: int = 1, expected_bytes: int | None = None) -> Manifest:
    """Index ``docs`` into ``out`` (byte-level without a tokenizer); returns the manifest.
    ``workers`` > 1: the suffix arrays of up to that many shards are built at once, in
    threads (a last shard of at least 2 x 32 MB is cut so that every worker has one).
    ``expected_bytes`` (e.g. the corpus files' size): shards of about that / ``workers``, so
    the first suffix arrays are built while the rest of the corpus is still being read."""
    out = Path(out)
    _prepare_dir(out, overwrite)
    enc = Encoder(tokenizer)
    workers = max(1, workers)
    limit = max_shard_bytes or default_shard_bytes() // workers
    if workers > 1 and expected_bytes and expected_bytes >= 2 * MIN_PARALLEL_SHARD:
        limit = min(limit, int(expected_bytes * 1.05) // workers + 2 * enc.width)  # + separators
    if limit < 2 * enc.width:
        raise ConfigError(f"max_shard_bytes {limit} is too small")
    writer = _ShardWriter(out, enc, workers, progress)
    cur, bytes_in = _Shard(enc.width), 0
    try:
        for doc in docs:
            payload = enc.encode(doc.text)
            bytes_in += len(doc.text.encode("utf-8")) if tokenizer else len(payload)
            if cur.offsets and len(cur.data) + enc.width + len(payload) > limit:
                writer.submit(cur)
                cur = _Shard(enc.width)
            cur.add(payload, metadata_line(doc.path, doc.linenum, doc.metadata, doc.line))
            if progress:
                progress("documents", bytes_in, 0)
        if not cur.offsets and not writer.jobs:
            raise CorpusError("the corpus has no documents")
        idle = workers - len(writer.jobs)
        parts = cur.split(idle) if idle > 1 and len(cur.data) >= 2 * MIN_PARALLEL_SHARD \
            else [cur]
        for part in parts:
            writer.submit(part)
        del cur, parts
    except BaseException:
        writer.abort()
        raise
    tokens = writer.finish()
    shards = len(writer.jobs)
    logger.info("%d shard(s) written", shards)
    manifest = Manifest(enc.dtype, tokenizer_name if tokenizer else None, enc.vocab_size,
                        shards, tokens, writer.documents, bytes_in, sources=list(sources))
    manifest.write(out)
    validate_index(out, enc.width)
    return manifest


def validate_index(index_dir: str | Path, width: int) -> None:
    """Check every file size of every shard; CorpusError naming the first mismatch."""
    d = Path(index_dir)
    shards = shard_ids(d)
    if not shards or sorted(shards) != list(range(len(shards))):
        raise CorpusError(f"{d}: shards must be numbered 0..n-1, found {shards}")
    for s in shards:
        _validate_shard(d, s, width)


def _validate_shard(d: Path, s: int, width: int) -> None:
    def size(kind: str) -> int:
        p = shard_path(d, kind, s)
        if not p.exists():
            raise CorpusError(f"{d}: {p.name} is missing")
        return p.stat().st_size

    ds = size("tokenized")
    if ds == 0 or ds % width:
        raise CorpusError(f"{d}: tokenized.{s} has {ds} bytes, not a positive multiple of "
                          f"the token width {width}")
    tok_cnt, want_ptr = ds // width, ptr_size(ds)
    if size("table") != tok_cnt * want_ptr:
        raise CorpusError(f"{d}: table.{s} has {size('table')} bytes; expected {tok_cnt} "
                          f"tokens x {want_ptr}-byte pointers = {tok_cnt * want_ptr}")
    od = np.fromfile(shard_path(d, "offset", s), dtype="<u8")
    if size("offset") % 8 or not od.size or od[0] != 0 or np.any(np.diff(od.astype(np.int64))
                                                                  <= 0) or od[-1] >= ds:
        raise CorpusError(f"{d}: offset.{s} is not an increasing list of offsets from 0")
    if shard_path(d, "metaoff", s).exists() and size("metaoff") != 8 * od.size:
        raise CorpusError(f"{d}: metaoff.{s} has {size('metaoff')} bytes for {od.size} "
                          "documents")
    if shard_path(d, "unigram", s).exists():
        total = sum(int(line.split()[-1]) for line in
                    shard_path(d, "unigram", s).read_text(encoding="utf-8").splitlines())
        if total != tok_cnt:
            raise CorpusError(f"{d}: unigram.{s} counts {total} tokens; the shard has "
                              f"{tok_cnt}")
