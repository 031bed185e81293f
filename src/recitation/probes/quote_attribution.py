"""Quotation attribution (Michel et al. 2025, section 4 and appendix A), the downstream task.

One work item per chapter (chapters found by :data:`recitation.corpus.text.DEFAULT_HEADING`;
text before the first heading is chapter 0). A chapter is cut into chunks of ``chunk_tokens``
tokens overlapping by ``stride_tokens`` (the authors: 4096 / 1024, the Llama-3 tokenizer,
HF ``return_overflowing_tokens``); tokens are counted with the model's tokenizer when it has
one (each whitespace word counted as `` word``), else one per word. Chunks end at word
boundaries and never cut a quote: a cut inside a quote moves to the quote's end (the next
chunk starts at or before the quote), so every quote lies whole in at least one chunk.
Quotes are marked ``|n|...|n|`` from 1 in each chunk; then (``unwrap``, the default) the
marked chunk is unwrapped as the authors' ``clean_context`` does (:func:`unwrap`). The
prompt is the authors' chain of thought with the character-to-alias list
(``Main=alias=alias``, the speakers' characters, honorific-less variants added when
unambiguous, as ``get_enhanced_char_list``); the reply may run to ``max_new_tokens`` (the
authors: 2000).

The unit (``unit``) is the authors' by default: the sub-quote, each span of PDNC's
``quoteByteSpans`` (a quotation interrupted by narration, ``"I think," said he, "that..."``,
is two sub-quotes, marked, answered and scored apart; id ``<quoteID>-<k>``, as the rows of
the authors' ``quote_info.csv``); ``quote`` marks a whole quotation, narration inside it
included, as one.

Strategies: ``first`` (each quote's first prediction is kept, the normal prompt) and
``incremental`` (the default, as the paper's experiments: from the second chunk of a
chapter, earlier predictions of the quotes this chunk repeats are given in the incremental
prompt and the new prediction replaces them). Predicted names map to character ids through
the alias list, exactly (the authors' ``alias2id`` falls back to substring matching; the
paper says no lenient matching: we follow the paper). Accuracy over quotes (in the unit)
whose speaker has at least ``min_quotes`` of them (the paper: 10), overall, explicit and
other; a quote never answered counts as wrong. A reply that does not parse records its
error; its quotes are unanswered.
"""

from __future__ import annotations

import ast
import json
import re
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from recitation.corpus.pdnc import PdncNovel
from recitation.corpus.text import DEFAULT_HEADING
from recitation.errors import ConfigError
from recitation.methods import Access, Calls, MethodInfo, require_access
from recitation.models.base import GenerationRequest, Model
from recitation.probes.novel import HONORIFICS, NON_CHARACTERS, load_novel
from recitation.runs.jobs import Job, Table, WorkItem

_INSTR = ("**Instruction:** You are an excellent linguist working in the field of literature. "
          "I will provide you with a passage of a book where some quotes have unique "
          "identifiers marked by headers '|quote_id|'.")
_TASK = (" Your are tasked to build a list of quote attributions by sequentially attributing "
         "the marked quotes to their speaker.")
_STEPS = ("\n\n**Step 2:** Match each speaker found in the previous step with one of the "
          "following name:\n\n**Names**\n\n---\n{names}\n---\n\n**Step 3:** Replace the "
          "speakers found in Step 1 with their matching name found in Step 2. Your answer "
          "should follow this JSON format:\n\n{{\n'quote_id_1' : 'predicted_speaker_1',\n"
          "'quote_id_2' : 'predicted_speaker_2'\n}}\n\nYour answer should only contain the "
          "output of **Step 3** and can only contain quote identifiers and speakers. Never "
          "generate quote content and don't explain your reasoning.")
NORMAL_PROMPT = (_INSTR + _TASK + "\n\n**Passage:**\n---\n{passage}\n---\n\n**Step 1:** "
                 "Attribute sequentially each quote to their speaker." + _STEPS)
