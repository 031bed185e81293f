"""The report section of SimpleTrace (PROPME): for each model whose audit traced its
prefix-probing continuations into a corpus index, per group, how many continuations hold
verbatim corpus spans, the longest span, full matches, NV recall and the documents found;
then where the longest copies are (:data:`COPIES` spans, each with its documents: file,
lines there and chapter, :mod:`recitation.trace.locate`; the span's text unless the audit
is redacted)."""

from __future__ import annotations

from html import escape
from pathlib import Path
from typing import Any

from recitation.records import TraceAggregate, TraceReport
from recitation.report.sections import Section
from recitation.report.table import fmt
from recitation.runs.store import RunStore

COPIES = 10  # longest spans shown per model
DOCS_PER_COPY = 3

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
            out[entry["spec"]]["copies"] = copies(folder / "runs" / name,
                                                  bool(manifest.get("redact")))
    return out or None


def copies(run_dir: Path, redact: bool) -> list[dict[str, Any]]:
    """The run's :data:`COPIES` longest spans: generation, length, text ("" if ``redact``)
    and where its documents are (their labels)."""
    from recitation.report.trace_sources import run_sources

    spans = [(g["id"], s) for g in run_sources(run_dir) for s in g["spans"]]
    spans.sort(key=lambda x: -x[1]["length"])
    return [{"generation": gid, "length": s["length"], "text": "" if redact else s["text"],
             "documents": [d["label"] for d in s["documents"][:DOCS_PER_COPY]],
             "more": max(0, len(s["documents"]) - DOCS_PER_COPY)} for gid, s in spans[:COPIES]]


def _copy_row(c: dict[str, Any]) -> list[str]:
    text = c["text"] if len(c["text"]) <= 80 else c["text"][:77] + "..."
    docs = "; ".join(c["documents"]) + (f"; +{c['more']} more" if c["more"] else "")
    return [str(c["generation"]), str(c["length"]), repr(text) if text else "(redacted)",
            docs]


COPY_HEAD = ["generation", "span length", "span", "where the copy is (file, lines, chapter)"]


def _row(g: str, r: TraceAggregate) -> list[str]:
    return [g, f"{r.generations_with_spans} / {r.total_generations}",
            fmt(r.average_longest_span_length), fmt(r.full_match_ratio),
            f"{fmt(r.avg_nv_recall)} / {fmt(r.max_nv_recall)}", str(r.unique_total_docs)]


def _head(report: TraceReport) -> list[str]:
    unit = next((r.unit for r in report.groups.values() if r.unit), "tokens")
    return ["group", "generations with spans", f"average longest span ({unit})",
            "full match", "NV recall (mean / max)", "corpus documents"]


def _title(spec: str, report: TraceReport) -> str:
    """The model and the definitions its spans were traced under."""
    used = sorted({r.definitions for r in report.groups.values()})
    return f"{spec} (definitions: {', '.join(used) or 'none'})"


def markdown(data: dict[str, Any]) -> list[str]:
    lines = [NOTE, ""]
    for spec, raw in data.items():
        report = TraceReport.model_validate(raw)
        head = _head(report)
        lines += [f"### {_title(spec, report)}", "", "| " + " | ".join(head) + " |",
                  "|" + "---|" * len(head)]
        lines += ["| " + " | ".join(_row(g, r)) + " |" for g, r in report.groups.items()]
        lines += [""]
        if rows := [_copy_row(c) for c in raw.get("copies") or []]:
            lines += ["Where the longest copies are:", "", "| " + " | ".join(COPY_HEAD) + " |",
                      "|" + "---|" * len(COPY_HEAD)]
            lines += ["| " + " | ".join(x.replace("|", "\\|") for x in r) + " |" for r in rows]
            lines += [""]
    return lines


def html(data: dict[str, Any]) -> str:
    parts = [f'<p class="note">{escape(NOTE)}</p>']
    for spec, raw in data.items():
        report = TraceReport.model_validate(raw)
        cells = "".join(f"<th>{escape(h)}</th>" for h in _head(report))
        rows = "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in _row(g, r)) + "</tr>"
                       for g, r in report.groups.items())
        parts.append(f"<h3>Tracing into the corpus: {escape(_title(spec, report))}</h3>"
                     f'<table class="tracing"><tr>{cells}</tr>{rows}</table>')
        parts.append(_copies_html(raw.get("copies") or []))
    return "".join(parts)


def _copies_html(found: list[dict[str, Any]]) -> str:
    if not found:
        return ""
    head = "".join(f"<th>{escape(h)}</th>" for h in COPY_HEAD)
    rows = "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in _copy_row(x)) + "</tr>"
                   for x in found)
    return (f"<h4>Where the longest copies are</h4>"
            f'<table class="tracing-copies"><tr>{head}</tr>{rows}</table>')


SECTION = Section(name="tracing", title="Tracing into the corpus", collect=collect,
                  markdown=markdown, html=html)
