"""Guards: checks that run beside the methods and decide whether their evidence can be
trusted, listed by ``recitation methods`` (after the methods; ``--kind guard`` alone).

A guard is not a method: it produces no memorization evidence and no command selects it; it
runs where a run needs it and, when it fails, stops or discounts the methods it guards,
saying why. Each is one :class:`GuardInfo` in :data:`GUARDS`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from recitation.methods import Access


@dataclass(frozen=True)
class GuardInfo:
    name: str
    title: str
    guards: str  # what it protects
    access: frozenset[Access]  # what it needs of the model
    calls: str  # its cost in model calls
    runs: str  # when it runs
    on_failure: str  # what a failure does
    override: str  # how a user overrides it ("" when none)
    summary: str
    not_guaranteed: str
    docs: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self) | {"kind": "guard", "access": sorted(a.value for a in self.access)}


LOGPROB_CHECK = GuardInfo(
    name="logprob_check", title="log-probability integrity check",
    guards="every detector that reads the model's log-probabilities (logprobs, "
    "full_distribution)",
    access=frozenset({Access.LOGPROBS}),
    calls="7 score calls (11 short public-domain texts) and 1 generate call (2 greedy "
    "continuations of 16 tokens), once per model per run",
    runs="before a detect run's first scoring call (an audit's too), when the model returns "
    "log-probabilities; on demand: recitation check MODEL",
    on_failure="the model's log-probability access is withheld: those detectors are recorded "
    "as not run, naming the failed invariants; generation-only detectors still run",
    override="--trust-logprobs (recitation detect / audit): it still runs and is stored",
    summary="finite, <= 0 and not constant; the same numbers scored twice and alone or in a "
    "batch; a text's tokens unchanged when more text follows; a greedy generation's own "
    "log-probabilities equal its tokens scored back, each the likeliest; top log-prob >= "
    "the token's; a passage repeated four times predicted",
    not_guaranteed="internal consistency only, not that the weights are the claimed ones: a "
    "consistently wrong model passes",
    docs="docs/detection.md#log-probability-integrity-check")

BLIND_BASELINE = GuardInfo(
    name="blind_baseline", title="blind baseline (Das et al., 2024)",
    guards="every detector's evidence in the verdict (text against controls)",
    access=frozenset(),
    calls="none: it never queries the model",
    runs="in every detect run and audit with text and at least 2 controls",
    on_failure="when its AUC interval lies above 0.6, the verdict does not count the "
    "detectors and names the telling words; reproduction evidence still counts",
    override="",
    summary="a bag of words (1-2-grams, binary) and logistic regression, out of fold, tell "
    "the text from the controls; ROC AUC with a 95% stratified bootstrap interval",
    not_guaranteed="a quiet baseline does not show the controls alike in every way (style, "
    "era or edition a bag of words misses); with few passages its interval is wide",
    docs="docs/detection.md#controls-what-is-a-fair-control")

GUARDS: dict[str, GuardInfo] = {LOGPROB_CHECK.name: LOGPROB_CHECK,
                                BLIND_BASELINE.name: BLIND_BASELINE}


def all_guards() -> list[GuardInfo]:
    return list(GUARDS.values())


__all__ = ["BLIND_BASELINE", "GUARDS", "GuardInfo", "LOGPROB_CHECK", "all_guards"]