INCREMENTAL_PROMPT = (
    _INSTR + " You will also be provided a list of characters and their aliases, and previous "
    "predictions." + _TASK + "\n\n**Passage:**\n---\n{passage}\n---\n\n**Previous "
    "predictions**\n\n---\n{previous}\n---\n\n**Step 1:** Attribute sequentially each quote "
    "to their speaker. Update the previous predictions if you think it contains wrong speaker "
    "prediction." + _STEPS)
"""The authors' prompts (``incremental_pred.py``: get_first_prompt / get_incremental_prompt)."""


def alias_table(novel: PdncNovel, speakers: set[str]) -> dict[str, str]:
    """Alias -> character id for the characters of ``speakers`` (names or aliases), with
    honorific-less variants (``Mr Elliot -> Elliot``) when they name one character only."""
    table: dict[str, str] = {}
    extra: dict[str, set[str]] = {}
    for c in novel.characters:
        names = {c.name, *c.aliases} - NON_CHARACTERS - {""}
        if not names & speakers:
            continue
        for n in names:
            table[n] = c.id
        for n in names:
            words = n.split()
            if len(words) > 1 and words[0] in HONORIFICS:
                extra.setdefault(" ".join(words[1:]), set()).add(c.id)
    for n, ids in extra.items():
        if n not in table and len(ids) == 1:
            table[n] = ids.pop()
    return table


def names_text(novel: PdncNovel, table: Mapping[str, str]) -> str:
    """``Main=alias=alias`` lines, one per character, in character-list order."""
    lines = []
    for c in novel.characters:
        al = sorted(n for n, i in table.items() if i == c.id and n != c.name)
        if c.id in table.values():
            lines.append("=".join([c.name, *al]))
    return "\n".join(lines)


def map_prediction(pred: str | None, table: Mapping[str, str]) -> str | None:
    """The character id of an exact name or alias, else None (no lenient matching)."""
    return table.get(pred.strip()) if isinstance(pred, str) else None


def chapter_bounds(text: str) -> list[tuple[int, int]]:
    starts = [0] + [m.start(1) for m in DEFAULT_HEADING.finditer(text)]
    starts = sorted(set(starts))
    return [(a, b) for a, b in zip(starts, [*starts[1:], len(text)], strict=True)
            if text[a:b].strip()]


def chunk_spans(words: list[tuple[int, int, int]], quotes: list[tuple[int, int]],
                size: int, stride: int) -> list[tuple[int, int]]:
    """Character spans of chunks of ``size`` tokens overlapping by ``stride``.

    ``words``: (start, end, tokens) of each word; ``quotes``: (start, end) spans. A chunk
    end inside a quote moves to the quote's end; a chunk start inside one moves to its
    start."""
    if not words:
        return []
    if stride >= size:
        raise ConfigError(f"stride_tokens ({stride}) must be smaller than chunk_tokens ({size})")
    cum = [0]
    for w in words:
        cum.append(cum[-1] + w[2])

    def fix_end(pos: int) -> int:
        for a, b in quotes:
            if a < pos < b:
                return b
        return pos

    def fix_start(pos: int) -> int:
        for a, b in quotes:
            if a < pos < b:
                return a
        return pos

    out, i = [], 0
    while True:
        j = i
        while j < len(words) and cum[j + 1] - cum[i] <= size:
            j += 1
        j = max(j, i + 1)
        start, end = fix_start(words[i][0]), fix_end(words[j - 1][1])
        out.append((start, end))
        if j >= len(words):
            return out
        nxt = j
        while nxt > i + 1 and cum[j] - cum[nxt - 1] <= stride:
            nxt -= 1
        i = max(nxt, i + 1)


