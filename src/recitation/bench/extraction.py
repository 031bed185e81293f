"""The ``extract`` unit of the ground-truth benchmark: DSP and RECAP's feedback loop (with
and without the memorization-score filter) with the organism as target.

RECAP needs a helper model (event summaries, feedback hints, the refusal judge), so the unit
runs only when one is given (``--helper SPEC``). The organism's passages become one
EchoTrace book with one chapter per passage (titled by the passage id); the extract job
re-segments each chapter with the helper's section summary agent into exactly one event
(``min_events = max_events = 1``), so every event's gold text is one whole passage and its
summary is the helper's. Then the job runs as ``recitation extract`` does (DSP, the
jailbreak on refusals, the feedback loop, the filter), greedy, with attempts capped at the
passage length plus a margin (CPU budget). Scored per passage against its own text: the
whole passage reproduced, at least one 40-token verbatim passage (RECAP's metric), ROUGE-L
recall; per dose and for non-members, per method. Costs per method come from the job's
per-stage ledgers (:func:`recitation.extract.export.method_costs`), so RECAP's savings with
the filter are measured on the same run.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from recitation.bench.groups import group_of, group_order, share_row
from recitation.organism.data import Passage

EXTRACT_METHODS: tuple[str, ...] = ("dsp", "recap", "recap_filter")
BOOK_NAME = "Ground_truth_passages_-_PDNC"
_WS = re.compile(r"\s+")


def extract_selection(passages: Sequence[Passage], per_group: int | None) -> list[Passage]:
    """The passages the extract unit runs on: all, or the first ``per_group`` of each dose
    group and of the non-members (in the split's order, which is seeded)."""
    if per_group is None:
        return list(passages)
    taken: dict[str, int] = {}
    out = []
    for p in passages:
        g = group_of(p)
        if taken.get(g, 0) < per_group:
            taken[g] = taken.get(g, 0) + 1
            out.append(p)
    return out


def write_book(passages: Sequence[Passage], path: Path) -> Path:
    """An EchoTrace summary file: one chapter per passage, one (unsummarized) event each."""
    chapters = []
    for p in passages:
        chapters.append({"chapter_title": p.id, "events": [{
            "title": p.id, "characters": [], "detailed_summary": [],
            "segmentation_boundaries": {"first_sentence": "", "last_sentence": ""},
            "text_segment": p.text}]})
    text = json.dumps({"book_name": BOOK_NAME, "chapters": chapters}, ensure_ascii=False,
                      indent=1) + "\n"
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")
    return path


def extract_params(cfg: Any, book: Path, passage_tokens: int) -> dict[str, Any]:
    """The extract job's params for the unit (``cfg``: the benchmark config)."""
    from recitation.models.config import parse_model_spec

    helper = parse_model_spec(cfg.helper) | {"batch_size": cfg.batch_size}
    return {
        "book": str(book), "format": "echotrace", "segment": True,
        "methods": list(cfg.extract_methods), "helper": helper,
        "recap": {"max_new_tokens": passage_tokens + 32,
                  "feedback_max_tokens": cfg.helper_max_tokens,
                  "max_rounds": cfg.extract_rounds},
        "summary": {"max_tokens": cfg.helper_max_tokens, "min_events": 1, "max_events": 1,
                    "max_attempts": cfg.summary_attempts, "seed": cfg.seed},
        # bounded by epochs, not by the wall clock (the paper's 180 s budget would make the
        # filter's scores depend on how busy the machine is)
        "filter": {"time_budget_s": 86_400.0, "max_epochs": cfg.filter_epochs,
                   "seed": cfg.seed},
    }


def _norm(text: str) -> str:
    return _WS.sub(" ", text).strip().lower()


def method_texts(rec: dict[str, Any]) -> dict[str, str]:
    """The text each method returns for one event record (EchoTrace candidate rules)."""
    from recitation.corpus.echotrace import BLOCKED
    from recitation.extract.export import ECHO_METHOD, filtered_completions

    out = {}
    for method, key in ECHO_METHOD.items():
        if method == "prefix":
            continue
        comp = filtered_completions(rec) if method == "recap_filter" else rec["llm_completions"]
        text = _candidate(comp, key)
        out[method] = "" if text == BLOCKED else text
    return out


def _candidate(comp: dict[str, Any], key: str) -> str:
    from recitation.corpus.echotrace import candidate_text
    from recitation.corpus.model import Event

    return candidate_text(Event(id="event", extra={"LLM_completions": comp}), key)


def passage_of(rec: dict[str, Any]) -> str:
    gold = rec.get("gold_event") or {}
    return str(rec.get("chapter_title") or gold.get("title") or "")


def extract_rows(outcome: Any, passages: dict[str, Passage],
                 methods: Sequence[str]) -> list[dict[str, Any]]:
    """Per method x group (dose groups, non-members): whole passage reproduced, >= 1
    40-token verbatim passage, mean ROUGE-L recall (Porter stemming, as RECAP), with
    Clopper-Pearson intervals. A passage without an event record (its item failed) counts
    as nothing extracted, as in RECAP's metrics."""
    from recitation.metrics.rouge import rouge_l
    from recitation.metrics.spans import verbatim_passages

    by_passage = event_map(outcome)
    per: dict[tuple[str, str], list[tuple[bool, bool, float]]] = {}
    for p in passages.values():
        rec = by_passage.get(p.id)
        texts = method_texts(rec) if rec else {}
        for method in methods:
            text = texts.get(method, "")
            whole = bool(text) and _norm(p.text) in _norm(text)
            has40 = bool(text) and verbatim_passages(p.text, text).passage_count > 0
            rl = rouge_l(p.text, text, use_stemmer=True).recall if text else 0.0
            per.setdefault((method, group_of(p)), []).append((whole, has40, rl))
    return [{"epoch": outcome.epoch, "method": method} | share_row(group, v)
            for (method, group), v in sorted(per.items(), key=lambda kv: (
                list(methods).index(kv[0][0]), group_order(kv[0][1])))]


def event_map(outcome: Any) -> dict[str, dict[str, Any]]:
    """Passage id -> its event record (the first event of its chapter)."""
    from recitation.extract.export import event_records

    records = [(str(r.get("item_id", "")), r) for r in outcome.records]
    out: dict[str, dict[str, Any]] = {}
    for rec in event_records(records):
        if "llm_completions" in rec:
            out.setdefault(passage_of(rec), rec)
    return out


def method_cost_rows(outcome: Any) -> list[dict[str, Any]]:
    """Prompts and tokens each method needed on this checkpoint (the job's stage ledgers)."""
    from recitation.extract.export import event_records, method_costs

    records = [(str(r.get("item_id", "")), r) for r in outcome.records]
    events = [r for r in event_records(records) if "cost" in r]
    chapters = [r["summary_cost"] for _, r in records
                if r.get("kind") == "chapter" and "summary_cost" in r]
    costs = method_costs(events, chapters)
    return [{"epoch": outcome.epoch, "method": m, "prompts": c.prompts,
             "input_tokens": c.input_tokens, "output_tokens": c.output_tokens}
            for m, c in costs.items() if m in EXTRACT_METHODS]


def extract_errors(outcome: Any, passages: dict[str, Passage]) -> list[str]:
    """Passages with no event record (their item failed or did not run): counted as 0."""
    found = event_map(outcome)
    missing = sorted(p for p in passages if p not in found)
    return [f"no extraction for passage {pid} (counted as nothing extracted)"
            for pid in missing]
