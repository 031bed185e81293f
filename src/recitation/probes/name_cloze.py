"""Name cloze (Chang et al. 2023), as used by Michel et al. (2025) section 5.

Passages (``passages="authors"``, the default) by the rules of the passages the authors read
(:mod:`recitation.probes.cloze_rules`: one per single-token person-name mention, the whole
sentences around it with no other proper name, 40-60 tokens, closest to 50). Ours
(``passages="windows"``): a passage of 40-60 word tokens
(:func:`recitation.probes.novel.word_tokens`: words and punctuation marks; Chang et al. count
BookNLP tokens) made of whole sentences, containing exactly one mention of a person name, and
that mention is a single token: one word of a character's name or alias from
``character_info.csv`` (honorifics such as ``Miss`` may stand before it: ``Miss [MASK]
married``), not next to another name word. The name is replaced by ``[MASK]``; the model
answers in ``<name>...</name>`` tags (the authors' prompt with two examples,
``main_name_cloze.py``); exact match of the parsed answer with the name; greedy decoding.
Passages are sampled per novel with the run's seed (the authors: 100).

The authors read passages prepared by Chang et al. (``<novel>.name_cloze.txt``, from BookNLP
NER); we build them from the PDNC character list, so any PDNC-format folder works.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from recitation.errors import ConfigError
from recitation.methods import Access, Calls, MethodInfo, require_access
from recitation.models.base import GenerationRequest, Model
from recitation.probes.cloze_rules import (
    authors_passages,
    released_file,
    released_passages,
)
from recitation.probes.novel import (
    HONORIFICS,
    NON_CHARACTERS,
    load_novel,
    name_pattern,
    parse_tag,
    sentence_spans,
    word_tokens,
)
from recitation.probes.scoring import Scoring, best_candidates, require_logprobs, scored
from recitation.runs.jobs import Job, Table, WorkItem

PROMPT = (
    "You have seen the following passage in your training data. What is the proper name "
    "that fills in the [MASK] token in it?  This name is exactly one word long, and is a "
    "proper name (not a pronoun or any other word). You must make a guess, even if you are "
    "uncertain.   \n    \nYou must format your answer in <name>[NAME]</name> tags.\n\n"
    "Example:\n\nInput: Stay gold, [MASK], stay gold.\nOutput: <name>Ponyboy</name>\n\n"
    "Input: The door opened, and [MASK], dressed and hatted, entered with a cup of tea.\n"
    "Output: <name>Gerty</name>\n\nInput: %s\nOutput: \n\n")
r"""The authors' prompt (``main_name_cloze.py: predict``), one user turn. Their passage is the
last tab-separated field of a line of ``<novel>.name_cloze.txt`` (``read_data``:
``readlines`` then ``split("\t")``), so it ends with the line's ``\n``: the model reads
``Input: P\n\nOutput: \n\n``. :func:`prompt` puts that newline after ours."""


def prompt(passage: str) -> str:
    r"""The authors' prompt for ``passage``, byte for byte: the passage ends with one ``\n``,
    as a line of their released file does (ours have none, so it is added)."""
    return PROMPT % (passage if passage.endswith("\n") else passage + "\n")


def name_words(novel: Any) -> set[str]:
    """Single words of every character's names and aliases (honorifics left out)."""
    out: set[str] = set()
    for c in novel.characters:
        for n in {c.name, *c.aliases} - NON_CHARACTERS:
            out |= {w for w in n.split() if w not in HONORIFICS and w[:1].isupper()}
    return out


def cloze_passages(text: str, names: set[str], *, min_tokens: int = 40,
                   max_tokens: int = 60) -> list[dict[str, Any]]:
    """Every window of consecutive sentences of ``min_tokens``..``max_tokens`` word tokens
    with exactly one name mention, a single word (no name word next to it), masked.
    Windows start at each sentence and are the shortest that reach ``min_tokens``."""
    if not names:
        return []
    pat = name_pattern(sorted(names))
    sents = sentence_spans(text)
    counts = [len(word_tokens(text[a:b])) for a, b in sents]
    out = []
    for i in range(len(sents)):
        n, j = 0, i
        while j < len(sents) and n < min_tokens:
            n += counts[j]
            j += 1
        if n < min_tokens or n > max_tokens:
            continue
        a, b = sents[i][0], sents[j - 1][1]
        passage = " ".join(text[a:b].split())
        hits = list(pat.finditer(passage))
        if len(hits) != 1:
            continue
        m = hits[0]
        out.append({"passage": passage[:m.start()] + "[MASK]" + passage[m.end():],
                    "answer": m.group(), "start": a})
    return out


class NameClozeParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    novels: list[str] = Field(default_factory=list, description="PDNC-format novel folders")
    n: int = Field(100, ge=1, description="passages per novel (the paper: 100)")
    passages: Literal["authors", "windows", "released"] = Field(
        "authors", description="authors: one passage per single-token mention, as the "
        "authors' released passages are made (probes/cloze_rules.py); windows: ours, every "
        "40-60 token window of whole sentences with one mention; released: the authors' "
        "released passages themselves, read from params.released")
    released: str | None = Field(None, description="with passages 'released': the data "
                                 "folder of deezer/llms_quotation_attribution (holding "
                                 "<novel>/<novel>.name_cloze.txt)")
    min_tokens: int = Field(40, ge=1, description="windows only")
    max_tokens: int = Field(60, ge=1, description="windows only")
    max_new_tokens: int = Field(50, ge=1, description="the authors: 50")
    scoring: Scoring = Field("generate", description="generate: the paper's prompt; logprob: "
                             "ours, the most likely of the novel's names (probes/scoring.py); "
                             "fill: the same as logprob")


