"""The reproduction null: could a model that never saw the text have written the span?

Prefix probing shows a model the first words of a passage; when its continuation repeats the
true continuation word for word, the alternative to memorization is that the words were
predictable (a formula, a list, a quotation everyone knows). With no control set to compare
against, that alternative is decided with an explicit null instead, as Carlini et al. (2021,
"Extracting Training Data from Large Language Models", section 5) filtered trivial
memorization with a small reference model: a **reference model** that cannot have memorized
the text (by default the embedded SmolLM2-135M; the base model of a fine-tune is the natural
one) gives the probability of the reproduced span after the same prefix::

    p_null = P_ref(span | prefix + the true continuation before the span)

    span = the verbatim span (recitation.metrics.verbatim: the longest run of the true
           continuation's words the continuation repeats exactly)

A text passage counts as **reproduced beyond chance** when the continuation reproduces it
verbatim (:func:`recitation.metrics.verbatim.verbatim`, the one rule of the toolkit) and
``p_null <= alpha / N`` (:func:`recitation.metrics.null.beyond_chance`; N: the text
passages probed; Bonferroni over them, so under the null "the audited model writes an
unseen span no more readily than the reference model" the chance of any false flag is at
most ``alpha``). Both are fixed before the run (audit settings ``null_model``,
``null_alpha``). What the rule does not cover: text the audited model saw
elsewhere (a passage quoted widely is memorized, but not necessarily from this edition), and
a reference far weaker than the audited model makes ordinary continuations look improbable;
the false-verdict rate measured on text the model has not seen is in docs/report.md.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from recitation.corpus.tokenize import word_ends, word_starts
from recitation.models.base import Model, TokenScores

DEFAULT_NULL_MODEL = "smollm2"


def reproduced_span(target: str, n_words: int, start: int = 0) -> str:
    """The text of ``target`` from its word ``start`` (0: the first) to the end of its
    word ``start + n_words - 1`` (the words of :func:`recitation.corpus.tokenize.words`,
    which the verbatim rule counts); all the rest of a shorter target."""
    ends, starts = word_ends(target), word_starts(target)
    if n_words < 1 or start >= len(ends):
        return ""
    begin = starts[start] if start else 0  # a span at the start keeps what precedes its word
    return target[begin: ends[min(start + n_words, len(ends)) - 1]]


def span_context(target: str, start: int) -> str:
    """The text of ``target`` before its word ``start`` (what the true continuation said
    before the span; "" for a span at its start)."""
    starts = word_starts(target)
    return target[: starts[start]].rstrip() if 0 < start < len(starts) else ""


def span_logprob(plain: TokenScores, conditioned: TokenScores) -> tuple[float, int]:
    """Sum of log p of the span's tokens inside ``score(prefix + " " + span)`` and how many
    tokens: the span's own tokens (scored alone, with its leading space) must end the
    conditioned tokens, or all of them but the first (then not counted)."""
    from recitation.detect.recall import conditional_logprobs

    lps = conditional_logprobs(plain, conditioned)
    return float(sum(lps)), len(lps)


async def null_scores(ref: Model, pairs: Sequence[tuple[str, str]]) -> list[dict[str, Any]]:
    """For each ``(prefix, span)``: the reference model's ``logprob`` (natural log) of the
    span after the prefix, its ``tokens``, and ``log10_p``; an ``error`` instead when the
    two tokenizations do not line up."""
    if not pairs:
        return []
    spans = [" " + span for _, span in pairs]
    plain = await ref.score(spans)
    cond = await ref.score([prefix + span for (prefix, _), span in zip(pairs, spans,
                                                                      strict=True)])
    out: list[dict[str, Any]] = []
    for p, c in zip(plain, cond, strict=True):
        try:
            lp, n = span_logprob(p, c)
        except ValueError as e:
            out.append({"error": str(e)})
            continue
        out.append({"logprob": lp, "tokens": n, "log10_p": lp / math.log(10)})
    return out


__all__ = ["DEFAULT_NULL_MODEL", "null_scores", "reproduced_span", "span_context", "span_logprob"]
