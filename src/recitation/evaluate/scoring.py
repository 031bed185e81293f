"""Score EchoTrace extraction files as the RECAP release does (the ``recitation evaluate``
command: :mod:`recitation.evaluate.cli`).

For each extraction file, every event's gold text (first sentence removed when given away,
see :mod:`recitation.metrics.weighted`) is scored against the candidate of each RECAP method
(:func:`recitation.corpus.echotrace.candidate_text`): ROUGE-L recall with Porter stemming,
micro-weighted by NLTK word count (eq. 2), and verbatim spans / 40-token passages
(:mod:`recitation.metrics.spans`). The output follows the released Metrics JSON layout
(``rouge_scores`` and ``contiguous_spans``), plus ``parameters.mode`` and, when asked, a
``mismatch_sweep`` (Appendix R).

What changes results: ``mode`` (``recap-compat`` reproduces the released counts; ``dedup``
counts each gold token once), the span token ``profile`` (``auto``: ``folded`` for dedup;
for recap-compat, the revision of the released code that produced the file's released
metrics, see :func:`release_revision`), ``min_tokens`` and ``max_mismatches``. ROUGE-L
depends on none of them.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from recitation.corpus.echotrace import (
    RECAP_METHODS,
    ExtractionFile,
    candidate_text,
    load_echotrace,
    parse_extraction_path,
)
from recitation.corpus.model import Book, Event
from recitation.errors import CorpusError
from recitation.metrics.rouge import rouge_tokenize, score_tokens
from recitation.metrics.spans import (
    SpanMode,
    SpanStats,
    TokenProfile,
    default_profile,
    find_spans,
    matching_blocks,
    merge_stats,
    span_stats,
    span_tokens,
)
from recitation.metrics.weighted import (
    BootstrapMean,
    WeightedMean,
    bootstrap_group_mean,
    gold_word_count,
    strip_given_first_sentence,
)

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class EvaluateConfig:
    """Everything that changes the numbers :func:`evaluate_book` produces."""

    mode: SpanMode = "dedup"
    profile: TokenProfile | Literal["auto"] = "auto"
    min_tokens: int = 40
    max_mismatches: int = 5
    sweep: tuple[int, ...] = ()
    methods: tuple[str, ...] = RECAP_METHODS
    use_stemmer: bool = True


@dataclass
class _MethodTotals:
    rouge: WeightedMean = field(default_factory=WeightedMean)
    spans: list[SpanStats] = field(default_factory=list)
    sweep: dict[int, list[SpanStats]] = field(default_factory=dict)


def _profile(cfg: EvaluateConfig) -> TokenProfile:
    return default_profile(cfg.mode) if cfg.profile == "auto" else cfg.profile


def _score_candidate(
    gold_rouge: list[str], gold_spans: list[str], cand: str, cfg: EvaluateConfig
) -> tuple[float, SpanStats, dict[int, SpanStats]]:
    recall = score_tokens(gold_rouge, rouge_tokenize(cand, use_stemmer=cfg.use_stemmer)).recall
    cand_spans = span_tokens(cand, profile=_profile(cfg))
    blocks = matching_blocks(gold_spans, cand_spans)

    def stats(budget: int) -> SpanStats:
        spans = find_spans(
            gold_spans,
            cand_spans,
            min_tokens=cfg.min_tokens,
            max_mismatches=budget,
            mode=cfg.mode,
            blocks=blocks,
        )
        return span_stats(spans, min_tokens=cfg.min_tokens)

    return recall, stats(cfg.max_mismatches), {n: stats(n) for n in cfg.sweep}


def _score_event(event: Event, totals: dict[str, _MethodTotals], cfg: EvaluateConfig) -> None:
    gold = event.text
    if not gold.strip():
        return
    gold = strip_given_first_sentence(gold, event.first_sentence)
    weight = gold_word_count(gold)
    gold_rouge = rouge_tokenize(gold, use_stemmer=cfg.use_stemmer)
    gold_spans = span_tokens(gold, profile=_profile(cfg))
    cache: dict[str, tuple[float, SpanStats, dict[int, SpanStats]]] = {}
    for method in cfg.methods:
        acc = totals[method]
        cand = candidate_text(event, method)
        if not cand:
            acc.rouge.add(None, weight)
            continue
        if cand not in cache:
            cache[cand] = _score_candidate(gold_rouge, gold_spans, cand, cfg)
        recall, stats, sweep = cache[cand]
        acc.rouge.add(recall, weight)
        acc.spans.append(stats)
        for n, s in sweep.items():
            acc.sweep.setdefault(n, []).append(s)


def _span_json(stats: SpanStats) -> dict[str, Any]:
    return {
        "span_count": stats.span_count,
        "passage_count": stats.passage_count,
        "avg_span_length": stats.avg_span_length,
        "max_span_length": stats.max_span_length,
    }


def evaluate_book(book: Book, cfg: EvaluateConfig | None = None) -> dict[str, Any]:
    """Metrics of one book's extractions, in the released Metrics JSON layout."""
    cfg = cfg or EvaluateConfig()
    totals = {m: _MethodTotals() for m in cfg.methods}
    for event in book.events():
        _score_event(event, totals, cfg)
    out: dict[str, Any] = {
        "rouge_scores": {m: totals[m].rouge.value for m in cfg.methods},
        "contiguous_spans": {
            "parameters": {
                "min_tokens": cfg.min_tokens,
                "max_mismatch_tokens": cfg.max_mismatches,
                "mode": cfg.mode,
                "tokens": _profile(cfg),
            },
            "methods": {m: _span_json(merge_stats(totals[m].spans)) for m in cfg.methods},
        },
    }
    if cfg.sweep:
        out["mismatch_sweep"] = {
            str(n): {m: _span_json(merge_stats(totals[m].sweep.get(n, []))) for m in cfg.methods}
            for n in cfg.sweep
        }
    return out


