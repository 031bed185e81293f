"""Token signals, computed once: the per-token numbers every white-box detector reads, kept
in Parquet shards per model, so that a new detector or other settings need no model call.

A store is a folder; each model has a subfolder named by a digest of its identity and answer
code (the weights, and the decoding code and library versions that produced the numbers:
the response cache's key), holding ``model.json`` (that identity) and shards
``<digest>.parquet``, one row per text:

================  ==================  ==================================================
column            type                meaning
================  ==================  ==================================================
text_sha256       string              SHA-256 of the text (UTF-8): the key
tokens            list<string>        the text's tokens as the backend names them
token_ids         list<int32>         their ids (null where the backend gives none)
logprob           list<float32>       log p of each token after the first, given those
                                      before it (``len(tokens) - 1``)
top_logprob       list<float32>       log p of the likeliest token there (Gap-K%)
rank              list<int32>         the token's rank there (1: the likeliest)
mean_logprob      list<float32>       the vocabulary mean of log p there (minus the
                                      entropy; Min-K%++)
std_logprob       list<float32>       its standard deviation (Min-K%++)
entropy           list<float32>       the entropy of the next-token distribution there
input_tokens      int32               tokens the scoring call read
================  ==================  ==================================================

Columns a backend cannot give are null (an API gives no vocabulary mean). The numbers are
the backends' float32 values, stored exactly. A shard is written whole to a temporary name
and renamed into place, so a killed job leaves whole shards only, and one resumed finds
what is done by reading the shards' keys. pyarrow is the ``signals`` extra.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from recitation.errors import require
from recitation.models.base import TokenScores, Usage

__all__ = ["SignalStore", "model_digest", "text_key"]

_LISTS = {"token_ids": "int32", "logprob": "float32", "top_logprob": "float32",
          "rank": "int32", "mean_logprob": "float32", "std_logprob": "float32",
          "entropy": "float32"}


def _pa() -> Any:
    return require("pyarrow", "the token-signal store (pip install 'recitation[signals]')")


def text_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def model_digest(identity: dict[str, Any]) -> str:
    """The folder name of a model's signals: a digest of its identity (answer code
    included)."""
    blob = json.dumps(identity, sort_keys=True).encode("utf-8")
    return hashlib.sha256(blob).hexdigest()[:24]


def _schema() -> Any:
    pa = _pa()
    fields = [("text_sha256", pa.string()), ("tokens", pa.list_(pa.string()))]
    fields += [(name, pa.list_(getattr(pa, kind)())) for name, kind in _LISTS.items()]
    return pa.schema([*fields, ("input_tokens", pa.int32())])


def _row(text: str, s: TokenScores) -> dict[str, Any]:
    entropy = [-m for m in s.mean_logprob] if s.mean_logprob else None
    return {"text_sha256": text_key(text), "tokens": list(s.tokens),
            "token_ids": s.token_ids, "logprob": s.logprobs, "top_logprob": s.top_logprob,
            "rank": s.rank, "mean_logprob": s.mean_logprob, "std_logprob": s.std_logprob,
            "entropy": entropy, "input_tokens": s.usage.input_tokens}


def _scores(row: dict[str, Any]) -> TokenScores:
    def tup(x: Any) -> tuple[Any, ...] | None:
        return tuple(x) if x is not None else None

    return TokenScores(tokens=tuple(row["tokens"]), logprobs=tuple(row["logprob"]),
                       mean_logprob=tup(row["mean_logprob"]),
                       std_logprob=tup(row["std_logprob"]),
                       top_logprob=tup(row["top_logprob"]), token_ids=tup(row["token_ids"]),
                       rank=tup(row["rank"]), usage=Usage(int(row["input_tokens"]), 0),
                       cached=True)


class SignalStore:
    """The signals of one model in the store folder ``root`` (see the module)."""

    def __init__(self, root: Path, identity: dict[str, Any]) -> None:
        self.root = Path(root)
        self.identity = identity
        self.folder = self.root / model_digest(identity)
        self._keys: dict[str, Path] | None = None

    def keys(self) -> dict[str, Path]:
        """Text digest -> the shard holding it (read once from the shards' key column)."""
        if self._keys is None:
            _pa()
            import pyarrow.parquet as pq

            self._keys = {}
            for shard in sorted(self.folder.glob("*.parquet")):
                col = pq.read_table(shard, columns=["text_sha256"]).column(0).to_pylist()
                self._keys.update(dict.fromkeys(col, shard))
        return self._keys

    def missing(self, texts: Iterable[str]) -> list[str]:
        """The texts (first occurrence, in order) the store has no signals for."""
        have, out, seen = self.keys(), [], set()
        for t in texts:
            k = text_key(t)
            if k not in have and k not in seen:
                seen.add(k)
                out.append(t)
        return out

    def read(self, texts: list[str]) -> list[TokenScores]:
        """The stored signals of ``texts`` (every one must be there), in order."""
        import pyarrow.parquet as pq

        _pa()
        have = self.keys()
        wanted = {text_key(t) for t in texts}
        absent = wanted - have.keys()
        if absent:
            raise KeyError(f"{len(absent)} text(s) have no signals in {self.folder}")
        rows: dict[str, dict[str, Any]] = {}
        for shard in sorted({have[k] for k in wanted}):
            for row in pq.read_table(shard).to_pylist():
                if row["text_sha256"] in wanted:
                    rows[row["text_sha256"]] = row
        return [_scores(rows[text_key(t)]) for t in texts]

    def write(self, texts: list[str], scores: list[TokenScores]) -> Path:
        """One shard of ``texts``' signals, written whole (temporary name, then renamed)."""
        import pyarrow.parquet as pq

        pa = _pa()
        self.folder.mkdir(parents=True, exist_ok=True)
        meta = self.folder / "model.json"
        if not meta.exists():
            meta.write_text(json.dumps(self.identity, indent=1, sort_keys=True), "utf-8")
        keys = [text_key(t) for t in texts]
        path = self.folder / f"{hashlib.sha256(''.join(keys).encode()).hexdigest()[:24]}.parquet"
        table = pa.Table.from_pylist([_row(t, s) for t, s in zip(texts, scores, strict=True)],
                                     schema=_schema())
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        pq.write_table(table, tmp)
        os.replace(tmp, path)
        if self._keys is not None:
            self._keys.update(dict.fromkeys(keys, path))
        return path
