"""Where a corpus document is, from the metadata line an index stores for it (infini-gram's
``{"path", "linenum", "metadata"}`` and recitation's ``"line"``): read by the tracer, which
locates spans in documents (:mod:`recitation.trace.locate`), and by the report and the trace
table, which name them (:mod:`recitation.report.trace_sources`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

JSONL_SUFFIXES = (".jsonl", ".json", ".jsonl.gz", ".json.gz")


def int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def is_jsonl(metadata: dict[str, Any]) -> bool:
    """The document is a record of a JSONL file (its own line of the file)."""
    return str(metadata.get("path") or "").endswith(JSONL_SUFFIXES) \
        and int_or_none(metadata.get("linenum")) is not None


def section_of(metadata: dict[str, Any]) -> str | None:
    """The chapter or section title a plain-text folder indexed with ``--chapters`` stored."""
    inner = metadata.get("metadata")
    title = inner.get("section") if isinstance(inner, dict) else None
    return title if isinstance(title, str) and title else None


def place(metadata: dict[str, Any], lines: Sequence[int] | None = None) -> str:
    """Where a document is, from its metadata line: the file and the span's ``lines`` there
    (else where the document starts, or its number in its file), and its section title;
    "" when the index records no file."""
    path = metadata.get("path")
    if not path:
        return ""
    section = section_of(metadata)
    linenum, start = int_or_none(metadata.get("linenum")), int_or_none(metadata.get("line"))
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
