"""The demo twice with a fresh response cache: the second run's model phase is served from
the cache. Reports wall time of each whole command and of its model phase, and the ratio.

    .venv/bin/python benchmarks/bench_demo_cache.py
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from recitation.runs.store import RunStore


def run_demo(env: dict[str, str], runs_dir: str) -> tuple[float, float, str]:
    before = set(Path(runs_dir).glob("demo-2*")) if Path(runs_dir).exists() else set()
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "recitation.cli", "demo", "--runs-dir", runs_dir],
                       env=env, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - t0
    (audit,) = set(Path(runs_dir).glob("demo-2*")) - before
    model_s = 0.0
    for run_dir in (audit / "runs").iterdir():  # the runner's own timing of each model phase
        with RunStore(run_dir) as store:
            model_s += float(store.get_meta("model_seconds_last"))
    calls = re.findall(r"backend calls \d+, from cache \d+", p.stdout.replace("\n", " "))
    return wall, model_s, "; ".join(calls)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, RECITATION_CACHE_DIR=f"{tmp}/cache")
        w1, m1, c1 = run_demo(env, f"{tmp}/runs")
        w2, m2, c2 = run_demo(env, f"{tmp}/runs")
    print(f"first run:  wall {w1:.1f} s, model phase {m1:.2f} s ({c1})")
    print(f"second run: wall {w2:.1f} s, model phase {m2 * 1000:.1f} ms ({c2})")
    print(f"model phase speed-up: {m1 / m2:.0f}x; whole command: {w1 / w2:.1f}x")


if __name__ == "__main__":
    main()
