"""An opened corpus index: its engine, its token width and what text becomes as token ids.

:func:`open_index` opens one or several index directories (infini-gram's or recitation's, a
directory per shard set) with the infini-gram engine when it is installed and the numpy
engine otherwise (``engine="numpy"`` / ``"infini-gram"`` to choose). The token width comes
from recitation's manifest, else from the files themselves (or ``token_dtype``).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

from recitation.errors import ConfigError, CorpusError
from recitation.models.tokenizer import Tokenizer
from recitation.trace import infinigram
from recitation.trace.engine import NumpyEngine, QueryEngine
from recitation.trace.formats import (
    NUMPY,
    WIDTHS,
    Manifest,
    infer_token_width,
    shard_ids,
    shard_path,
)

logger = logging.getLogger(__name__)

EngineName = Literal["auto", "numpy", "infini-gram"]


@dataclass
class CorpusIndex:
    """An index ready for queries by text or by ids."""

    engine: QueryEngine
    dirs: tuple[Path, ...]
    token_width: int
    manifest: Manifest | None
    tokenizer: Tokenizer | None = None

    @property
    def byte_level(self) -> bool:
        return self.token_width == 1

    def ids(self, text: str) -> list[int]:
        """Token ids of ``text`` (UTF-8 bytes for a byte-level index)."""
        if self.byte_level:
            return list(text.encode("utf-8"))
        if self.tokenizer is None:
            raise ConfigError("a token-level index needs the tokenizer it was built with "
                              f"({self.manifest.tokenizer if self.manifest else 'unknown'})")
        return list(self.tokenizer.encode(text))

    def text(self, ids: Sequence[int]) -> str:
        if self.byte_level:
            return bytes(ids).decode("utf-8", errors="replace")
        if self.tokenizer is None:
            raise ConfigError("a token-level index needs its tokenizer to decode")
        return self.tokenizer.decode(list(ids))

    def unigram_counts(self) -> dict[int, int]:
        """Corpus count of every token id (separators excluded), from ``unigram.<i>`` files
        (either infini-gram format) or counted from the data."""
        sep = 2 ** (8 * self.token_width) - 1
        total: dict[int, int] = {}
        for d in self.dirs:
            for s in shard_ids(d):
                for tok, cnt in _shard_unigrams(d, s, self.token_width).items():
                    if tok != sep:
                        total[tok] = total.get(tok, 0) + cnt
        return total


def _shard_unigrams(d: Path, s: int, width: int) -> dict[int, int]:
    path = shard_path(d, "unigram", s)
    if not path.exists():
        data = np.fromfile(shard_path(d, "tokenized", s), dtype=NUMPY[width])
        uniq, cnt = np.unique(data, return_counts=True)
        return dict(zip(uniq.tolist(), cnt.tolist(), strict=True))
    out: dict[int, int] = {}
    for i, line in enumerate(path.read_text(encoding="utf-8").splitlines()):
        parts = line.split()
        if len(parts) == 2:
            out[int(parts[0])] = int(parts[1])
        elif len(parts) == 1:  # one count per line, the line number is the id
            out[i] = int(parts[0])
    return out


def _width(dirs: Sequence[Path], token_dtype: str | None) -> tuple[int, Manifest | None]:
    manifest = Manifest.read(dirs[0])
    if token_dtype:
        if token_dtype not in WIDTHS:
            raise ConfigError(f"token dtype must be one of {sorted(WIDTHS)}, got {token_dtype}")
        return WIDTHS[token_dtype], manifest
    if manifest is not None:
        return manifest.token_width, manifest
    return infer_token_width(dirs[0]), None


def open_index(index_dirs: str | Path | Sequence[str | Path], *, engine: EngineName = "auto",
               token_dtype: str | None = None,
               tokenizer: Tokenizer | None = None) -> CorpusIndex:
    """Open an index (one directory, or several searched together)."""
    dirs = tuple(Path(d) for d in ([index_dirs] if isinstance(index_dirs, str | Path)
                                   else index_dirs))
    if not dirs:
        raise ConfigError("no index directory given")
    for d in dirs:
        if not d.is_dir() or not shard_ids(d):
            raise CorpusError(f"{d}: not an index directory (no tokenized.<i> files); build "
                              "one with 'recitation index build CORPUS DIR'")
    width, manifest = _width(dirs, token_dtype)
    use = engine
    if engine == "auto":
        use = "infini-gram" if infinigram.available() else "numpy"
    if use == "infini-gram":
        vocab = manifest.vocab_size if manifest else None
        qe: QueryEngine = infinigram.InfiniGramEngine(list(dirs), width, vocab)
    elif len(dirs) == 1:
        qe = NumpyEngine(dirs[0], width)
    else:
        raise ConfigError("the numpy engine opens one index directory (with any number of "
                          "shards); install infini-gram to search several directories")
    logger.info("opened %s with the %s engine", ", ".join(map(str, dirs)), use)
    return CorpusIndex(qe, dirs, width, manifest, tokenizer)
