"""A backend's own tokenizer, as methods see it: :class:`Tokenizer`.

Methods that work on token ids or token strings (PEARL's token-level bit flips, DC-PDD's
reference-corpus token counts) ask the model for it through the contract,
:meth:`recitation.models.base.Model.tokenizer`; ``capabilities.tokenizer`` says in advance
whether a backend has one. Only backends that run the model here expose it (``local``); an
API names its tokens in :class:`~recitation.models.base.TokenScores` but does not hand out
its vocabulary.
"""

from __future__ import annotations

from typing import Any, Protocol


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
    """A transformers tokenizer seen as a :class:`Tokenizer`."""

    def __init__(self, tok: Any) -> None:
        self._tok = tok
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
        import hashlib
        import json

        backend = getattr(self._tok, "backend_tokenizer", None)
        spec = backend.to_str() if backend is not None else json.dumps(
            sorted(self._tok.get_vocab().items()))
        return hashlib.sha256(spec.encode("utf-8")).hexdigest()


__all__ = ["HFTokenizer", "Tokenizer"]
