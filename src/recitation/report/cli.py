"""``recitation report AUDIT`` and ``recitation compare AUDIT AUDIT ...``: from the run
store alone."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


def add_report_parsers(sub: Any) -> None:
    p = sub.add_parser("report", help="(re)write an audit's HTML, Markdown and JSON report "
                       "from its run store alone")
    p.add_argument("audit", help="audit folder or id")
    p.add_argument("--redact", action="store_true", help="lengths, hashes and span "
                   "statistics instead of gold and model text (report-redacted.*)")
    p.add_argument("--out", type=Path, default=None, help="folder (default: the audit's)")
    p.add_argument("--runs-dir", type=Path, default=None)
    p.set_defaults(func=cmd_report)
    p = sub.add_parser("compare", help="one table and chart across audits (models, runs)")
    p.add_argument("audits", nargs="+", help="audit folders or ids")
    p.add_argument("--out", type=Path, default=None, help="folder (default: "
                   "<runs dir>/compare-<time>)")
    p.add_argument("--runs-dir", type=Path, default=None)
    p.set_defaults(func=cmd_compare)


def cmd_report(args: argparse.Namespace) -> int:
    from recitation.report.write import write_reports
    from recitation.runs.audits import find_audit
    from recitation.runs.console import console
    from recitation.runs.runner import default_runs_dir

    folder = find_audit(args.audit, args.runs_dir or default_runs_dir())
    paths = write_reports(folder, redact=True if args.redact else None, out_dir=args.out)
    for p in paths.values():
        console.print(str(p))
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    import time

    from rich.table import Table as RichTable

    from recitation.report.compare import write_compare
    from recitation.runs.audits import find_audit
    from recitation.runs.console import console
    from recitation.runs.runner import default_runs_dir

    runs_dir = args.runs_dir or default_runs_dir()
    folders = [find_audit(a, runs_dir) for a in args.audits]
    out = args.out or runs_dir / f"compare-{time.strftime('%Y%m%d-%H%M%S')}"
    rows, paths = write_compare(folders, out)
    t = RichTable(title="Comparison")
    for col in rows[0]:
        t.add_column(col)
    for r in rows[1:]:
        t.add_row(*r)
    console.print(t)
    for p in paths.values():
        console.print(str(p))
    return 0
