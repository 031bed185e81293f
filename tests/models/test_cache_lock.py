"""The cache's cross-process lock (``recitation._cachedir.file_lock``): the GGUF conversion
and organism builds take it, so two processes (two test workers, two commands) never
write one cache entry at once. Two real processes; the second is seen waiting in the
kernel's lock table (/proc/locks) before the first lets go: no sleeps, no timing."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

CHILD = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from recitation._cachedir import file_lock
    folder, name, go = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
    log = folder / "log.txt"
    with file_lock(folder, "entry"):
        with log.open("a") as fh:
            fh.write(f"in {name}\\n")
        while not go.exists():  # the first holder waits for the test's go-ahead
            time.sleep(0.01)
        with log.open("a") as fh:
            fh.write(f"out {name}\\n")
""")


def _waiters(lock_file: Path) -> int:
    """Processes blocked on an flock of ``lock_file`` (the "->" lines of /proc/locks)."""
    ino = os.stat(lock_file).st_ino
    lines = Path("/proc/locks").read_text().splitlines()
    return sum(1 for ln in lines if "->" in ln and ln.split()[-3].endswith(f":{ino}"))


@pytest.mark.skipif(not Path("/proc/locks").exists(), reason="needs Linux /proc/locks")
def test_second_process_waits_until_the_first_releases(tmp_path: Path) -> None:
    go = tmp_path / "go"
    log = tmp_path / "log.txt"

    def start(name: str) -> subprocess.Popen[bytes]:
        return subprocess.Popen([sys.executable, "-c", CHILD, str(tmp_path), name, str(go)])

    first = start("first")
    deadline = time.monotonic() + 120
    while not (log.exists() and log.read_text() == "in first\n"):
        assert time.monotonic() < deadline and first.poll() is None, "first never locked"
        time.sleep(0.01)
    second = start("second")
    while _waiters(tmp_path / ".entry.lock") < 1:
        assert time.monotonic() < deadline and second.poll() is None, "second never waited"
        time.sleep(0.01)
    assert log.read_text() == "in first\n"  # the second is blocked, not inside
    go.touch()
    assert first.wait(60) == 0 and second.wait(60) == 0
    assert log.read_text() == "in first\nout first\nin second\nout second\n"
