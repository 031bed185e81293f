"""What the probes read of a novel folder in PDNC format, for any novel (no per-novel code).

- Title and author: ``PDNC-Novel-Index.csv`` / ``PDNC-Author-Index.csv`` beside the folder
  when present (PDNC's own index files), else a ``metadata.json`` in the folder
  (``{"title": ..., "author": ...}``), else the folder name split at capitals.
- Characters: ``character_info.csv`` (main name, aliases, gender, category).
- Sentences: a rule-based splitter (no model, no network): a sentence ends at ``. ! ?``
  (followed by closing quotes / brackets) before whitespace and an upper-case letter, an
  opening quote or a digit, or at a blank line; honorifics (``Mr.``, ``Mrs.``) do not end one.
  The authors used spaCy's sentence splitter.
- Honorifics: the authors' list (``process_pdnc_chunks.PREFIXES``) plus military and noble
  titles common in PDNC aliases (``Captain Wentworth``, ``Admiral Croft``).
"""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import dataclass
from pathlib import Path

from recitation.corpus.files import read_text_file
from recitation.corpus.pdnc import PdncCharacter, PdncNovel, load_pdnc_novel
from recitation.errors import CorpusError

HONORIFICS = frozenset({
    "Mr.", "Mrs.", "Miss.", "Lady", "Sir", "Mrs", "Mr", "Miss", "Dr.", "Dr", "Madame", "Madam",
    "Mademoiselle", "St.", "St", "Ms.", "Ms", "Count", "Countess", "The",
    # ours, beyond the authors' list
    "Captain", "Admiral", "Colonel", "Major", "General", "Lord", "Lieutenant", "Professor",
    "Aunt", "Uncle", "Cousin", "Mother", "Father", "Master", "Mistress", "Monsieur",
    "Mme.", "Mlle.", "Rev.", "Reverend", "Doctor", "Prince", "Princess", "Duke", "Duchess",
    "Baron", "Baroness", "Mamma", "Papa", "Old", "Young", "Little", "Dear"})
"""Words kept when a name is replaced (``Miss Bates -> Miss Smith``)."""

NON_CHARACTERS = frozenset({"_group", "_unknowable", "_narr", "_unknown"})

_SENT_END = re.compile(r"""[.!?]+['"”’)\]]*(?=\s+['"“‘(]?[A-Z0-9])|\n[ \t]*\n""")
WORD = re.compile(r"\w+(?:['’]\w+)*|[^\w\s]")
"""A word (with inner apostrophes) or one punctuation mark: the token of name-cloze lengths."""


@dataclass(frozen=True)
class NovelMeta:
    folder: str
    title: str
    author: str


def _index_rows(path: Path) -> list[dict[str, str]]:
    if not path.is_file():
        return []
    text = read_text_file(path, what="PDNC index", allow_empty=True)
    return list(csv.DictReader(io.StringIO(text, newline="")))


def novel_meta(folder: str | Path) -> NovelMeta:
    """Title and author of a novel folder (see the module docstring)."""
    d = Path(folder)
    meta_file = d / "metadata.json"
    if meta_file.is_file():
        try:
            data = json.loads(read_text_file(meta_file, what="novel metadata"))
        except json.JSONDecodeError as exc:
            raise CorpusError(f"{meta_file}: not valid JSON: {exc}") from None
        return NovelMeta(d.name, str(data.get("title") or d.name), str(data.get("author", "")))
    for row in _index_rows(d.parent / "PDNC-Novel-Index.csv"):
        if row.get("Folder Name") == d.name:
            author = ""
            for a in _index_rows(d.parent / "PDNC-Author-Index.csv"):
                if a.get("Author Code") == row.get("Author Code"):
                    author = f"{a.get('Given Name(s)', '')} {a.get('Surname(s)', '')}".strip()
            return NovelMeta(d.name, row.get("Novel Title") or d.name, author)
    return NovelMeta(d.name, re.sub(r"(?<=[a-z])(?=[A-Z])", " ", d.name), "")


def book_phrase(meta: NovelMeta) -> str:
    """``the book <title> written by <author>`` (the author left out when unknown)."""
    return f"the book {meta.title}" + (f" written by {meta.author}" if meta.author else "")


def load_novel(folder: str | Path) -> PdncNovel:
    d = Path(folder)
    if not d.is_dir():
        raise CorpusError(f"novel folder not found: {d}")
    return load_pdnc_novel(d)


def sentence_spans(text: str, start: int = 0, end: int | None = None) -> list[tuple[int, int]]:
    """``(start, end)`` character spans of the sentences of ``text[start:end]``."""
    end = len(text) if end is None else end
    out: list[tuple[int, int]] = []
    pos = start
    for m in _SENT_END.finditer(text, start, end):
        stop = m.end() if m.group().strip() else m.start()
        word = text[max(pos, stop - 12):m.start() + 1].split()
        if m.group().startswith(".") and word and word[-1] in HONORIFICS:
            continue
        if text[pos:stop].strip():
            out.append(_strip(text, pos, stop))
        pos = m.end()
    if text[pos:end].strip():
        out.append(_strip(text, pos, end))
    return out


def _strip(text: str, a: int, b: int) -> tuple[int, int]:
    while a < b and text[a].isspace():
        a += 1
    while b > a and text[b - 1].isspace():
        b -= 1
    return a, b


def word_tokens(text: str) -> list[str]:
    """Words and punctuation marks (the unit of name-cloze passage lengths)."""
    return WORD.findall(text)


def split_honorific(name: str) -> tuple[str, str]:
    """``("Miss", "Bates")`` for ``"Miss Bates"``; ``("", "Emma")`` without honorific."""
    words = name.split()
    i = 0
    while i < len(words) - 1 and words[i] in HONORIFICS:
        i += 1
    return " ".join(words[:i]), " ".join(words[i:])


def names_of(c: PdncCharacter) -> list[str]:
    """Main name and aliases, longest first (the order replacements are tried in)."""
    names = {c.name, *c.aliases} - {""}
    return sorted((n for n in names if n not in NON_CHARACTERS), key=lambda n: (-len(n), n))


def occurs(text: str, word: str) -> bool:
    """``word`` occurs in ``text`` as a whole word (case-sensitive)."""
    if word not in text:
        return False
    return re.search(rf"(?<![\w]){re.escape(word)}(?![\w])", text) is not None


def name_pattern(names: list[str]) -> re.Pattern[str]:
    """Whole-word alternation of ``names``, longest first."""
    alts = "|".join(re.escape(n) for n in sorted(set(names), key=lambda n: (-len(n), n)))
    return re.compile(rf"(?<![\w])(?:{alts})(?![\w])")


def parse_tag(output: str, tag: str) -> str | None:
    """The answer inside ``<tag>...</tag>`` (any case, optional brackets), else the text after
    a colon, as the authors' ``parse_answer``; None when there is neither."""
    for t in (tag, tag.capitalize(), tag.upper()):
        found = re.findall(rf"<{t}>\[?([^<>\]]+)\]?[<>]", output)
        if found:
            return str(found[0]).strip()
    m = re.findall(rf"<{tag}>\[?([^<>\]\n]+)", output, flags=re.IGNORECASE)
    if m:
        return str(m[0]).strip()
    after = re.findall(r": ([^<\n]+)[<>]?", output)
    return str(after[0]).strip() if after else None
