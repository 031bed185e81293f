"""Plain-text and Project Gutenberg books.

:func:`strip_gutenberg` cuts the licence header and footer (the ``*** START OF ... ***`` /
``*** END OF ... ***`` markers of current files, and the older ``*END*THE SMALL PRINT`` and
"End of the Project Gutenberg EBook" forms) and reads ``Title:`` / ``Author:`` from the
header. :func:`split_chapters` finds chapter headings: a line of its own, after a blank
line, starting with CHAPTER / BOOK / PART / STAVE / VOLUME / LETTER (any case) and a number
(digits, Roman numerals or a spelled-out number). Runs of headings with almost no text
between them (a table of contents) are folded into the front matter. What counts as a
heading is the only heuristic here; pass ``heading`` to override it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from recitation.corpus.files import BOOK_MAX_BYTES, read_text_file
from recitation.corpus.model import Book, make_chapters, slugify
from recitation.errors import CorpusError

_START = re.compile(
    r"^\s*\*{3}\s*START OF (?:THE|THIS) PROJECT GUTENBERG E-?BOOK.*?\*{3}\s*$"
    r"|^\s*\*END\*THE SMALL PRINT!.*$",
    re.IGNORECASE | re.MULTILINE,
)
_END = re.compile(
    r"^\s*\*{3}\s*END OF (?:THE|THIS) PROJECT GUTENBERG E-?BOOK.*$"
    r"|^\s*End of (?:the )?Project Gutenberg'?s?\b.*$",
    re.IGNORECASE | re.MULTILINE,
)
_FIELD = re.compile(r"^(Title|Author):\s*(.+?)\s*$", re.MULTILINE)
# a copy that kept only the first line of the header (PDNC's novel texts)
_TITLE_LINE = re.compile(
    r"\A\s*The Project Gutenberg e-?Book,? of (?P<title>.+?)(?:, by (?P<author>.+?))?[ \t]*$",
    re.IGNORECASE | re.MULTILINE,
)
_NUMBER = (
    r"(?:\d+|[IVXLCDM]+|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|"
    r"thirteen|fourteen|fifteen|sixteen|seventeen|eighteen|nineteen|twenty|the \w+)"
)
DEFAULT_HEADING = re.compile(
    rf"(?:^|\n[ \t]*\n)[ \t]*((?:CHAPTER|BOOK|PART|STAVE|VOLUME|LETTER)\s+{_NUMBER}\b[^\n]*)\n",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class GutenbergText:
    """A Gutenberg file's body with the licence removed, and its header fields."""

    body: str
    title: str
    author: str
    had_header: bool


def strip_gutenberg(raw: str) -> GutenbergText:
    """Remove the Project Gutenberg header and footer (if present) and read the metadata.

    A text without the ``*** START`` marker whose first line is the header's "The Project
    Gutenberg EBook of TITLE, by AUTHOR" (a copy that kept only that line) loses the line."""
    text = raw.replace("\r\n", "\n").lstrip("\ufeff")
    start = _START.search(text)
    line = _TITLE_LINE.match(text) if start is None else None
    fields = {k.lower(): v for k, v in _FIELD.findall(text[: start.start()] if start else "")}
    body = text[start.end() :] if start else text
    if line:
        fields, body = {"title": line["title"], "author": line["author"] or ""}, text[line.end():]
    end = _END.search(body)
    if end:
        body = body[: end.start()]
    return GutenbergText(body.strip("\n"), fields.get("title", ""), fields.get("author", ""),
                         start is not None or line is not None)


def split_chapters(
    text: str, *, heading: re.Pattern[str] = DEFAULT_HEADING, min_words: int = 30
) -> list[tuple[str, str]]:
    """``(title, text)`` pairs; text before the first real chapter is ``"Front matter"``.

    A heading whose section has fewer than ``min_words`` words (a table-of-contents line) is
    folded into the preceding section. With no headings, the whole text is one section.
    """
    marks = [(m.start(1), m.end(1) + 1, m.group(1).strip()) for m in heading.finditer(text)]
    if not marks:
        return [("", text.strip())] if text.strip() else []
    sections: list[list[str]] = [["Front matter", text[: marks[0][0]]]]
    for i, (_, body_start, title) in enumerate(marks):
        body_end = marks[i + 1][0] if i + 1 < len(marks) else len(text)
        body = text[body_start:body_end]
        if len(body.split()) < min_words:
            sections[-1][1] += "\n" + title + "\n" + body
        else:
            sections.append([title, body])
    out = [(t, b.strip()) for t, b in sections]
    return [(t, b) for t, b in out if b]


def load_text(
    path: str | Path, *, title: str | None = None, author: str = "", chapters: bool = True,
    encoding: str = "utf-8", max_bytes: int | None = BOOK_MAX_BYTES,
) -> Book:
    """A plain-text book; chapters found by :func:`split_chapters` unless ``chapters=False``.

    Read by :func:`~recitation.corpus.files.read_text_file`: empty, binary and (unless
    another ``encoding`` is named) non-UTF-8 files are refused, naming the byte offset.
    """
    p = Path(path)
    text = read_text_file(p, encoding=encoding, max_bytes=max_bytes).replace("\r\n", "\n")
    return _book(text, title or p.stem, author, str(p), chapters, fmt="text")


def load_gutenberg(path: str | Path, *, chapters: bool = True) -> Book:
    """A Project Gutenberg book: licence stripped, title/author from the header."""
    p = Path(path)
    g = strip_gutenberg(read_text_file(p, what="Project Gutenberg file"))
    if not g.body.strip():
        raise CorpusError(f"{p}: no text left after removing the Project Gutenberg licence")
    return _book(g.body, g.title or p.stem, g.author, str(p), chapters, fmt="gutenberg")


def _book(text: str, title: str, author: str, source: str, chapters: bool, fmt: str) -> Book:
    book_id = slugify(title)
    sections = split_chapters(text) if chapters else [("", text.strip())]
    return Book(
        id=book_id,
        title=title,
        author=author,
        source=source,
        chapters=make_chapters(book_id, sections),
        metadata={"format": fmt},
    )
