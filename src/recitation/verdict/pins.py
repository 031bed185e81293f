"""What a verdict rests on that must not drift after an audit is created, fixed in its
manifest (``audit.json``, key ``verdict``) when the audit is created: the primary score of
each detector family (so removing or reordering a registry line later does not change an
old audit's verdict), the catalogue's statistic, the verbatim rule and the verdict rules'
version.

The catalogue's statistic, by a stated rule (:data:`CATALOGUE_RULE`): the primary score of
the detector family ranked first (``AuditUse.catalogue``, from the organism benchmark) among
those the detect run has.

Manifests written before this (format 1) carry no pins: they are read with
:data:`V1_PINS`, the registry as it stood when format 1 was current, so their verdicts do
not change with today's registry. A manifest of a newer format than this recitation reads
is refused by name (:func:`recitation.runs.audits.load_manifest`).
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from recitation.errors import StoreError
from recitation.metrics.verbatim import RULE_VERSION, VERBATIM_WORDS
from recitation.verdict.decide import RULES_VERSION
from recitation.verdict.types import Strict

CATALOGUE_RULE = (
    "the primary score of the first detector family, in a rank fixed from the organism "
    "benchmark (docs/leaderboard.md, true-positive rate at 1% FPR), that the detect run has: "
    "white-box (Min-K%++ at 20%, else Min-K%, else LOSS; Min-K%++ 8.4% on members seen four "
    "times, its FPR held), then DC-PDD and ReCaLL (intervals overlapping the white-box "
    "scores'), PEARL last (at the blind baseline there)")


class Pins(Strict):
    """The verdict's inputs fixed at the audit's creation."""

    rules_version: int
    verbatim_rule: int
    verbatim_words: int = Field(ge=1)
    primary: dict[str, list[str]]  # verdict: family -> its scores, the first present stands
    reported: dict[str, list[str]]  # calibrated and reported, not in the verdict
    catalogue: list[str]  # the catalogue's statistic: the first present
    catalogue_rule: str = CATALOGUE_RULE


V1_PINS = Pins(
    rules_version=1, verbatim_rule=0, verbatim_words=VERBATIM_WORDS,
    primary={"pearl": ["pearl_bitflip_sensitivity", "pearl_synonym_sensitivity"],
             "whitebox": ["min_k_pp_20", "min_k_20", "loss"]},
    reported={"recall": ["recall"], "dcpdd": ["dcpdd"]},
    catalogue=["pearl_bitflip_sensitivity", "pearl_synonym_sensitivity", "min_k_pp_20",
               "min_k_20", "loss"],
    catalogue_rule="format 1: the verdict's first primary score the detect run has")
"""Format 1 (before pins): the registry's primary scores then, and its catalogue rule."""


def pins_now(verbatim_words: int = VERBATIM_WORDS) -> Pins:
    """The pins a new audit gets, from the method registry as it is now."""
    from recitation import methods

    ranked = sorted((f for f in methods.audit_families()
                     if f.kind == "detector" and f.use.primary and f.use.catalogue),
                    key=lambda f: f.use.catalogue)
    return Pins(rules_version=RULES_VERSION, verbatim_rule=RULE_VERSION,
                verbatim_words=verbatim_words,
                primary={k: list(v) for k, v in methods.verdict_scores().items()},
                reported={k: list(v) for k, v in methods.reported_scores().items()},
                catalogue=[s for f in ranked for s in f.use.primary])


def pins_of(manifest: dict[str, Any]) -> Pins:
    """The audit's pins; a format-1 manifest's are :data:`V1_PINS`."""
    raw = manifest.get("verdict")
    if raw is None:
        return V1_PINS
    try:
        return Pins.model_validate(raw)
    except ValueError as e:
        raise StoreError(f"audit {manifest.get('audit_id')}: its verdict pins do not read "
                         f"({e})") from None


def first_present(families: dict[str, list[str]], have: Any) -> list[str]:
    """The score that stands for each family: the first of its list the run has (e.g.
    Min-K%++ at 20% where the backend gives the full distribution, else Min-K%)."""
    return [next(p for p in prefs if p in have) for prefs in families.values()
            if any(p in have for p in prefs)]


def catalogue_score(pins: Pins, have: Any) -> str | None:
    """The catalogue's statistic for a run with scores ``have`` (:data:`CATALOGUE_RULE`)."""
    return next((s for s in pins.catalogue if s in have), None)


__all__ = ["CATALOGUE_RULE", "V1_PINS", "Pins", "catalogue_score", "first_present",
           "pins_now", "pins_of"]
