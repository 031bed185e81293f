"""The ``recitation`` command line: thin; builds a config and calls the library.

Exit codes: 0 done, 1 error (message on stderr), 2 usage, 3 budget exhausted,
4 finished with failed items (``recitation resume`` retries them), 130 interrupted.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path
from typing import Any

from rich.markup import escape
from rich.table import Table as RichTable

from recitation import __version__
from recitation.errors import RecitationError
from recitation.runs.console import console, err_console, execute_and_print, print_table


def cmd_demo(args: argparse.Namespace) -> int:
    from recitation.audit.cli import finish_audit
    from recitation.audit.demo import ORGANISM, create_demo

    console.print(f"recitation {__version__} demo: a small audit with a positive control. "
                  f"'{args.model}' and the quick model organism ({ORGANISM}: SmolLM2 "
                  "fine-tuned on 15 public-domain passages) are audited on those passages, "
                  "against 15 held-out passages of the same novels")
    console.print("building or reusing the quick organism (about 2 min the first time)")
    folder = create_demo(args.model, limit=args.limit, pearl=args.pearl,
                         cache=not args.no_cache, runs_dir=args.runs_dir,
                         recap_passages=args.recap_passages)
    return finish_audit(folder)


def cmd_run(args: argparse.Namespace) -> int:
    from recitation.audit.config import create_from_config, is_audit, parse_audit_config
    from recitation.runs.config import parse_config, read_yaml
    from recitation.runs.runner import create_run

    data = read_yaml(args.config)
    if is_audit(data):  # an audit: its runs, its reports, its verdict table
        from recitation.audit.cli import finish_audit

        audit = parse_audit_config(data, source=str(args.config))
        if args.no_cache:
            audit.params.cache = False
        folder = create_from_config(audit, args.runs_dir)
        console.print(f"audit folder: {folder}")
        return finish_audit(folder)
    cfg = parse_config(data, source=str(args.config))
    if args.no_cache:
        cfg = cfg.model_copy(update={"cache": False})
    run_dir = create_run(cfg, args.runs_dir)
    console.print(f"run directory: {run_dir}")
    return execute_and_print(run_dir)


def cmd_resume(args: argparse.Namespace) -> int:
    from recitation.runs.runner import find_run

    run_dir = find_run(args.run, args.runs_dir)
    console.print(f"resuming {run_dir}")
    return execute_and_print(run_dir)


def cmd_runs_list(args: argparse.Namespace) -> int:
    from recitation.runs.runner import list_runs

    runs = list_runs(args.runs_dir)
    if args.json:
        print(json.dumps(runs, indent=2))
        return 0
    t = RichTable(title=f"runs in {args.runs_dir or 'runs'}")
    for c in ("run_id", "job", "model", "status", "items", "cost_usd"):
        t.add_column(c)
    for r in runs:
        t.add_row(*[f"{r.get(c):.4f}" if c == "cost_usd" and r.get(c) is not None
                    else str(r.get(c, "")) for c in
                    ("run_id", "job", "model", "status", "items", "cost_usd")])
    console.print(t)
    return 0


def cmd_runs_show(args: argparse.Namespace) -> int:
    from recitation.runs.runner import find_run, summarize_run

    run_dir = find_run(args.run, args.runs_dir)
    table, info = summarize_run(run_dir)
    if args.json:
        print(json.dumps({"meta": info, "table": table.__dict__}, indent=2, default=str))
        return 0
    print_table(table)
    created = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(info.get("created", 0)))
    console.print(f"\nrun {info.get('run_id')}  job {info.get('job')}  status "
                  f"{info.get('status')}  created {created}")
    console.print(f"config: {json.dumps(info.get('config'))}")
    console.print(f"calls: {json.dumps(info['calls'])}")
    console.print(f"versions: {json.dumps(info.get('versions'))}  git: {info.get('git_commit')}")
    for e in info["events"]:
        console.print(f"[{e['level']}] {e['item_id'] or ''} {e['message']}")
    return 0


def _with_runs_dir(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    p.add_argument("--runs-dir", type=Path, default=None,
                   help="where run directories live (default: $RECITATION_RUNS_DIR or ./runs)")
    return p


def _add_demo_parser(sub: Any) -> None:
    p = _with_runs_dir(sub.add_parser("demo", help="a small real audit: the embedded model "
                                      "and a model organism that memorized known passages"))
    p.add_argument("--model", default="smollm2", metavar="SPEC",
                   help="model spec, backend:model[@url] (default: the embedded SmolLM2, "
                   "local; see 'Model specs' in the README)")
    p.add_argument("--limit", type=int, default=0, help="use only N text and N control "
                   "passages (default: all 15 and 15)")
    p.add_argument("--pearl", action="store_true", help="also run PEARL (black-box; about "
                   "3 min per model on 2 CPU cores)")
    p.add_argument("--recap-passages", type=int, default=None, metavar="N",
                   help="RECAP on N passages of each group (default: 3, or half of --limit; "
                   "0: no RECAP)")
    p.add_argument("--no-cache", action="store_true", help="do not use the response cache")
    p.set_defaults(func=cmd_demo)


def _add_run_parsers(sub: Any) -> None:
    p = _with_runs_dir(sub.add_parser("run", help="start a run, or an audit (job: audit), "
                                      "from a YAML config"))
    p.add_argument("config", type=Path)
    p.add_argument("--no-cache", action="store_true")
    p.set_defaults(func=cmd_run)
    p = _with_runs_dir(sub.add_parser("resume", help="continue a killed or stopped run"))
    p.add_argument("run", help="run directory or run id")
    p.set_defaults(func=cmd_resume)
    runs = sub.add_parser("runs", help="inspect runs").add_subparsers(dest="runs_cmd",
                                                                       required=True)
    p = _with_runs_dir(runs.add_parser("list", help="list runs"))
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_runs_list)
    p = _with_runs_dir(runs.add_parser("show", help="show one run"))
    p.add_argument("run")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_runs_show)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="recitation", description=(
        "Audit language models for memorization of their training data."))
    parser.add_argument("--version", action="version", version=f"recitation {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log at INFO level")
    sub = parser.add_subparsers(dest="command", required=True)
    _add_demo_parser(sub)
    _add_run_parsers(sub)

    # These modules import their heavy dependencies lazily, so registering is cheap.
    from recitation.audit.cli import add_audit_parser
    from recitation.bench.cli import add_bench_parser
    from recitation.check_cli import add_check_parser
    from recitation.detect.cli import add_detect_parser
    from recitation.evaluate.cli import add_evaluate_parser
    from recitation.extract.cli import add_extract_parser
    from recitation.methods_cli import add_methods_parser
    from recitation.organism.cli import add_organism_parser
    from recitation.probes.cli import add_probe_parser, add_task_parser
    from recitation.report.cli import add_report_parsers
    from recitation.serve.cli import add_serve_parser
    from recitation.signals_cli import add_signals_parser
    from recitation.trace.cli import add_index_parser, add_propme_parser, add_trace_parser

    for add in (add_serve_parser, add_evaluate_parser, add_extract_parser, add_detect_parser,
                add_methods_parser, add_organism_parser, add_bench_parser, add_index_parser,
                add_trace_parser, add_propme_parser, add_audit_parser, add_report_parsers,
                add_probe_parser, add_task_parser, add_signals_parser, add_check_parser):
        add(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    try:
        parser = build_parser()  # its choices read the registries: a broken plug-in is named
    except RecitationError as e:
        err_console.print(f"[red]error:[/red] {escape(str(e))}")
        return 1
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    from recitation.models.config import apply_device
    from recitation.models.registry import shared_backends

    try:
        apply_device(args)  # --device into every local model spec
        with shared_backends():  # one backend per model config for the whole command
            code: int = args.func(args)
        return code
    except RecitationError as e:
        err_console.print(f"[red]error:[/red] {escape(str(e))}")  # "[MASK]" is not markup
        return 1
    except KeyboardInterrupt:
        err_console.print("interrupted; 'recitation resume RUN' continues where it stopped")
        return 130


if __name__ == "__main__":
    sys.exit(main())
