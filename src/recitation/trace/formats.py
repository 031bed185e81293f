"""The on-disk format of a corpus index: infini-gram's (v4), file for file.

An index directory holds, per shard ``i``:

- ``tokenized.i``: the documents' token ids (little-endian, ``token_width`` bytes each: 1 for
  a byte-level index, 2 (u16) or 4 (u32) for a token-level one), each document preceded by
  the separator, ``token_width`` bytes of ``0xff`` (so a u16 vocabulary must be below 65,535);
- ``table.i``: the suffix array: one little-endian pointer of ``ptr_size`` bytes per token, the
  **byte** offset of a suffix in ``tokenized.i``, sorted by byte-wise comparison of the
  suffixes (infini-gram's Rust indexer reads u16/u32 tokens as big-endian for exactly that
  reason). ``ptr_size = ceil(log2(bytes) / 8)``, so ``size(table.i) = tokens * ptr_size``;
- ``offset.i``: u64 byte offset of each document's separator in ``tokenized.i``;
- ``metadata.i`` / ``metaoff.i``: one JSON line per document,
  ``{"path": ..., "linenum": ..., "metadata": {...}}``, and the u64 byte offset of each line;
- ``unigram.i``: ``"<token id> <count>"`` per line, sorted by id, separators included (the
  infini-gram engine checks that the counts add up to the shard's tokens).

The infini-gram engine finds files by these name fragments; recitation adds one file whose
name contains none of them, :data:`MANIFEST`, saying how the index was built (token width,
tokenizer, shards, sizes). A directory without it (built by infini-gram's own indexer) is read
by inferring the token width from the separators (:func:`infer_token_width`).
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from recitation.errors import CorpusError

TokenDtype = Literal["u8", "u16", "u32"]
WIDTHS: dict[str, int] = {"u8": 1, "u16": 2, "u32": 4}
DTYPES: dict[int, TokenDtype] = {1: "u8", 2: "u16", 4: "u32"}
NUMPY: dict[int, str] = {1: "<u1", 2: "<u2", 4: "<u4"}
MANIFEST = "recitation-index.json"
FILES = ("tokenized", "table", "offset", "metadata", "metaoff", "unigram")
BYTE_VOCAB = 255
"""vocab_size of a byte-level index as the infini-gram engine is opened on it (ids 0-254;
0xff is the separator)."""


def dtype_for_vocab(vocab_size: int) -> TokenDtype:
    """u16 for vocabularies below 65,535 (the separator 0xffff must stay free), else u32."""
    if vocab_size <= 0:
        raise CorpusError(f"vocabulary size must be positive, got {vocab_size}")
    if vocab_size < 2**16 - 1:
        return "u16"
    if vocab_size < 2**32 - 1:
        return "u32"
    raise CorpusError(f"vocabulary of {vocab_size} ids does not fit a u32 index")


def ptr_size(ds_bytes: int) -> int:
    """Bytes per suffix-array pointer for a ``tokenized`` file of ``ds_bytes`` bytes, as
    infini-gram computes it (``ceil(log2(size) / 8)``), at least 1."""
    if ds_bytes <= 1:
        return 1
    return max(1, math.ceil((ds_bytes - 1).bit_length() / 8))


def shard_path(index_dir: Path, kind: str, shard: int) -> Path:
    return index_dir / f"{kind}.{shard}"


def metadata_line(path: str, linenum: int, metadata: dict[str, Any],
                  line: int | None = None) -> bytes:
    """One line of ``metadata.i``, byte for byte as infini-gram's indexer writes it; with
    ``line`` (a plain-text document: the 1-based line of ``path`` where it starts) one key
    more, ``"line"``, after infini-gram's."""
    entry: dict[str, Any] = {"path": path, "linenum": linenum, "metadata": metadata}
    if line is not None:
        entry["line"] = line
    return (json.dumps(entry) + "\n").encode("utf-8")


@dataclass
class Manifest:
    """What recitation records about an index it built (``recitation-index.json``)."""

    token_dtype: TokenDtype
    tokenizer: str | None  # None: byte-level (UTF-8)
    vocab_size: int
    shards: int
    tokens: int
    documents: int
    bytes_in: int = 0  # UTF-8 bytes of the documents' text
    version: int = 4
    builder: str = "recitation"
    sources: list[str] = field(default_factory=list)

    @property
    def token_width(self) -> int:
        return WIDTHS[self.token_dtype]

    def write(self, index_dir: Path) -> None:
        (index_dir / MANIFEST).write_text(json.dumps(asdict(self), indent=2) + "\n",
                                          encoding="utf-8")

    @classmethod
    def read(cls, index_dir: Path) -> Manifest | None:
        path = index_dir / MANIFEST
        if not path.exists():
            return None
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            return cls(**data)
        except (ValueError, TypeError) as e:
            raise CorpusError(f"{path}: not a recitation index manifest ({e})") from None


def shard_ids(index_dir: Path) -> list[int]:
    """The shard numbers present (``tokenized.<i>`` files) in the infini-gram engine's order:
    sorted as file names (``tokenized.10`` before ``tokenized.2``), so that shard numbers and
    document numbers agree between the engines."""
    ids = []
    for p in index_dir.glob("tokenized.*"):
        suffix = p.name.removeprefix("tokenized.")
        if suffix.isdigit():
            ids.append(int(suffix))
    return sorted(ids, key=str)


def infer_token_width(index_dir: Path) -> int:
    """The token width of an index without a manifest: the largest of 4, 2, 1 for which every
    document offset is aligned and starts with a full separator, and the table size is a
    multiple of the token count."""
    shards = shard_ids(index_dir)
    if not shards:
        raise CorpusError(f"{index_dir}: no tokenized.<i> file: not an index directory")
    s = shards[0]
    ds_size = shard_path(index_dir, "tokenized", s).stat().st_size
    sa_size = shard_path(index_dir, "table", s).stat().st_size
    offsets = np.fromfile(shard_path(index_dir, "offset", s), dtype="<u8")
    with shard_path(index_dir, "tokenized", s).open("rb") as f:
        for width in (4, 2, 1):
            if ds_size % width or sa_size % max(1, ds_size // width):
                continue
            ok = True
            for off in offsets[:: max(1, len(offsets) // 64)]:
                f.seek(int(off))
                if int(off) % width or f.read(width) != b"\xff" * width:
                    ok = False
                    break
            if ok:
                return width
    raise CorpusError(f"{index_dir}: cannot tell the token width (no width fits the "
                      "separators); pass the token dtype explicitly")
