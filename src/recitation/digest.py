"""The one file-digest helper: a file's SHA-256, read in 1 MiB blocks (a multi-gigabyte
weights file is never held in memory).

Every layer that fingerprints a file calls this module (it imports nothing of recitation, so
any layer may): the run store's input fingerprints (``runs/inputs.py``), the audit's input and
passage hashes (``audit/inputs.py``), local weights and tokenizers (``models/``), the
organism's base model (``organism/build.py``) and the detectors' reference files
(``detect/``). :func:`recitation.models._digests.file_sha256` adds a memo for large weights
on top of it.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Protocol

BLOCK = 1 << 20


class Hasher(Protocol):
    """What :func:`feed_file` needs of a ``hashlib`` object."""

    def update(self, data: bytes, /) -> None: ...


def feed_file(path: Path, h: Hasher) -> int:
    """Feed ``path``'s bytes to ``h`` block by block; return the number of bytes read."""
    size = 0
    with path.open("rb") as fh:
        while block := fh.read(BLOCK):
            h.update(block)
            size += len(block)
    return size


def file_sha256(path: str | Path) -> str:
    """The hex SHA-256 of a file's content (``OSError`` when it cannot be read)."""
    h = hashlib.sha256()
    feed_file(Path(path), h)
    return h.hexdigest()


__all__ = ["BLOCK", "Hasher", "feed_file", "file_sha256"]
