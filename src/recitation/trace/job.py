"""The ``trace`` job: SimpleTrace over stored generations, as a resumable run.

Items are generations (a JSONL file: ``text`` plus an optional ``id`` and ``group``; the
group is the prompt set in PROPME: ``generic``, ``specific``, ``prefix``). Each record holds
the generation's kept spans with their documents and tiers, its longest span and its
near-verbatim recall; the run's report (``trace_report``) holds the aggregate metrics of
:mod:`recitation.trace.metrics` per group and overall. The job makes no model call; on a
token-level index it asks the target for its tokenizer (the one the index was built with).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from recitation.errors import ConfigError
from recitation.methods import Access, AuditUse, Calls, MethodInfo, describe_missing
from recitation.models.base import Model
from recitation.records import TraceReport
from recitation.runs.jobs import Job, Table, WorkItem
from recitation.trace.index import CorpusIndex, EngineName, open_index
from recitation.trace.locate import Locator
from recitation.trace.metrics import (
    NearVerbatim,
    aggregate,
    generation_nv,
    propme_aggregate,
    propme_generation_nv,
)
from recitation.trace.simpletrace import (
    Definitions,
    DocMatch,
    GenerationTrace,
    SimpleTrace,
    Span,
    TraceConfig,
)
from recitation.trace.sources import iter_jsonl_docs


class TraceParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    index: list[str] = Field(default_factory=list, description="index directories")
    generations: str | None = Field(None, description="JSONL of generations")
    text_field: str = "text"
    id_field: str = "id"
    group_field: str = "group"
    engine: EngineName = "auto"
    token_dtype: Literal["u8", "u16", "u32"] | None = Field(
        None, description="token width of an index without recitation's manifest (default: "
        "inferred from its files)")
    rarity: float = Field(0.05, gt=0, le=1)
    max_docs: int = Field(10, ge=1)
    min_len: int = Field(1, ge=1)
    text_mode: bool = True
    definitions: Definitions = Field("recitation", description="'recitation' (the "
                                     "default): ours, every verbatim copy wherever it ends; "
                                     "'propme': SimpleTrace exactly as the PROPME authors' "
                                     "code computes it (docs/tracing.md, differences)")
    seed: int = Field(0, description="propme: the draw of each span's documents")
    n_span: int = Field(60, ge=1, description="'generations with an n-unit span'")
    nv_threshold: float = Field(0.5, ge=0, le=1, description="propme: a document counts when "
                                "its NVR is above it; recitation: at or above")


def span_record(s: Span, lines: Sequence[tuple[int, int] | None] = ()) -> dict[str, Any]:
    """A kept span; each of its documents with ``lines`` (``[first, last]``, 1-based: where
    the span's text is in the document's file, :mod:`recitation.trace.locate`) when known."""
    docs = [asdict(d) for d in s.docs]
    for d, where in zip(docs, lines, strict=False):
        if where is not None:
            d["lines"] = list(where)
    return {"start": s.start, "end": s.end, "length": s.length, "text": s.text,
            "logprob": s.logprob, "count": s.count, "docs": docs}


def trace_record(t: GenerationTrace, nv: NearVerbatim,
                 locator: Locator | None = None) -> dict[str, Any]:
    """The stored record of a traced generation (with ``locator``: its spans' lines)."""
    docs = t.docs()
    spans = [span_record(s, locator.span_lines(s.text, s.docs) if locator else ())
             for s in t.spans]
    return {"units": t.units, "unit": t.unit, "candidates": t.candidates,
            "longest": t.longest, "spans": spans,
            "segments": [list(x) for x in t.segments],
            "segment_docs": [[asdict(d) for d in seg] for seg in t.segment_docs],
            "segment_lengths": list(t.segment_lengths),
            "full_match": t.has_tier("exact_full_raw"),
            "full_normalized_match": t.has_tier("exact_full_raw", "exact_full_normalized"),
            "docs": sorted(docs), "nv": asdict(nv)}


def _doc_match(d: dict[str, Any]) -> DocMatch:
    """A stored document as a DocMatch (its ``lines`` left out)."""
    names = {f.name for f in fields(DocMatch)}
    return DocMatch(**{k: v for k, v in d.items() if k in names})


def _restored(r: dict[str, Any]) -> tuple[GenerationTrace, NearVerbatim]:
    """A stored record as a trace for the metrics (docs and tiers, lengths)."""
    spans = tuple(Span(s["start"], s["end"], s["length"], s["text"], s["logprob"], s["count"],
                       tuple(_doc_match(d) for d in s["docs"])) for s in r["spans"])
    t = GenerationTrace(r["text"], r["units"], r["unit"], spans,
                        tuple(tuple(x) for x in r["segments"]), r["candidates"],
                        segment_docs=tuple(tuple(_doc_match(d) for d in seg)
                                           for seg in r.get("segment_docs", [])),
                        segment_lengths=tuple(r.get("segment_lengths", [])))
    return t, NearVerbatim(**r["nv"])


def generation_nv_of(st: SimpleTrace, t: GenerationTrace) -> NearVerbatim:
    """The record's NVR: the best document's (propme), or :func:`generation_nv`."""
    if st.config.definitions == "propme":
        return propme_generation_nv(t)
    return generation_nv(st.index, t, st.config.max_docs)


def aggregate_of(definitions: str, pairs: list[tuple[GenerationTrace, NearVerbatim]],
                 n_span: int, nv_threshold: float) -> dict[str, Any]:
    """The batch metrics under ``definitions``."""
    if definitions == "propme":
        return propme_aggregate([t for t, _ in pairs], n_span=n_span,
                                nv_threshold=nv_threshold)
    return aggregate([t for t, _ in pairs], [nv for _, nv in pairs], n_span=n_span,
                     nv_threshold=nv_threshold)


class TraceJob(Job):
    name = "trace"
    description = "trace generations to the corpus documents they copy (SimpleTrace)"
    Params = TraceParams
    params: TraceParams
    _tracer: SimpleTrace | None = None
    _locator: Locator | None = None

    def items(self) -> list[WorkItem]:
        p = self.params
        if not p.generations:
            raise ConfigError("params.generations: a JSONL file of generations is needed")
        path = Path(p.generations)
        out = []
        for d in iter_jsonl_docs(path, path.name, p.text_field):
            gid = str(d.metadata.get(p.id_field, f"{path.stem}:{d.linenum + 1}"))
            out.append(WorkItem(gid, {"text": d.text, "group": str(d.metadata.get(
                p.group_field, "all"))}))
        return out

    def input_files(self) -> dict[str, Path]:
        return {"params.generations": Path(self.params.generations)} if \
            self.params.generations else {}

    def tracer(self, model: Model) -> SimpleTrace:
        if self._tracer is None:
            p = self.params
            if not p.index:
                raise ConfigError(describe_missing("simpletrace", [Access.CORPUS_INDEX],
                                                   "params.index names no index directory"))
            index = open_index(p.index, engine=p.engine, token_dtype=p.token_dtype)
            if not index.byte_level:
                index = CorpusIndex(index.engine, index.dirs, index.token_width,
                                    index.manifest, model.tokenizer())
            self._tracer = SimpleTrace(index, TraceConfig(p.rarity, p.max_docs, p.min_len,
                                                          p.text_mode, p.definitions, p.seed))
            self._locator = Locator(index)
        return self._tracer

    async def run_items(self, items: list[WorkItem], model: Model) -> list[dict[str, Any]]:
        st = self.tracer(model)
        out = []
        for it in items:
            t = st.trace(it.payload["text"])
            out.append({**it.payload, **trace_record(t, generation_nv_of(st, t),
                                                     self._locator)})
        return out

    def finalize(self, records: list[tuple[str, dict[str, Any]]]) -> dict[str, Any] | None:
        p = self.params
        pairs = [_restored(r) for _, r in records]
        groups = sorted({r["group"] for _, r in records})
        report: dict[str, Any] = {}
        for g in [*groups, "all"]:
            sel = [pr for pr, (_, r) in zip(pairs, records, strict=True)
                   if g == "all" or r["group"] == g]
            report[g] = aggregate_of(p.definitions, sel, p.n_span, p.nv_threshold)
        return {"groups": report}

    def summarize(self, records: list[tuple[str, dict[str, Any]]]) -> Table:
        return self.summary(records, self.finalize(records))

    def summary(self, records: list[tuple[str, dict[str, Any]]],
                report: dict[str, Any] | None) -> Table:
        groups = TraceReport.model_validate(report or {}).groups
        rows = [[g, m.total_generations, f"{m.average_longest_span_length:.1f} {m.unit}",
                 f"{m.full_match_ratio:.2f}", f"{m.avg_nv_recall:.2f}",
                 f"{m.generations_above_nv_recall_threshold_ratio:.2f}", m.unique_total_docs]
                for g, m in groups.items()]
        above = "NVR > threshold" if self.params.definitions == "propme" else \
            "NVR >= threshold"
        return Table(f"SimpleTrace (definitions: {self.params.definitions})",
                     ["group", "generations", "ALS", "FMR", "NVR", above, "unique docs"], rows)


def _calls(p: Mapping[str, Any]) -> Calls:
    return Calls()


SIMPLETRACE = MethodInfo(
    name="simpletrace", kind="tracer", title="SimpleTrace",
    paper="the PROPME paper (propme-simpletrace: SimpleTrace steps 1-4, Metric Validation; "
    "NOTES); over infini-gram, Liu et al. 2024",
    access=frozenset({Access.CORPUS_INDEX}),
    writes=("spans", "longest", "full_match", "nv", "docs"),
    calls=_calls, calls_formula="no model call (suffix-array queries)", job="trace",
    family="simpletrace", audit=AuditUse(run="trace", order=70),
    options=("index", "rarity", "max_docs", "min_len", "text_mode", "definitions", "seed",
             "n_span", "nv_threshold"),
    select="trace --index DIR GENERATIONS.jsonl",
    summary="maximal verbatim spans of each generation in a corpus index (word boundaries, "
    "no interior sentence end), the K = max(ceil(0.05 L), 1) rarest, their documents "
    "(exact full raw / normalized / partial); ALS, FMR, NVR")
