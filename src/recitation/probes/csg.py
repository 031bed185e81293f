"""Corrupted-Speaker-Guessing (Michel et al. 2025, section 5 and appendix B), automatic.

For a quote of a non-minor character: the passage is the 10 sentences before and after the
quote (:func:`recitation.probes.novel.sentence_spans`; the authors: spaCy). The speaker's
main name, aliases and the words of its names (the replacement table's keys) are replaced
by a gender-matched name that does not occur in the novel: first names Henry / Joseph (M),
Emma / Elizabeth (F), last names Stone / Walker / Smith (when all of a list occur in the
novel, ours: :data:`MORE_FIRST_NAMES`, :data:`MORE_LAST_NAMES`); honorifics are kept
(``Miss Bates -> Miss Smith``); a one-word alias without honorific that is the first word
of a longer name of the character (or the whole name of a one-word character) becomes the
first name, other one-word names the last name. The authors chose the
replacements by hand (``id2replacements.pkl``); characters of another gender (X, U) are
skipped. At least one mention must be replaced in the passage.

How names are replaced (``corruption``): ``substring`` (the default, the authors'
``get_corrupted_passages`` in ``main_speaker_cloze.py``): each name of the table, longest
first, replaced by ``str.replace`` in turn, wherever it occurs, inside a word too (``Tom``
of ``Tomorrow``); ``word`` (ours): whole words only, in one pass (:func:`corrupt`).

Explicit quotes: the speaker's name in the referring expression nearest the quote
(``said Anne``) is masked and the cloze prompt asks for it (figure 3); other quotes use the
free prompt (figures 5-6). Prompts are the authors' text (``prompts/*.txt``). A prediction
(``<speaker>...</speaker>``) equal to a name the table replaces (``answers="table"``, the
default: the authors' ``pred in gold`` with ``gold`` the table's keys; ``"aliases"``, ours:
PDNC's main name and aliases of the speaker) is a memorization hit; equal to a replacement
name (the table's values) a reasoning hit. Exact matches.
CSG-Memorization / -Reasoning: the mean over quote types of the per-type accuracies.

Scoring variants for white-box models (ours; :mod:`recitation.probes.scoring`): ``logprob``
appends each candidate to the authors' prompt; ``fill`` samples explicit quotes whose
corrupted passage names the replacement before the mask, and ranks each candidate by its
log-probability at the ``[MASK]`` after the passage before it (the cloze variant of
CSG-Memorization, which the paper's appendix D finds usable alone).
"""

from __future__ import annotations

import bisect
import json
import pickle
import random
import re
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from recitation.corpus.pdnc import PdncCharacter, PdncNovel, Quotation
from recitation.errors import ConfigError
from recitation.methods import Access, Calls, MethodInfo, require_access
from recitation.models.base import GenerationRequest, Model
from recitation.probes.novel import (
    HONORIFICS,
    book_phrase,
    load_novel,
    name_pattern,
    names_of,
    novel_meta,
    occurs,
    parse_tag,
    sentence_spans,
    split_honorific,
)
from recitation.probes.scoring import Scoring, best_candidates, require_logprobs, scored
from recitation.runs.jobs import Job, Table, WorkItem

FIRST_NAMES = {"M": ("Henry", "Joseph"), "F": ("Emma", "Elizabeth")}
LAST_NAMES = ("Stone", "Walker", "Smith")
"""The paper's names, tried first."""
MORE_FIRST_NAMES = {"M": ("Arthur", "Frank", "Edwin", "Oscar"),
                    "F": ("Clara", "Alice", "Edith", "Agnes")}
MORE_LAST_NAMES = ("Hartley", "Fenwick", "Ashby", "Marlow")
"""Ours: tried when every name of the paper's lists occurs in the novel (Persuasion has
both Emma and Elizabeth; the authors chose by hand)."""
QUOTE_TYPES = ("Explicit", "Anaphoric", "Implicit")

_HEAD = ("You will be given a passage of {book} that you have seen in your training data. ")
EXPLICIT_PROMPT = _HEAD + (
    "Find the proper name that fills the [MASK] token. This name is a proper name (not a "
    "pronoun or any other word). You must make a guess, even if you are uncertain. Do not "
    "explain your reasoning.\n\nYou must format your answer in <speaker>[SPEAKER]<\\speaker> "
    "tags.\n\nPassage:\n{passage}\n\nTarget quote:\n\"{quote}\"")