def mark_quotes(text: str, a: int, quotes: list[tuple[str, int, int]]) -> tuple[str, list[str]]:
    """``text[a:...]`` chunk with its whole quotes marked ``|n|...|n|`` (from 1); returns the
    marked text and the quote ids in order (a quote starting inside an earlier one is not
    marked)."""
    out, ids, pos = [], [], 0
    for qid, s, e in sorted(quotes, key=lambda x: x[1]):
        s, e = s - a, e - a
        if s < pos or s < 0 or e > len(text):
            continue
        if s > 0 and text[s - 1] in "\"“'‘":
            s -= 1
        if e < len(text) and text[e] in "\"”'’":
            e += 1
        ids.append(qid)
        out += [text[pos:s], f"|{len(ids)}|", text[s:e], f"|{len(ids)}|"]
        pos = e
    out.append(text[pos:])
    return "".join(out), ids


_HARD_WRAP = re.compile(r"([\w.,:])\n([\w.,:])")


def unwrap(text: str) -> str:
    """The passage as the authors' ``clean_context`` (``incremental_pred.py``) leaves it, in
    the same three passes: a lone newline between two characters that are each a word
    character, ``.``, ``,`` or ``:`` becomes a space (a blank line, or a line ending or
    starting with a quotation mark, ``;``, ``!``, ``?``, ``-`` or a space, is kept; each
    join consumes the character after the newline, so a line of one character is joined to
    the line before only); every ``_`` becomes a space; each run of three spaces, left to
    right, becomes one. Quote markers ``|n|`` are untouched (``|`` is in no pass), and no
    line is joined across one."""
    text = _HARD_WRAP.sub(r"\1 \2", text)
    return text.replace("_", " ").replace("   ", " ")


def parse_predictions(output: str) -> dict[str, str]:
    """``{'1': 'Anne', ...}`` from a reply: the first ``{...}`` as JSON or a Python literal
    (a key's digits are its id: ``quote_id_1`` is 1), else ``id : name`` lines (a reply cut
    off at the token limit, or a name with an apostrophe inside single quotes)."""
    m = re.search(r"\{[^{}]*\}", output)
    if m:
        raw = re.sub(r"quote_|\|", "", m.group())
        for parse in (json.loads, ast.literal_eval):
            try:
                d = parse(raw)
            except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                continue
            if isinstance(d, dict):
                return {m.group(): str(v).strip() for k, v in d.items()
                        if (m := re.search(r"\d+", str(k)))}
    out = {}
    for k, v in re.findall(r"""^[\s'"|{]*(?:quote_)?(?:id_)?(\d+)[\s'"|]*:\s*(.*?)[\s,}]*$""",
                           output, flags=re.M):
        name = v.strip().strip("'\"").strip()
        if name:
            out[k] = name
    return out


class QuoteAttributionParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    novels: list[str] = Field(default_factory=list, description="PDNC-format novel folders")
    chunk_tokens: int = Field(4096, ge=16, description="the authors: 4096 (Llama-3)")
    stride_tokens: int = Field(1024, ge=0, description="overlap of chunks; the authors: 1024")
    strategy: Literal["incremental", "first"] = "incremental"
    min_quotes: int = Field(10, ge=1, description="evaluate speakers with >= this many quotes")
    max_chapters: int | None = Field(None, ge=1, description="only the first N chapters with "
                                     "quotes of each novel (default: all)")
    max_new_tokens: int = Field(2000, ge=1, description="the authors: 2000")
    unwrap: bool = Field(True, description="unwrap hard-wrapped lines of each marked chunk "
                         "as the authors' clean_context; False: the raw text")
    unit: Literal["subquote", "quote"] = Field(
        "subquote", description="subquote: each span of quoteByteSpans apart (the authors' "
        "quote_info.csv rows); quote: a whole quotation, narration inside it included")


def quote_units(novel: PdncNovel, unit: str) -> list[dict[str, Any]]:
    """The quotes to attribute (speaker not in NON_CHARACTERS): ``{id, start, end, speaker
    (name), type}``; a sub-quote per span (id ``Q18-1``), or a quotation first span start
    to last span end."""
    out = []
    for q in novel.quotations:
        if q.speaker in NON_CHARACTERS:
            continue
        spans = (list(enumerate(q.spans)) if unit == "subquote"
                 else [(None, (q.spans[0][0], q.spans[-1][1]))])
        for k, (s, e) in spans:
            out.append({"id": q.id if k is None else f"{q.id}-{k}", "start": s, "end": e,
                        "speaker": q.speaker, "type": q.quote_type})
    return out


