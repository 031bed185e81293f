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


def test_cached_folder_builds_once_reuses_and_rebuilds(tmp_path: Path) -> None:
    from recitation._cachedir import COMPLETE, cached_folder, link_files

    built: list[Path] = []

    def build(folder: Path) -> None:
        built.append(folder)
        (folder / "weights.bin").write_bytes(b"w" * 10)
        (folder / "key.json").write_text("{}")

    entry, reused = cached_folder(tmp_path / "c", "k1", build)
    assert not reused and entry == tmp_path / "c" / "k1" and (entry / COMPLETE).is_file()
    assert built[0] != entry  # built beside it, swapped in whole
    assert cached_folder(tmp_path / "c", "k1", build) == (entry, True) and len(built) == 1
    assert cached_folder(tmp_path / "c", "k1", build, rebuild=True) == (entry, False)
    assert len(built) == 2 and sorted(p.name for p in (tmp_path / "c").iterdir()) == [
        ".k1.lock", "k1"]  # no temporary or old folder left behind
    link_files(entry, tmp_path / "out", skip=("key.json",))
    out = tmp_path / "out" / "weights.bin"
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["weights.bin"]
    assert out.stat().st_ino == (entry / "weights.bin").stat().st_ino  # linked, not copied


def test_an_interrupted_build_leaves_no_entry(tmp_path: Path) -> None:
    from recitation._cachedir import cached_folder

    def fail(folder: Path) -> None:
        (folder / "half.bin").write_bytes(b"h")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        cached_folder(tmp_path, "k", fail)
    assert sorted(p.name for p in tmp_path.iterdir()) == [".k.lock"]
    entry, reused = cached_folder(tmp_path, "k", lambda f: (f / "ok").write_text("1"))
    assert not reused and (entry / "ok").read_text() == "1"


def test_source_digest_follows_the_source_bytes(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    import hashlib
    import importlib

    from recitation.organism.config import source_digest

    monkeypatch.syspath_prepend(str(tmp_path))
    mod = tmp_path / "rcx_probe_mod.py"
    mod.write_text("A = 1\n")
    first = source_digest("rcx_probe_mod")
    assert first == hashlib.sha256(b"rcx_probe_mod\0A = 1\n").hexdigest()
    mod.write_text("A = 2\n")
    importlib.invalidate_caches()
    assert source_digest("rcx_probe_mod") != first
    from recitation.errors import ConfigError

    with pytest.raises(ConfigError, match="rcx_no_such_module"):
        source_digest("rcx_no_such_module")
