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
                   help="the checkpoints' weights (default float32; bfloat16 scores 2.6x as "
                   "fast on a CPU with AVX-512 BF16, 4.7x slower on one without, scores close "
                   "to float32's: docs/benchmarks.md)")
    g.add_argument("--out", type=Path, default=None,
                   help="output directory (default: bench/groundtruth-<organism>)")
    g.add_argument("--analyse-only", action="store_true", help="analyse the units already "
                   "finished under --out (a benchmark stopped early); run nothing")
    g.add_argument("--json", action="store_true", help="print the results as JSON")
    g.set_defaults(func=cmd_groundtruth)
    _add_claims_parser(cmds)
    _add_book_parser(cmds)


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


def _add_book_parser(cmds: Any) -> None:
    b = cmds.add_parser("book", help="whole-book extraction on the whole-work organism: "
                        "continue, prefix probing and RECAP at one budget per checkpoint "
                        "(issue 50)")
    b.add_argument("--preset", default="book", choices=["book", "book-quick"],
                   help="the organism (book: 20,000 words of Pride and Prejudice; "
                   "book-quick: its first two chapters)")
    b.add_argument("--out", type=Path, default=None, help="output directory (default "
                   "bench/book-PRESET); a stopped run resumes here")
    b.add_argument("--calls", type=int, default=None, help="target calls per method and "
                   "checkpoint (default 24)")
    b.add_argument("--reply-tokens", type=int, default=None, help="reply limit (default 256)")
    b.add_argument("--methods", nargs="+", default=None, choices=["continue", "prefix", "recap"])
    b.add_argument("--write-docs", type=Path, default=None, metavar="MD",
                   help="also write the table into this Markdown file, between "
                   "<!-- bench-PRESET:start --> and <!-- bench-PRESET:end -->")
    b.add_argument("--keep", type=Path, default=None, metavar="DIR",
                   help="also copy the records (PRESET.json, PRESET-texts.json.gz) here "
                   "(benchmarks/whole_book: the doc's table is checked against them)")
    b.set_defaults(func=cmd_book)


def cmd_book(args: argparse.Namespace) -> int:
    from rich.markup import escape

    from recitation.bench.book import BookBenchConfig, keep, markdown, measure
    from recitation.bench.markers import replace_block
    from recitation.runs.console import console, err_console

    fields = {"preset": args.preset, "calls": args.calls, "reply_tokens": args.reply_tokens,
              "methods": tuple(args.methods) if args.methods else None}
    cfg = BookBenchConfig(**{k: v for k, v in fields.items() if v is not None})
    ensure_organism(cfg.preset)
    out = args.out or Path("bench") / f"book-{cfg.preset}"
    res = measure(cfg, out, progress=lambda m: err_console.print(f"[dim]{escape(m)}[/dim]"))
    md = markdown(res)
    (out / "book-bench.md").write_text(md + "\n", encoding="utf-8")
    console.print(md, markup=False)
    if args.write_docs:
        replace_block(args.write_docs, f"bench-{cfg.preset}", md)
        console.print(f"wrote the table into {args.write_docs}")
    if args.keep:
        console.print(f"kept {', '.join(map(str, keep(out, args.keep, cfg.preset)))}")
    return 0


