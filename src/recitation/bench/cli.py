"""``recitation bench groundtruth``: every method on every checkpoint of the model organism."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

EXAMPLES = """examples:
  recitation bench groundtruth --quick           # the CI organism: a few minutes
  recitation bench groundtruth                   # the default organism (docs/benchmarks.md)
  recitation bench groundtruth --epochs 0 3 --units whitebox prefix
  recitation bench groundtruth --organism books  # an organism built with --name books
  recitation bench groundtruth --quick --helper smollm2   # + DSP / RECAP (+ filter)
  recitation bench groundtruth --preset lowfpr --leaderboard   # TPR at 1% / 0.1% FPR
  recitation bench groundtruth --preset lowfpr --analyse-only --leaderboard

Presets (default, quick, lowfpr) are built first when missing or out of date; results go to
OUT/results.json and OUT/results.md, one run per unit and checkpoint under OUT/runs, and
every finished unit is kept under OUT/units so a killed benchmark resumes where it stopped.
"""

SUMMARY_METHODS = ("loss", "zlib", "min_k_20", "min_k_pp_20", "reference", "recall", "dcpdd",
                   "pearl_bitflip_sensitivity", "pearl_synonym_sensitivity",
                   "prefix_lcp_words")


def add_bench_parser(sub: Any) -> None:
    from recitation.bench.groundtruth import units
    from recitation.models.config import LOCAL_DTYPES

    p = sub.add_parser("bench", help="benchmarks on ground truth (the model organism)",
                       epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    cmds = p.add_subparsers(dest="bench_cmd", required=True)
    g = cmds.add_parser("groundtruth", help="every detector and extractor per checkpoint and "
                        "dose of the model organism", epilog=EXAMPLES,
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    g.add_argument("--quick", action="store_true", help="the quick organism and settings")
    g.add_argument("--preset", default=None, choices=["default", "quick", "lowfpr"],
                   help="organism and settings by name (lowfpr: 1,500 passages, every "
                   "detector, rates at 1%% and 0.1%% FPR on held-out non-members)")
    g.add_argument("--leaderboard", action="store_true", help="also write OUT/leaderboard.md: "
                   "every detector by access level, held-out TPR at 1%% and 0.1%% FPR, cost "
                   "per text")
    g.add_argument("--organism", default=None, help="organism name (default: 'default', "
                   "or 'quick' with --quick)")
    g.add_argument("--epochs", type=int, nargs="+", default=None, metavar="E",
                   help="checkpoints to measure (default: all)")
    g.add_argument("--units", nargs="+", choices=units(), default=None)
    g.add_argument("--pearl-outputs", type=int, default=None, metavar="N",
                   help="PEARL outputs per input and intensity (default 1; the papers use "
                   "10)")
    g.add_argument("--pearl-max-intensity", type=int, default=None, metavar="K")
    _add_extract_arguments(g)
    g.add_argument("--no-reference", action="store_true",
                   help="skip the reference-model score (base model as reference)")
    g.add_argument("--bootstrap", type=int, default=None, metavar="N",
                   help="bootstrap resamples for the intervals (default 1000; quick 200)")
    g.add_argument("--seed", type=int, default=None)
    g.add_argument("--cache", action="store_true", default=None,
                   help="read and write the response cache (deterministic calls; keyed on the "
                   "weights and the decoding code): a re-run reuses the model's answers; "
                   "costs then count the cache's answers")
    g.add_argument("--dtype", choices=LOCAL_DTYPES, default=None,
                   help="the checkpoints' weights (default float32; bfloat16 scores 2.6x and "
                   "generates 1.8x as fast here, scores close to float32's: docs/benchmarks.md)")
    g.add_argument("--out", type=Path, default=None,
                   help="output directory (default: bench/groundtruth-<organism>)")
    g.add_argument("--analyse-only", action="store_true", help="analyse the units already "
                   "finished under --out (a benchmark stopped early); run nothing")
    g.add_argument("--json", action="store_true", help="print the results as JSON")
    g.set_defaults(func=cmd_groundtruth)


def _add_extract_arguments(g: Any) -> None:
    """The extract unit's options (DSP, RECAP, RECAP + filter)."""
    g.add_argument("--helper", default=None, metavar="SPEC",
                   help="RECAP's helper model (summaries, hints, judge): adds the extract "
                   "unit (DSP, RECAP, RECAP + filter); e.g. smollm2 or openai:MODEL@URL")
    g.add_argument("--extract-epochs", type=int, nargs="+", default=None, metavar="E",
                   help="checkpoints of the extract unit (default: the first and the last)")
    g.add_argument("--extract-passages", type=int, default=None, metavar="N",
                   help="the extract unit on the first N passages of each dose and of the "
                   "non-members (default: all)")
    g.add_argument("--extract-rounds", type=int, default=None, metavar="N",
                   help="RECAP feedback rounds at most (default 5, the paper's)")


