"""Reproduce the RECAP release's per-book metrics and write docs/reproduction.md.

    .venv/bin/python benchmarks/reproduce_recap.py [--data ../shared/data] [--workers 2]

Runs ``recitation evaluate`` over every EchoTrace extraction file in four configurations
(recap-compat with each released revision's tokens, dedup with the same tokens, dedup with
folded tokens), with the mismatch sweep N = 0..5, and an ablation of the NLTK version used
for the eq. 2 weights. Takes a few minutes on two cores.
"""

from __future__ import annotations

import argparse
import os
from collections import defaultdict
from pathlib import Path
from typing import Any

from recitation.corpus.echotrace import (
    RECAP_METHODS,
    ExtractionFile,
    candidate_text,
    find_extraction_files,
    load_echotrace,
)
from recitation.corpus.tokenize import word_tokenize
from recitation.evaluate import (
    EvaluateConfig,
    compare,
    evaluate_files,
    load_released,
    release_revision,
)
from recitation.metrics.rouge import rouge_tokenize, score_tokens
from recitation.metrics.weighted import WeightedMean, strip_given_first_sentence

REPO = Path(__file__).resolve().parents[1]
SHORT = {
    "prefix-probing": "prefix",
    "simple_agent_extraction": "agent",
    "simple_agent_jailbreak": "jailbreak",
    "simple_agent_extraction_refined_first": "refined_first",
    "simple_agent_extraction_refined_best_no_jail": "best_no_jail",
    "simple_agent_extraction_refined_best": "refined_best",
}
Rows = list[tuple[ExtractionFile, dict[str, Any]]]


def run(files: list[ExtractionFile], workers: int, **kw: Any) -> Rows:
    return evaluate_files(files, EvaluateConfig(sweep=tuple(range(6)), **kw), workers=workers)


def rouge_with_current_nltk(f: ExtractionFile) -> dict[str, float]:
    """Eq. 2 with today's nltk.word_tokenize rules for the weights (ablation)."""
    acc = {m: WeightedMean() for m in RECAP_METHODS}
    for ev in load_echotrace(f.path).events():
        if not ev.text.strip():
            continue
        gold = strip_given_first_sentence(ev.text, ev.first_sentence)
        weight = len(word_tokenize(gold))
        gold_tokens = rouge_tokenize(gold, use_stemmer=True)
        for m in RECAP_METHODS:
            cand = candidate_text(ev, m)
            score = score_tokens(gold_tokens, rouge_tokenize(cand, use_stemmer=True)).recall
            acc[m].add(score if cand else None, weight)
    return {m: a.value for m, a in acc.items()}


def _pct(x: float) -> str:
    return f"{100 * x:+.2f}%"


def table_main(rows: Rows) -> tuple[list[str], dict[str, float]]:
    out = [
        "| book | model | revision | method | ROUGE-L ours | released | diff "
        "| spans ours / released | passages ours / released |",
        "|---|---|---|---|---:|---:|---:|---:|---:|",
    ]
    worst = {"rouge": 0.0, "spans": 0.0, "passages": 0.0}
    for f, res in rows:
        released = load_released(f)
        assert released is not None
        for d in compare(f, res, released):
            worst["rouge"] = max(worst["rouge"], abs(d.rouge_diff))
            worst["spans"] = max(worst["spans"], abs(d.span_rel))
            worst["passages"] = max(worst["passages"], abs(d.passage_rel))
            out.append(
                f"| {f.book_name.split('_-_')[0].replace('_', ' ')} | {f.model} | "
                f"{release_revision(f)} | {SHORT[d.method]} | {d.rouge_ours:.6f} | "
                f"{d.rouge_released:.6f} | {d.rouge_diff:+.1e} | {d.spans_ours} / "
                f"{d.spans_released} | {d.passages_ours} / {d.passages_released} |"
            )
    return out, worst


def revision_check(by_profile: dict[str, Rows]) -> list[str]:
    """How far each revision's tokens land from the released counts, per file group."""
    out = [
        "| files written by | tokens used | cells | exact span and passage counts "
        "| largest passage deviation |",
        "|---|---|---:|---:|---:|",
    ]
    for written_by in ("recap-v1", "recap-v2"):
        for profile, rows in by_profile.items():
            cells = exact = 0
            worst = 0.0
            for f, res in rows:
                if release_revision(f) != written_by:
                    continue
                released = load_released(f)
                assert released is not None
                for d in compare(f, res, released):
                    cells += 1
                    exact += (
                        d.spans_ours == d.spans_released and d.passages_ours == d.passages_released
                    )
                    worst = max(worst, abs(d.passage_rel))
            out.append(f"| {written_by} | {profile} | {cells} | {exact} | {_pct(worst)} |")
    return out


def totals(rows: Rows, key: str = "contiguous_spans") -> dict[tuple[str, str], tuple[int, int]]:
    agg: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    for f, res in rows:
        for m, v in res[key]["methods"].items():
            agg[(f.model, m)][0] += v["span_count"]
            agg[(f.model, m)][1] += v["passage_count"]
    return {k: (v[0], v[1]) for k, v in agg.items()}


