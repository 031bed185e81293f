"""The corpus model: Book > Chapter > Event > Passage.

Every node carries a stable, position-derived id (``<book>/ch003/ev012/p0004``): loading the
same file twice gives the same ids, so run records can refer to texts across sessions. Ids
change only when the structure of the source changes (a chapter inserted before another).

Nodes are pydantic models (serializable with ``model_dump`` / ``model_validate``). Fields that
a source format carries but the model does not interpret (for EchoTrace: ``paraphrase_<model>``
or ``LLM_completions``) are kept verbatim in ``extra`` so that a file can be written back
unchanged (see :mod:`recitation.corpus.echotrace`).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


def slugify(text: str, *, max_length: int = 80) -> str:
    """A filesystem- and URL-safe id fragment: ASCII letters, digits, ``_`` and ``-``.

    Accents are folded (NFKD), runs of other characters become one ``_``. Empty input gives
    ``"untitled"``.
    """
    folded = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    slug = re.sub(r"[^A-Za-z0-9\-]+", "_", folded).strip("_")
    return slug[:max_length] or "untitled"


def chapter_id(book_id: str, index: int) -> str:
    """Id of the ``index``-th (0-based) chapter of a book."""
    return f"{book_id}/ch{index:03d}"


def event_id(chapter: str, index: int) -> str:
    """Id of the ``index``-th (0-based) event of a chapter."""
    return f"{chapter}/ev{index:03d}"


def passage_id(parent: str, index: int) -> str:
    """Id of the ``index``-th (0-based) passage cut from the node with id ``parent``."""
    return f"{parent}/p{index:04d}"


class _Node(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Passage(_Node):
    """A contiguous piece of a text, usually ``n`` tokens long (see :mod:`.chunking`).

    ``start`` and ``end`` are token offsets into the parent's token sequence (end exclusive);
    ``char_start`` / ``char_end`` are character offsets into the parent text when known.
    """

    id: str
    parent_id: str
    index: int
    text: str
    start: int
    end: int
    char_start: int | None = None
    char_end: int | None = None

    @property
    def n_tokens(self) -> int:
        return self.end - self.start


class Event(_Node):
    """A scene or narrative unit of a chapter, with its gold text.

    ``summary`` holds the summary bullets (EchoTrace ``detailed_summary``); ``first_sentence``
    and ``last_sentence`` are the segmentation boundaries; ``text`` is the gold passage
    (EchoTrace ``text_segment``).
    """

    id: str
    title: str = ""
    characters: list[str] = Field(default_factory=list)
    summary: list[str] = Field(default_factory=list)
    first_sentence: str = ""
    last_sentence: str = ""
    text: str = ""
    extra: dict[str, Any] = Field(default_factory=dict)


class Chapter(_Node):
    """A chapter: a title, optional running text and optional events.

    Loaders of plain books fill ``text`` and leave ``events`` empty; EchoTrace books have
    events whose gold texts make up the chapter.
    """

    id: str
    title: str = ""
    text: str = ""
    events: list[Event] = Field(default_factory=list)
    extra: dict[str, Any] = Field(default_factory=dict)

    @property
    def full_text(self) -> str:
        """``text`` if set, else the events' gold texts joined by blank lines."""
        if self.text:
            return self.text
        return "\n\n".join(e.text for e in self.events if e.text)


class Book(_Node):
    """A book (or any long document: a paper, a corpus document) split into chapters."""

    id: str
    title: str
    author: str = ""
    source: str = ""
    chapters: list[Chapter] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)

    @property
    def text(self) -> str:
        """The whole text: chapters' ``full_text`` joined by blank lines."""
        return "\n\n".join(c.full_text for c in self.chapters if c.full_text)

    def events(self) -> Iterator[Event]:
        """All events in reading order."""
        for chapter in self.chapters:
            yield from chapter.events

    def find(self, node_id: str) -> Chapter | Event:
        """The chapter or event with this id; raises ``KeyError`` if there is none."""
        for chapter in self.chapters:
            if chapter.id == node_id:
                return chapter
            for event in chapter.events:
                if event.id == node_id:
                    return event
        raise KeyError(node_id)


def make_chapters(book_id: str, sections: list[tuple[str, str]]) -> list[Chapter]:
    """Chapters with stable ids from ``(title, text)`` pairs, in order."""
    return [
        Chapter(id=chapter_id(book_id, i), title=title, text=text)
        for i, (title, text) in enumerate(sections)
    ]
