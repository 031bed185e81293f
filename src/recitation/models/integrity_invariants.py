"""The invariants of the log-probability integrity check (:mod:`recitation.models.integrity`):
each a pure function of the answers, returning one typed :class:`InvariantResult`.

Every tolerance is stated with the reason for it. The figures they were set from (measured on
the embedded SmolLM2-135M, float32 on a CPU, on a real vLLM server and under each fault of
``recitation serve --logprob-fault``) are in docs/detection.md, "Log-probability integrity
check".
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict

from recitation.models.base import Generation, TokenScores

Outcome = Literal["passed", "failed", "skipped"]


class InvariantResult(BaseModel):
    """One invariant: what was measured (``figure``), the bound it is held to
    (``tolerance``, read with ``bound``: the figure must be ``<=`` or ``>=`` it), why that
    bound, and (``detail``) the skip reason or what failed."""

    model_config = ConfigDict(strict=True, frozen=True, extra="forbid")

    name: str
    outcome: Outcome
    measures: str
    figure: float | None = None
    bound: Literal["<=", ">="] = "<="
    tolerance: float | None = None
    why: str = ""
    detail: str = ""


# -- tolerances, each with its reason ---------------------------------------------------------
POSITIVE_TOL = 0.01
POSITIVE_WHY = ("a log-probability is at most 0; 0.01 nats allows a bfloat16 log-softmax "
                "rounding a near-certain token's value just above 0")
CONSTANT_TOL = 0.3
CONSTANT_WHY = ("real text's per-token log-probabilities spread over several nats (std about "
                "2 on these texts); below 0.3 the numbers do not depend on the text")
SAME_TOL = 0.1
SAME_WHY = ("float32 answers agree to 1e-5; in bfloat16 another batch shape moves a token by "
            "0.01 to 0.05 nats on average (0.028 to 0.051 on five trained organisms on a "
            "CPU, where 0.05 failed a correct model); a 0.1-nat mean shift is a real "
            "difference (padding leaking into attention: 0.5)")
PREFIX_TOL = 0.1
PREFIX_WHY = ("a causal model's token does not see what follows; only padding and kernel "
              "shapes differ (as for batching: up to 0.042 nats in bfloat16), the boundary "
              "token is left out")
GEN_TOL = 0.1
GEN_WHY = ("decoding with a key-value cache and scoring the whole text take different "
           "kernels: about 1e-5 nats in float32, up to a few hundredths in bfloat16")
TOP_TOL = 0.25
TOP_WHY = ("the greedy token is the argmax; a near tie (within bfloat16 rounding between "
           "decoding and scoring, which moves a token by up to about 0.2 nats) may rank "
           "another token first")
TOPCON_TOL = 0.001
TOPCON_WHY = "the likeliest token's log-probability is the maximum and at most 0 (rounding only)"
GEN_MEASURES = "mean |generation - scored-back| per generated token (nats)"
TOP_MEASURES = "generated tokens not the likeliest when scored back"
REPEAT_TOL = -1.0
REPEAT_WHY = ("a passage seen three times just before is copied by any trained causal model "
              "(induction): SmolLM2-135M gives a median of -0.11 nats on the fourth copy "
              "(-10.2 on the first), so -1 nats leaves a wide margin; a constant offset of "
              "a nat or more fails")


def _result(name: str, measures: str, figure: float | None, tol: float, why: str,
            bound: Literal["<=", ">="] = "<=", detail: str = "") -> InvariantResult:
    if figure is None:
        return InvariantResult(name=name, outcome="skipped", measures=measures, bound=bound,
                               tolerance=tol, why=why, detail=detail)
    ok = figure <= tol if bound == "<=" else figure >= tol
    return InvariantResult(name=name, outcome="passed" if ok else "failed", measures=measures,
                           figure=float(figure), bound=bound, tolerance=tol, why=why,
                           detail=detail)


def skipped(name: str, measures: str, tol: float, why: str, reason: str,
            bound: Literal["<=", ">="] = "<=") -> InvariantResult:
    return _result(name, measures, None, tol, why, bound, reason)


def well_formed(scores: Sequence[TokenScores]) -> list[InvariantResult]:
    """Finite, at most 0, one per token after the first, and not constant."""
    values = [v for s in scores for v in s.logprobs]
    bad = sum(1 for v in values if not math.isfinite(v))
    bad += sum(1 for s in scores if len(s.logprobs) != max(len(s.tokens) - 1, 0))
    finite = [v for v in values if math.isfinite(v)]
    out = [_result("finite", "values not finite, or not one per token after the first",
                   float(bad), 0.0, "every scored token has exactly one finite log-probability",
                   detail=f"{len(values)} values over {len(scores)} texts")]
    out.append(_result("at_most_zero", "largest log-probability (nats)",
                       max(finite) if finite else None, POSITIVE_TOL, POSITIVE_WHY,
                       detail="" if finite else "no finite values"))
    spread = statistics.pstdev(finite) if len(finite) > 1 else None
    out.append(_result("not_constant", "std of all log-probabilities (nats)", spread,
                       CONSTANT_TOL, CONSTANT_WHY, ">=",
                       detail="" if spread is not None else "fewer than 2 values"))
    return out


def _mean_abs(a: Sequence[float], b: Sequence[float]) -> tuple[float, float]:
    diffs = [abs(x - y) for x, y in zip(a, b, strict=False)]
    return (sum(diffs) / len(diffs), max(diffs)) if diffs else (0.0, 0.0)


def same_numbers(name: str, what: str, first: TokenScores, second: TokenScores
                 ) -> InvariantResult:
    """The same text answered twice (``repeatable``) or alone and in a batch
    (``batch_invariant``): the same tokens, the same log-probabilities."""
    measures = f"mean |difference| per token, {what} (nats)"
    if first.tokens != second.tokens or len(first.logprobs) != len(second.logprobs):
        return InvariantResult(name=name, outcome="failed", measures=measures,
                               tolerance=SAME_TOL, why=SAME_WHY,
                               detail="the same text came back as different tokens")
    mean, top = _mean_abs(first.logprobs, second.logprobs)
    return _result(name, measures, mean, SAME_TOL, SAME_WHY, detail=f"max {top:.4g}")


def prefix_consistent(prefix: TokenScores, full: TokenScores) -> InvariantResult:
    """The prefix's tokens (but its last, which may merge with what follows) keep their
    log-probabilities when more text follows."""
    measures = "mean |difference| per shared prefix token (nats)"
    n = 0
    while n < min(len(prefix.tokens), len(full.tokens)) and prefix.tokens[n] == full.tokens[n]:
        n += 1
    n = min(n, len(prefix.tokens) - 1)  # the boundary token is left out
    if n < 3:
        return skipped("prefix_consistent", measures, PREFIX_TOL, PREFIX_WHY,
                       f"only {n} shared tokens before the boundary")
    mean, top = _mean_abs(prefix.logprobs[:n - 1], full.logprobs[:n - 1])
    return _result("prefix_consistent", measures, mean, PREFIX_TOL, PREFIX_WHY,
                   detail=f"{n - 1} tokens, max {top:.4g}")


def repeat_predictable(scores: TokenScores) -> InvariantResult:
    """A random-word passage repeated four times: the last copy's median log-probability
    (over the last quarter of the tokens, the last copy) is near 0."""
    tail = scores.logprobs[-max(1, len(scores.logprobs) // 4):]
    median = statistics.median(tail) if tail else None
    return _result("repeat_predictable", "median log-probability of the last repeated copy (nats)",
                   median, REPEAT_TOL, REPEAT_WHY, ">=",
                   detail=f"{len(tail)} tokens; first copy median "
                   f"{statistics.median(scores.logprobs[:len(tail)]):.3g}" if tail else "")


def top_consistent(scores: Sequence[TokenScores]) -> InvariantResult:
    """Where the likeliest token's log-probability is given: it is >= the token's own and
    <= 0, and a token ranked first has the top log-probability."""
    measures = "largest violation of logprob <= top_logprob <= 0 (nats)"
    worst: float | None = None
    for s in scores:
        if s.top_logprob is None:
            continue
        for i, (lp, top) in enumerate(zip(s.logprobs, s.top_logprob, strict=False)):
            gap = max(lp - top, top, 0.0)
            if s.rank is not None and i < len(s.rank) and s.rank[i] == 1:
                gap = max(gap, abs(lp - top))
            worst = gap if worst is None else max(worst, gap)
    return _result("top_consistent", measures, worst, TOPCON_TOL, TOPCON_WHY,
                   detail="" if worst is not None else "the backend gives no top log-probability")


def generated_span(gen: Generation, scored: TokenScores) -> tuple[int, list[float]] | str:
    """Where a greedy generation's tokens sit in the scored-back text (prompt + generation):
    ``(k, generation's log-probabilities)`` for its last ``k`` tokens, aligned from the end,
    or why they cannot be aligned. The first generated token is left out (it may merge with
    the prompt's last when the text is tokenized again); only generations that ran to their
    token limit are used (an end-of-text token is not in the text)."""
    if gen.token_logprobs is None:
        return "the backend returns no log-probabilities with generations"
    if gen.finish_reason != "length":
        return f"the generation stopped early ({gen.finish_reason})"
    k = len(gen.token_logprobs) - 1
    if k < 3 or k >= len(scored.logprobs):
        return f"{k + 1} generated tokens cannot be aligned with {len(scored.tokens)} scored"
    return k, list(gen.token_logprobs[-k:])


def generation_matches(pairs: Sequence[tuple[Generation, TokenScores]]) -> InvariantResult:
    measures = GEN_MEASURES
    diffs: list[float] = []
    sums: list[str] = []
    reasons: list[str] = []
    for gen, scored in pairs:
        span = generated_span(gen, scored)
        if isinstance(span, str):
            reasons.append(span)
            continue
        k, gen_lps = span
        back = scored.logprobs[-k:]
        diffs += [abs(a - b) for a, b in zip(gen_lps, back, strict=True)]
        sums.append(f"{sum(gen_lps):.3f} vs {sum(back):.3f}")
    if not diffs:
        return skipped("generation_matches_score", measures, GEN_TOL, GEN_WHY,
                       "; ".join(dict.fromkeys(reasons)))
    return _result("generation_matches_score", measures, sum(diffs) / len(diffs), GEN_TOL,
                   GEN_WHY, detail=f"{len(diffs)} tokens, max {max(diffs):.4g}; sums "
                   + ", ".join(sums))


def greedy_is_top(pairs: Sequence[tuple[Generation, TokenScores]]) -> InvariantResult:
    """The scored-back greedy tokens are each the likeliest (rank 1, or log-probability
    within the tolerance of the top one), where the scores give rank or top log-prob."""
    measures = TOP_MEASURES
    bad = seen = 0
    for gen, scored in pairs:
        span = generated_span(gen, scored)
        if isinstance(span, str) or (scored.rank is None and scored.top_logprob is None):
            continue
        k = span[0]
        n = len(scored.logprobs)
        for i in range(n - k, n):
            seen += 1
            gap = None if scored.top_logprob is None else \
                scored.top_logprob[i] - scored.logprobs[i]
            first = scored.rank is not None and scored.rank[i] == 1
            bad += not first and (gap is None or gap > TOP_TOL)
    if not seen:
        return skipped("greedy_is_top", measures, 0.0, TOP_WHY,
                       "no rank or top log-probability with the scored-back generation")
    return _result("greedy_is_top", measures, float(bad), 0.0, TOP_WHY,
                   detail=f"{seen} tokens; a near tie within {TOP_TOL} nats counts as top")
