"""Fingerprints of a job's input files, taken when the run is created and checked on resume.

A job names the user files it reads (``Job.input_files()``: ``{"params.book": path}``). When
the run is created each is hashed (SHA-256 of the bytes; a folder: of every file under it,
by relative path) and the fingerprint is stored in the run (meta ``input_files``) together
with the work items and the job's snapshot, so reports and exports never read the files
again.

On resume (:func:`check_inputs`):

* a file that is still readable is hashed again; if it differs, the resume is refused with a
  :class:`~recitation.errors.ConfigError` naming the file and what changed (hash, size, which
  work items differ), before anything is written: the run is untouched;
* a file that is gone (moved, deleted, or a relative path seen from another folder) is not
  needed: the run resumes from its stored items, and the runner logs that it did.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from recitation.digest import feed_file
from recitation.errors import ConfigError

__all__ = ["check_inputs", "fingerprint", "fingerprint_file"]

def fingerprint_file(path: Path) -> dict[str, Any]:
    """``{"path", "sha256", "bytes"}`` (and ``"files"`` for a folder) of one input.

    Raises ``OSError`` when the path cannot be read."""
    path = path.expanduser().resolve()
    h = hashlib.sha256()
    if path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.is_file())
        size = 0
        for f in files:
            h.update(f.relative_to(path).as_posix().encode("utf-8") + b"\0")
            size += feed_file(f, h)
        return {"path": str(path), "sha256": h.hexdigest(), "bytes": size,
                "files": len(files)}
    size = feed_file(path, h)
    return {"path": str(path), "sha256": h.hexdigest(), "bytes": size}


def fingerprint(files: Mapping[str, Path]) -> dict[str, dict[str, Any]]:
    """The fingerprint of every input file, by label; an unreadable file is a ConfigError."""
    out = {}
    for label, path in files.items():
        try:
            out[label] = fingerprint_file(Path(path))
        except OSError as e:
            raise ConfigError(f"{label}: cannot read {path}: {e.strerror or e}") from None
    return out


def _changed(label: str, old: dict[str, Any], new: dict[str, Any]) -> str:
    what = [f"sha256 {old['sha256'][:12]} -> {new['sha256'][:12]}"]
    if old.get("bytes") != new.get("bytes"):
        what.append(f"{old.get('bytes')} -> {new.get('bytes')} bytes")
    if old.get("files") != new.get("files"):
        what.append(f"{old.get('files')} -> {new.get('files')} files")
    return f"{label} ({old['path']}) changed since the run was created: {', '.join(what)}"


def check_inputs(stored: Mapping[str, dict[str, Any]],
                 item_diff: Callable[[], str] | None = None) -> list[str]:
    """Compare the stored fingerprints with the files as they are now.

    Returns the labels of inputs that are gone (the run resumes from its stored items);
    raises :class:`ConfigError` when a readable input differs. ``item_diff`` (optional)
    describes which work items the change affects, for the message."""
    gone, changed = [], []
    for label, old in stored.items():
        path = Path(old["path"])
        try:
            new = fingerprint_file(path)
        except OSError:
            gone.append(label)
            continue
        if new["sha256"] != old["sha256"]:
            changed.append(_changed(label, old, new))
    if changed:
        detail = ""
        if item_diff is not None:
            detail = item_diff()
        raise ConfigError("; ".join(changed) + (f"; {detail}" if detail else "")
                          + ". Refusing to resume: the stored results were computed from "
                          "the earlier content, and the run is left untouched. Restore the "
                          "file to resume, or start a new run.")
    return gone
