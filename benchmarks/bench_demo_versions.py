"""The demo of two versions of the code, in one run on one machine: a baseline commit (a git
worktree of it) and the working tree. For each: the quick organism built beforehand (not
timed), then ``recitation demo`` with an empty response cache (every model answer computed),
then again with that cache warm (every answer read back). Wall time of each whole command,
the sum of its runs' model phases, and its backend calls.

    .venv/bin/python benchmarks/bench_demo_versions.py [BASE_COMMIT]   (default: 44e7931)

The baseline runs from its worktree's ``src`` (``PYTHONPATH``), with this virtual
environment's packages; both share the model cache (the GGUF conversion and the organism,
whose training code the two versions share, else each builds its own first).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from recitation.models.local import model_cache_dir
from recitation.runs.store import RunStore

REPO = Path(__file__).resolve().parents[1]
MODELS = str(model_cache_dir())
"""The model cache both versions share (the response cache is per run of the demo)."""


def demo(src: Path, cache: Path, runs: Path) -> dict[str, float | int]:
    env = dict(os.environ, PYTHONPATH=str(src), RECITATION_CACHE_DIR=str(cache),
               RECITATION_MODEL_CACHE_DIR=MODELS, COLUMNS="200")
    before = set(runs.glob("demo-2*")) if runs.exists() else set()
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "recitation.cli", "demo", "--runs-dir",
                        str(runs)], env=env, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - t0
    (audit,) = set(runs.glob("demo-2*")) - before
    model_s = 0.0
    for run_dir in (audit / "runs").iterdir():
        with RunStore(run_dir) as store:
            model_s += float(store.get_meta("model_seconds_last") or 0.0)
    calls = [int(c) for c in re.findall(r"backend calls (\d+)", p.stdout)]
    return {"wall": wall, "model": model_s, "calls": sum(calls), "runs": len(calls)}


def build_organism(src: Path) -> None:
    env = dict(os.environ, PYTHONPATH=str(src), RECITATION_MODEL_CACHE_DIR=MODELS)
    subprocess.run([sys.executable, "-m", "recitation.cli", "organism", "build", "--quick"],
                   env=env, capture_output=True, text=True, check=True)


def main() -> None:
    base = sys.argv[1] if len(sys.argv) > 1 else "44e7931"
    head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True, check=True).stdout.strip()
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp) / "base"
        subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(tree),
                        base], capture_output=True, check=True)
        try:
            rows = {}
            for name, src in ((f"base {base}", tree / "src"), (f"HEAD {head}+tree",
                                                                REPO / "src")):
                build_organism(src)
                cache, runs = Path(tmp) / f"cache-{len(rows)}", Path(tmp) / f"runs-{len(rows)}"
                rows[name] = (demo(src, cache, runs), demo(src, cache, runs))
        finally:
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force",
                            str(tree)], capture_output=True, check=False)
    print("| version | cold: wall | cold: model phases | cold: backend calls | warm: wall "
          "| warm: model phases | warm: backend calls |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, (cold, warm) in rows.items():
        print(f"| {name} | {cold['wall']:.1f} s | {cold['model']:.1f} s | {cold['calls']} "
              f"| {warm['wall']:.1f} s | {warm['model'] * 1000:.0f} ms | {warm['calls']} |")


if __name__ == "__main__":
    main()
