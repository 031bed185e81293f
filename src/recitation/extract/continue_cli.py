"""``recitation extract --methods continue``: the whole book by continuation
(:mod:`recitation.extract.continue_book`), one run per book, resumable with
``recitation resume RUN``.

    recitation extract --methods continue --book BOOK.txt --target SPEC [--mode chat]
        [--max-calls 40] [--best-of-n 8] [--max-new-tokens 512] [--chapters 0,1]
        [--budget-tokens N] [--budget-dollars X]
"""

from __future__ import annotations

import argparse
from typing import Any

from recitation.errors import ConfigError
from recitation.models.config import parse_model_spec


def continue_params(args: argparse.Namespace, chapters: list[int] | None) -> dict[str, Any]:
    """The continue job's parameters from the command line (unset: the job's defaults);
    ``chapters``: ``--chapters``, parsed as the RECAP extraction parses it."""
    if args.methods.strip() != "continue":
        raise ConfigError("--methods continue runs alone (its own job): drop "
                          f"{args.methods.replace('continue', '').strip(',')} or run it apart")
    params: dict[str, Any] = {"book": str(args.book)}
    if chapters:
        params["chapters"] = chapters
    for name in ("mode", "max_new_tokens", "max_calls", "best_of_n", "opening_words",
                 "stop_window", "stop_below", "temperature"):
        if getattr(args, name, None) is not None:
            params[name] = getattr(args, name)
    return params


def cmd_continue(args: argparse.Namespace, chapters: list[int] | None = None) -> int:
    from recitation.runs.config import parse_config
    from recitation.runs.console import console, execute_and_print
    from recitation.runs.estimate import estimate_run
    from recitation.runs.runner import create_run

    model = parse_model_spec(args.target, args.target_key_env)
    if args.timeout:
        model["timeout"] = float(args.timeout)
    if args.concurrency:
        model["concurrency"] = args.concurrency
    cfg = parse_config({
        "job": "continue", "name": "continue", "seed": 0, "model": model,
        "budget": {"max_tokens": args.budget_tokens,
                   "max_dollars": getattr(args, "budget_dollars", None)},
        "cache": not args.no_cache, "params": continue_params(args, chapters)},
        source="recitation extract --methods continue")
    run_dir = create_run(cfg, args.runs_dir)
    console.print(f"run directory: {run_dir}  (resume: recitation resume {run_dir})")
    est = estimate_run(run_dir, args.target)
    console.print(est.line())
    if est.paid and not args.yes:
        raise ConfigError("the run makes paid calls; nothing was called. Check the estimate "
                          f"above, then 'recitation resume {run_dir}' (or add --yes)")
    return execute_and_print(run_dir)


def add_continue_options(p: Any) -> None:
    """The options of ``--methods continue`` (each unset: the job's default)."""
    g = p.add_argument_group("whole book by continuation (--methods continue)")
    g.add_argument("--mode", choices=("chat", "completion"),
                   help="chat (default): the instruction and 'Continue.' turns; completion: "
                   "the running text itself (base or fine-tuned models)")
    g.add_argument("--max-calls", type=int, help="calls per book at most (default 40)")
    g.add_argument("--best-of-n", type=int, help="Best-of-N variants of a refused or "
                   "missed first request (default 8)")
    g.add_argument("--opening-words", type=int, help="words of the opening given "
                   "(default 0: its first sentence)")
    g.add_argument("--stop-window", type=int, help="answers in the stopping rule (default 3)")
    g.add_argument("--stop-below", type=float, help="stop when they add new near-verbatim "
                   "text for less than this share of their words (default 0.1)")
    g.add_argument("--temperature", type=float, help="sampling temperature (default 0)")
    g.add_argument("--budget-dollars", type=float, help="stop the run after this many "
                   "dollars")
    g.add_argument("--yes", action="store_true", help="make paid calls without asking (the "
                   "estimate is printed first either way)")
