"""Write a benchmark's table into a doc between its markers (the benchmarks that keep a
table in docs/ share this): ``<!-- NAME:start -->`` ... ``<!-- NAME:end -->``."""

from __future__ import annotations

from pathlib import Path


def write_between(doc: Path, start: str, end: str, body: str) -> None:
    """Replace what lies between ``start`` and ``end`` in ``doc`` with ``body``."""
    text = doc.read_text(encoding="utf-8")
    if start not in text or end not in text:
        raise SystemExit(f"{doc}: the markers {start} / {end} are missing")
    head, rest = text.split(start, 1)
    _, tail = rest.split(end, 1)
    doc.write_text(f"{head}{start}\n{body}\n{end}{tail}", encoding="utf-8")