OTHER_PROMPT = _HEAD + (
    "Find the true speaker name of the target quote. This name is a proper name (not a "
    "pronoun or any other word). You must make a guess, even if you are uncertain. Do not "
    "explain your reasoning.\n\nYou must format your answer in <speaker>[SPEAKER]<\\speaker> "
    "tags.\n\nPassage:\n{passage}\n\nTarget quote:\n\"{quote}\"")


CELEBRITIES = frozenset({"Emma Stone", "Joseph Smith", "Alice Walker"})
"""Pairs of the name lists that name a famous person, never used (the paper, appendix B:
"we never used 'Emma Stone' or other celebrity names"): an actress, the founder of a
church, a novelist."""


def _pair(gender: str, text: str) -> tuple[str, str] | None:
    """The first (first name, last name) of the lists, both absent from ``text``, that is
    not a celebrity's name."""
    firsts = [f for f in (*FIRST_NAMES.get(gender, ()), *MORE_FIRST_NAMES.get(gender, ()))
              if not occurs(text, f)]
    lasts = [s for s in (*LAST_NAMES, *MORE_LAST_NAMES) if not occurs(text, s)]
    return next(((f, s) for f in firsts for s in lasts if f"{f} {s}" not in CELEBRITIES),
                None)


def name_parts(character: PdncCharacter) -> dict[str, str]:
    """Every word of the character's names but honorifics -> ``"first"`` (the first word of
    a name of two or more words) or ``"last"`` (any other word): what must not remain in a
    corrupted passage ("Charles" of "Charles Musgrove" when the aliases lack it)."""
    parts: dict[str, str] = {}
    for name in names_of(character):
        words = split_honorific(name)[1].split()
        for k, w in enumerate(words):
            if w[:1].isupper() and len(w) > 1 and w not in HONORIFICS:
                parts.setdefault(w, "first" if k == 0 and len(words) > 1 else "last")
    return parts


def replacement_names(character: PdncCharacter, text: str) -> dict[str, str] | None:
    """Alias -> replacement for ``character``, names absent from ``text`` and no celebrity's
    (:data:`CELEBRITIES`); then every remaining part of its names (:func:`name_parts`) ->
    the first or last replacement, so no part of any of its names survives. None when the
    gender has no name list or every combination occurs in the novel."""
    pair = _pair(character.gender, text)
    if pair is None:
        return None
    first, last = pair
    rests = [split_honorific(n) for n in names_of(character)]
    given = {r.split()[0] for _, r in rests if len(r.split()) > 1}
    given |= {r for h, r in rests if not h and len(character.name.split()) == 1}
    own = set(names_of(character))
    out = {}
    for alias, (hon, rest) in zip(names_of(character), rests, strict=True):
        if not rest:
            continue
        if len(rest.split()) > 1:
            new = f"{first} {last}"
        elif not hon and rest in given:
            new = first
        else:
            new = last
        hon = " ".join(w for w in hon.split() if w not in own)  # "Admiral" can be a name
        out[alias] = f"{hon} {new}".strip()
    for part, role in name_parts(character).items():
        out.setdefault(part, first if role == "first" else last)
    return out


def remaining_parts(character: PdncCharacter, text: str) -> list[str]:
    """The parts of the character's names that occur in ``text`` (empty when a corruption
    is complete)."""
    return [w for w in name_parts(character) if occurs(text, w)]


def corrupt(text: str, mapping: Mapping[str, str]) -> tuple[str, int]:
    """``text`` with every whole-word alias replaced (longest first, one pass); the count."""
    if not mapping:
        return text, 0
    pat = name_pattern(list(mapping))
    return pat.subn(lambda m: mapping[m.group()], text)


def corrupt_substrings(text: str, mapping: Mapping[str, str]) -> tuple[str, int]:
    """The authors' corruption: for each name, longest first (ties in the table's order),
    every occurrence in the text as it stands after the longer names were replaced, inside
    a word or not, becomes its replacement; the count is of the names that occurred."""
    found = 0
    for name in sorted(mapping, key=len, reverse=True):
        if name and name in text:
            found += 1
            text = text.replace(name, mapping[name])
    return text, found


Corruption = Literal["substring", "word"]
Answers = Literal["table", "aliases"]
_CORRUPT = {"substring": corrupt_substrings, "word": corrupt}


def _quote_span(q: Quotation) -> tuple[int, int]:
    return q.spans[0][0], q.spans[-1][1]


