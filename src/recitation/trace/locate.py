"""Where a traced span's copy is: the file its document came from, the lines of that file
the span's text occupies, and the document's chapter or section.

An index built by recitation records, for each plain-text document, the 1-based line of its
file where the document starts (``line`` in its metadata line:
:func:`recitation.trace.formats.metadata_line`); a JSONL document is its own line of its
file (``linenum``, 0-based). When a generation is traced, :class:`Locator` finds the span's
text in each of its documents (the first occurrence) and counts the newlines before it: the
span's lines are the document's first line plus that count, through the newlines of the
span's own text. The trace record keeps them on each document (``lines``:
``[first, last]``), and :func:`place` writes them as "Emma/novel_text.txt lines 7357-7360
(CHAPTER XXVII)".

An index without ``line`` (built before it was recorded, or by infini-gram's indexer from
text that is not JSONL) names a document by its number in its file ("section 27",
"document 3"), never as a line.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from typing import Any, Protocol

from recitation.trace.index import CorpusIndex

JSONL_SUFFIXES = (".jsonl", ".json", ".jsonl.gz", ".json.gz")
CACHED_DOCS = 8  # documents' texts kept between spans (a novel is one document without
# --chapters: its spans ask for it again and again)


class _Doc(Protocol):
    """A span's document (:class:`~recitation.trace.simpletrace.DocMatch`)."""

    @property
    def doc_ix(self) -> int: ...

    @property
    def metadata(self) -> dict[str, Any]: ...


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def is_jsonl(metadata: dict[str, Any]) -> bool:
    """The document is a record of a JSONL file (its own line of the file)."""
    return str(metadata.get("path") or "").endswith(JSONL_SUFFIXES) \
        and _int(metadata.get("linenum")) is not None


def section_of(metadata: dict[str, Any]) -> str | None:
    """The chapter or section title a plain-text folder indexed with ``--chapters`` stored."""
    inner = metadata.get("metadata")
    title = inner.get("section") if isinstance(inner, dict) else None
    return title if isinstance(title, str) and title else None


class Locator:
    """Lines of a span's text in its documents' files, over one opened index (the texts of
    the last :data:`CACHED_DOCS` documents kept)."""

    def __init__(self, index: CorpusIndex) -> None:
        self.index = index
        self._texts: OrderedDict[int, str] = OrderedDict()

    def doc_text(self, doc_ix: int) -> str:
        """The whole text of document ``doc_ix``."""
        if doc_ix in self._texts:
            self._texts.move_to_end(doc_ix)
            return self._texts[doc_ix]
        engine = self.index.engine
        n = engine.doc_by_ix(doc_ix, 1).doc_len
        text = self.index.text(engine.doc_by_ix(doc_ix, max(n, 1)).token_ids)
        self._texts[doc_ix] = text
        if len(self._texts) > CACHED_DOCS:
            self._texts.popitem(last=False)
        return text

    def lines(self, doc_ix: int, metadata: dict[str, Any],
              span_text: str) -> tuple[int, int] | None:
        """The first and last line (1-based) of the document's file that hold the span's
        text (its first occurrence in the document); None when the index does not record
        where the document starts, or the text is not found in it (a token-level index
        whose tokens do not decode back to the span's text)."""
        if is_jsonl(metadata):
            line = int(metadata["linenum"]) + 1
            return line, line
        start = _int(metadata.get("line"))
        needle = span_text.strip()
        if start is None or not needle:
            return None
        text = self.doc_text(doc_ix)
        at = text.find(needle)
        if at < 0:
            return None
        first = start + text.count("\n", 0, at)
        return first, first + needle.count("\n")

    def span_lines(self, span_text: str,
                   docs: Sequence[_Doc]) -> list[tuple[int, int] | None]:
        """:meth:`lines` of each of a span's documents, in order."""
        return [self.lines(d.doc_ix, d.metadata, span_text) for d in docs]


def place(metadata: dict[str, Any], lines: Sequence[int] | None = None) -> str:
    """Where a document is, from its metadata line: the file and the span's ``lines`` there
    (else where the document starts, or its number in its file), and its section title;
    "" when the index records no file."""
    path = metadata.get("path")
    if not path:
        return ""
    section = section_of(metadata)
    linenum, start = _int(metadata.get("linenum")), _int(metadata.get("line"))
    if lines:
        a, b = int(lines[0]), int(lines[-1])
        where = f"{path} line {a}" if a == b else f"{path} lines {a}-{b}"
    elif start is not None:
        where = f"{path} from line {start}"
    elif is_jsonl(metadata):
        where = f"{path} line {(linenum or 0) + 1}"
    elif linenum is None or (section is None and isinstance(metadata.get("metadata"), dict)
                             and "file" in metadata["metadata"]):
        where = str(path)  # a whole plain-text file
    else:
        where = f"{path} {'section' if section is not None else 'document'} {linenum + 1}"
    return f"{where} ({section})" if section else where
