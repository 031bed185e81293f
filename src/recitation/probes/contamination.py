"""Annotation contamination (Michel et al. 2025, section 5 and appendix E): Min-K% on
verbalized quotation records.

Each row of ``quotation_info.csv`` is verbalized as the authors' ``verbalize`` does (figure
4): ``column: value; column: value; ...`` over every column, the raw CSV strings, no
separator after the last. Records are then drawn per novel in the authors' order
(``main_contamination.py``): first the records of more than ``min_tokens`` (16) and fewer
than ``max_tokens`` (256) tokens are kept (both bounds strict), then ``int(fraction * m)``
of those ``m`` (the authors: 20%, rounded down, none below 5 records) are sampled with the
run's seed (``random.Random("<seed>:<novel>")``; the authors: ``torch.randperm`` after
``torch.manual_seed(42)``), at most ``max_records``. Tokens are counted with the model's
tokenizer, special tokens not added (the authors' Llama-3 count includes its BOS); without
a tokenizer, whitespace words. The count needs the model, so the draw happens when the run
runs: the job's items are every record of every novel (payload ``pool``), each novel's
draw is made once from all of them, and a record not drawn is stored as skipped. Items
stored by runs made before this order (no ``pool``) were sampled when the run was created;
they are only filtered.

Min-K% is the mean of the k% lowest token log-probabilities
(:func:`recitation.detect.whitebox.min_k_percent`: ``floor(n k / 100)`` of the ``n`` scored
tokens, at least one; the authors take ``int(k * (n + 1))`` of the ``n`` scored tokens, the
sequence length including the first token, so none at k = 5% below 20 tokens: their mean is
then 0/0, NaN). Every record is scored at every k of ``ks``, by default the authors'
(:data:`AUTHORS_KS`: ``k_perc`` of ``main_contamination.py``, 5, 10, 20, 30, 40, 50); no k
is chosen and nothing is thresholded here: the decision is the paired t-test of
:mod:`recitation.probes.analysis` on matched novels (the paper reports k = 10, 20, 30).
Each record also keeps its perplexity, ``exp`` of the mean negative log-probability of its
scored tokens, which the authors save beside (``ppl.json``) and the paper does not use.
"""

from __future__ import annotations

import csv
import io
import math
import random
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from recitation.corpus.files import read_text_file
from recitation.detect.whitebox import min_k_percent
from recitation.errors import ConfigError, CorpusError
from recitation.methods import Access, Calls, MethodInfo, require_access
from recitation.models.base import Model
from recitation.models.tokenizer import Tokenizer
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


def token_count(tok: Tokenizer | None, text: str) -> int:
    """The length the filter reads: the model's tokens (no special tokens added), else
    whitespace words."""
    return len(tok.encode(text)) if tok is not None else len(text.split())


def draw(counts: list[tuple[str, int]], fraction: float, min_tokens: int, max_tokens: int,
         max_records: int | None, rng: random.Random) -> list[str]:
    """The ids drawn from one novel's ``(id, token count)`` records, in the authors' order:
    the records with ``min_tokens < count < max_tokens``, then ``int(fraction * m)`` of
    those ``m`` (at most ``max_records``) sampled with ``rng``."""
    kept = [i for i, n in counts if min_tokens < n < max_tokens]
    k = int(len(kept) * fraction)
    if max_records:
        k = min(k, max_records)
    return rng.sample(kept, k)


AUTHORS_KS = (5.0, 10.0, 20.0, 30.0, 40.0, 50.0)
"""The k (in %) the authors' ``main_contamination.py`` scores every record at."""


class ContaminationParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    novels: list[str] = Field(default_factory=list, description="PDNC-format novel folders")
    fraction: float = Field(0.2, gt=0, le=1, description="share of a novel's records "
                            "within the token bounds that is sampled (rounded down)")
    max_records: int | None = Field(None, ge=1, description="at most this many per novel")
    ks: list[float] = Field(default_factory=lambda: list(AUTHORS_KS), min_length=1,
                            description="the k (in %) of Min-K%; the authors': 5, 10, 20, "
                            "30, 40, 50; the paper reports 10, 20, 30")
    min_tokens: int = Field(16, ge=0)
    max_tokens: int = Field(256, ge=2)


