"""JSONL corpora: one JSON object per line with a text field and any metadata.

Each record becomes a :class:`Document` (id, text, metadata); :func:`load_jsonl_book` wraps
a corpus as a :class:`~recitation.corpus.model.Book` with one chapter per record, so the
chunker and the metrics treat it like any other text. Blank lines are skipped; a line that
is not a JSON object or lacks the text field raises :class:`CorpusError` with its line
number. Files ending in ``.gz`` are decompressed.
"""

from __future__ import annotations

import gzip
import json
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from recitation.corpus.files import decode_text
from recitation.corpus.model import Book, Chapter, chapter_id, slugify
from recitation.errors import CorpusError


@dataclass(frozen=True)
class Document:
    """A corpus record: ``id`` (the id field, or ``<file stem>:<line>``), text, metadata."""

    id: str
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)


def _open(path: Path) -> gzip.GzipFile | IO[bytes]:
    if path.suffix == ".gz":
        return gzip.open(path, "rb")
    return path.open("rb")


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    """``(line number, text)`` of each line; binary data or bad UTF-8 raises CorpusError
    naming the line and the byte offset in the (decompressed) file."""
    offset = 0
    try:
        with _open(path) as fh:
            for lineno, raw in enumerate(fh, 1):
                text = decode_text(raw, f"{path}:{lineno}", what="JSONL line",
                                   allow_empty=True, offset=offset)
                offset += len(raw)
                yield lineno, text
    except (OSError, EOFError, zlib.error) as e:
        raise CorpusError(f"cannot read {path}: {e}") from None


def iter_records(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` for each non-blank line of a JSONL file (``.gz`` too): the
    one JSONL reader of the toolkit. A missing file, binary data, bad UTF-8 (byte offset
    named), a line that is not JSON or not an object raise :class:`CorpusError`."""
    p = Path(path)
    if not p.is_file():
        raise CorpusError(f"JSONL file not found: {p}")
    for lineno, line in _lines(p):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except (json.JSONDecodeError, RecursionError) as exc:
            msg = exc.msg if isinstance(exc, json.JSONDecodeError) else "nested too deeply"
            raise CorpusError(f"{p}:{lineno}: not valid JSON ({msg})") from None
        if not isinstance(rec, dict):
            raise CorpusError(f"{p}:{lineno}: expected a JSON object")
        yield lineno, rec


def iter_jsonl(
    path: str | Path, *, text_field: str = "text", id_field: str | None = "id"
) -> Iterator[Document]:
    """Documents of a JSONL file, lazily, in file order."""
    p = Path(path)
    for lineno, rec in iter_records(p):
        text = rec.get(text_field)
        if not isinstance(text, str):
            raise CorpusError(f"{p}:{lineno}: missing string field {text_field!r}")
        raw_id = rec.get(id_field) if id_field else None
        doc_id = str(raw_id) if raw_id is not None else f"{p.stem}:{lineno}"
        meta = {k: v for k, v in rec.items() if k not in (text_field, id_field)}
        yield Document(doc_id, text, meta)


def load_jsonl(
    path: str | Path, *, text_field: str = "text", id_field: str | None = "id"
) -> list[Document]:
    """All documents of a JSONL file."""
    return list(iter_jsonl(path, text_field=text_field, id_field=id_field))


def load_jsonl_book(
    path: str | Path, *, text_field: str = "text", title: str | None = None
) -> Book:
    """A corpus as a Book: one chapter per record (chapter title = record id)."""
    p = Path(path)
    name = title or p.name.removesuffix(".gz").removesuffix(".jsonl")
    book_id = slugify(name)
    chapters = [
        Chapter(id=chapter_id(book_id, i), title=d.id, text=d.text, extra=d.metadata)
        for i, d in enumerate(iter_jsonl(p, text_field=text_field))
    ]
    return Book(
        id=book_id, title=name, source=str(p), chapters=chapters, metadata={"format": "jsonl"}
    )