def release_revision(f: ExtractionFile) -> TokenProfile | None:
    """Which revision of the released code wrote the released metrics of ``f``, if any.

    The two revisions name their text reports differently: ``<Book>_<model>_feedback_<fb>
    _report.txt`` (first revision, ``"recap-v1"``) and ``<Book>_<model>_report_feedback_
    <fb>.txt`` (later revision, ``"recap-v2"``). The name is the only trace of the revision
    in the release; the token profiles it implies reproduce every released span count.
    """
    metrics_dir = f.path.parent.parent / "Metrics"
    stem = f"{f.book_name}_{f.model}"
    if (metrics_dir / f"{stem}_feedback_{f.feedback_model}_report.txt").is_file():
        return "recap-v1"
    if (metrics_dir / f"{stem}_report_feedback_{f.feedback_model}.txt").is_file():
        return "recap-v2"
    return None


def resolve_config(f: ExtractionFile, cfg: EvaluateConfig) -> EvaluateConfig:
    """``cfg`` with ``profile="auto"`` made concrete for this file."""
    if cfg.profile != "auto":
        return cfg
    profile = default_profile(cfg.mode)
    if cfg.mode == "recap-compat":
        found = release_revision(f)
        if found is None:
            logger.info("%s: no released report; using %s tokens", f.path.name, profile)
        profile = found or profile
    return replace(cfg, profile=profile)


def evaluate_file(path: str | Path, cfg: EvaluateConfig | None = None) -> dict[str, Any]:
    """:func:`evaluate_book` on an extraction JSON file (``auto`` profile resolved)."""
    f = parse_extraction_path(path)
    return evaluate_book(load_echotrace(path), resolve_config(f, cfg or EvaluateConfig()))


def _evaluate_one(args: tuple[Path, EvaluateConfig]) -> dict[str, Any]:
    return evaluate_file(*args)


def evaluate_files(
    files: Sequence[ExtractionFile],
    cfg: EvaluateConfig | None = None,
    *,
    workers: int = 1,
    on_done: Callable[[ExtractionFile], None] | None = None,
) -> list[tuple[ExtractionFile, dict[str, Any]]]:
    """Evaluate several files, in ``workers`` processes; results in input order."""
    cfg = cfg or EvaluateConfig()
    results: dict[Path, dict[str, Any]] = {}
    # Largest first, so the slowest file does not start last.
    order = sorted(files, key=lambda f: f.path.stat().st_size, reverse=True)
    if workers <= 1:
        for f in order:
            results[f.path] = evaluate_file(f.path, cfg)
            if on_done:
                on_done(f)
    else:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            jobs = pool.map(_evaluate_one, [(f.path, cfg) for f in order])
            for f, res in zip(order, jobs, strict=True):
                results[f.path] = res
                if on_done:
                    on_done(f)
    return [(f, results[f.path]) for f in files]


def group_means(
    rows: Sequence[tuple[ExtractionFile, dict[str, Any]]], *, n_resamples: int = 1000, seed: int = 0
) -> dict[str, dict[str, BootstrapMean]]:
    """Per target model and method: bootstrap mean and std of the books' weighted ROUGE-L
    (RECAP's group analysis; books resampled with replacement, seeded)."""
    by_model: dict[str, dict[str, list[float]]] = {}
    for f, res in rows:
        for method, value in res["rouge_scores"].items():
            by_model.setdefault(f.model, {}).setdefault(method, []).append(value)
    return {
        model: {
            m: bootstrap_group_mean(v, n_resamples=n_resamples, seed=seed)
            for m, v in methods.items()
        }
        for model, methods in by_model.items()
    }


def released_metrics_path(f: ExtractionFile) -> Path:
    """Where the RECAP release keeps the metrics of an extraction file."""
    return f.path.parent.parent / "Metrics" / f.metrics_name


def load_released(f: ExtractionFile) -> dict[str, Any] | None:
    """The released metrics of an extraction file, or None if there are none."""
    p = released_metrics_path(f)
    if not p.is_file():
        return None
    try:
        data: dict[str, Any] = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise CorpusError(f"cannot read released metrics {p}: {exc}") from exc
    return data


@dataclass(frozen=True)
class Deviation:
    """Ours minus released for one book x model x method."""

    book: str
    model: str
    method: str
    rouge_ours: float
    rouge_released: float
    spans_ours: int
    spans_released: int
    passages_ours: int
    passages_released: int

    @property
    def rouge_diff(self) -> float:
        return self.rouge_ours - self.rouge_released

    @staticmethod
    def _rel(ours: int, released: int) -> float:
        if released == 0:
            return 0.0 if ours == 0 else float("inf")
        return (ours - released) / released

    @property
    def span_rel(self) -> float:
        return self._rel(self.spans_ours, self.spans_released)

    @property
    def passage_rel(self) -> float:
        return self._rel(self.passages_ours, self.passages_released)


def compare(f: ExtractionFile, ours: dict[str, Any], released: dict[str, Any]) -> list[Deviation]:
    """Per-method deviations between our metrics and the released ones."""
    out = []
    for method, rel_rouge in released["rouge_scores"].items():
        if method not in ours["rouge_scores"]:
            continue
        o = ours["contiguous_spans"]["methods"][method]
        r = released["contiguous_spans"]["methods"][method]
        out.append(
            Deviation(
                f.book_name, f.model, method,
                ours["rouge_scores"][method], rel_rouge,
                o["span_count"], r["span_count"], o["passage_count"], r["passage_count"],
            )
        )  # fmt: skip
    return out
