"""``recitation audit``: one command, one report (see :mod:`recitation.audit.run`)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


def add_audit_parser(sub: Any) -> None:
    p = sub.add_parser("audit", help="audit a text on one or more models; writes an HTML, "
                       "Markdown and JSON report")
    p.add_argument("--text", action="append", default=[], metavar="BOOK|FOLDER|JSONL",
                   help="the audited text: a .txt book, a folder of .txt, a .jsonl of "
                   "passages, or kjv:famous-long (repeatable)")
    p.add_argument("--model", action="append", default=[], metavar="SPEC",
                   help="model spec (repeatable; default: the embedded smollm2)")
    p.add_argument("--controls", action="append", default=[], metavar="SRC",
                   help="text the model cannot have seen, same kinds as --text (repeatable; "
                   "default: a built-in set where one fits, else no verdict)")
    p.add_argument("--corpus", action="append", default=[], metavar="INDEX",
                   help="an infini-gram index of the training corpus: adds tracing")
    p.add_argument("--redact", action="store_true", help="reports show lengths, hashes and "
                   "span statistics instead of gold and model text")
    p.add_argument("--passages", type=int, default=12, help="text passages (0: all; "
                   "default 12)")
    p.add_argument("--n-controls", type=int, default=12, help="control passages (default 12)")
    p.add_argument("--passage-words", type=int, default=100)
    p.add_argument("--max-new-tokens", type=int, default=None)
    p.add_argument("--recap-passages", type=int, default=4, help="text passages, and as many "
                   "controls, also run through RECAP's feedback loop (0: no RECAP; default 4)")
    p.add_argument("--recap-rounds", type=int, default=5, help="RECAP feedback rounds at "
                   "most (released: 5)")
    p.add_argument("--recap-hint-tokens", type=int, default=512, help="reply limit of "
                   "RECAP's feedback helper (default 512)")
    p.add_argument("--no-pearl", action="store_true", help="skip PEARL (the costliest "
                   "black-box detector)")
    p.add_argument("--pearl-outputs", type=int, default=1)
    p.add_argument("--pearl-max-intensity", type=int, default=3)
    p.add_argument("--target-fpr", type=float, default=0.1)
    p.add_argument("--bootstrap", type=int, default=200)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-cache", action="store_true")
    p.add_argument("--resume", metavar="AUDIT", default=None,
                   help="finish a killed audit (its folder or id); other options ignored")
    p.add_argument("--runs-dir", type=Path, default=None)
    p.set_defaults(func=cmd_audit)


def settings_from(args: argparse.Namespace) -> Any:
    from recitation.audit.run import AuditSettings

    return AuditSettings(
        passages=args.passages, controls=args.n_controls, passage_words=args.passage_words,
        max_new_tokens=args.max_new_tokens, pearl=not args.no_pearl,
        recap_passages=args.recap_passages, recap_rounds=args.recap_rounds,
        recap_hint_tokens=args.recap_hint_tokens,
        pearl_outputs=args.pearl_outputs, pearl_max_intensity=args.pearl_max_intensity,
        target_fpr=args.target_fpr, n_bootstrap=args.bootstrap, seed=args.seed,
        cache=not args.no_cache, corpus=list(args.corpus))


def cmd_audit(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from recitation.audit.run import create_audit
    from recitation.errors import ConfigError
    from recitation.runs.audits import find_audit
    from recitation.runs.console import console
    from recitation.runs.runner import default_runs_dir

    if args.resume:
        folder = find_audit(args.resume, args.runs_dir or default_runs_dir())
    else:
        try:
            settings = settings_from(args)
        except ValidationError as e:
            raise ConfigError(f"audit: {e.errors()[0]['loc'][0]}: "
                              f"{e.errors()[0]['msg']}") from None
        folder = create_audit(args.text, args.model or ["smollm2"], args.controls, settings,
                              runs_dir=args.runs_dir, redact=args.redact)
    console.print(f"audit folder: {folder}")
    return finish_audit(folder)


def finish_audit(folder: Path) -> int:
    """Execute the audit's runs, write the reports, print the verdict table."""
    from rich.table import Table as RichTable

    from recitation.audit.run import execute_audit
    from recitation.report.collect import collect
    from recitation.report.write import verdict_rows, write_reports
    from recitation.runs.audits import load_manifest
    from recitation.runs.console import console

    manifest = load_manifest(folder)
    c = manifest["controls"]
    console.print(f"controls: {c['reason']}" + (f" ({c['n']} passages)" if c["n"] else ""))
    outcomes = execute_audit(folder, say=console.print)
    paths = write_reports(folder)
    t = RichTable(title="Audit verdict")
    for col in ("model", "verdict", "text reproduced", "controls reproduced",
                "longest span", "flagged (primary detectors)"):
        t.add_column(col)
    for row in verdict_rows(collect(folder)):
        t.add_row(*row)
    console.print(t)
    console.print(f"report: {paths['html']}\n        {paths['md']}\n        {paths['json']}")
    bad = [o for o in outcomes if o.status != "completed"]
    if bad:
        console.print(f"{len(bad)} run(s) did not complete: 'recitation audit --resume "
                      f"{folder}' finishes them")
        return 4
    return 0