def make_bench_config(args: argparse.Namespace) -> Any:
    from pydantic import ValidationError

    from recitation.bench.groundtruth import LOWFPR, QUICK, GroundTruthConfig
    from recitation.errors import ConfigError
    from recitation.runs.config import format_validation_error

    preset = getattr(args, "preset", None) or ("quick" if args.quick else "default")
    base = {"quick": QUICK, "lowfpr": LOWFPR}.get(preset, GroundTruthConfig())
    fields = {"organism": args.organism, "units": tuple(args.units) if args.units else None,
              "epochs": tuple(args.epochs) if args.epochs else None,
              "pearl_outputs": args.pearl_outputs,
              "pearl_max_intensity": args.pearl_max_intensity,
              "reference": False if args.no_reference else None,
              "helper": args.helper, "extract_rounds": args.extract_rounds,
              "extract_passages": args.extract_passages,
              "extract_epochs": tuple(args.extract_epochs) if args.extract_epochs else None,
              "n_bootstrap": args.bootstrap, "seed": args.seed, "cache": args.cache,
              "dtype": args.dtype}
    try:
        return GroundTruthConfig(**(base.model_dump() | {k: v for k, v in fields.items()
                                                        if v is not None}))
    except ValidationError as exc:
        raise ConfigError(f"bench groundtruth: {format_validation_error(exc)}") from None


def ensure_organism(name: str) -> None:
    """Build (or reuse, when up to date) a preset organism; others must already be built."""
    from recitation.organism.build import build_organism
    from recitation.organism.config import PRESETS, make_config
    from recitation.organism.paths import read_manifest
    from recitation.runs.console import console

    if name in PRESETS:
        res = build_organism(make_config(preset=name))
        console.print(f"organism {name}: {'reused' if res.reused else 'built'} "
                      f"({res.directory})")
    else:
        read_manifest(name)  # a clear error with the build command when it is not built


def cmd_groundtruth(args: argparse.Namespace) -> int:
    from rich.markup import escape

    from recitation.bench.analysis import benchmark
    from recitation.bench.tables import markdown
    from recitation.runs.console import console, err_console

    cfg = make_bench_config(args)
    if not args.analyse_only:
        ensure_organism(cfg.organism)
    out = args.out or Path("bench") / f"groundtruth-{cfg.organism}"
    results = benchmark(cfg, out,
                        progress=lambda msg: err_console.print(f"[dim]{escape(msg)}[/dim]"),
                        run=not args.analyse_only)
    md = markdown(results)
    (out / "results.md").write_text(md, encoding="utf-8")
    if args.leaderboard:
        from recitation.bench.lowfpr import leaderboard_markdown

        board = leaderboard_markdown(results)
        (out / "leaderboard.md").write_text(board, encoding="utf-8")
        console.print(board, markup=False)
        console.print(f"leaderboard: {out / 'leaderboard.md'}")
    if args.json:
        print(json.dumps(results, indent=1))
    else:
        console.print(markdown(results, SUMMARY_METHODS), markup=False)
        console.print(f"results: {out / 'results.json'}, {out / 'results.md'}")
    return 0
