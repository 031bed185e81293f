"""Where each span of each traced generation came from: the documents, per generation, read
from a trace or PROPME run's store (what ``recitation trace`` prints after its summary, and
its ``--json``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from recitation.corpus.doc_place import place, section_of

LABEL_KEYS = ("id", "doc_id", "title", "source", "url", "ref")
"""Metadata keys tried in order for a document's name: the document's own (``metadata``,
from its JSONL record), then the index's. The label is the name and where the document is
(:func:`recitation.trace.locate.place`: its file, the span's lines there, its section)."""


def doc_label(metadata: dict[str, Any], doc_ix: int, lines: list[int] | None = None) -> str:
    """A short name for a document and where it is (``lines``: the span's, when known):
    "id ps23, corpus.jsonl line 1", "Emma/novel_text.txt lines 7357-7360 (CHAPTER XXVII)"."""
    where = place(metadata, lines)
    inner = metadata.get("metadata")
    for meta in (inner if isinstance(inner, dict) else {}, metadata):
        for key in LABEL_KEYS:
            if meta.get(key) not in (None, ""):
                return f"{key} {meta[key]}" + (f", {where}" if where else "")
    return where or f"doc {doc_ix}"


def _doc(d: dict[str, Any]) -> dict[str, Any]:
    meta = d.get("metadata") or {}
    return {"doc_ix": d["doc_ix"], "label": doc_label(meta, d["doc_ix"], d.get("lines")),
            "path": meta.get("path"), "lines": d.get("lines"), "section": section_of(meta),
            "tier": d["tier"], "nv_recall": d.get("nv"), "metadata": meta}


def generation_sources(item_id: str, record: dict[str, Any]) -> dict[str, Any]:
    """One generation's spans (each with the documents it was found in) and, under the
    authors' definitions, its merged segments with the documents they count."""
    spans = [{"start": s["start"], "end": s["end"], "length": s["length"], "text": s["text"],
              "corpus_count": s["count"], "documents": [_doc(d) for d in s["docs"]]}
             for s in record.get("spans", [])]
    segments = [{"start": a, "end": b, "length": n, "documents": [_doc(d) for d in docs]}
                for (a, b), n, docs in zip(record.get("segments", []),
                                           record.get("segment_lengths", []),
                                           record.get("segment_docs", []), strict=False)]
    return {"id": item_id, "group": record.get("group") or record.get("set"),
            "text": record.get("text", ""), "nv_recall": (record.get("nv") or {}).get("recall"),
            "full_match": record.get("full_match"), "spans": spans, "segments": segments}


def run_sources(run_dir: Path) -> list[dict[str, Any]]:
    """Every traced generation of a run, in item order."""
    from recitation.runs.store import RunStore

    with RunStore(run_dir) as store:
        return [generation_sources(item_id, r) for item_id, r in store.results()
                if "spans" in r]


def sources_table(generations: list[dict[str, Any]], per_span: int = 3) -> Any:
    """A rich table: one row per span, its text and up to ``per_span`` of its documents."""
    from rich.table import Table

    table = Table(title="Where each span came from (documents per span; all of them: --json)")
    for col in ("generation", "group", "NVR", "span", "documents"):
        table.add_column(col, overflow="fold")
    for g in generations:
        nv = "" if g["nv_recall"] is None else f"{g['nv_recall']:.2f}"
        if not g["spans"]:
            table.add_row(str(g["id"]), str(g["group"]), nv, "(no span)", "")
        for k, s in enumerate(g["spans"]):
            docs = s["documents"][:per_span]
            more = len(s["documents"]) - len(docs)
            text = "; ".join(f"{d['label']} ({d['tier']}" + (
                f", NVR {d['nv_recall']:.2f})" if d["nv_recall"] is not None else ")")
                for d in docs) + (f"; +{more} more" if more > 0 else "")
            span = s["text"] if len(s["text"]) <= 80 else s["text"][:77] + "..."
            table.add_row(str(g["id"]) if k == 0 else "", str(g["group"]) if k == 0 else "",
                          nv if k == 0 else "", repr(span), text)
    return table
