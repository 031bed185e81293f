"""A table written into a doc between its markers (``<!-- NAME:start -->`` ...
``<!-- NAME:end -->``): the commands and benchmarks that keep a table in docs/ share this."""

from __future__ import annotations

from pathlib import Path

from recitation.errors import ConfigError


def write_between(doc: Path, start: str, end: str, body: str) -> None:
    """Replace what lies between ``start`` and ``end`` in ``doc`` with ``body``."""
    text = doc.read_text(encoding="utf-8")
    if start not in text or end not in text:
        raise ConfigError(f"{doc}: the markers {start} / {end} are missing")
    head, rest = text.split(start, 1)
    _, tail = rest.split(end, 1)
    doc.write_text(f"{head}{start}\n{body}\n{end}{tail}", encoding="utf-8")


def replace_block(doc: Path, name: str, body: str) -> None:
    """:func:`write_between` with the markers of ``name``."""
    write_between(doc, f"<!-- {name}:start -->", f"<!-- {name}:end -->", body)
