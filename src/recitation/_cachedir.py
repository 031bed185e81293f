"""Where recitation keeps what it can rebuild: one cache directory for everything.

``$RECITATION_CACHE_DIR``, else the user cache directory of the platform (``platformdirs``).
Under it: ``responses.sqlite`` (the cross-run response cache) and ``models/`` (converted
model weights, trained parrots, organisms, the probes' control models;
``$RECITATION_MODEL_CACHE_DIR`` moves that folder alone). Built entries are content-keyed
(:func:`cached_folder`): the key names everything the contents depend on, so a stale entry
is never found.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

COMPLETE = ".complete"
"""The marker :func:`cached_folder` writes last into a finished entry."""


def cache_dir() -> Path:
    """The root of every recitation cache (not created here)."""
    from platformdirs import user_cache_dir

    return Path(os.environ.get("RECITATION_CACHE_DIR") or user_cache_dir("recitation"))


@contextmanager
def file_lock(folder: Path, name: str) -> Iterator[None]:
    """An exclusive lock across processes (``flock`` on ``folder/.name.lock``), for cache
    entries that several processes may build at once (two test workers, two commands):
    the first builds, the others wait and then find it built."""
    import fcntl

    folder.mkdir(parents=True, exist_ok=True)
    with (folder / f".{name}.lock").open("w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def cached_folder(root: Path, key: str, build: Callable[[Path], None], *,
                  rebuild: bool = False) -> tuple[Path, bool]:
    """The cache entry ``root/key``: built by ``build(folder)`` into a temporary folder under
    :func:`file_lock` when it is missing (or ``rebuild``), then swapped in whole, so an
    interrupted build never leaves half an entry. Returns (the entry, whether it was
    reused). ``key`` must name everything the contents depend on."""
    entry = root / key
    with file_lock(root, key):
        if not rebuild and (entry / COMPLETE).is_file():
            return entry, True
        tmp = root / f".{key}.tmp{os.getpid()}"
        old = root / f".{key}.old{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        try:
            build(tmp)
            (tmp / COMPLETE).write_text("", encoding="utf-8")
            if entry.exists():
                os.replace(entry, old)
            os.replace(tmp, entry)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
            shutil.rmtree(old, ignore_errors=True)
    return entry, False


def link_files(source: Path, target: Path, skip: Iterable[str] = ()) -> None:
    """Every file of ``source`` hard-linked into ``target`` (created; copied where the file
    system cannot link), except the names in ``skip`` and the cache's own marker."""
    target.mkdir(parents=True)
    leave = {COMPLETE, *skip}
    for f in sorted(source.iterdir()):
        if f.name in leave or not f.is_file():
            continue
        try:
            os.link(f, target / f.name)
        except OSError:
            shutil.copy2(f, target / f.name)