def table_modes(compat: Rows, dedup_same: Rows, dedup_folded: Rows) -> list[str]:
    a, b, c = totals(compat), totals(dedup_same), totals(dedup_folded)
    out = [
        "| model | method | recap-compat spans / passages | dedup, same tokens | change "
        "| dedup, folded tokens (default) | change |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for key in sorted(a):
        (s0, p0), (s1, p1), (s2, p2) = a[key], b[key], c[key]
        out.append(
            f"| {key[0]} | {SHORT[key[1]]} | {s0} / {p0} | {s1} / {p1} | "
            f"{_pct(p1 / p0 - 1) if p0 else 'n/a'} | {s2} / {p2} | "
            f"{_pct(p2 / p0 - 1) if p0 else 'n/a'} |"
        )
    return out


def table_sweep(compat: Rows, dedup: Rows, method: str) -> list[str]:
    out = [
        "| N | " + " | ".join(f"{m} compat | {m} dedup" for m in ("gpt-4.1", "deepseek")) + " |",
        "|---:|---:|---:|---:|---:|",
    ]
    for n in range(6):
        cells = []
        for model in ("gpt-4.1-2025-04-14", "deepseek-chat"):
            for rows in (compat, dedup):
                books = [r for f, r in rows if f.model == model]
                passages = sum(r["mismatch_sweep"][str(n)][method]["passage_count"] for r in books)
                cells.append(f"{passages / len(books):.1f}")
        out.append(f"| {n} | " + " | ".join(cells) + " |")
    return out


def by_revision(files: list[ExtractionFile], workers: int, mode: str, swap: bool = False) -> Rows:
    """Evaluate each file with its released revision's tokens (or the other one's)."""
    order = {f.path: i for i, f in enumerate(files)}
    rows: Rows = []
    for rev, other in (("recap-v1", "recap-v2"), ("recap-v2", "recap-v1")):
        subset = [f for f in files if release_revision(f) == rev]
        rows += run(subset, workers, mode=mode, profile=other if swap else rev)
    return sorted(rows, key=lambda r: order[r[0].path])


def rouge_ablation(files: list[ExtractionFile]) -> float:
    worst = 0.0
    for f in files:
        released = load_released(f)
        assert released is not None
        current = rouge_with_current_nltk(f)
        worst = max(worst, *(abs(current[m] - released["rouge_scores"][m]) for m in RECAP_METHODS))
    return worst


def exact_cells(rows: Rows) -> tuple[int, int, float]:
    cells = exact = 0
    worst = 0.0
    for f, res in rows:
        released = load_released(f)
        assert released is not None
        for d in compare(f, res, released):
            cells += 1
            exact += d.spans_ours == d.spans_released and d.passages_ours == d.passages_released
            worst = max(worst, abs(d.passage_rel), abs(d.span_rel))
    return cells, exact, worst


def current_nltk_spans(files: list[ExtractionFile], workers: int) -> tuple[int, int, float]:
    """Span counts when the span tokens use today's NLTK rules (ablation; forked workers
    inherit the patch)."""
    import recitation.metrics.spans as spans

    saved = spans.legacy_word_tokenize
    spans.legacy_word_tokenize = word_tokenize  # type: ignore[assignment]
    try:
        return exact_cells(by_revision(files, workers, "recap-compat"))
    finally:
        spans.legacy_word_tokenize = saved  # type: ignore[assignment]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--data", default=os.environ.get("RECITATION_DATA", str(REPO.parent / "shared/data"))
    )
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", default=str(REPO / "docs/reproduction.md"))
    args = ap.parse_args()
    files = find_extraction_files(Path(args.data) / "echotrace")
    compat = by_revision(files, args.workers, "recap-compat")
    swapped = by_revision(files, args.workers, "recap-compat", swap=True)
    dedup_same = by_revision(files, args.workers, "dedup")
    dedup_folded = run(files, args.workers, mode="dedup", profile="folded")
    main_rows, worst = table_main(compat)
    doc = render(
        files,
        main_rows,
        worst,
        compat,
        swapped,
        dedup_same,
        dedup_folded,
        rouge_ablation(files),
        current_nltk_spans(files, args.workers),
    )
    Path(args.out).write_text(doc, encoding="utf-8")
    print(f"wrote {args.out}; largest deviations: {worst}")


def render(
    files: list[ExtractionFile],
    main_rows: list[str],
    worst: dict[str, float],
    compat: Rows,
    swapped: Rows,
    dedup_same: Rows,
    dedup_folded: Rows,
    rouge_now: float,
    spans_now: tuple[int, int, float],
) -> str:
    by_profile = {"own revision": compat, "the other revision": swapped}
    template = (REPO / "benchmarks/reproduction_template.md").read_text(encoding="utf-8")
    return template.format(
        n_files=len(files),
        n_cells=len(files) * len(RECAP_METHODS),
        worst_rouge=f"{worst['rouge']:.1e}",
        worst_spans=_pct(worst["spans"]),
        worst_passages=_pct(worst["passages"]),
        revision_table="\n".join(revision_check(by_profile)),
        rouge_now=f"{rouge_now:.1e}",
        spans_now_exact=spans_now[1],
        spans_now_cells=spans_now[0],
        spans_now_worst=_pct(spans_now[2]),
        modes_table="\n".join(table_modes(compat, dedup_same, dedup_folded)),
        sweep_table="\n".join(
            table_sweep(compat, dedup_folded, "simple_agent_extraction_refined_best")
        ),
        main_table="\n".join(main_rows),
    )


if __name__ == "__main__":
    main()
