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

from recitation.corpus.doc_place import int_or_none, is_jsonl
from recitation.trace.index import CorpusIndex

CACHED_DOCS = 8  # documents' texts kept between spans (a novel is one document without
# --chapters: its spans ask for it again and again)


class _Doc(Protocol):
    """A span's document (:class:`~recitation.trace.simpletrace.DocMatch`)."""

    @property
    def doc_ix(self) -> int: ...

    @property
    def metadata(self) -> dict[str, Any]: ...


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
        start = int_or_none(metadata.get("line"))
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