def chapter_items(novel: PdncNovel, max_chapters: int | None,
                  unit: str = "subquote") -> list[WorkItem]:
    units = quote_units(novel, unit)
    table = alias_table(novel, {u["speaker"] for u in units})
    counts = Counter(u["speaker"] for u in units)
    out = []
    for k, (a, b) in enumerate(chapter_bounds(novel.text)):
        quotes: list[dict[str, Any]] = []
        for u in units:
            if a <= u["start"] < b:
                c = novel.character(u["speaker"])
                quotes.append({**u, "speaker": c.id if c else None})
        if not quotes:
            continue
        end = max([b, *(int(q["end"]) for q in quotes)])
        out.append(WorkItem(f"{novel.folder}/ch{k:03d}", {
            "novel": novel.folder, "start": a, "text": novel.text[a:end], "quotes": quotes,
            "aliases": table, "names": names_text(novel, table),
            "speaker_counts": {table.get(s, s): n for s, n in counts.items()}}))
        if max_chapters and len(out) >= max_chapters:
            break
    return out


class QuoteAttributionJob(Job):
    name = "quote_attribution"
    description = "quotation attribution: the speaker of every marked quote of each chunk"
    Params = QuoteAttributionParams
    params: QuoteAttributionParams

    def items(self) -> list[WorkItem]:
        if not self.params.novels:
            raise ConfigError("quote_attribution: params.novels is empty; give novel folders")
        return [it for f in self.params.novels for it in chapter_items(
            load_novel(f), self.params.max_chapters, self.params.unit)]

    def input_files(self) -> dict[str, Path]:
        return {f"novel{i}": Path(f) / "quotation_info.csv"
                for i, f in enumerate(self.params.novels)}

    def chunks(self, payload: dict[str, Any], model: Model) -> list[tuple[int, int]]:
        tok = model.tokenizer()
        text, a = payload["text"], payload["start"]
        cache: dict[str, int] = {}

        def n(w: str) -> int:
            if tok is None:
                return 1
            if w not in cache:
                cache[w] = max(1, len(tok.encode(" " + w)))
            return cache[w]

        words = [(m.start(), m.end(), n(m.group())) for m in re.finditer(r"\S+", text)]
        quotes = [(q["start"] - a, q["end"] - a) for q in payload["quotes"]]
        return chunk_spans(words, quotes, self.params.chunk_tokens, self.params.stride_tokens)

    def passage(self, payload: dict[str, Any], s: int, e: int) -> tuple[str, list[str]]:
        """The chunk ``text[s:e]`` of a chapter as the prompt shows it: its whole quotes
        marked (:func:`mark_quotes`), then unwrapped (:func:`unwrap`) unless
        ``unwrap=False``; and the marked quote ids in order."""
        a = payload["start"]
        inside = [(q["id"], q["start"], q["end"]) for q in payload["quotes"]
                  if s <= q["start"] - a and q["end"] - a <= e]
        marked, ids = mark_quotes(payload["text"][s:e], a + s, inside)
        return (unwrap(marked) if self.params.unwrap else marked), ids

    async def run_items(self, items: list[WorkItem], model: Model) -> list[dict[str, Any]]:
        require_access(["quote_attribution"], model.capabilities, model.backend)
        import asyncio

        return list(await asyncio.gather(*(self.chapter(it, model) for it in items)))

    async def chapter(self, item: WorkItem, model: Model) -> dict[str, Any]:
        x, p = item.payload, self.params
        preds: dict[str, str] = {}
        errors: list[str] = []
        chunks: list[dict[str, Any]] = []
        for s, e in self.chunks(x, model):
            marked, ids = self.passage(x, s, e)
            previous = {str(i + 1): preds[q] for i, q in enumerate(ids) if q in preds}
            if p.strategy == "incremental" and previous:
                prompt = INCREMENTAL_PROMPT.format(passage=marked, previous=previous,
                                                   names=x["names"])
            else:
                prompt = NORMAL_PROMPT.format(passage=marked, names=x["names"])
            gen = (await model.generate([GenerationRequest.chat(
                prompt, max_tokens=p.max_new_tokens, temperature=0.0)]))[0]
            got = parse_predictions(gen.text)
            if not got:
                errors.append(f"chunk {len(chunks)}: no predictions parsed from the reply")
            for local, name in got.items():
                if local.isdigit() and 1 <= int(local) <= len(ids):
                    q = ids[int(local) - 1]
                    if p.strategy == "incremental" or q not in preds:
                        preds[q] = name
            chunks.append({"span": [s, e], "quotes": ids, "output": gen.text})
        return {"novel": x["novel"], "chunks": chunks, "errors": errors,
                "quotes": [score_quote(q, preds.get(q["id"]), x) for q in x["quotes"]]}

    def summarize(self, records: list[tuple[str, dict[str, Any]]]) -> Table:
        acc = attribution_accuracy([r for _, r in records], self.params.min_quotes)
        rows = [[n, a["quotes"], f"{a['all']:.3f}", f"{a['explicit']:.3f}", f"{a['other']:.3f}"]
                for n, a in sorted(acc.items())]
        return Table("Quotation attribution", ["novel", "quotes", "all", "explicit", "other"],
                     rows)


