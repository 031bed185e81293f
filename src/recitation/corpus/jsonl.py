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
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from recitation.corpus.model import Book, Chapter, chapter_id, slugify
from recitation.errors import CorpusError


@dataclass(frozen=True)
class Document:
    """A corpus record: ``id`` (the id field, or ``<file stem>:<line>``), text, metadata."""

    id: str
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)


def _open(path: Path) -> IO[str]:
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8")
    return path.open(encoding="utf-8")


def iter_jsonl(
    path: str | Path, *, text_field: str = "text", id_field: str | None = "id"
) -> Iterator[Document]:
    """Documents of a JSONL file, lazily, in file order."""
    p = Path(path)
    if not p.is_file():
        raise CorpusError(f"JSONL file not found: {p}")
    with _open(p) as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as exc:
                raise CorpusError(f"{p}:{lineno}: not valid JSON ({exc.msg})") from exc
            if not isinstance(rec, dict):
                raise CorpusError(f"{p}:{lineno}: expected a JSON object")
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
