"""The verdict's typed inputs and its typed finding (strict: unknown keys refused, required
fields required), so a misspelt key is an error, never a silent 0 or ''."""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Level = Literal["high", "medium", "low", "none"]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Counts(Strict):
    """One extraction method's attempts on one group (text or controls): how many were
    tried and how many reproduced the passage verbatim (:mod:`recitation.metrics.verbatim`)."""

    n: int = Field(ge=0)
    reproduced: int = Field(ge=0)
    passages: int = Field(0, ge=0)  # RECAP's 40-token passages
    longest_span: int = Field(0, ge=0)


class NullSpan(Strict):
    id: str
    words: int | None = None
    log10_p: float | None = None
    beyond_chance: bool


class Null(Strict):
    """The reproduction null (extract/null.py) over the text passages probed."""

    model: str
    alpha: float = Field(gt=0, lt=1)
    n: int = Field(ge=0)
    spans: list[NullSpan]

    @property
    def threshold_log10(self) -> float | None:
        return math.log10(self.alpha / self.n) if self.n else None


class Detector(Strict):
    """One primary detector score, calibrated on the controls by the detect job."""

    name: str
    n: int = Field(ge=0)  # text passages scored
    flagged: int = Field(ge=0)  # of them above the conformal threshold
    reachable: bool  # whether the controls allow the target FPR
    fpr_bound: float | None = None
    auc: float | None = None


class Word(Strict):
    """One n-gram that tells text from controls (detect/blind.py)."""

    ngram: str
    points_to: Literal["text", "controls"]
    coef: float
    in_text: int = Field(ge=0)
    in_controls: int = Field(ge=0)


class Blind(Strict):
    """The blind baseline (detect/blind.py): a bag-of-words classifier that never queries
    the model, fitted out of fold to tell the text from the controls."""

    auc: float
    auc_ci: tuple[float | None, float | None]
    threshold: float
    separates: bool
    n_text: int = Field(ge=0)
    n_controls: int = Field(ge=0)
    folds: int = Field(ge=0)
    features: int = Field(ge=0)
    method: str
    words: list[Word] = Field(default_factory=list)

    def describe(self) -> str:
        """One line: the AUC, its interval and, when it separates, the telling words."""
        lo, hi = self.auc_ci
        line = (f"blind baseline ({self.method}, no model): AUC {self.auc:.2f} "
                f"[{_num(lo)}, {_num(hi)}] over {self.n_text} text and {self.n_controls} "
                "control passages")
        if not self.separates:
            return line + (f" (interval not above {self.threshold:g}: the words alone do "
                           "not tell them apart)")
        words = ", ".join(f"'{w.ngram}' ({w.points_to}; in {w.in_text}/{self.n_text} text, "
                          f"{w.in_controls}/{self.n_controls} control passages)"
                          for w in self.words)
        return line + (f": above {self.threshold:g}, the controls differ from the text in "
                       f"words a classifier without the model sees: {words}")


def _num(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.2f}"


class Inputs(Strict):
    """What one model's verdict rests on (built from an audit's records by the report)."""

    controls: int = Field(ge=0)  # control passages the audit has
    controls_reason: str = ""  # why these controls, or why none
    prefix: tuple[Counts, Counts] | None = None  # prefix probing: (text, controls)
    recap: tuple[Counts, Counts] | None = None  # RECAP after feedback: (text, controls)
    null: Null | None = None  # without controls: the reproduction null
    null_model: str | None = None  # the reference model the audit asked for
    detectors: list[Detector] = Field(default_factory=list)  # the pinned primary scores
    detector_p: dict[str, float | None] = Field(default_factory=dict)
    shift_warnings: list[str] = Field(default_factory=list)
    blind: Blind | None = None  # the blind baseline, text against controls
    text_passages: int = Field(0, ge=0)  # text passages the audit meant to probe
    incomplete: list[str] = Field(default_factory=list)  # runs that did not complete


class Finding(Strict):
    """One model's verdict: what is claimed, the kind of evidence, its error rate, the rule
    that fired and the numbers behind it; ``why_none`` says why there is no verdict."""

    label: str
    level: Level
    rule: str  # the rule that fired (RULES)
    rule_text: str  # what the rule says, in words
    evidence: str | None = None  # the kind of evidence it rests on
    error_rate: str = ""  # as stated to the user
    why_none: str | None = None
    reasons: list[str] = Field(default_factory=list)
    p_extraction: float | None = None
    significant: list[str] = Field(default_factory=list)  # detectors flagged after Bonferroni
    complete: bool = True
    numbers: dict[str, float | int | None] = Field(default_factory=dict)
    rules_version: int

    def as_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")
