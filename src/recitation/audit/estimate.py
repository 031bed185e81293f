"""What an audit will cost, printed before its first model call, and the user's go-ahead
when the calls are paid.

Each run of the audit tells its calls (:meth:`recitation.runs.jobs.Job.estimate`: exact for
prefix probing and detection, an upper bound for RECAP, every feedback round taken); the
input tokens are estimated from characters, output tokens are each request's reply limit,
so the dollars, from the run's price table (:mod:`recitation.models.pricing`), are what the
calls cost when every reply runs to its limit.

A model's calls are **paid** when it is not run on this machine and either the price table
prices it or its endpoint is not on this machine (an API's default endpoint, or a
``base_url`` whose host is not a loopback address; a server on 127.0.0.1, e.g. vLLM or
``recitation serve``, costs nothing per call). An audit with paid calls starts only when the
user confirms: ``--yes``, or an answer at the terminal; without either it stops before any
call, its folder kept for ``recitation audit --resume FOLDER --yes``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from recitation.errors import ConfigError
from recitation.runs.audits import load_manifest
from recitation.runs.estimate import ModelEstimate, priced, run_estimate
from recitation.runs.jobs import CallEstimate

if TYPE_CHECKING:
    from recitation.runs.config import RunConfig


def estimate_audit(folder: Path) -> list[ModelEstimate]:
    """Every audited model's calls, from its runs' stored work (no model is called)."""
    out = []
    for entry in load_manifest(folder)["models"]:
        total, unknown = CallEstimate(), []
        cfg: RunConfig | None = None
        for kind, name in entry["runs"].items():
            cfg, est = run_estimate(folder / "runs" / name)
            if est is None:
                unknown.append(kind)
            else:
                total = total + est
        if cfg is not None:
            out.append(priced(entry["spec"], cfg, total, tuple(unknown)))
    return out


def confirm(estimates: list[ModelEstimate], folder: Path, *, yes: bool,
            ask: Callable[[str], str] | None = None) -> bool:
    """True to go on: nothing is paid, ``yes``, or the user answers yes at the terminal
    (``ask``: ``input`` when stdin is a terminal). Raises when paid calls are neither
    confirmed nor can be asked about; False when the user declines."""
    paid = [e.spec for e in estimates if e.paid]
    if not paid or yes:
        return True
    if ask is None and sys.stdin.isatty():
        ask = input
    if ask is None:
        raise ConfigError(f"the audit makes paid calls ({', '.join(paid)}); nothing was "
                          "called. Check the estimate above and confirm it: 'recitation "
                          f"audit --resume {folder} --yes'")
    answer = ask(f"make these paid calls ({', '.join(paid)})? [y/N] ")
    return answer.strip().lower() in ("y", "yes")
