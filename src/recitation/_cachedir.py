"""Where recitation keeps what it can rebuild: one cache directory for everything.

``$RECITATION_CACHE_DIR``, else the user cache directory of the platform (``platformdirs``).
Under it: ``responses.sqlite`` (the cross-run response cache) and ``models/`` (converted
model weights, trained parrots; ``$RECITATION_MODEL_CACHE_DIR`` moves that folder alone).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


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
