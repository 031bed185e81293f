"""The audit manifest: ``audit.json`` in an audit folder (see :mod:`recitation.audit.run`).

An audit folder is part of the run store: its manifest names the inputs, the controls and
why they fit, and each model's runs (``runs/<run>/run.sqlite``). The audit command writes
it; the report reads it, with the runs, and nothing else.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from recitation.errors import StoreError

MANIFEST = "audit.json"
MANIFEST_FORMAT = 2
"""The newest manifest format this recitation reads (1: before the verdict's pins, read
with :data:`recitation.verdict.pins.V1_PINS`; 2: pins under ``verdict``)."""
RECAP_RUNS = {"text": "recap_text", "control": "recap_control"}
"""The manifest's run keys of an audit's RECAP runs, by group."""


def save_manifest(folder: Path, manifest: dict[str, Any]) -> None:
    """Write the manifest atomically (a killed audit never leaves half a file)."""
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / (MANIFEST + ".tmp")
    tmp.write_text(json.dumps(manifest, indent=2), encoding="utf-8")
    tmp.replace(folder / MANIFEST)


def load_manifest(folder: Path) -> dict[str, Any]:
    p = folder / MANIFEST
    if not p.is_file():
        raise StoreError(f"'{folder}' is not an audit folder (no {MANIFEST})")
    try:
        data: dict[str, Any] = json.loads(p.read_text(encoding="utf-8"))
    except ValueError as e:
        raise StoreError(f"{p}: not valid JSON ({e})") from None
    fmt = data.get("format", 1)
    if not isinstance(fmt, int) or fmt > MANIFEST_FORMAT:
        raise StoreError(f"{p}: manifest format {fmt!r}; this recitation reads formats 1 to "
                         f"{MANIFEST_FORMAT}: upgrade recitation to read this audit")
    return data


def find_audit(ref: str, runs_dir: Path) -> Path:
    """An audit folder by path or by id under ``runs_dir``."""
    for p in (Path(ref), runs_dir / ref):
        if (p / MANIFEST).is_file():
            return p
    raise StoreError(f"no audit '{ref}': not an audit folder (with {MANIFEST}), nor under "
                     f"{runs_dir}")