class ContaminationJob(Job):
    name = "contamination"
    description = "Min-K% of verbalized quotation records (annotation contamination)"
    Params = ContaminationParams
    params: ContaminationParams

    def __init__(self, params: ContaminationParams, seed: int) -> None:
        super().__init__(params, seed)
        # per model: every pool record's token count, and each novel's drawn ids
        self._drawn: dict[tuple[str, str], tuple[dict[str, int], dict[str, set[str]]]] = {}

    def items(self) -> list[WorkItem]:
        """Every record of every novel: the draw needs the model's tokenizer, so it is made
        when the run runs (:meth:`drawn`)."""
        p = self.params
        if not p.novels:
            raise ConfigError("contamination: params.novels is empty; give novel folders")
        out = []
        for folder in p.novels:
            name = Path(folder).name
            for qid, text in records(folder):
                out.append(WorkItem(f"{name}/{qid}",
                                    {"novel": name, "text": text, "pool": True}))
        return out

    def drawn(self, model: Model) -> tuple[dict[str, int], dict[str, set[str]]]:
        """Every pool item's token count and the ids drawn per novel (:func:`draw`), made
        once per model from the job's work items (a run's stored items: a resumed run draws
        the same)."""
        key = (model.backend, model.name)
        if key not in self._drawn:
            p, tok = self.params, model.tokenizer()
            counts = {it.id: token_count(tok, it.payload["text"])
                      for it in self.work_items() if it.payload.get("pool")}
            by_novel: dict[str, list[tuple[str, int]]] = defaultdict(list)
            for it in self.work_items():
                if it.id in counts:
                    by_novel[it.payload["novel"]].append((it.id, counts[it.id]))
            chosen = {name: set(draw(c, p.fraction, p.min_tokens, p.max_tokens,
                                     p.max_records, random.Random(f"{self.seed}:{name}")))
                      for name, c in by_novel.items()}
            self._drawn[key] = (counts, chosen)
        return self._drawn[key]

    def input_files(self) -> dict[str, Path]:
        return {f"novel{i}": Path(f) / "quotation_info.csv"
                for i, f in enumerate(self.params.novels)}

    async def run_items(self, items: list[WorkItem], model: Model) -> list[dict[str, Any]]:
        require_access(["contamination"], model.capabilities, model.backend)
        p, tok = self.params, model.tokenizer()
        keep = []
        out: dict[str, dict[str, Any]] = {}
        counts, drawn = self.drawn(model)
        for it in items:
            n = counts.get(it.id)
            if n is None:
                n = token_count(tok, it.payload["text"])
            inside = p.min_tokens < n < p.max_tokens
            if it.payload.get("pool"):
                chosen = it.id in drawn.get(it.payload["novel"], set())
            else:  # an item of an older run: sampled when the run was made
                chosen = inside
            if chosen:
                keep.append(it)
            else:
                out[it.id] = {**it.payload, "tokens": n, "skipped": True, "min_k": {},
                              "reason": "not drawn" if inside else "token bounds"}
        scores = await model.score([it.payload["text"] for it in keep]) if keep else []
        for it, ts in zip(keep, scores, strict=True):
            out[it.id] = {**it.payload, "tokens": len(ts.tokens), "skipped": False,
                          "min_k": {f"{k:g}": min_k_percent(ts.logprobs, k) for k in p.ks},
                          "perplexity": perplexity(ts.logprobs)}
        return [out[it.id] for it in items]

    def summarize(self, records: list[tuple[str, dict[str, Any]]]) -> Table:
        m = min_k_by_novel([r for _, r in records])
        ks = [f"{k:g}" for k in self.params.ks]
        rows = [[n, v["records"], *[f"{v[k]:.3f}" for k in ks]] for n, v in sorted(m.items())]
        return Table("Annotation contamination (Min-K%)", ["novel", "records",
                                                           *[f"Min-{k}%" for k in ks]], rows)


def perplexity(logprobs: Sequence[float]) -> float:
    """``exp`` of the mean negative log-probability (the authors' ``exp(loss)``)."""
    return math.exp(-sum(logprobs) / len(logprobs)) if logprobs else float("nan")


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
    "Shi et al. 2024)", access=frozenset({Access.LOGPROBS}),
    writes=("min_k", "perplexity", "tokens"),
    calls=_calls, calls_formula="1 score of the verbalized record", job="contamination",
    family="contamination", unit="sample", select="probe contamination",
    options=("fraction", "max_records", "ks", "min_tokens", "max_tokens"),
    summary="quotation records verbalized as 'column: value; ...'; Min-K% (k = 5, 10, 20, "
    "30, 40, 50, the authors') per record, averaged per novel")