def score_quote(q: dict[str, Any], pred: str | None, x: dict[str, Any]) -> dict[str, Any]:
    pid = map_prediction(pred, x["aliases"])
    return {"id": q["id"], "type": q["type"], "speaker": q["speaker"], "prediction": pred,
            "predicted_id": pid, "correct": pid is not None and pid == q["speaker"],
            "speaker_quotes": x["speaker_counts"].get(q["speaker"], 0)}


def attribution_accuracy(records: list[dict[str, Any]], min_quotes: int = 10
                         ) -> dict[str, dict[str, Any]]:
    """Per novel: accuracy over quotes of speakers with >= ``min_quotes`` quotes, all /
    explicit / other (anaphoric and implicit); NaN where there is no such quote."""
    out: dict[str, dict[str, Any]] = {}
    by: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        by.setdefault(r["novel"], []).extend(
            q for q in r["quotes"] if q["speaker"] is not None
            and q["speaker_quotes"] >= min_quotes)

    def acc(qs: list[dict[str, Any]]) -> float:
        return sum(bool(q["correct"]) for q in qs) / len(qs) if qs else float("nan")

    for novel, qs in by.items():
        exp = [q for q in qs if q["type"] == "Explicit"]
        oth = [q for q in qs if q["type"] != "Explicit"]
        out[novel] = {"quotes": len(qs), "all": acc(qs), "explicit": acc(exp),
                      "other": acc(oth)}
    return out


def _calls(p: Mapping[str, Any]) -> Calls:
    return Calls(generate=1)


QUOTE_ATTRIBUTION = MethodInfo(
    name="quote_attribution", kind="probe", title="quotation attribution (downstream task)",
    paper="Michel et al. 2025 (quotation attribution, section 4 and appendix A)",
    access=frozenset({Access.GENERATE}), writes=("quotes", "chunks"), calls=_calls,
    calls_formula="1 generation per chunk (a chapter is one or more chunks)",
    job="quote_attribution", family="quote_attribution", unit="event",
    select="task quote-attribution",
    options=("chunk_tokens", "stride_tokens", "strategy", "min_quotes", "max_new_tokens",
             "unwrap", "unit"),
    summary="chapters in overlapping chunks with sub-quotes (or quotes) marked |n|, hard "
    "wraps joined; chain-of-thought prompt with the alias list; exact alias -> character "
    "mapping; accuracy all / explicit / other")
