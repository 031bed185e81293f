"""The printing runner every command shares: run (or resume) a run with a progress bar,
print its summary table and call totals, and map its status to an exit code.

Commands (``recitation run``, ``resume``, ``demo``, ``extract``, ``detect``) import this
module; it imports only the run machinery below it, never a command, so the layers point
one way: command modules -> ``runs.console`` -> ``runs.runner`` -> ``models``.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn
from rich.table import Table as RichTable

from recitation.runs.jobs import Table

console = Console(width=max(Console().width, 140))
err_console = Console(stderr=True, soft_wrap=True)
"""Errors and notices: never wrapped (a path or a command broken across lines cannot be
copied; the terminal wraps long lines by itself)."""

EXIT = {"completed": 0, "budget_exhausted": 3, "incomplete": 4}
"""Exit code per run status (0 done, 3 budget exhausted, 4 failed items; else 1)."""


def print_table(table: Table) -> None:
    """A job's summary table and its headline lines, on stdout."""
    t = RichTable(title=table.title, show_lines=False)
    for c in table.columns:
        t.add_column(c, no_wrap=True)
    for row in table.rows:
        t.add_row(*[str(x) for x in row])
    console.print(t)
    for line in table.headline:
        console.print(f"  {line}")


def execute_and_print(run_dir: Path, *, use_cache: bool | None = None) -> int:
    """Run every unfinished item of ``run_dir`` with a progress bar on stderr, print the
    summary and the call totals, and return the exit code of the run's status."""
    from recitation.runs.runner import execute, summarize_run

    with Progress("[progress.description]{task.description}", BarColumn(),
                  MofNCompleteColumn(), TimeElapsedColumn(), console=err_console,
                  transient=True) as bar:
        task = bar.add_task("items", total=None)

        def progress(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        outcome = asyncio.run(execute(run_dir, progress=progress, use_cache=use_cache))
    table, _ = summarize_run(run_dir)
    print_table(table)
    s = outcome.stats
    console.print(
        f"\nrun: {run_dir}\nstatus: {outcome.status}  items: {outcome.done_items}/"
        f"{outcome.total_items}  model phase: {outcome.model_seconds:.2f} s  "
        f"backend calls: {s.backend_calls}  served from run store: {s.served_from_store}  "
        f"from cache: {s.served_from_cache}  failures: {s.failures}\n"
        f"tokens: {s.usage.input_tokens} in / {s.usage.output_tokens} out  "
        f"cost: ${s.cost_usd:.4f}")
    if outcome.message:
        err_console.print(f"[yellow]{escape(outcome.message)}[/yellow]")
    return EXIT.get(outcome.status, 1)
