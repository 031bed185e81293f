"""The report section of SimpleTrace (PROPME): for each model whose audit traced its
prefix-probing continuations into a corpus index, per group, how many continuations hold
verbatim corpus spans, the longest span, full matches, NV recall and the documents found."""

from __future__ import annotations

from html import escape
from pathlib import Path
from typing import Any

from recitation.records import TraceAggregate, TraceReport
from recitation.report.sections import Section
from recitation.report.table import fmt
from recitation.runs.store import RunStore

NOTE = ("SimpleTrace (PROPME) of the prefix-probing continuations: verbatim spans found in "
        "the corpus index, and the documents they come from.")


def collect(folder: Path, manifest: dict[str, Any]) -> dict[str, Any] | None:
    """``{model spec: the trace run's report}`` for the models the audit traced."""
    out = {}
    for entry in manifest["models"]:
        if (name := entry["runs"].get("trace")) and (folder / "runs" / name / "run.sqlite"
                                                     ).exists():
            with RunStore(folder / "runs" / name) as store:
                out[entry["spec"]] = store.get_meta("trace_report") or {}
    return out or None


def _row(g: str, r: TraceAggregate) -> list[str]:
    return [g, f"{r.generations_with_spans} / {r.total_generations}",
            fmt(r.average_longest_span_length), fmt(r.full_match_ratio),
            f"{fmt(r.avg_nv_recall)} / {fmt(r.max_nv_recall)}", str(r.unique_total_docs)]


def _head(report: TraceReport) -> list[str]:
    unit = next((r.unit for r in report.groups.values() if r.unit), "tokens")
    return ["group", "generations with spans", f"average longest span ({unit})",
            "full match", "NV recall (mean / max)", "corpus documents"]


def markdown(data: dict[str, Any]) -> list[str]:
    lines = [NOTE, ""]
    for spec, raw in data.items():
        report = TraceReport.model_validate(raw)
        head = _head(report)
        lines += [f"### {spec}", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        lines += ["| " + " | ".join(_row(g, r)) + " |" for g, r in report.groups.items()]
        lines += [""]
    return lines


def html(data: dict[str, Any]) -> str:
    parts = [f'<p class="note">{escape(NOTE)}</p>']
    for spec, raw in data.items():
        report = TraceReport.model_validate(raw)
        cells = "".join(f"<th>{escape(h)}</th>" for h in _head(report))
        rows = "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in _row(g, r)) + "</tr>"
                       for g, r in report.groups.items())
        parts.append(f"<h3>Tracing into the corpus: {escape(spec)}</h3>"
                     f'<table class="tracing"><tr>{cells}</tr>{rows}</table>')
    return "".join(parts)


SECTION = Section(name="tracing", title="Tracing into the corpus", collect=collect,
                  markdown=markdown, html=html)
