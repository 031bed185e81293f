"""The extract run exported: stored extract-job records to an EchoTrace extraction file and
a summary.

The file has the layout of the RECAP release (``LLM_completions`` -> ``prefix-probing`` and
``Agent_Extraction`` -> ``simple_agent_extraction``, ``simple_agent_jailbreak``,
``simple_agent_extraction_refined_<i>`` with ``text`` and ``refinement_prompt``), so
``recitation evaluate`` scores it; ROUGE-L figures here come from the same code
(:func:`recitation.evaluate.scoring.evaluate_book`). Only the events that were extracted are
written, and, as released, only the *kept* refinements (each beat the previous one by more than
``min_gain``), so the last one, which ``refined_best`` reports, is the best; the rounds that
were run but not kept are in the run store and the ``.attempts.jsonl`` file.
Per-event details (stop reason, ROUGE-L per round, filter score, leak stats, cost per stage)
go under the event's ``recitation`` key, which the EchoTrace loader keeps and scoring ignores;
every attempt with its full prompt goes to a ``.attempts.jsonl`` file beside it.

With the memorization-score filter, the *filtered* variant of RECAP keeps, for events below
the threshold, only attempt 0 (``refined_0``): what the pipeline returns when it skips their
feedback. When the run also ran RECAP without the filter, both variants come from one run and
the savings are exact (calls and tokens the filter would not have spent, ROUGE-L it would
have lost).
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

from recitation.corpus.model import Book, Chapter, Event, slugify
from recitation.extract.leak import summarize_leaks
from recitation.extract.records import METHOD_STAGES, StageCost
from recitation.runs.jobs import Table

ECHO_METHOD = {"prefix": "prefix-probing", "dsp": "simple_agent_extraction",
               "dsp_jailbreak": "simple_agent_jailbreak",
               "recap": "simple_agent_extraction_refined_best",
               "recap_filter": "simple_agent_extraction_refined_best"}
_REFINED = re.compile(r"^simple_agent_extraction_refined_(\d+)$")


def event_records(records: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """Every event record, chapter items flattened (with their gold event attached)."""
    out = []
    for _, rec in records:
        if rec.get("kind") == "chapter":
            gold = {g["id"]: g for g in rec["gold_events"]}
            out += [r | {"gold_event": gold.get(r["event_id"])} for r in rec["events"]]
        else:
            out.append(rec)
    return out


def filtered_completions(rec: dict[str, Any]) -> dict[str, Any]:
    """The event's completions as RECAP-with-filter returns them."""
    comp: dict[str, Any] = copy.deepcopy(rec["llm_completions"])
    f = rec.get("filter")
    if f is not None and not f["passed"]:
        agent = comp.get("Agent_Extraction", {})
        for key in [k for k in agent if (m := _REFINED.match(k)) and int(m.group(1)) > 0]:
            del agent[key]
    return comp


def _details(rec: dict[str, Any]) -> dict[str, Any]:
    return {k: rec[k] for k in ("rouge_l", "refusals", "rounds", "reported_round",
                                "loop_scores", "stop_reason", "filter", "leak", "cost")
            if k in rec}


def build_book(source: Book | None, records: list[tuple[str, dict[str, Any]]], *,
               filtered: bool = False, book_name: str = "") -> Book:
    """The extraction book: the source's structure, extracted events only."""
    by_id: dict[str, dict[str, Any]] = {r["event_id"]: r for r in event_records(records)}
    chapters: list[Chapter] = []
    for _, rec in records:
        if rec.get("kind") == "chapter" and source is not None:
            ch = next((c for c in source.chapters if c.id == rec["chapter_id"]), None)
            evs = [Event(id=g["id"], title=g["title"], characters=g["characters"],
                         summary=g["summary"], first_sentence=g["first_sentence"],
                         last_sentence=g["last_sentence"], text=g["text"])
                   for g in rec["gold_events"]]
            chapters.append(Chapter(id=rec["chapter_id"], title=ch.title if ch else "",
                                    events=evs))
    if source is not None:
        for ch in source.chapters:
            evs = [e for e in ch.events if e.id in by_id]
            if evs and not any(c.id == ch.id for c in chapters):
                chapters.append(Chapter(id=ch.id, title=ch.title, events=evs, extra=ch.extra))
    out = []
    for ch in sorted(chapters, key=lambda c: c.id):
        evs = []
        for e in ch.events:
            found = by_id.get(e.id)
            if found is None:
                continue
            rec = found
            comp = filtered_completions(rec) if filtered else rec["llm_completions"]
            extra = {k: v for k, v in e.extra.items() if k != "LLM_completions"}
            evs.append(e.model_copy(update={"extra": extra | {"LLM_completions": comp,
                                                              "recitation": _details(rec)}}))
        out.append(ch.model_copy(update={"events": evs}))
    name = book_name or (source.metadata.get("book_name") if source else "") or (
        _echo_name(source) if source else "book")
    meta: dict[str, Any] = {"book_name": name, "format": "echotrace", "extra": {}}
    return Book(id=slugify(str(name)), title=source.title if source else str(name),
                author=source.author if source else "", chapters=out, metadata=meta)


def _echo_name(book: Book) -> str:
    """EchoTrace-style ``Title_-_Author`` name for books from other loaders."""
    title = re.sub(r"[^A-Za-z0-9]+", "_", book.title).strip("_") or "book"
    author = re.sub(r"[^A-Za-z0-9]+", "_", book.author).strip("_")
    return f"{title}_-_{author}" if author else title


