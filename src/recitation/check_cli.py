"""``recitation check MODEL``: the log-probability integrity check
(:mod:`recitation.models.integrity`) on demand, each invariant with its figure and tolerance.
Exit code 0 when no invariant failed, 1 when one did (or the model cannot score)."""

from __future__ import annotations

import argparse
import asyncio
import json
from typing import Any

__all__ = ["add_check_parser", "format_figure"]


def add_check_parser(sub: Any) -> None:
    p = sub.add_parser("check", help="check a model's log-probabilities for invariants any "
                       "correct causal language model satisfies (before trusting them)",
                       description="Score a few fixed public-domain texts (and two greedy "
                       "continuations) and check the answers: finite, at most 0, not "
                       "constant, the same when scored again or in a batch, unchanged when "
                       "more text follows, equal to a greedy generation's own, and a "
                       "repeated passage predicted. Exit code 0: all passed; 1: one failed.")
    p.add_argument("model", metavar="MODEL",
                   help="model spec, backend:model[@url] (see 'Model specs' in the README)")
    from recitation.models.config import add_device_option

    add_device_option(p)
    p.add_argument("--json", action="store_true", help="the report as JSON on stdout")
    p.set_defaults(func=cmd_check)


def format_figure(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.3g}" if abs(value) >= 1e-3 or value == 0 else f"{value:.1e}"


def cmd_check(args: argparse.Namespace) -> int:
    from recitation.errors import ConfigError
    from recitation.models.integrity import check_logprobs
    from recitation.models.managed import ManagedModel
    from recitation.models.registry import backend_for

    backend = backend_for(args.model)
    if not backend.capabilities.logprobs:
        raise ConfigError(f"'{args.model}': backend '{backend.backend}' returns no "
                          "log-probabilities; there is nothing to check")
    model = ManagedModel(backend)  # retries; no cache: every answer is the backend's own

    async def run() -> Any:
        try:
            return await check_logprobs(model)
        finally:
            await model.aclose()

    report = asyncio.run(run())
    if args.json:
        print(json.dumps(report.to_dict() | {"passed": report.passed}, indent=2))
    else:
        _print(report)
    return 0 if report.passed else 1


def _print(report: Any) -> None:
    from rich.markup import escape
    from rich.table import Table

    from recitation.runs.console import console

    t = Table(title=f"log-probability integrity check: {escape(report.model)}")
    for c in ("invariant", "result", "figure", "tolerance", "measures"):
        t.add_column(c)
    for r in report.results:
        mark = {"passed": "passed", "failed": "[red]FAILED[/red]", "skipped": "skipped"}
        t.add_row(r.name, mark[r.outcome], format_figure(r.figure),
                  f"{r.bound} {format_figure(r.tolerance)}", escape(r.measures))
    console.print(t)
    for r in report.results:
        note = f" ({escape(r.detail)})" if r.detail else ""
        console.print(f"  {r.name}: {escape(r.why)}{note}")
    console.print(f"{report.score_calls} score calls ({report.texts_scored} texts), "
                  f"{report.generations} generations")
    console.print("passed: no invariant failed" if report.passed else
                  f"[red]failed:[/red] {', '.join(report.failed)}")
