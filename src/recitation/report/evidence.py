"""Evidence per attempt: the gold text beside the model's attempt, with verbatim spans.

Two kinds of spans, both from :mod:`recitation.metrics.spans`:

* **counted** — on the RECAP tokens (:func:`~recitation.metrics.spans.span_tokens`, profile
  ``folded``): the 40-token verbatim passages (up to 5 mismatches, ``dedup``: RECAP's
  measure) and the longest exact span; whether the attempt reproduces the gold text verbatim
  is the toolkit's one rule (:func:`recitation.metrics.verbatim.verbatim`), for prefix
  probing as the probe decided it and stored it;
* **highlighted** — runs of at least :data:`HIGHLIGHT_WORDS` consecutive words that match
  exactly (case and punctuation ignored), as character offsets into the gold text and the
  attempt, so the report can mark them where they stand.

``redact``: the texts are replaced by their length and SHA-256; the span statistics stay.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from recitation.metrics.spans import (
    find_spans,
    longest_common_span,
    span_stats,
    span_tokens,
)
from recitation.metrics.verbatim import VERBATIM_WORDS, verbatim

HIGHLIGHT_WORDS = 5
_WORD = re.compile(r"\S+")
_STRIP = re.compile(r"[^\w]+")


def _words(text: str) -> tuple[list[str], list[tuple[int, int]]]:
    """Normalized words of ``text`` (lower case, punctuation removed; empty ones dropped)
    and their character offsets."""
    norm, offs = [], []
    for m in _WORD.finditer(text):
        w = _STRIP.sub("", m.group().lower())
        if w:
            norm.append(w)
            offs.append((m.start(), m.end()))
    return norm, offs


def highlight_spans(gold: str, attempt: str,
                    min_words: int = HIGHLIGHT_WORDS) -> list[dict[str, int]]:
    """Exact runs of >= ``min_words`` words shared by gold and attempt, as character
    offsets (``gold_start``/``gold_end``, ``cand_start``/``cand_end``) and word counts."""
    g, go = _words(gold)
    c, co = _words(attempt)
    spans = find_spans(g, c, min_tokens=min_words, max_mismatches=0, mode="dedup")
    return [{"gold_start": go[s.gold_start][0], "gold_end": go[s.gold_end - 1][1],
             "cand_start": co[s.cand_start][0], "cand_end": co[s.cand_end - 1][1],
             "words": s.length} for s in sorted(spans, key=lambda s: s.gold_start)]


def span_summary(gold: str, attempt: str, min_tokens: int = 40,
                 verbatim_words: int = VERBATIM_WORDS) -> dict[str, Any]:
    """Counted spans of one attempt (module docstring); ``reproduced`` by the toolkit's one
    rule (:func:`recitation.metrics.verbatim.verbatim`)."""
    gt, ct = span_tokens(gold), span_tokens(attempt)  # once: the 40-token passages too
    stats = span_stats(find_spans(gt, ct, min_tokens=min_tokens, max_mismatches=5,
                                  mode="dedup"), min_tokens=min_tokens)
    run = verbatim(gold, attempt, verbatim_words)
    return {"gold_tokens": len(gt), "attempt_tokens": len(ct),
            "longest_span": longest_common_span(gt, ct),
            "passages": stats.passage_count, "span_lengths": list(stats.lengths),
            "reproduced": run.reproduced, "span_words": run.words}


def digest(text: str) -> dict[str, Any]:
    """What a redacted report shows of a text."""
    return {"chars": len(text), "words": len(text.split()),
            "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest()}


def _null(null: Any, redact: bool) -> dict[str, Any] | None:
    """The verbatim span's probability under the reference model (extract/null.py); its
    text only when the report is not redacted."""
    if not isinstance(null, dict):
        return None
    return {k: v for k, v in null.items() if not (redact and k == "span")}


def evidence_item(item_id: str, record: dict[str, Any], prompt: Any, *, min_tokens: int,
                  redact: bool, verbatim_words: int = VERBATIM_WORDS) -> dict[str, Any]:
    """One attempt of prefix probing: gold continuation, attempt, spans, prompt; whether it
    was reproduced verbatim is the probe's own decision, stored with its record."""
    gold, attempt = str(record.get("target", "")), str(record.get("continuation", ""))
    out: dict[str, Any] = {
        "id": item_id, "group": record.get("group", ""), "method": "prefix_probe",
        "rouge_l_recall": record.get("rouge_l_recall"),
        "lcp_words": record.get("lcp_words"),
        **span_summary(gold, attempt, min_tokens, verbatim_words),
        "reproduced": record.get("verdict") == "verbatim",
        "hint_leak": None,  # prefix probing gives no hint beyond the prefix itself
        "null": _null(record.get("null"), redact),
    }
    spans = highlight_spans(gold, attempt)
    if redact:
        out |= {"gold": digest(gold), "attempt": digest(attempt), "prompt": None,
                "highlights": [{"words": s["words"]} for s in spans], "redacted": True}
    else:
        out |= {"gold": gold, "attempt": attempt, "prompt": prompt,
                "highlights": spans, "redacted": False}
    return out
