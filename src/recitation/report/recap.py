"""The RECAP findings of an audit: per group (text, controls) weighted ROUGE-L and verbatim
passages of the first attempt (DSP, or the jailbreak that got through) and of the attempt
after the feedback loop (RECAP's ``refined_best``), the best-so-far ROUGE-L after each
feedback round (RECAP figure 6), and per event the gold passage beside both attempts with
its verbatim spans classed as RECAP tables 12-15 colour them:

* ``first`` - reproduced in the first attempt (and still in the last),
* ``after`` - reproduced only after feedback,
* ``lost`` - reproduced in the first attempt, gone after feedback.

Read from the extract runs' stores alone. ROUGE-L and spans are measured against the gold
passage without its first sentence, which the prompt gives away (as the extract job does).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from recitation.metrics.verbatim import VERBATIM_WORDS
from recitation.metrics.weighted import strip_given_first_sentence, weighted_rouge
from recitation.records import EventRecord
from recitation.report.evidence import digest, highlight_spans, span_summary
from recitation.report.numbers import extraction_stats
from recitation.report.table import fmt as _f
from recitation.runs.store import RunStore

CLASSES = ("first", "after", "lost")


def round_curve(rec: dict[str, Any], rounds: int) -> list[float]:
    """Best-so-far ROUGE-L after rounds 0..``rounds`` (:meth:`EventRecord.round_curve`)."""
    return EventRecord.model_validate(rec).round_curve(rounds)


def _cover(spans: list[dict[str, int]]) -> list[tuple[int, int]]:
    return [(s["gold_start"], s["gold_end"]) for s in spans]


def _inside(x: int, ranges: list[tuple[int, int]]) -> bool:
    return any(a <= x < b for a, b in ranges)


def gold_marks(gold: str, first: list[dict[str, int]], final: list[dict[str, int]]
               ) -> list[dict[str, Any]]:
    """``gold`` cut into segments, each with its class (``first``/``after``/``lost``, or
    None where neither attempt reproduced it)."""
    f, last = _cover(first), _cover(final)
    cuts = sorted({0, len(gold), *[x for r in f + last for x in r]})
    out: list[dict[str, Any]] = []
    for a, b in zip(cuts, cuts[1:], strict=False):
        in_f, in_l = _inside(a, f), _inside(a, last)
        cls = "first" if in_f and in_l else "after" if in_l else "lost" if in_f else None
        if out and out[-1]["cls"] == cls:
            out[-1]["text"] += gold[a:b]
        else:
            out.append({"text": gold[a:b], "cls": cls})
    return out


def evidence(item_id: str, payload: dict[str, Any], rec: dict[str, Any], group: str, *,
             min_tokens: int, redact: bool, verbatim_words: int = VERBATIM_WORDS
             ) -> dict[str, Any]:
    gold = strip_given_first_sentence(str(payload["text"]), str(payload["first_sentence"]))
    typed = EventRecord.model_validate(rec)
    first, final = typed.first_text, typed.final_text
    hf, hl = highlight_spans(gold, first), highlight_spans(gold, final)
    marks = gold_marks(gold, hf, hl)
    words = {c: sum(len(m["text"].split()) for m in marks if m["cls"] == c) for c in CLASSES}
    out: dict[str, Any] = {
        "id": item_id, "group": group, "method": "recap", "rounds": typed.rounds,
        "stop_reason": typed.stop_reason, "refused": not first,
        "rouge_l_first": typed.rouge_l.get("round_0"),
        "rouge_l_recall": typed.rouge_l.get("recap"),
        **span_summary(gold, final, min_tokens, verbatim_words),
        "first_attempt_spans": span_summary(gold, first, min_tokens, verbatim_words),
        "class_words": words, "hint_leak": typed.hint_leaked()}
    if redact:
        return out | {"gold": digest(gold), "attempt": digest(final),
                      "first_attempt": digest(first), "redacted": True, "prompt": None,
                      "highlights": [{"words": s["words"]} for s in hl]}
    opening = typed.opening()
    return out | {"gold": gold, "attempt": final, "first_attempt": first, "redacted": False,
                  "highlights": hl, "highlights_first": hf, "gold_marks": marks,
                  "prompt": {"stage": opening and opening.stage,
                             "opening": opening and opening.messages, "hints": typed.hints()}}


def _group_stats(ev: list[dict[str, Any]], key: str, first: bool) -> dict[str, Any]:
    rows = [e["first_attempt_spans"] | {"group": e["group"]} if first else e for e in ev]
    weights = [e["gold_tokens"] for e in ev]
    return extraction_stats(rows) | {"rouge_l_weighted": weighted_rouge(
        [e[key] for e in ev], weights) if ev else None}


def recap_group(run: Path, group: str, *, min_tokens: int, rounds: int,
                redact: bool, verbatim_words: int = VERBATIM_WORDS) -> dict[str, Any]:
    """The findings of one group's extract run (see the module docstring)."""
    with RunStore(run) as store:
        payloads = dict(store.items())
        records = [(i, r) for i, r in store.results("extract") if r.get("event_id")]
    ev = [evidence(i, payloads[i], r, group, min_tokens=min_tokens, redact=redact,
                   verbatim_words=verbatim_words) for i, r in records if i in payloads]
    curves = [round_curve(r, rounds) for _, r in records]
    mean = [sum(c[k] for c in curves) / len(curves) for k in range(rounds + 1)] if curves else []
    return {"first": _group_stats(ev, "rouge_l_first", True),
            "final": _group_stats(ev, "rouge_l_recall", False),
            "rounds": mean, "refused": sum(e["refused"] for e in ev), "evidence": ev}



def recap_summary(groups: dict[str, Any], rounds: int) -> list[str]:
    """The verdict section's sentences about RECAP, one per group."""
    out = []
    for g, v in groups.items():
        first, final = v["first"], v["final"]
        out.append(
            f"RECAP on {final['n']} {g} passages (feedback loop, at most {rounds} rounds): "
            f"reproduced verbatim {final['reproduced']}/{final['n']} after feedback (first "
            f"attempt {first['reproduced']}/{first['n']}), {final['passages']} 40-token "
            f"passages, longest span {final['longest_span']} tokens; weighted ROUGE-L "
            f"{_f(first['rouge_l_weighted'])} first, {_f(final['rouge_l_weighted'])} after "
            f"feedback; {v['refused']} refused throughout")
    return out
