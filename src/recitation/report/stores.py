"""The records of an audit's runs, parsed once per audit: the verdict's numbers, the
catalogue and the dataset-inference sections all read a detect run's records, typed
(:class:`recitation.records.DetectRecord`), from here, so a report parses each record once.

The cache is keyed by the run store's path and its files' sizes and modification times,
so a run that changed (resumed, rewritten) is read again."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from recitation.records import DetectRecord
from recitation.runs.store import DB_NAME, RunStore


def _stamp(run: Path) -> tuple[tuple[int, int], ...]:
    files = [run / DB_NAME, run / f"{DB_NAME}-wal"]
    return tuple((s.st_mtime_ns, s.st_size) for s in (f.stat() for f in files if f.exists()))


@functools.lru_cache(maxsize=16)
def _detect(run: str, stamp: tuple[tuple[int, int], ...]) -> tuple[DetectRecord, ...]:
    with RunStore(Path(run)) as store:
        return tuple(DetectRecord.model_validate(r) for _, r in store.results("detect"))


def detect_records(run: Path) -> tuple[DetectRecord, ...]:
    """The detect run's records, typed, parsed once while the run is unchanged."""
    return _detect(str(run.resolve()), _stamp(run))


def detect_runs(folder: Path, manifest: dict[str, Any]) -> list[tuple[str, Path]]:
    """``(model spec, run folder)`` of each model of the audit whose detect run is stored
    (the sections that read detect runs take them from here)."""
    out = []
    for entry in manifest["models"]:
        name = entry["runs"].get("detect")
        if name and (folder / "runs" / name / DB_NAME).exists():
            out.append((entry["spec"], folder / "runs" / name))
    return out


def parses() -> int:
    """How many detect runs were parsed (not answered from the cache) in this process."""
    return _detect.cache_info().misses
