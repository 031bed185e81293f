"""Name-cloze passages by the rules of the passages the authors read (the default).

Chang et al.'s ``create_name_cloze_from_booknlp.py`` (bamman-group/gpt4-books), which made the
``<novel>.name_cloze.txt`` files Michel et al. released, keeps, for every person name that is
a single token (a BookNLP ``PROP``/``PER`` entity of length one):

- the whole sentences around it that lie strictly between the sentence of the previous
  proper-name entity (of any kind) and the sentence of the next one, so that the passage
  holds no other proper name; among those windows holding the name's sentence, the one whose
  length (last token index minus first) is strictly between 40 and 60 and closest to 50
  (ties: the earliest start, then the earliest end);
- not when the name is one of ``god, dad, mother, ...`` (:data:`INVALID_NAMES`), nor when the
  same word occurs again in the passage;
- one passage per mention; the tokens joined with single spaces, the name as ``[MASK]``.

Without BookNLP (ours): tokens are words and punctuation marks
(:func:`recitation.probes.novel.word_tokens`); the person names are the PDNC character
list's; a name after an honorific, a multi-word name of the list and any run of two or more
capitalised words are multi-token entities (so never masked, and they block windows as
theirs do); any other capitalised word inside a sentence is a proper-name entity, and so is
a sentence's first word when the novel never writes it in lower case (``Bath``, not
``The``). Docs/probes.md reports how many of the authors' released passages these rules
give back.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from recitation.errors import ConfigError
from recitation.probes.novel import HONORIFICS, WORD, sentence_spans

INVALID_NAMES = frozenset({"god", "dad", "mother", "father", "mama", "daddy", "ma", "papa",
                           "mum", "jesus", "christ", "pa", "mom", "kid"})
TARGET, MIN_LEN, MAX_LEN = 50, 40, 60
_OPENERS = frozenset("\"'“‘(—-_[")


@dataclass(frozen=True)
class Tok:
    text: str
    start: int
    end: int
    sid: int


def tokens(text: str) -> list[Tok]:
    """Word and punctuation tokens with their character offsets and sentence number."""
    out: list[Tok] = []
    for sid, (a, b) in enumerate(sentence_spans(text)):
        out += [Tok(m.group(), a + m.start(), a + m.end(), sid)
                for m in WORD.finditer(text[a:b])]
    return out


def _capital(t: str) -> bool:
    return t[:1].isupper() and t not in ("I", "O")


def _initial(toks: list[Tok], i: int) -> bool:
    """The first word of its sentence (after opening punctuation)."""
    j = i - 1
    while j >= 0 and toks[j].sid == toks[i].sid and toks[j].text in _OPENERS:
        j -= 1
    return j < 0 or toks[j].sid != toks[i].sid or toks[j].text in ".!?:;"


def _after_honorific(toks: list[Tok], i: int) -> bool:
    """An honorific (and its full stop) right before token ``i``, even where the sentence
    splitter cut after ``Mr.``."""
    j = i - 1
    if j >= 0 and toks[j].text == ".":
        j -= 1
    return j >= 0 and toks[j].text in HONORIFICS


def entities(toks: list[Tok], names: Iterable[str], lower: set[str]
             ) -> tuple[set[int], set[int]]:
    """(every proper-name entity token, the single-token person-name mentions)."""
    names = set(names)
    ent: set[int] = set()
    single: set[int] = set()
    i = 0
    while i < len(toks):
        t = toks[i].text
        proper = _capital(t) and (not _initial(toks, i) or t in names or t.lower() not in lower)
        if not (proper or t in HONORIFICS):
            i += 1
            continue
        j = i + 1  # a run of capitalised words (an honorific may lead it): one entity
        while j < len(toks) and toks[j].sid == toks[i].sid and (
                _capital(toks[j].text) or toks[j].text == "." and toks[j - 1].text in
                HONORIFICS):
            j += 1
        words = [k for k in range(i, j) if toks[k].text != "."]
        if len(words) == 1 and t in HONORIFICS:
            i += 1  # a lone "Miss" is no name
            continue
        ent.update(range(i, j))
        if len(words) == 1 and t in names and not _after_honorific(toks, i):
            single.add(i)
        i = j
    return ent, single


def best_window(toks: list[Tok], i: int, ent: list[int], sent_tokens: list[tuple[int, int]]
                ) -> tuple[int, int] | None:
    """The sentences around token ``i`` (first and last token index), as theirs (``ent``:
    every entity token, sorted)."""
    at = bisect.bisect_left(ent, i)  # ent sorted; i itself is one of them
    prev = ent[at - 1] if at > 0 else None
    nxt = ent[at + 1] if at + 1 < len(ent) else None
    first_sid = toks[prev].sid + 1 if prev is not None else 0
    last_sid = toks[nxt].sid - 1 if nxt is not None else toks[-1].sid
    sid = toks[i].sid
    best = None
    for s in range(first_sid, sid + 1):
        for e in range(sid, last_sid + 1):
            length = sent_tokens[e][1] - sent_tokens[s][0]
            if MIN_LEN < length < MAX_LEN and (best is None or abs(length - TARGET) < best[0]):
                best = (abs(length - TARGET), sent_tokens[s][0], sent_tokens[e][1])
    return None if best is None else (best[1], best[2])


def authors_passages(text: str, names: set[str]) -> list[dict[str, Any]]:
    """Every passage the rules give (module docstring): ``passage`` (tokens joined by single
    spaces, the name as ``[MASK]``), ``answer``, ``start`` (the passage's first character)."""
    toks = tokens(text)
    if not toks:
        return []
    lower = {m.group() for m in re.finditer(r"\b[a-z]\w*", text)}
    ent_set, single = entities(toks, names, lower)
    ent = sorted(ent_set)
    sent_tokens: list[tuple[int, int]] = []
    for k, t in enumerate(toks):
        if t.sid >= len(sent_tokens):
            sent_tokens += [(k, k)] * (t.sid + 1 - len(sent_tokens))
        sent_tokens[t.sid] = (sent_tokens[t.sid][0], k)
    out = []
    for i in sorted(single):
        name = toks[i].text
        win = best_window(toks, i, ent, sent_tokens)
        if win is None or name.lower() in INVALID_NAMES:
            continue
        a, b = win
        if any(toks[k].text.lower() == name.lower() for k in range(a, b + 1) if k != i):
            continue
        words = [("[MASK]" if k == i else toks[k].text) for k in range(a, b + 1)]
        out.append({"passage": _join(words, toks[a:b + 1]), "answer": name,
                    "start": toks[a].start})
    return out


def _join(words: list[str], toks: list[Tok]) -> str:
    """Tokens with a single space wherever the text had whitespace between them (theirs:
    ``' ' + token`` when the token's onset is past the previous one's end)."""
    out = words[0]
    for w, prev, t in zip(words[1:], toks[:-1], toks[1:], strict=True):
        out += (" " if t.start > prev.end else "") + w
    return out


RELEASED_FOLDERS = {"AlicesAdventuresInWonderland": "AliceInWonderland",
                    "TheAgeOfInnocence": "AgeOfInnocence", "AHandfulOfDust": "HandfulOfDust"}
"""PDNC folder -> the folder name of the authors' released data, where the two differ."""


def released_file(released: Path, novel: str) -> Path:
    """``<released>/**/<name>/<name>.name_cloze.txt`` of PDNC novel ``novel``."""
    name = RELEASED_FOLDERS.get(novel, novel)
    found = sorted(released.rglob(f"{name}/{name}.name_cloze.txt"))
    if not found:
        raise ConfigError(f"name_cloze: no {name}/{name}.name_cloze.txt under {released} "
                          "(give the data folder of deezer/llms_quotation_attribution)")
    return found[0]


def released_passages(released: Path, novel: str) -> list[dict[str, Any]]:
    """The authors' released passages of PDNC novel ``novel``: the lines of
    ``<released>/**/<name>/<name>.name_cloze.txt`` (deezer/llms_quotation_attribution's
    ``data``; ``<name>`` the authors' folder name), as ``read_data`` in their
    ``main_name_cloze.py`` reads them: tab-separated, the answer the 6th field, the passage
    the last, with the line's newline (their prompt shows it)."""
    path = released_file(released, novel)
    out = []
    with path.open(encoding="utf-8", newline="") as fh:
        for k, line in enumerate(fh):
            fields = line.split("\t")
            if len(fields) < 7 or "[MASK]" not in fields[-1]:
                raise ConfigError(f"{path}:{k + 1}: not a name-cloze line (7 tab-"
                                  "separated fields, the last a passage with [MASK])")
            out.append({"passage": fields[-1], "answer": fields[5], "start": k})
    return out
