"""The log-probability integrity check before a detect run trusts a model's scores
(:mod:`recitation.models.integrity`).

Once per model per run, before its first scoring call, the check runs (on the backend
itself: no response cache or run store answers its calls, so a text scored twice is scored
twice) and its report is stored in the run store's metadata under :data:`META_PREFIX` + the
model's identity digest: a resumed run reads it back instead of checking again, and the
audit's report shows it (:mod:`recitation.report.logprob_check`). With the response cache
on, the report is cached too, keyed as the model's answers are: a later run whose scores
come from the cache reads the check those answers passed or failed (``--no-cache``: checked
again). With a signal store (``--signals``), the report is kept beside the model's signals
(``logprob_check.json`` in its folder): a run that reads every score from the store reads
the check those scores' model got, and calls the model not at all. When an invariant fails,
the run withholds log-probability access (``logprobs``, ``full_distribution``) from that
model, so the score-based detectors are recorded as not run, with the failed invariants and
``--trust-logprobs`` named; generation-based detectors (PEARL, SaMIA) still run. With
``trust_logprobs`` the check still runs and is stored, but withholds nothing.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from pathlib import Path
from typing import Any

from recitation.methods import Access
from recitation.models.base import Model, request_key
from recitation.models.integrity import CHECK_VERSION, IntegrityReport, check_logprobs
from recitation.models.managed import ManagedModel
from recitation.records import LOGPROB_CHECK_META, LOGPROB_WITHHELD
from recitation.runs.store import RunStore

log = logging.getLogger(__name__)

META_PREFIX = LOGPROB_CHECK_META
CHECK_FILE = "logprob_check.json"
WITHHELD: frozenset[Access] = frozenset({Access.LOGPROBS, Access.FULL_DISTRIBUTION})


def model_key(model: Model) -> str:
    blob = json.dumps(model.answer_identity(), sort_keys=True).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


class LogprobGate:
    """The check's reports for a run's models, and what a failed one withholds."""

    def __init__(self, trust: bool, signals: Path | None = None) -> None:
        self.trust = trust
        self.signals = signals
        self._reports: dict[str, IntegrityReport] = {}
        self._lock: asyncio.Lock | None = None

    async def ensure(self, model: Model) -> IntegrityReport | None:
        """The model's report: stored in this run, else checked now (once, however many
        chunks ask at once). None for a model that does not score."""
        if not model.capabilities.logprobs:
            return None
        key = model_key(model)
        if key in self._reports:
            return self._reports[key]
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if key not in self._reports:
                self._reports[key] = await self._stored_or_checked(model, key)
        return self._reports[key]

    async def _stored_or_checked(self, model: Model, key: str) -> IntegrityReport:
        """From this run's store (a resumed run), else from the response cache (the same
        answers as the cached scores the run reads: their check applies), else checked."""
        managed = model if isinstance(model, ManagedModel) else None
        run = managed.store if managed and isinstance(managed.store, RunStore) else None
        cache_key = request_key(model.answer_identity(), "logprob_check",
                                {"version": CHECK_VERSION})
        stored = run.get_meta(META_PREFIX + key) if run is not None else None
        if stored is None and managed is not None and managed.cache is not None:
            stored = managed.cache.get(cache_key)
        beside = self._beside_signals(model)
        if not _current(stored) and beside is not None and beside.exists():
            stored = json.loads(beside.read_text(encoding="utf-8"))
        if not _current(stored):  # none, or a report of an earlier version of the check
            stored = None
        if stored is not None:
            report = IntegrityReport.from_dict(stored["report"])
        else:
            report = await check_logprobs(managed.uncached() if managed else model)
            if managed is not None and managed.cache is not None:
                managed.cache.put(cache_key, "logprob_check", {"report": report.to_dict()})
        if beside is not None and (not beside.exists() or not _current(
                json.loads(beside.read_text(encoding="utf-8")))):
            beside.parent.mkdir(parents=True, exist_ok=True)
            beside.write_text(json.dumps({"report": report.to_dict()}), encoding="utf-8")
        self._log(model, report)
        if run is not None and run.get_meta(META_PREFIX + key) is None:
            run.set_meta(META_PREFIX + key, {"model": model.name, "trusted": self.trust,
                                             "report": report.to_dict()})
        return report

    def _beside_signals(self, model: Model) -> Path | None:
        """Where the report is kept in the run's signal store (None: the run has none)."""
        if self.signals is None:
            return None
        from recitation.signals.store import SignalStore

        return SignalStore(self.signals, model.answer_identity()).folder / CHECK_FILE

    def _log(self, model: Model, report: IntegrityReport) -> None:
        if report.passed:
            log.info("log-probability integrity check of %s passed", model.name)
            return
        log.warning("log-probability integrity check of %s FAILED: %s%s", model.name,
                    ", ".join(report.failed),
                    " (trusted anyway: --trust-logprobs)" if self.trust else
                    "; its score-based detectors are left out (--trust-logprobs: use them)")

    def withheld(self, model: Model) -> frozenset[Access]:
        """The access a failed check takes away from ``model`` (none when it passed, was not
        run, or the run trusts log-probabilities)."""
        report = self._reports.get(model_key(model))
        if self.trust or report is None or report.passed:
            return frozenset()
        return WITHHELD

    def reason(self, model: Model) -> str:
        """Why the access is withheld, for the detectors' error records."""
        report = self._reports.get(model_key(model))
        failed = ", ".join(report.failed) if report is not None else "?"
        return (f"{LOGPROB_WITHHELD} '{model.name}' failed ({failed}): "
                "its log-probabilities are not used (`recitation check` shows the figures; "
                "--trust-logprobs uses them anyway)")


__all__ = ["META_PREFIX", "WITHHELD", "LogprobGate", "model_key"]


def _current(stored: dict[str, Any] | None) -> bool:
    """A stored report of this version of the check (an older one is checked again)."""
    return stored is not None and stored.get("report", {}).get("version") == CHECK_VERSION