def _window(sents: list[tuple[int, int]], a: int, b: int, k: int) -> tuple[int, int]:
    ends = [e for _, e in sents]
    first = min(bisect.bisect_right(ends, a), len(sents) - 1)
    last = min(bisect.bisect_left(ends, b), len(sents) - 1)
    return sents[max(0, first - k)][0], sents[min(len(sents) - 1, last + k)][1]


def _mask(passage: str, offset: int, q: Quotation, names: list[str]) -> str | None:
    """The passage with the speaker's name in the referring expression nearest the quote
    masked, or None when the expression or a name in it is not found."""
    ref = q.referring_expression.strip()
    if not ref:
        return None
    qa, qb = _quote_span(q)
    best = None
    for m in re.finditer(re.escape(ref), passage):
        d = min(abs(m.start() + offset - qb), abs(m.end() + offset - qa))
        if best is None or d < best[0]:
            best = (d, m)
    if best is None:
        return None
    m = best[1]
    hit = name_pattern(names).search(passage, m.start(), m.end())
    if hit is None:
        return None
    return passage[:hit.start()] + "[MASK]" + passage[hit.end():]


def main_speakers(novel: PdncNovel, k: int) -> set[str] | None:
    """The ids of the novel's ``k`` non-minor characters with the most quotes (the authors
    chose 4-5 main speakers per novel by hand); None for ``k = 0`` (every non-minor one)."""
    if k <= 0:
        return None
    counts: dict[str, int] = defaultdict(int)
    for q in novel.quotations:
        c = novel.character(q.speaker)
        if c is not None and c.category != "minor":
            counts[c.id] += 1
    return {cid for cid, _ in sorted(counts.items(), key=lambda x: (-x[1], x[0]))[:k]}


class _Plain(pickle.Unpickler):
    """Unpickles dicts, lists, strings and numbers only: a table is data, never code."""

    def find_class(self, module: str, name: str) -> Any:
        raise ConfigError(f"replacement table: refusing to load {module}.{name} (only plain "
                          "dicts of names are read)")


def load_replacements(path: Path) -> dict[str, dict[str, str]]:
    """The authors' hand-made table (``id2replacements.pkl``: character id -> alias ->
    replacement) or the same as JSON; ids as strings."""
    try:
        raw = (json.loads(path.read_text(encoding="utf-8")) if path.suffix == ".json" else
               _Plain(path.open("rb")).load())
    except (OSError, ValueError, pickle.UnpicklingError, EOFError) as e:
        raise ConfigError(f"replacement table {path}: cannot read it ({e})") from None
    if not isinstance(raw, dict) or not all(isinstance(v, dict) for v in raw.values()):
        raise ConfigError(f"replacement table {path}: expected {{character id: {{alias: "
                          "replacement}}}}")
    return {str(k): {str(a): str(b) for a, b in v.items()} for k, v in raw.items()}


def csg_item(novel: PdncNovel, q: Quotation, sents: list[tuple[int, int]],
             context: int = 10, cache: dict[str, Any] | None = None,
             speakers: set[str] | None = None, corruption: Corruption = "substring",
             answers: Answers = "table") -> dict[str, Any] | None:
    """The corrupted passage of one quote, or None when it cannot be built (``cache``:
    replacement names by character, kept across the quotes of one novel, pre-filled with a
    replacement table where there is one; ``speakers``: the character ids probed;
    ``corruption`` and ``answers``: :class:`CsgParams`)."""
    c = novel.character(q.speaker)
    if c is None or c.category == "minor" or q.quote_type not in QUOTE_TYPES:
        return None
    if speakers is not None and c.id not in speakers:
        return None
    cache = {} if cache is None else cache
    if c.id not in cache:
        cache[c.id] = replacement_names(c, novel.text)
    mapping = cache[c.id]
    if not mapping:
        return None
    a, b = _window(sents, *_quote_span(q), context)
    passage = novel.text[a:b]
    if q.quote_type == "Explicit":
        masked = _mask(passage, a, q, list(mapping))
        if masked is None:
            return None
        passage = masked
    corrupted, count = _CORRUPT[corruption](passage, mapping)
    if count == 0:
        return None
    quote, _ = _CORRUPT[corruption](q.text, mapping)
    if remaining_parts(c, corrupted) or remaining_parts(c, quote):
        return None  # a part of the speaker's names survived: not a corrupted passage
    gold = (sorted(mapping, key=lambda n: (-len(n), n)) if answers == "table"
            else names_of(c))
    return {"novel": novel.folder, "quote_id": q.id, "quote_type": q.quote_type,
            "speaker": c.name, "gold": gold, "span": [a, b],
            "corrupted": sorted(set(mapping.values())),
            "passage": corrupted, "quote": quote}


class CsgParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    novels: list[str] = Field(default_factory=list, description="PDNC-format novel folders")
    n: int = Field(100, ge=1, description="quotes per quote type and novel (the paper: 100)")
    context_sentences: int = Field(10, ge=0)
    max_new_tokens: int = Field(50, ge=1, description="the authors: 50")
    main_speakers: int = Field(5, ge=0, description="probe the quotes of the novel's k "
                               "non-minor characters with the most quotes (the authors: 4-5 "
                               "main speakers, chosen by hand); 0: every non-minor character")
    replacements: str | None = Field(None, description="a folder of the authors' hand-made "
                                     "tables, <novel>/id2replacements.pkl (or .json): their "
                                     "speakers and names instead of ours")
    corruption: Corruption = Field("substring", description="substring: the authors', each "
                                   "name replaced wherever it occurs, inside words too "
                                   "(str.replace, longest first); word: ours, whole words only")
    answers: Answers = Field("table", description="the names a memorization hit may give: "
                             "table, the authors', the names the replacement table replaces; "
                             "aliases: ours, PDNC's main name and aliases of the speaker")
    scoring: Scoring = Field("generate", description="generate: the paper's prompts; logprob: "
                             "ours, the most likely of the novel's names after the prompt; "
                             "fill: ours, explicit quotes, the most likely name at the "
                             "passage's [MASK] after a replacement (probes/scoring.py)")


class CsgJob(Job):
    name = "csg"
    description = "Corrupted-Speaker-Guessing: the true speaker despite a corrupted passage"
    Params = CsgParams
    params: CsgParams

    def items(self) -> list[WorkItem]:
        p = self.params
        if not p.novels:
            raise ConfigError("csg: params.novels is empty; give novel folders")
        out = []
        for folder in p.novels:
            novel = load_novel(folder)
            book = book_phrase(novel_meta(folder))
            sents = sentence_spans(novel.text)
            by_type: dict[str, list[dict[str, Any]]] = defaultdict(list)
            cache: dict[str, Any] = {}
            speakers = main_speakers(novel, p.main_speakers)
            if p.replacements:
                table = self._table(Path(p.replacements), novel.folder)
                cache.update(table)
                speakers = set(table)
            for q in novel.quotations:
                if (it := csg_item(novel, q, sents, p.context_sentences, cache, speakers,
                                   p.corruption, p.answers)) is not None:
                    by_type[it["quote_type"]].append({**it, "book": book})
            rng = random.Random(f"{self.seed}:{novel.folder}")
            names = sorted({n for c in novel.characters if c.category != "minor"
                            for n in names_of(c)})
            fill = p.scoring == "fill"  # explicit quotes misled before the mask
            for qt in ("Explicit",) if fill else QUOTE_TYPES:
                pool = [it for it in by_type[qt] if not fill or misleads(it)]
                for it in rng.sample(pool, min(p.n, len(pool))):
                    if scored(p.scoring):
                        it = {**it, "candidates": sorted(set(names) | set(it["corrupted"]))}
                    out.append(WorkItem(f"{novel.folder}/{it['quote_id']}", it))
        return out

    @staticmethod
    def _table(folder: Path, novel: str) -> dict[str, dict[str, str]]:
        for name in ("id2replacements.pkl", "id2replacements.json"):
            if (folder / novel / name).is_file():
                return load_replacements(folder / novel / name)
        raise ConfigError(f"csg: no replacement table for {novel} under {folder} (expected "
                          f"{folder / novel / 'id2replacements.pkl'})")

    def input_files(self) -> dict[str, Path]:
        files = {f"novel{i}": Path(f) / "quotation_info.csv"
                 for i, f in enumerate(self.params.novels)}
        if self.params.replacements:
            for i, f in enumerate(self.params.novels):
                for name in ("id2replacements.pkl", "id2replacements.json"):
                    table = Path(self.params.replacements) / Path(f).name / name
                    if table.is_file():
                        files[f"replacements{i}"] = table
        return files

    async def run_items(self, items: list[WorkItem], model: Model) -> list[dict[str, Any]]:
        require_access(["csg"], model.capabilities, model.backend)
        if scored(self.params.scoring):
            require_logprobs(model, "csg")
            best = await best_candidates(model, [_scored_texts(it.payload, self.params.scoring)
                                                 for it in items])
            preds = [it.payload["candidates"][b] for it, b in zip(items, best, strict=True)]
            outputs = [""] * len(items)
        else:
            gens = await model.generate([GenerationRequest.chat(
                _prompt(it.payload), max_tokens=self.params.max_new_tokens, temperature=0.0)
                for it in items])
            outputs = [g.text for g in gens]
            preds = [parse_tag(o, "speaker") for o in outputs]
        out = []
        for it, o, pred in zip(items, outputs, preds, strict=True):
            out.append({**it.payload, "output": o, "prediction": pred,
                        "memorization": pred in it.payload["gold"],
                        "reasoning": pred not in it.payload["gold"]
                        and pred in it.payload["corrupted"]})
        return out

    def summarize(self, records: list[tuple[str, dict[str, Any]]]) -> Table:
        scores = csg_scores([r for _, r in records])
        rows = [[n, s["quotes"], f"{s['csg_memorization']:.3f}",
                 f"{s['csg_memorization_cloze']:.3f}", f"{s['csg_reasoning']:.3f}"]
                for n, s in sorted(scores.items())]
        return Table("Corrupted-Speaker-Guessing", ["novel", "quotes", "CSG-M", "CSG-M (cloze)",
                                                   "CSG-R"], rows)


