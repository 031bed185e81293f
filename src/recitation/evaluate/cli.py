"""``recitation evaluate``: the command around :mod:`recitation.evaluate.scoring` (inputs
found, metrics files written, a table printed)."""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from recitation.corpus.echotrace import (
    ExtractionFile,
    find_extraction_files,
    parse_extraction_path,
)
from recitation.errors import CorpusError
from recitation.evaluate.scoring import (
    EvaluateConfig,
    compare,
    evaluate_files,
    group_means,
    load_released,
)


def _resolve_inputs(paths: Sequence[str]) -> list[ExtractionFile]:
    files: list[ExtractionFile] = []
    for raw in paths:
        p = Path(raw)
        if p.is_file():
            files.append(parse_extraction_path(p))
        else:
            files.extend(find_extraction_files(p))
    if not files:
        raise CorpusError(f"no EchoTrace extraction files found under: {', '.join(paths)}")
    return files


def _print_table(rows: list[tuple[ExtractionFile, dict[str, Any]]], compare_released: bool) -> int:
    from rich.console import Console
    from rich.table import Table

    table = Table(title="RECAP metrics (ROUGE-L recall, weighted; passages)")
    for col in ("book", "model", "method", "ROUGE-L", "spans", "passages"):
        table.add_column(col)
    worst = 0.0
    for f, res in rows:
        released = load_released(f) if compare_released else None
        devs = {d.method: d for d in compare(f, res, released)} if released else {}
        for method, value in res["rouge_scores"].items():
            span = res["contiguous_spans"]["methods"][method]
            d = devs.get(method)
            rouge = f"{value:.4f}" + (f" ({d.rouge_diff:+.4f})" if d else "")
            passages = str(span["passage_count"]) + (f" / {d.passages_released}" if d else "")
            spans = str(span["span_count"]) + (f" / {d.spans_released}" if d else "")
            if d:
                worst = max(worst, abs(d.rouge_diff))
            table.add_row(f.book_name[:40], f.model, method, rouge, spans, passages)
    console = Console()
    console.print(table)
    if compare_released:
        console.print(f"largest |ROUGE-L - released|: {worst:.5f}")
    return 0


def _run_evaluate(args: argparse.Namespace) -> int:
    cfg = EvaluateConfig(
        mode=args.mode,
        profile=args.tokens,
        min_tokens=args.min_tokens,
        max_mismatches=args.max_mismatches,
        sweep=tuple(range(args.max_mismatches + 1)) if args.sweep else (),
    )
    try:
        files = _resolve_inputs(args.paths)
    except CorpusError as exc:
        print(f"error: {exc}")
        return 2
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    from rich.progress import Progress

    with Progress() as progress:
        task = progress.add_task("evaluating", total=len(files))
        rows = evaluate_files(
            files, cfg, workers=args.workers, on_done=lambda _f: progress.advance(task)
        )
    for f, res in rows:
        (out_dir / f.metrics_name).write_text(
            json.dumps(res, indent=2, ensure_ascii=False), encoding="utf-8"
        )
    means = group_means(rows)
    summary = {
        model: {m: {"mean": b.mean, "std": b.std, "books": b.n_items} for m, b in ms.items()}
        for model, ms in means.items()
    }
    (out_dir / "group_means.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")
    print(f"wrote {len(rows)} metrics files and group_means.json to {out_dir}")
    code = _print_table(rows, args.compare)
    for model, ms in summary.items():
        best = ms.get("simple_agent_extraction_refined_best")
        if best and best["books"] > 1:
            print(
                f"{model}: refined_best ROUGE-L over {best['books']} books (bootstrap) "
                f"{best['mean']:.3f} +/- {best['std']:.3f}"
            )
    return code


def add_evaluate_parser(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Register ``recitation evaluate`` (sets ``func``: Namespace -> exit code)."""
    p = subparsers.add_parser(
        "evaluate",
        help="score EchoTrace extraction files (RECAP metrics)",
        description=(
            "Score EchoTrace extraction JSON files: weighted ROUGE-L recall per method and "
            "verbatim 40-token passages; writes one Metrics JSON per file."
        ),
    )
    p.add_argument("paths", nargs="+", help="extraction files or folders to search")
    p.add_argument("--out", default="metrics", help="output folder (default: ./metrics)")
    p.add_argument(
        "--mode",
        choices=("dedup", "recap-compat"),
        default="dedup",
        help="span counting: dedup (default) or recap-compat (the released counts)",
    )
    p.add_argument(
        "--tokens",
        choices=("auto", "recap-v1", "recap-v2", "folded"),
        default="auto",
        help="span token normalization (auto: folded for dedup, the released revision's "
        "for recap-compat)",
    )
    p.add_argument("--min-tokens", type=int, default=40, help="passage length in tokens")
    p.add_argument("--max-mismatches", type=int, default=5, help="token mismatches per span")
    p.add_argument("--sweep", action="store_true", help="also count for 0..max mismatches")
    p.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1), help="processes")
    p.add_argument(
        "--compare", action="store_true", help="show deviations from the released metrics"
    )
    p.set_defaults(func=_run_evaluate)
