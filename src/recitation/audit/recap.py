"""RECAP inside an audit: the agentic extraction loop on a few audited passages and as many
control passages, so "reproduced after feedback" is read against what the same loop gets
out of text the model never saw.

Each group (text, controls) becomes one EchoTrace book written to the audit's ``inputs/``
(``recap_text.json``, ``recap_control.json``): one event per passage, its first sentence as
the given opening, no summary bullets and no character list (the audit has no section
summary agent; RECAP's prompt then says "(none)" there). Each book is one ordinary
``extract`` run with the ``recap`` method: DSP, the verifier, the jailbreak when refused,
then the feedback loop with the model itself as helper and judge (the extract job's
default), the released settings otherwise. Differences from the paper are listed in
``docs/audit.md``.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

from recitation.corpus.jsonl import iter_records
from recitation.corpus.tokenize import sent_tokenize
from recitation.runs.audits import RECAP_RUNS as RUN_KEYS
from recitation.runs.config import parse_config

GROUP_FILES = {"text": "recap_text.json", "control": "recap_control.json"}


def _read(path: Path, limit: int) -> list[dict[str, Any]]:
    return [row for _, row in itertools.islice(iter_records(path), limit)]


def _event(row: dict[str, Any], k: int) -> dict[str, Any]:
    text = str(row["text"])
    sents = sent_tokenize(text) or [text]
    return {"title": f"Passage {k + 1}", "characters": [], "detailed_summary": [],
            "segmentation_boundaries": {"first_sentence": sents[0],
                                        "last_sentence": sents[-1]},
            "text_segment": text, "audit_passage": row["id"]}


def _title(rows: list[dict[str, Any]], fallback: str) -> str:
    sources = {Path(str(r.get("source") or "")).stem for r in rows} - {""}
    return sorted(sources)[0] if len(sources) == 1 else fallback


def write_book(rows: list[dict[str, Any]], path: Path, fallback_title: str) -> Path:
    """An EchoTrace book of the passages (one chapter, one event per passage)."""
    book = {"book_name": _title(rows, fallback_title),
            "chapters": [{"chapter_title": "(none)", "events": [_event(r, k)
                                                          for k, r in enumerate(rows)]}]}
    path.write_text(json.dumps(book, ensure_ascii=False, indent=1), encoding="utf-8")
    return path


def recap_config(model: dict[str, Any], settings: Any, book: Path, group: str) -> Any:
    """The ``extract`` run of one group: RECAP on every event of ``book`` (``model``: the
    model config of the audit's runs of this model)."""
    cap = settings.max_new_tokens or 2 * settings.passage_words + 8
    recap = {"max_new_tokens": cap, "max_rounds": settings.recap_rounds,
             "feedback_max_tokens": settings.recap_hint_tokens}
    return parse_config({"job": "extract", "name": f"audit-recap-{group}",
                         "seed": settings.seed, "model": model, "cache": settings.cache,
                         "params": {"book": str(book), "format": "echotrace",
                                    "methods": ["recap"], "recap": recap}},
                        source="audit")


def create_recap_runs(inputs: Path, runs: Path, model: dict[str, Any], settings: Any,
                      entry: dict[str, Any], has_controls: bool) -> None:
    """One RECAP run per group (the controls' only when there are controls)."""
    from recitation.runs.runner import create_run

    files = {"text": inputs / "text.jsonl", "control": inputs / "controls.jsonl"}
    for group in ("text", "control") if has_controls else ("text",):
        book = inputs / GROUP_FILES[group]
        if not book.exists():
            rows = _read(files[group], settings.recap_passages)
            if not rows:
                continue
            write_book(rows, book, "audited text" if group == "text" else "controls")
        cfg = recap_config(model, settings, book, group)
        entry["runs"][RUN_KEYS[group]] = create_run(cfg, runs).name
