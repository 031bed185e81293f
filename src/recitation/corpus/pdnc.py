"""The Project Dialogism Novel Corpus (Vishnubhotla, Hammond & Hirst, LREC 2022).

One folder per novel: ``novel_text.txt``, ``quotation_info.csv`` (quotation text, character
spans into the novel text, speaker, addressees, type) and ``character_info.csv`` (main
name, aliases as a Python set/list literal, gender, category). Spans are checked against
the quotation text when loading; a span that does not reproduce its text raises
:class:`~recitation.errors.CorpusError` (``strict=True``) or is dropped with a warning.
"""

from __future__ import annotations

import ast
import csv
import io
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from recitation.corpus.files import decode_text, read_bytes, read_text_file
from recitation.corpus.model import Book
from recitation.corpus.text import load_text
from recitation.errors import CorpusError

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class PdncCharacter:
    """A character: id, main name, aliases (sorted), gender (M/F/...), category."""

    id: str
    name: str
    aliases: tuple[str, ...]
    gender: str
    category: str


@dataclass(frozen=True)
class Quotation:
    """A quotation with its character spans (end exclusive) into the novel text."""

    id: str
    text: str
    spans: tuple[tuple[int, int], ...]
    speaker: str
    addressees: tuple[str, ...]
    quote_type: str
    referring_expression: str


@dataclass(frozen=True)
class PdncNovel:
    """A PDNC novel: the book (chapters from the text), quotations and characters."""

    folder: str
    book: Book
    text: str
    quotations: tuple[Quotation, ...]
    characters: tuple[PdncCharacter, ...]

    def character(self, name: str) -> PdncCharacter | None:
        """The character whose main name or an alias equals ``name``."""
        for c in self.characters:
            if name == c.name or name in c.aliases:
                return c
        return None


def _literal(raw: str, where: str) -> Any:
    if raw in ("", "nan", "None"):
        return []
    try:
        return ast.literal_eval(raw)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError) as exc:
        raise CorpusError(f"{where}: cannot parse {raw[:60]!r}: {exc}") from None


def _spans(raw: Any, where: str) -> list[tuple[int, int]]:
    """``[[start, end], ...]`` character spans, or CorpusError naming the row."""
    try:
        spans = [(int(a), int(b)) for a, b in raw]
    except (TypeError, ValueError) as exc:
        raise CorpusError(f"{where}: quoteByteSpans should be a list of [start, end] pairs, "
                          f"got {str(raw)[:60]!r}") from exc
    if any(a < 0 or b < a for a, b in spans):
        raise CorpusError(f"{where}: quoteByteSpans {spans[:4]} are not valid spans")
    return spans


def _rows(path: Path) -> list[dict[str, str]]:
    if not path.is_file():
        raise CorpusError(f"PDNC file missing: {path}")
    text = read_text_file(path, what="PDNC CSV file", allow_empty=True)
    try:
        rows = list(csv.DictReader(io.StringIO(text, newline="")))
    except csv.Error as exc:
        raise CorpusError(f"{path}: not a valid CSV file: {exc}") from None
    # a short row leaves None (and a long one a None key holding a list): make both errors
    for i, row in enumerate(rows):
        if None in row or any(v is None for v in row.values()):
            raise CorpusError(f"{path.name} row {i + 2}: {len(row)} columns expected, the "
                              f"row has a different number")
    return rows


def load_characters(path: Path) -> tuple[PdncCharacter, ...]:
    """Characters from ``character_info.csv``."""
    out = []
    for i, row in enumerate(_rows(path)):
        where = f"{path.name} row {i + 2}"
        aliases = _literal(row.get("Aliases", ""), where)
        if not isinstance(aliases, (set, list, tuple)):
            raise CorpusError(f"{where}: Aliases should be a set or list literal")
        out.append(
            PdncCharacter(
                id=row.get("Character ID", str(i)),
                name=row.get("Main Name", ""),
                aliases=tuple(sorted(str(a) for a in aliases)),
                gender=row.get("Gender", ""),
                category=row.get("Category", ""),
            )
        )
    return tuple(out)


def _spans_ok(text: str, spans: list[tuple[int, int]], quote: str) -> bool:
    joined = " ".join(text[a:b] for a, b in spans)
    return " ".join(joined.split()) == " ".join(quote.split()) or all(
        text[a:b].strip() and text[a:b].strip() in quote for a, b in spans
    )


def load_quotations(path: Path, text: str, *, strict: bool = False) -> tuple[Quotation, ...]:
    """Quotations from ``quotation_info.csv``, spans checked against ``text``."""
    out = []
    for i, row in enumerate(_rows(path)):
        where = f"{path.name} row {i + 2}"
        raw_spans = _literal(row.get("quoteByteSpans", ""), where)
        spans = _spans(raw_spans, where)
        quote = row.get("quoteText", "")
        if not _spans_ok(text, spans, quote):
            msg = f"{where}: spans {spans} do not reproduce quotation {quote[:40]!r}"
            if strict:
                raise CorpusError(msg)
            logger.warning(msg)
            continue
        addressees = _literal(row.get("addressees", ""), where)
        if not isinstance(addressees, (set, list, tuple)):
            raise CorpusError(f"{where}: addressees should be a set or list literal")
        out.append(
            Quotation(
                id=row.get("quoteID", str(i)),
                text=quote,
                spans=tuple(spans),
                speaker=row.get("speaker", ""),
                addressees=tuple(str(a) for a in addressees),
                quote_type=row.get("quoteType", ""),
                referring_expression=row.get("referringExpression", ""),
            )
        )
    return tuple(out)


def load_pdnc_novel(folder: str | Path, *, strict: bool = False) -> PdncNovel:
    """One PDNC novel folder (``novel_text.txt`` is read exactly, not normalized)."""
    d = Path(folder)
    text_path = d / "novel_text.txt"
    if not text_path.is_file():
        raise CorpusError(f"PDNC novel text missing: {text_path}")
    text = decode_text(read_bytes(text_path, what="PDNC novel text"), text_path,
                       what="PDNC novel text")
    book = load_text(text_path, title=d.name)
    return PdncNovel(
        folder=d.name,
        book=book,
        text=text,
        quotations=load_quotations(d / "quotation_info.csv", text, strict=strict),
        characters=load_characters(d / "character_info.csv"),
    )


def list_pdnc_novels(root: str | Path) -> list[Path]:
    """Novel folders under the PDNC root (those with a ``novel_text.txt``), sorted."""
    base = Path(root)
    if not base.is_dir():
        raise CorpusError(f"PDNC folder not found: {base}")
    return sorted(p.parent for p in base.glob("*/novel_text.txt"))
