"""The SQLite run store under stress: readers (``recitation runs show`` / ``runs list``) in a
loop while a run writes, and a full disk (SQLite's own SQLITE_FULL through
``max_page_count``, and, where the test may mount one, a real tmpfs that fills up): a clear
error, no corrupt database (``PRAGMA integrity_check``), nothing stored lost, and a resume
that finishes once there is space again."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from recitation.cli import main
from recitation.models.scripted import ScriptedModel
from recitation.runs import store as store_module
from recitation.runs.config import parse_config
from recitation.runs.runner import create_run, execute
from recitation.runs.store import RunStore
from recitation.serve import ServerHandle, start_server
from recitation.serve.chaos import FaultMix, load_config, run_load, write_passages

KEY_ENV = "RECITATION_TEST_STORE_KEY"
QUIET = FaultMix(rate_limited=0.0, server_error=0.0, timeout=0.0, malformed=0.0, reset=0.0)


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-store-test-not-a-key")


@pytest.fixture
def server() -> Iterator[ServerHandle]:
    with start_server(ScriptedModel(name="scripted")) as h:
        yield h


def integrity(db: Path) -> str:
    con = sqlite3.connect(db)
    try:
        return str(con.execute("PRAGMA integrity_check").fetchone()[0])
    finally:
        con.close()


def test_readers_while_a_run_writes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    n = 300
    out: dict[str, Any] = {}
    writer = threading.Thread(target=lambda: out.update(r=run_load(
        tmp_path, n, concurrency=8, mix=QUIET, key_env=KEY_ENV)))
    writer.start()
    runs = tmp_path / "runs"
    reads, codes, seen = 0, [], []
    while writer.is_alive() or reads < 3:
        dirs = list(runs.glob("*/run.sqlite")) if runs.exists() else []
        if not dirs:
            continue
        run_dir = dirs[0].parent
        codes.append(main(["runs", "show", run_dir.name, "--runs-dir", str(runs)]))
        codes.append(main(["runs", "list", "--runs-dir", str(runs)]))
        with RunStore(run_dir) as s:  # a third reader: the store API itself
            seen.append(len(s.done_items()))
        reads += 1
    writer.join()
    cap = capsys.readouterr()
    assert set(codes) == {0}, cap.err
    assert "locked" not in cap.out + cap.err
    assert out["r"].results_stored == n and out["r"].lost == 0
    assert seen == sorted(seen) and seen[-1] == n  # readers saw the run grow, never shrink
    assert integrity(run_dir / "run.sqlite") == "ok"


def _run(tmp_path: Path, url: str, n: int, runs: Path) -> Path:
    corpus = tmp_path / "passages.jsonl"
    write_passages(corpus, n)
    cfg = parse_config(load_config(url, corpus, concurrency=4, timeout=30, max_attempts=2,
                                   key_env=KEY_ENV), source="test")
    return create_run(cfg, runs)


def test_full_disk_is_a_clear_error_and_resume_finishes(
    tmp_path: Path, server: ServerHandle, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """SQLITE_FULL from the store's own connection (``max_page_count`` a few pages above the
    size the run starts at): the same error SQLite raises on a full disk."""
    n = 200
    runs = tmp_path / "runs"
    run_dir = _run(tmp_path, server.url, n, runs)
    original = RunStore.__init__

    def small_disk(self: RunStore, *a: Any, **kw: Any) -> None:
        original(self, *a, **kw)
        pages = self._db.execute("PRAGMA page_count").fetchone()[0]
        self._db.execute(f"PRAGMA max_page_count = {pages + 4}")

    monkeypatch.setattr(store_module.RunStore, "__init__", small_disk)
    code = main(["resume", str(run_dir), "--runs-dir", str(runs)])
    err = "".join(capsys.readouterr().err.split())  # rich wraps lines, even inside a path
    assert code == 1
    assert "".join(f"run store {run_dir / 'run.sqlite'}: the disk is full".split()) in err, err
    assert "recitationresume" in err and "Traceback" not in err
    assert integrity(run_dir / "run.sqlite") == "ok"
    monkeypatch.setattr(store_module.RunStore, "__init__", original)
    with RunStore(run_dir) as s:
        kept = dict(s.results("prefix_probe"))
    assert 0 < len(kept) < n
    out = asyncio.run(execute(run_dir, use_cache=False))
    assert out.status == "completed" and out.done_items == n
    with RunStore(run_dir) as s:
        after = dict(s.results("prefix_probe"))
    assert all(after[k] == v for k, v in kept.items())
    assert integrity(run_dir / "run.sqlite") == "ok"


def _mount_tmpfs(where: Path, size: str) -> bool:
    if os.geteuid() != 0:
        return False
    where.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
                       capture_output=True)
    return r.returncode == 0


def test_real_full_disk_on_tmpfs(tmp_path: Path, server: ServerHandle,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    disk = tmp_path / "disk"
    if not _mount_tmpfs(disk, "16m"):  # room for the WAL (up to ~4 MB) once freed
        pytest.skip("mounting a small tmpfs needs root (the max_page_count test covers the "
                    "same SQLITE_FULL path)")
    try:
        n = 400
        runs = disk / "runs"
        run_dir = _run(tmp_path, server.url, n, runs)
        free = os.statvfs(disk).f_bavail * os.statvfs(disk).f_frsize
        (disk / "filler").write_bytes(b"\0" * max(0, free - 48 * 1024))  # leave 48 KB
        code = main(["resume", str(run_dir), "--runs-dir", str(runs)])
        err = " ".join(capsys.readouterr().err.split())
        assert code == 1 and "the disk is full" in err and "Traceback" not in err, err
        assert integrity(run_dir / "run.sqlite") == "ok"
        with RunStore(run_dir) as s:
            kept = dict(s.results("prefix_probe"))
        (disk / "filler").unlink()  # space again
        out = asyncio.run(execute(run_dir, use_cache=False))
        assert out.status == "completed" and out.done_items == n
        with RunStore(run_dir) as s:
            after = dict(s.results("prefix_probe"))
        assert all(after[k] == v for k, v in kept.items())
        assert integrity(run_dir / "run.sqlite") == "ok"
    finally:
        subprocess.run(["umount", "-l", str(disk)], capture_output=True)