def extraction_filename(book_name: str, target: str, helper: str) -> str:
    """``<Book>_extraction_<target>_feedback_<helper>.json`` (what ``evaluate`` expects)."""
    def clean(s: str) -> str:
        return re.sub(r"[^A-Za-z0-9.\-]+", "-", s).strip("-") or "model"

    return f"{book_name}_extraction_{clean(target)}_feedback_{clean(helper)}.json"


def write_extraction(book: Book, path: Path, records: list[tuple[str, dict[str, Any]]]) -> Path:
    """Write the EchoTrace file and, beside it, ``<name>.attempts.jsonl``."""
    from recitation.corpus.echotrace import write_echotrace

    path.parent.mkdir(parents=True, exist_ok=True)
    write_echotrace(book, path)
    with path.with_suffix(".attempts.jsonl").open("w", encoding="utf-8") as fh:
        for rec in event_records(records):
            fh.write(json.dumps({"event_id": rec["event_id"], "attempts": rec["attempts"]},
                                ensure_ascii=False) + "\n")
    return path


def method_costs(events: list[dict[str, Any]],
                 chapter_costs: list[dict[str, Any]]) -> dict[str, StageCost]:
    """Prompts, tokens and dollars each method needs (stages of :data:`METHOD_STAGES`)."""
    out = {m: StageCost() for m in METHOD_STAGES}
    for method, stages in METHOD_STAGES.items():
        for c in chapter_costs:
            if "summary" in stages and "summary" in c:
                out[method].add(StageCost.from_dict(c["summary"]))
        for rec in events:
            skip = method == "recap_filter" and not (rec.get("filter") or {}).get("passed")
            for stage in stages:
                if stage in rec["cost"] and not (skip and stage in ("feedback", "refine")):
                    out[method].add(StageCost.from_dict(rec["cost"][stage]))
    return out


def rouge_by_method(book: Book, filtered_book: Book | None) -> dict[str, float | None]:
    """Weighted ROUGE-L recall per method, computed by ``recitation evaluate``'s code."""
    from recitation.evaluate.scoring import EvaluateConfig, evaluate_book

    methods = tuple(dict.fromkeys(ECHO_METHOD.values()))
    scores = evaluate_book(book, EvaluateConfig(methods=methods))["rouge_scores"]
    out = {m: scores[e] for m, e in ECHO_METHOD.items()}
    if filtered_book is not None:
        fs = evaluate_book(filtered_book, EvaluateConfig(methods=methods))["rouge_scores"]
        out["recap_filter"] = fs[ECHO_METHOD["recap_filter"]]
    else:
        out["recap_filter"] = None
    return out


def headline(events: list[dict[str, Any]], costs: dict[str, StageCost]) -> list[str]:
    lines = []
    refused = sum(bool(r["refusals"].get("dsp")) for r in events if r.get("refusals"))
    rescued = sum(any(not v for k, v in r["refusals"].items() if k.startswith("jailbreak"))
                  for r in events if r.get("refusals"))
    lines.append(f"DSP refusals: {refused}; rescued by a jailbreak: {rescued}")
    stops: dict[str, int] = {}
    for r in events:
        stops[r.get("stop_reason") or "-"] = stops.get(r.get("stop_reason") or "-", 0) + 1
    lines.append("feedback stop reasons: "
                 + ", ".join(f"{k} {v}" for k, v in sorted(stops.items())))
    scored = [r for r in events if r.get("filter")]
    if scored:
        skipped = [r for r in scored if not r["filter"]["passed"]]
        saved = costs["recap"].prompts - costs["recap_filter"].prompts
        lines.append(f"filter: {len(skipped)} of {len(scored)} events below threshold; "
                     f"feedback+refine calls saved: {saved}")
    hints = [h["before"] for r in events for h in r["leak"]["hints"]]
    hs = summarize_leaks(hints)
    ss = summarize_leaks([r["leak"]["summary"] for r in events if r["leak"]["summary"]])
    blocked = sum(h["blocked"] for r in events for h in r["leak"]["hints"])
    lines.append(f"leak guard: hints {hs['flagged']}/{hs['count']} flagged (max shared span "
                 f"{hs['max_longest_span']} words), {blocked} blocked; summaries "
                 f"{ss['flagged']}/{ss['count']} flagged (max span {ss['max_longest_span']})")
    return lines


def summary_table(records: list[tuple[str, dict[str, Any]]], methods: list[str],
                  source: Book | None = None) -> Table:
    events = event_records(records)
    chapter_costs = [r["summary_cost"] for _, r in records if r.get("kind") == "chapter"]
    costs = method_costs(events, chapter_costs)
    book = build_book(source, records)
    fbook = build_book(source, records, filtered=True) if "recap_filter" in methods else None
    rouge = rouge_by_method(book, fbook) if events else {}
    rows = []
    for m in methods:
        c, r = costs[m], rouge.get(m)
        rows.append([m, len(events), "-" if r is None else f"{r:.4f}", c.prompts,
                     c.input_tokens, c.output_tokens, f"{c.dollars:.4f}"])
    lines = headline(events, costs) if events else []
    r_all, r_filt = rouge.get("recap"), rouge.get("recap_filter")
    if r_all is not None and r_filt is not None and "recap" in methods:
        saved = costs["recap"].input_tokens + costs["recap"].output_tokens - (
            costs["recap_filter"].input_tokens + costs["recap_filter"].output_tokens)
        lines.append(f"filter cost in ROUGE-L: {r_all - r_filt:+.4f} (RECAP {r_all:.4f} vs "
                     f"RECAP+filter {r_filt:.4f}); tokens saved: {saved}")
    return Table("Extraction", ["method", "events", "ROUGE-L (weighted recall)", "prompts",
                                "input tokens", "output tokens", "USD"], rows, lines)
