"""A served model's tokenizer, named by the user: ``--tokenizer PATH``.

An API does not hand out its vocabulary (``capabilities.tokenizer`` is false for it), but a
method that counts the target's tokens elsewhere (DC-PDD's reference corpus) can still run
when the user names the served model's tokenizer: a folder holding ``tokenizer.json`` (the
model's transformers folder, e.g. the one vLLM serves) or that file itself. It is read with
the ``tokenizers`` library (a dependency of transformers; no model library is imported).

Naming a tokenizer is a claim about the server, so it is checked against what the server
returns: :func:`tokens_as_served` compares, text by text, the tokens a server scored with
the tokenizer's own (the same count, and each token's text) and raises
:class:`~recitation.errors.ConfigError` naming the first difference; on a match it gives
the scores the tokenizer's token strings (``Ġthe``, as the local backend names them), so a
corpus counted with the tokenizer is read by the same keys.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from recitation.digest import file_sha256
from recitation.errors import ConfigError
from recitation.models.base import TokenScores
from recitation.models.tokenizer import folder_fingerprint

FIX = ("name the served model's own tokenizer with --tokenizer PATH (its folder, holding "
       "tokenizer.json, or that file)")
_UNDECODABLE = "\ufffd"  # part of a character: servers and tokenizers render it apart


def tokenizer_json(path: str | Path) -> Path:
    """The ``tokenizer.json`` that ``path`` names (the file, or a folder holding it)."""
    p = Path(path).expanduser()
    if p.is_dir():
        p = p / "tokenizer.json"
        if not p.is_file():
            raise ConfigError(f"--tokenizer: the folder '{p.parent}' has no tokenizer.json; "
                              f"{FIX}")
    elif not p.is_file():
        raise ConfigError(f"--tokenizer: no such file or folder '{p}'; {FIX}")
    return p


class FileTokenizer:
    """A :class:`~recitation.models.tokenizer.Tokenizer` read from a ``tokenizer.json``."""

    def __init__(self, path: str | Path) -> None:
        self.path = tokenizer_json(path)
        try:
            from tokenizers import Tokenizer as _Tokenizers
        except ImportError:  # pragma: no cover - installed with transformers
            raise ConfigError("--tokenizer needs the tokenizers package: pip install "
                              "tokenizers") from None
        try:
            self._tok: Any = _Tokenizers.from_file(str(self.path))
        except Exception as e:  # the library raises its own Exception subclass
            raise ConfigError(f"--tokenizer: '{self.path}' is not a tokenizer.json the "
                              f"tokenizers library reads ({e}); {FIX}") from None
        self.vocab_size: int = int(self._tok.get_vocab_size(with_added_tokens=True))

    def encode(self, text: str) -> list[int]:
        return list(self._tok.encode(text, add_special_tokens=False).ids)

    def decode(self, ids: list[int]) -> str:
        return str(self._tok.decode(ids, skip_special_tokens=True))

    def tokens(self, text: str) -> list[str]:
        return list(self._tok.encode(text, add_special_tokens=False).tokens)

    def scored(self, text: str) -> tuple[list[int], list[str]]:
        """The ids and token strings of ``text`` as a model scores it: with the tokenizer's
        special tokens (a BOS where it adds one), as the local backend and vLLM do."""
        enc = self._tok.encode(text, add_special_tokens=True)
        return list(enc.ids), list(enc.tokens)

    def piece(self, token_id: int) -> str:
        """The text of one token alone (special tokens kept), as a server names it."""
        return str(self._tok.decode([token_id], skip_special_tokens=False))

    def fingerprint(self) -> str:
        """As :func:`folder_fingerprint` of the file's folder (the local backend's key for
        the same files), else the file's SHA-256."""
        fp = folder_fingerprint(self.path.parent) if self.path.name == "tokenizer.json" \
            else None
        return fp or file_sha256(self.path)

    def describe(self) -> str:
        return str(self.path)


def tokens_as_served(text: str, scores: TokenScores, tok: FileTokenizer,
                     where: str) -> TokenScores:
    """``scores`` with the tokenizer's token strings, after checking that the server
    tokenized ``text`` as ``tok`` does; ConfigError naming the first difference else."""
    ids, names = tok.scored(text)
    served = scores.tokens
    if len(served) != len(ids):
        raise ConfigError(f"--tokenizer {tok.describe()} does not tokenize as {where}: "
                          f"{len(ids)} tokens against the server's {len(served)} for "
                          f"{_head(text)}; {FIX}")
    for i in range(1, len(ids)):  # the first token is not scored (and a server may name
        want, got = tok.piece(ids[i]), served[i]  # it by what the others leave of the text)
        if got != want and _UNDECODABLE not in got + want:
            raise ConfigError(f"--tokenizer {tok.describe()} does not tokenize as {where}: "
                              f"token {i} of {_head(text)} is {want!r} for the tokenizer and "
                              f"{got!r} for the server; {FIX}")
    ids_given = scores.token_ids
    if ids_given is not None and list(ids_given) != ids:
        raise ConfigError(f"--tokenizer {tok.describe()} does not give the server's token ids "
                          f"for {_head(text)}; {FIX}")
    return replace(scores, tokens=tuple(names), token_ids=tuple(ids))


def _head(text: str) -> str:
    return repr(text[:40] + ("..." if len(text) > 40 else ""))


__all__ = ["FIX", "FileTokenizer", "tokenizer_json", "tokens_as_served"]
