"""Typed records: what a method stores for one item, read back through fields.

The methods write these records into their runs' stores and the report (and any other
reader) reads them back here, in one layer below both (it imports nothing of recitation), so
neither side spells out the other's key paths: the EchoTrace-compatible completion keys
(``llm_completions.Agent_Extraction.simple_agent_extraction_refined_<k>``), stage names and
the round bookkeeping of RECAP's feedback loop are known here only. Every model allows extra
fields, so a record written by a newer version still reads, except the prefix-probing
record, which the verdict counts: it is strict (unknown keys refused, its fields required).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

AGENT = "Agent_Extraction"
LOGPROB_CHECK_META = "logprob_check:"
"""Run-store meta key prefix of the log-probability integrity check's report (+ the model's
identity digest): written by :mod:`recitation.detect.logprob_gate`, read by the report."""
LOGPROB_WITHHELD = "the log-probability integrity check of"
"""How a detector's error begins when a failed check withheld the model's log-probabilities
(the report finds the detectors left out by it)."""
"""The ``llm_completions`` group of the agentic attempts (EchoTrace's name)."""


def refined_key(k: int) -> str:
    """The completion key of attempt ``k`` of RECAP's feedback loop (0: the accepted DSP or
    jailbreak text), as the released EchoTrace files name it."""
    return f"simple_agent_extraction_refined_{k}"


class Attempt(BaseModel):
    """One generation of an extraction: its stage (``dsp``, ``jailbreak:<variant>``,
    ``feedback``, ``refine``), round, the exact messages sent and the text returned."""

    model_config = ConfigDict(extra="allow")

    stage: str = ""
    round: int = 0
    messages: list[dict[str, Any]] = Field(default_factory=list)
    prompt: str | None = None
    max_tokens: int | None = None
    text: str = ""
    kept: bool | None = None  # refine: the round beat the best so far
    rouge_l: float | None = None  # refine: its ROUGE-L against the gold passage
    hint_sent: str | None = None  # feedback: the hint as sent (None: blocked by the guard)

    @property
    def opening(self) -> bool:
        """DSP or a jailbreak: an attempt that opens the conversation."""
        return self.stage == "dsp" or self.stage.startswith("jailbreak")


class EventRecord(BaseModel):
    """The record of one event of the extract job (``extract/records.py: EventState``)."""

    model_config = ConfigDict(extra="allow")

    event_id: str = ""
    llm_completions: dict[str, Any] = Field(default_factory=dict)
    attempts: list[Attempt] = Field(default_factory=list)
    rouge_l: dict[str, float | None] = Field(default_factory=dict)
    rounds: int = 0
    reported_round: int = 0
    stop_reason: str = ""
    leak: dict[str, Any] = Field(default_factory=dict)

    def attempt_text(self, k: int) -> str:
        """The text of loop attempt ``k``; "" when there is none (refused throughout)."""
        v = (self.llm_completions.get(AGENT) or {}).get(refined_key(k))
        return str(v.get("text") or "") if isinstance(v, dict) else ""

    @property
    def first_text(self) -> str:
        """The first accepted attempt (DSP, or the jailbreak that got through)."""
        return self.attempt_text(0)

    @property
    def final_text(self) -> str:
        """The attempt the loop reports: the last kept round (RECAP's ``refined_best``)."""
        return self.attempt_text(self.reported_round)

    def round_curve(self, rounds: int) -> list[float]:
        """Best-so-far ROUGE-L after rounds 0..``rounds`` (a round counts only when it was
        kept; the value is carried forward once the loop stops)."""
        best = float(self.rouge_l.get("round_0") or 0.0)
        kept = {a.round: float(a.rouge_l or 0.0) for a in self.attempts
                if a.stage == "refine" and a.kept}
        out = [best]
        for r in range(1, rounds + 1):
            best = kept.get(r, best)
            out.append(best)
        return out

    def opening(self) -> Attempt | None:
        """The opening attempt whose text was accepted (else the last one tried)."""
        tried = [a for a in self.attempts if a.opening]
        first = self.first_text
        return next((a for a in reversed(tried) if a.text == first),
                    tried[-1] if tried else None)

    def hints(self) -> list[str | None]:
        """Each feedback round's hint as sent (None where the leak guard blocked it)."""
        return [a.hint_sent for a in self.attempts if a.stage == "feedback"]

    def hint_leaked(self) -> bool | None:
        """Whether the leak guard flagged any hint before sending it (None: no hint)."""
        hints = self.leak.get("hints") or []
        if not hints:
            return None
        return any(bool((h.get("before") or {}).get("flagged")) for h in hints)


class PrefixProbeRecord(BaseModel):
    """The record of one passage of the prefix-probing job, with the exact request sent.
    Strict: an unknown key is refused and the fields the job always writes are required, so
    a misspelt key is an error, never a silent '' or 0."""

    model_config = ConfigDict(extra="forbid")

    group: str
    prefix: str
    target: str
    continuation: str
    lcp_words: int = Field(ge=0)
    target_words: int = Field(ge=0)
    verdict: Literal["verbatim", "near-verbatim", "no"]
    rouge_l_precision: float | None = None
    rouge_l_recall: float | None = None
    rouge_l_f1: float | None = None
    span_words: int | None = None  # the verbatim span (metrics/verbatim.py); older: absent
    span_start: int | None = None
    source: str | None = None  # the passage's work, where the job's input named one
    chapter: str | None = None
    request: dict[str, Any] | None = None  # the generation request, as sent
    null: dict[str, Any] | None = None  # the verbatim span under the reference model


class ScoreRecord(BaseModel):
    """One detector's score of one sample: the one schema every detector shares, written by
    the detectors (as :class:`recitation.detect.scoring.DetectorScore`, the same type) and
    read back by calibration and the report. Strict: an unknown key is refused.
    ``ScoreRecord(sample_id, detector, score, higher_means_member)`` also takes them in that
    order."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    sample_id: str
    detector: str
    score: float | None = None
    higher_means_member: bool = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        names = ("sample_id", "detector", "score", "higher_means_member")
        if len(args) > len(names):
            raise TypeError(f"ScoreRecord takes at most {len(names)} positional arguments")
        super().__init__(**dict(zip(names, args, strict=False)), **kwargs)

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump()

    def oriented(self) -> float | None:
        """The score with higher meaning more member-like; None when it is missing or not
        finite (such a score ranks nothing)."""
        if self.score is None or not math.isfinite(self.score):
            return None
        return self.score if self.higher_means_member else -self.score


class SampleRecord(BaseModel):
    """The sample of a detect record, as the detect job scored it (strict: a misspelt key is
    refused, and its id, text and label are required, so no sample is silently left out of
    calibration for a label that reads '')."""

    model_config = ConfigDict(extra="forbid")

    id: str
    text: str
    label: str  # "member" (the text) or "control"; any other is in neither group
    source: str = ""
    task: str = "completion"
    prompt: str | None = None
    reference: str | None = None


class DetectRecord(BaseModel):
    """The record of one sample of the detect job: the sample as scored, every detector's
    score, the errors of the families that could not score it; families add their own
    fields (``pearl``, ``n_tokens``, ``dcpdd``, ``recall_prefix``) as extras."""

    model_config = ConfigDict(extra="allow")

    sample: SampleRecord
    scores: list[ScoreRecord] = Field(default_factory=list)
    errors: list[str] = Field(default_factory=list)

    def add_fields(self, fields: dict[str, Any]) -> None:
        """A family's own fields (stored beside the shared ones)."""
        for key, value in fields.items():
            setattr(self, key, value)

    @property
    def sample_id(self) -> str:
        return self.sample.id

    @property
    def label(self) -> str:
        """``member`` (the text) or ``control``."""
        return self.sample.label

    @property
    def text(self) -> str:
        return self.sample.text


def oriented_scores(records: Iterable[DetectRecord]) -> dict[str, dict[str, Any]]:
    """Per detector: ``member`` and ``control`` (sample id -> oriented score, finite scores
    only) and ``higher_means_member``. The one reading of detect records that the detect
    job's calibration and the audit report share."""
    out: dict[str, dict[str, Any]] = {}
    for rec in records:
        for s in rec.scores:
            if (v := s.oriented()) is None or rec.label not in ("member", "control"):
                continue
            d = out.setdefault(s.detector, {"member": {}, "control": {},
                                             "higher_means_member": True})
            d["higher_means_member"] = s.higher_means_member
            d[rec.label][s.sample_id or rec.sample_id] = v
    return out


class TraceAggregate(BaseModel):
    """SimpleTrace's metrics of one group of generations (the trace job's report, under
    either definitions: ``propme``, the authors', or ``recitation``, ours)."""

    model_config = ConfigDict(extra="allow")

    definitions: str = "propme"
    total_generations: int = 0
    generations_with_spans: int = 0
    unit: str = ""
    average_longest_span_length: float = 0.0
    full_match_ratio: float = 0.0
    full_normalized_match_ratio: float = 0.0
    avg_nv_recall: float = 0.0
    max_nv_recall: float = 0.0
    nv_recall_threshold: float = 0.5
    generations_above_nv_recall_threshold_ratio: float = 0.0
    n_token_span: int = 0
    generations_with_n_token_span_ratio: float = 0.0
    total_spans: int = 0
    unique_total_docs: int = 0
    spans_length_distribution: dict[Any, int] = Field(default_factory=dict)


class TraceReport(BaseModel):
    """The trace job's report: the metrics of each group of generations, and of ``all``."""

    model_config = ConfigDict(extra="allow")

    groups: dict[str, TraceAggregate] = Field(default_factory=dict)


__all__ = ["AGENT", "LOGPROB_CHECK_META", "LOGPROB_WITHHELD", "Attempt", "DetectRecord",
           "EventRecord", "PrefixProbeRecord", "ScoreRecord", "TraceAggregate", "TraceReport",
           "oriented_scores", "refined_key"]