def _add_claims_parser(cmds: Any) -> None:
    c = cmds.add_parser("claims", help="membership inference at 1%% and 0.1%% FPR on three "
                        "organisms with 10,000 non-members each: conformal thresholds, "
                        "intervals with the threshold's variance, paired tests (issue 49)",
                        epilog=CLAIMS_EXAMPLES,
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    c.add_argument("--out", type=Path, default=Path("bench") / "claims",
                   help="output directory (default bench/claims); a stopped run resumes here")
    c.add_argument("--seeds", type=int, nargs="+", default=None, metavar="S",
                   help="test organisms' seeds (default 0 1 2)")
    c.add_argument("--dev-seed", type=int, default=None, help="the development organism's "
                   "seed (default 3), where every choice is fixed")
    c.add_argument("--nonmembers", type=int, default=None, metavar="N",
                   help="non-members per test organism (default 10,000: half calibrate)")
    c.add_argument("--dev-nonmembers", type=int, default=None, metavar="N")
    c.add_argument("--preset", default=None,
                   choices=["lowfpr", "lowfpr-quick", "lowfpr-long", "quick"],
                   help="the organisms' other settings (default lowfpr)")
    c.add_argument("--dtype", default=None, choices=["float32", "bfloat16"],
                   help="the checkpoints' weights (default float32; bfloat16 is faster only "
                   "on CPUs with AVX-512 BF16: docs/benchmarks.md)")
    c.add_argument("--bootstrap", type=int, default=None, metavar="N",
                   help="bootstrap resamples (default 2000)")
    c.add_argument("--units", nargs="*", default=None, metavar="UNIT",
                   choices=["whitebox", "dcpdd", "ezmia", "recall"],
                   help="the score-based units (default all four; none: only --generating)")
    c.add_argument("--generating", nargs="+", default=None, metavar="UNIT",
                   choices=["pearl", "samia", "samia@published", "neighbourhood", "camia",
                            "camia@published"],
                   help="also these units, on a seeded subsample of each organism (100 "
                   "members per dose, 1,000 non-members and more until each calibration "
                   "half holds 500 of those the units score: 1%% FPR measured, 0.1%% not; CAMIA "
                   "scores 70%%, its population the rest, so with CAMIA about 1,435)")
    c.add_argument("--analyse-only", action="store_true",
                   help="the tables from the records already written; run nothing")
    c.add_argument("--keep", type=Path, default=None, metavar="DIR",
                   help="keep a gzip copy of every organism's records in DIR as they are "
                   "written (in the repository: benchmarks/mia_claims) and restore them into "
                   "a fresh --out, so a run resumes on another machine")
    c.set_defaults(func=cmd_claims)


CLAIMS_EXAMPLES = """examples:
  recitation bench claims                      # build 4 organisms, score, write the tables
  recitation bench claims --analyse-only       # the tables again from OUT's records
  recitation bench claims --keep benchmarks/mia_claims   # resumes across machines
  recitation bench claims --preset quick --nonmembers 40 --dev-nonmembers 20 --seeds 0

Writes OUT/<organism>/claims-scores.json (every passage's scores) per organism, then
OUT/claims.json and OUT/claims.md; every unit's calls stay in the response cache and each
checkpoint's texts in its token-signal store, so a stopped run resumes where it stopped.
A unit already in an organism's records is never run again; with --keep those records
outlive the machine (its caches and organisms do not).
"""


def cmd_claims(args: argparse.Namespace) -> int:
    import time

    from rich.markup import escape

    from recitation.bench.claims_analysis import analyse
    from recitation.bench.claims_run import ClaimsConfig, measure_all
    from recitation.bench.claims_tables import markdown
    from recitation.runs.console import console, err_console

    fields = {"seeds": tuple(args.seeds) if args.seeds else None, "dev_seed": args.dev_seed,
              "nonmembers": args.nonmembers, "dev_nonmembers": args.dev_nonmembers,
              "preset": args.preset, "dtype": args.dtype, "n_boot": args.bootstrap,
              "generating": tuple(args.generating) if args.generating else None,
              "units": None if args.units is None else tuple(args.units)}
    from pydantic import ValidationError

    from recitation.errors import ConfigError

    try:
        cfg = ClaimsConfig(**{k: v for k, v in fields.items() if v is not None})
    except ValidationError as exc:
        raise ConfigError("bench claims: " + "; ".join(e["msg"] for e in exc.errors())
                          ) from exc
    t0 = time.perf_counter()
    orgs = measure_all(cfg, args.out, run=not args.analyse_only, keep=args.keep,
                       progress=lambda m: err_console.print(f"[dim]{escape(m)}[/dim]"))
    res = analyse(orgs, cfg.alphas, n_boot=cfg.n_boot, seed=cfg.seed) | {
        "config": cfg.model_dump(mode="json"),
        "seconds": round(time.perf_counter() - t0, 1)}  # measuring (or reading) and analysis
    (args.out / "claims.json").write_text(json.dumps(res, indent=1) + "\n", encoding="utf-8")
    md = markdown(res)
    (args.out / "claims.md").write_text(md + "\n", encoding="utf-8")
    console.print(md, markup=False)
    console.print(f"records: {args.out / 'claims.json'}, tables: {args.out / 'claims.md'}")
    return 0


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
