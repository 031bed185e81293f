"""Annotation contamination (Michel et al. 2025, section 5 and appendix E): Min-K% on
verbalized quotation records.

Each row of ``quotation_info.csv`` is verbalized as the authors' ``verbalize`` does (figure
4): ``column: value; column: value; ...`` over every column, the raw CSV strings, no
separator after the last. A fraction of the rows (the authors: 20%) is sampled per novel with
the run's seed; records of at most 16 or at least 256 tokens are skipped as in
``main_contamination.py`` (counted with the model's tokenizer; without one, whitespace
words). Min-K% (k = 10, 20, 30) is the mean of the k% lowest token log-probabilities
(:func:`recitation.detect.whitebox.min_k_percent`: ``floor(n k / 100)`` of the ``n`` scored
tokens, at least one; the authors take ``int(k * (n + 1))`` of the ``n`` scored tokens, the
sequence length including the first token).
"""

from __future__ import annotations

import csv
import io
import random
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from recitation.corpus.files import read_text_file
from recitation.detect.whitebox import min_k_percent
from recitation.errors import ConfigError, CorpusError
from recitation.methods import Access, Calls, MethodInfo, require_access
from recitation.models.base import Model
from recitation.runs.jobs import Job, Table, WorkItem


def verbalize(row: Mapping[str, str], columns: list[str]) -> str:
    """``quoteID: Q0; quoteText: ...; ...`` (figure 4)."""
    return "; ".join(f"{c}: {row.get(c, '')}" for c in columns)


def records(folder: str | Path) -> list[tuple[str, str]]:
    """(quote id, verbalized record) of every row of the novel's ``quotation_info.csv``."""
    path = Path(folder) / "quotation_info.csv"
    if not path.is_file():
        raise CorpusError(f"PDNC file missing: {path}")
    reader = csv.DictReader(io.StringIO(read_text_file(path, what="PDNC CSV file"),
                                        newline=""))
    cols = list(reader.fieldnames or [])
    return [(row.get("quoteID", str(i)), verbalize(row, cols)) for i, row in enumerate(reader)]


class ContaminationParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    novels: list[str] = Field(default_factory=list, description="PDNC-format novel folders")
    fraction: float = Field(0.2, gt=0, le=1, description="records sampled per novel")
    max_records: int | None = Field(None, ge=1, description="at most this many per novel")
    ks: list[float] = Field(default_factory=lambda: [10.0, 20.0, 30.0])
    min_tokens: int = Field(16, ge=0)
    max_tokens: int = Field(256, ge=2)


class ContaminationJob(Job):
    name = "contamination"
    description = "Min-K% of verbalized quotation records (annotation contamination)"
    Params = ContaminationParams
    params: ContaminationParams

    def items(self) -> list[WorkItem]:
        p = self.params
        if not p.novels:
            raise ConfigError("contamination: params.novels is empty; give novel folders")
        out = []
        for folder in p.novels:
            name = Path(folder).name
            recs = records(folder)
            k = max(1, int(len(recs) * p.fraction))
            if p.max_records:
                k = min(k, p.max_records)
            for qid, text in random.Random(f"{self.seed}:{name}").sample(recs, k):
                out.append(WorkItem(f"{name}/{qid}", {"novel": name, "text": text}))
        return out

    def input_files(self) -> dict[str, Path]:
        return {f"novel{i}": Path(f) / "quotation_info.csv"
                for i, f in enumerate(self.params.novels)}

    async def run_items(self, items: list[WorkItem], model: Model) -> list[dict[str, Any]]:
        require_access(["contamination"], model.capabilities, model.backend)
        p, tok = self.params, model.tokenizer()
        keep = []
        out: dict[str, dict[str, Any]] = {}
        for it in items:
            text = it.payload["text"]
            n = len(tok.encode(text)) if tok is not None else len(text.split())
            if p.min_tokens < n < p.max_tokens:
                keep.append(it)
            else:
                out[it.id] = {**it.payload, "tokens": n, "skipped": True, "min_k": {}}
        scores = await model.score([it.payload["text"] for it in keep]) if keep else []
        for it, ts in zip(keep, scores, strict=True):
            out[it.id] = {**it.payload, "tokens": len(ts.tokens), "skipped": False,
                          "min_k": {f"{k:g}": min_k_percent(ts.logprobs, k) for k in p.ks}}
        return [out[it.id] for it in items]

    def summarize(self, records: list[tuple[str, dict[str, Any]]]) -> Table:
        m = min_k_by_novel([r for _, r in records])
        ks = [f"{k:g}" for k in self.params.ks]
        rows = [[n, v["records"], *[f"{v[k]:.3f}" for k in ks]] for n, v in sorted(m.items())]
        return Table("Annotation contamination (Min-K%)", ["novel", "records",
                                                           *[f"Min-{k}%" for k in ks]], rows)


def min_k_by_novel(recs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """novel -> {"records": n, "<k>": mean Min-K% over its scored records}."""
    by: dict[str, list[dict[str, float]]] = defaultdict(list)
    for r in recs:
        if not r.get("skipped"):
            by[r["novel"]].append(r["min_k"])
    out: dict[str, dict[str, Any]] = {}
    for novel, vals in by.items():
        out[novel] = {"records": len(vals)}
        for k in vals[0]:
            out[novel][k] = sum(v[k] for v in vals) / len(vals)
    return out


def _calls(p: Mapping[str, Any]) -> Calls:
    return Calls(score=frozenset({"record"}))


CONTAMINATION = MethodInfo(
    name="contamination", kind="probe", title="Min-K% of verbalized annotations",
    paper="Michel et al. 2025 (quotation attribution, section 5 and appendix E; Min-K%: "
    "Shi et al. 2024)", access=frozenset({Access.LOGPROBS}), writes=("min_k", "tokens"),
    calls=_calls, calls_formula="1 score of the verbalized record", job="contamination",
    family="contamination", unit="sample", select="probe contamination",
    options=("fraction", "max_records", "ks", "min_tokens", "max_tokens"),
    summary="quotation records verbalized as 'column: value; ...'; Min-K% (k = 10, 20, 30) "
    "per record, averaged per novel")
