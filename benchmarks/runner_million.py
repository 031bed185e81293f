"""The runner at scale (issue 30, item 4): a prefix-probing run of N items on the scripted
model (no weights: what is measured is the runner and its SQLite store), killed with
SIGKILL once 90% of its items are stored, then resumed to the end.

Reported: the first execute's items per second until the kill (and so the runner's overhead
per item), the peak memory of the command, the store's size, the resume's wall time and how
many items it ran, and the checks that every item is stored once and no answered item was
asked again (backend calls == N).

    .venv/bin/python benchmarks/runner_million.py [N]     (default 1,000,000)
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

KILL_AT = 0.9


def stored(db: Path) -> int:
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
        try:
            return int(con.execute("SELECT COUNT(*) FROM results").fetchone()[0])
        finally:
            con.close()
    except sqlite3.Error:
        return 0


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        data = work / "items.jsonl"
        with data.open("w") as f:
            for i in range(n):
                f.write(json.dumps({"id": f"p{i}", "text": f"word{i} alpha beta gamma delta "
                                    "epsilon zeta eta theta iota kappa lambda mu"}) + "\n")
        cfg = work / "run.yaml"
        cfg.write_text(json.dumps({"job": "prefix_probe", "name": "scale", "seed": 0,
                                   "cache": False, "model": {"backend": "scripted",
                                                             "model": "echo"},
                                   "params": {"source": "jsonl", "path": str(data),
                                              "max_words": 12, "max_new_tokens": 8}}))
        runs = work / "runs"
        cli = [sys.executable, "-m", "recitation.cli"]
        t0 = time.perf_counter()
        p = psutil.Popen([*cli, "run", str(cfg), "--runs-dir", str(runs)],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        peak, db, t_first = 0, None, None
        while p.poll() is None:
            peak = max(peak, p.memory_info().rss)
            if db is None:
                found = list(runs.glob("*/run.sqlite")) if runs.exists() else []
                db = found[0] if found else None
            if db is not None:
                done = stored(db)
                if t_first is None and done > 0:
                    t_first = time.perf_counter()
                if done >= KILL_AT * n:
                    os.kill(p.pid, signal.SIGKILL)
                    break
            time.sleep(0.5)
        p.wait()
        t_kill = time.perf_counter()
        assert db is not None
        at_kill = stored(db)
        t1 = time.perf_counter()
        r = subprocess.run([*cli, "resume", str(db.parent)], capture_output=True, text=True)
        resume_s = time.perf_counter() - t1
        assert r.returncode == 0, r.stdout + r.stderr
        con = sqlite3.connect(db)
        rows, distinct = con.execute(
            "SELECT COUNT(*), COUNT(DISTINCT item_id) FROM results").fetchone()
        calls = con.execute("SELECT COUNT(*) FROM calls").fetchone()[0]
        con.close()
        size = sum(f.stat().st_size for f in db.parent.iterdir() if f.is_file())
        rate = at_kill / (t_kill - (t_first or t0))
        print(json.dumps({
            "n": n, "stored_at_kill": at_kill, "start_to_first_item_s": (t_first or t0) - t0,
            "items_per_s_until_kill": rate, "overhead_per_item_ms": 1000 / rate,
            "peak_rss_mb": peak / 2**20, "store_mb": size / 2**20, "resume_s": resume_s,
            "resumed_items": rows - at_kill, "rows": rows, "distinct_items": distinct,
            "calls_logged": calls}, indent=1))


if __name__ == "__main__":
    main()