def misleads(x: Mapping[str, Any]) -> bool:
    """A replacement name occurs in the corrupted passage before its ``[MASK]``."""
    before = x["passage"].split("[MASK]", 1)[0]
    return any(occurs(before, n) for n in x["corrupted"])


_NEXT_WORD = re.compile(r"\s*(?:\w+|[^\w\s])")


def _scored_texts(x: Mapping[str, Any], scoring: str) -> list[str]:
    """The texts whose log-probabilities rank the candidates: ``logprob``, the prompt and
    ``<speaker>NAME</speaker>``; ``fill``, the corrupted passage up to its mask, NAME, and
    the word after the mask (which ends the name: ``Sir Walter`` against ``Sir Walter
    Elliot``). The passage before the mask is the same in every text, so the ranking is that
    of log p(NAME, next word | the passage before the mask)."""
    if scoring == "fill":
        if x["passage"].count("[MASK]") != 1:
            raise ConfigError(f"csg: scoring 'fill' needs one [MASK] in the passage of "
                              f"{x['quote_id']} ({x['quote_type']} quote)")
        before, after = x["passage"].split("[MASK]")
        nxt = m.group() if (m := _NEXT_WORD.match(after)) else ""
        return [f"{before}{c}{nxt}" for c in x["candidates"]]
    prompt = _prompt(x)
    return [f"{prompt}\n<speaker>{c}</speaker>" for c in x["candidates"]]


def _prompt(x: Mapping[str, Any]) -> str:
    tmpl = EXPLICIT_PROMPT if x["quote_type"] == "Explicit" else OTHER_PROMPT
    return tmpl.format(book=x["book"], passage=x["passage"], quote=x["quote"])


def csg_scores(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per novel: per-type accuracies, and CSG-M / CSG-R as their mean over the types
    present; CSG-M (cloze) = the explicit type's (NaN when there is none)."""
    by: dict[str, dict[str, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    for r in records:
        by[r["novel"]][r["quote_type"]].append(r)
    out = {}
    for novel, types in by.items():
        mem = {t: sum(bool(r["memorization"]) for r in rs) / len(rs) for t, rs in types.items()}
        rea = {t: sum(bool(r["reasoning"]) for r in rs) / len(rs) for t, rs in types.items()}
        out[novel] = {"quotes": sum(len(rs) for rs in types.values()),
                      "memorization_by_type": mem, "reasoning_by_type": rea,
                      "csg_memorization": sum(mem.values()) / len(mem),
                      "csg_memorization_cloze": mem.get("Explicit", float("nan")),
                      "csg_reasoning": sum(rea.values()) / len(rea)}
    return out


def _calls(p: Mapping[str, Any]) -> Calls:
    return Calls(generate=1)


CSG = MethodInfo(
    name="csg", kind="probe", title="Corrupted-Speaker-Guessing",
    paper="Michel et al. 2025 (quotation attribution, section 5 and appendix B)",
    access=frozenset({Access.GENERATE}), writes=("output", "memorization", "reasoning"),
    calls=_calls, calls_formula="1 generation", job="csg", family="csg", unit="sample",
    select="probe csg", options=("n", "context_sentences", "max_new_tokens", "scoring",
                                 "main_speakers", "replacements", "corruption", "answers"),
    summary="the speaker of a quote in a passage where the speaker's names are replaced; "
    "the true name = memorization, the replacement = reasoning (per quote type, averaged)")