class NameClozeJob(Job):
    name = "name_cloze"
    description = "name cloze: the masked single-token character name of a passage"
    Params = NameClozeParams
    params: NameClozeParams

    def items(self) -> list[WorkItem]:
        p = self.params
        if not p.novels:
            raise ConfigError("name_cloze: params.novels is empty; give novel folders")
        out = []
        for folder in p.novels:
            novel = load_novel(folder)
            names = name_words(novel)
            cands = self._candidates(novel, names)
            rng = random.Random(f"{self.seed}:{novel.folder}")
            for k, c in enumerate(rng.sample(cands, min(p.n, len(cands)))):
                # scored: the novel's names, and the answer where a released passage
                # masks a name PDNC does not list (it is always one for ours)
                extra = ({"candidates": sorted(names | {c["answer"]})}
                         if scored(p.scoring) else {})
                out.append(WorkItem(f"{novel.folder}/{k:04d}",
                                    {"novel": novel.folder, **c, **extra}))
        return out

    def _candidates(self, novel: Any, names: set[str]) -> list[dict[str, Any]]:
        p = self.params
        if p.passages == "released":
            if not p.released:
                raise ConfigError("name_cloze: passages 'released' needs params.released "
                                  "(--released DIR: the authors' data folder)")
            return released_passages(Path(p.released).expanduser(), novel.folder)
        if p.passages == "authors":
            return authors_passages(novel.text, names)
        return cloze_passages(novel.text, names, min_tokens=p.min_tokens,
                              max_tokens=p.max_tokens)

    def input_files(self) -> dict[str, Any]:
        p = self.params
        out: dict[str, Any] = {f"novel{i}": Path(f) / "novel_text.txt"
                               for i, f in enumerate(p.novels)}
        if p.passages == "released" and p.released:
            for i, f in enumerate(p.novels):
                out[f"released{i}"] = released_file(Path(p.released).expanduser(),
                                                    Path(f).name)
        return out

    async def run_items(self, items: list[WorkItem], model: Model) -> list[dict[str, Any]]:
        require_access(["name_cloze"], model.capabilities, model.backend)
        if scored(self.params.scoring):
            return await self._run_scored(items, model)
        reqs = [GenerationRequest.chat(prompt(it.payload["passage"]),
                                       max_tokens=self.params.max_new_tokens, temperature=0.0)
                for it in items]
        gens = await model.generate(reqs)
        out = []
        for it, g in zip(items, gens, strict=True):
            pred = parse_tag(g.text, "name")
            out.append({**it.payload, "output": g.text, "prediction": pred,
                        "correct": pred == it.payload["answer"]})
        return out

    async def _run_scored(self, items: list[WorkItem], model: Model) -> list[dict[str, Any]]:
        require_logprobs(model, "name_cloze")
        texts = [[it.payload["passage"].replace("[MASK]", c) for c in it.payload["candidates"]]
                 for it in items]
        best = await best_candidates(model, texts)
        out = []
        for it, b in zip(items, best, strict=True):
            pred = it.payload["candidates"][b]
            out.append({**it.payload, "output": "", "prediction": pred,
                        "correct": pred == it.payload["answer"]})
        return out

    def summarize(self, records: list[tuple[str, dict[str, Any]]]) -> Table:
        acc = per_novel_accuracy([r for _, r in records])
        rows = [[n, k, f"{a:.3f}"] for n, (a, k) in sorted(acc.items())]
        return Table("Name cloze", ["novel", "passages", "accuracy"], rows,
                     [f"{len(records)} passages, {sum(r['correct'] for _, r in records)} "
                      "names found"])


def per_novel_accuracy(records: list[dict[str, Any]]) -> dict[str, tuple[float, int]]:
    """novel -> (exact-match accuracy, passages)."""
    by: dict[str, list[bool]] = defaultdict(list)
    for r in records:
        by[r["novel"]].append(bool(r["correct"]))
    return {n: (sum(v) / len(v), len(v)) for n, v in by.items()}


def _calls(p: Mapping[str, Any]) -> Calls:
    return Calls(generate=1)


NAME_CLOZE = MethodInfo(
    name="name_cloze", kind="probe", title="name cloze",
    paper="Michel et al. 2025 (quotation attribution, section 5: name cloze of Chang et "
    "al. 2023)", access=frozenset({Access.GENERATE}),
    writes=("output", "correct"), calls=_calls, calls_formula="1 generation",
    job="name_cloze", family="name_cloze", unit="passage", select="probe name-cloze",
    options=("n", "passages", "released", "min_tokens", "max_tokens", "max_new_tokens",
             "scoring"),
    summary="a 40-60 token passage with its one single-token character name masked; exact "
    "match of the model's answer, per novel")
