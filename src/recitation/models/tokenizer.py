"""A backend's own tokenizer, as methods see it: :class:`Tokenizer`.

Methods that work on token ids or token strings (PEARL's token-level bit flips, DC-PDD's
reference-corpus token counts) ask the model for it through the contract,
:meth:`recitation.models.base.Model.tokenizer`; ``capabilities.tokenizer`` says in advance
whether a backend has one. Only backends that run the model here expose it (``local``); an
API names its tokens in :class:`~recitation.models.base.TokenScores` but does not hand out
its vocabulary.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from recitation.digest import feed_file


class Tokenizer(Protocol):
    """Token ids and token strings of a model's vocabulary (no special tokens added)."""

    @property
    def vocab_size(self) -> int:
        """Number of token ids (every id is below it)."""

    def encode(self, text: str) -> list[int]:
        """The ids of ``text``."""

    def decode(self, ids: list[int]) -> str:
        """The text of ``ids`` (special tokens dropped)."""

    def tokens(self, text: str) -> list[str]:
        """The token strings of ``text``, as the backend's ``TokenScores.tokens`` name them."""


class HFTokenizer:
    """A transformers tokenizer seen as a :class:`Tokenizer`; ``fingerprint``, where the
    caller knows it (:func:`folder_fingerprint`), replaces the one computed from ``tok``."""

    def __init__(self, tok: Any, fingerprint: str | None = None) -> None:
        self._tok = tok
        self._fingerprint = fingerprint
        self.vocab_size: int = len(tok)

    def encode(self, text: str) -> list[int]:
        return list(self._tok.encode(text, add_special_tokens=False))

    def decode(self, ids: list[int]) -> str:
        return str(self._tok.decode(ids, skip_special_tokens=True))

    def tokens(self, text: str) -> list[str]:
        return list(self._tok.convert_ids_to_tokens(self.encode(text)))

    def fingerprint(self) -> str:
        """SHA-256 of the tokenizer's full definition (vocabulary, merges, normalizer): two
        models that tokenize alike (a base model and its fine-tunes) share it."""
        if self._fingerprint is not None:
            return self._fingerprint
        backend = getattr(self._tok, "backend_tokenizer", None)
        spec = backend.to_str() if backend is not None else json.dumps(
            sorted(self._tok.get_vocab().items()))
        return hashlib.sha256(spec.encode("utf-8")).hexdigest()


_LOAD_RECORD = frozenset({"is_local", "local_files_only", "name_or_path", "_name_or_path",
                          "chat_template"})
"""``tokenizer_config.json`` keys that record how a tokenizer was loaded or how chats are
rendered, not how text is split into tokens (a fine-tune saved from a base model loaded
with ``local_files_only`` differs from it only there)."""


def folder_fingerprint(folder: Path) -> str | None:
    """SHA-256 of what defines the tokenization of a transformers folder, read from its
    files without importing a model library: ``tokenizer.json``, ``tokenizer_config.json``
    less :data:`_LOAD_RECORD`, and ``special_tokens_map.json`` / ``added_tokens.json``
    where present. None for a folder without ``tokenizer.json`` (a slow tokenizer: ask the
    loaded one, :meth:`HFTokenizer.fingerprint`)."""
    if not (folder / "tokenizer.json").is_file():
        return None
    h = hashlib.sha256(b"folder-v1\0")
    feed_file(folder / "tokenizer.json", h)
    for name in ("tokenizer_config.json", "special_tokens_map.json", "added_tokens.json"):
        path = folder / name
        if path.is_file():
            data = json.loads(path.read_text(encoding="utf-8"))
            if isinstance(data, dict):
                data = {k: v for k, v in data.items() if k not in _LOAD_RECORD}
            h.update(f"\0{name}\0{json.dumps(data, sort_keys=True)}".encode())
    return h.hexdigest()


class LazyTokenizer:
    """A :class:`Tokenizer` read on first use, its fingerprint known before: a method that
    only needs the fingerprint (a cache key, e.g. DC-PDD's counts read back) loads nothing."""

    def __init__(self, load: Callable[[], Tokenizer], fingerprint: str) -> None:
        self._load = load
        self._tok: Tokenizer | None = None
        self._fingerprint = fingerprint

    def _get(self) -> Tokenizer:
        if self._tok is None:
            self._tok = self._load()
        return self._tok

    @property
    def vocab_size(self) -> int:
        return self._get().vocab_size

    def encode(self, text: str) -> list[int]:
        return self._get().encode(text)

    def decode(self, ids: list[int]) -> str:
        return self._get().decode(ids)

    def tokens(self, text: str) -> list[str]:
        return self._get().tokens(text)

    def fingerprint(self) -> str:
        return self._fingerprint


__all__ = ["HFTokenizer", "LazyTokenizer", "Tokenizer", "folder_fingerprint"]
