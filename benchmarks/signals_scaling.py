"""How white-box scoring cost grows (issue 30, item 4): `recitation signals` on N passages of
about 64 tokens (48 words of the PDNC novels), the embedded SmolLM2, each arm into an empty
store, in one run:

* in process, 2 torch threads (the local default on this 2-core machine), and 1 thread;
* on Ray (a cluster of the command's own on 127.0.0.1), 1 and 2 actors of one thread each
  (cluster start and model loads included);
* through a vLLM server (the CPU build, scripts/vllm_env.sh; started beforehand, not timed).

For each: wall seconds, tokens per second, peak memory of the command's whole process tree
(polled every 0.5 s: summed RSS, and summed PSS, which counts pages shared
by several processes once; the driver, Ray's processes and actors; the vLLM server's own memory is
reported apart), and the store's size. With ``--busy``, the same beside a CPU-bound process
(``python -c "while 1: pass"``).

    .venv/bin/python benchmarks/signals_scaling.py [--sizes 1000 4000] [--arms ...] [--busy]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "models"))
import vllm_server  # noqa: E402  (tests/models/vllm_server.py: start and stop vLLM)

ARMS = ("process-2t", "process-1t", "ray-1", "ray-2", "vllm")


def passages(n: int, words: int = 48) -> list[str]:
    data = Path(os.environ.get("RECITATION_DATA", REPO.parent / "shared" / "data")) / "pdnc"
    out: list[str] = []
    for novel in sorted(data.glob("*/novel_text.txt")):
        w = novel.read_text(encoding="utf-8").split()
        out += [" ".join(w[i : i + words]) for i in range(0, len(w) - words, words)]
        if len(out) >= n:
            return out[:n]
    raise SystemExit(f"only {len(out)} passages in {data}")


def _tree_rss(proc: psutil.Process, skip: set[int]) -> int:
    try:
        procs = [proc, *proc.children(recursive=True)]
    except psutil.Error:
        return 0
    total = 0
    for p in procs:
        if p.pid in skip:
            continue
        try:
            total += p.memory_info().rss
        except psutil.Error:
            continue
    return total


def _name(p: psutil.Process) -> str:
    """A short name for a process of the tree: Ray's actors and daemons by their title."""
    try:
        line = " ".join(p.cmdline())
    except psutil.Error:
        return "?"
    for key in ("ShardScorer", "raylet", "gcs_server", "dashboard", "log_monitor",
                "runtime_env", "default_worker", "recitation.cli"):
        if key in line:
            return key
    return line[:40]


def _tree_memory(proc: psutil.Process) -> tuple[int, int, dict[str, int]]:
    """The tree's summed RSS, its summed PSS (shared pages, such as Ray's object store or
    a model's weights mapped by several processes, counted once in all), and each
    process's PSS by name."""
    try:
        procs = [proc, *proc.children(recursive=True)]
    except psutil.Error:
        return 0, 0, {}
    rss = pss = 0
    each: dict[str, int] = {}
    for p in procs:
        try:
            m = p.memory_full_info()
        except psutil.Error:
            continue
        rss += m.rss
        pss += m.pss
        name = f"{_name(p)}#{p.pid}"
        each[name] = m.pss
    return rss, pss, each


def run_arm(arm: str, texts: Path, store: Path, vllm_url: str | None) -> dict[str, float]:
    cmd = [sys.executable, "-m", "recitation.cli", "signals", str(texts), "--store", str(store)]
    env = dict(os.environ)
    if arm.startswith("process"):
        env["RECITATION_THREADS"] = arm[-2]
        cmd += ["--model", "smollm2"]
    elif arm.startswith("ray"):
        cmd += ["--model", "smollm2", "--ray", "--workers", arm[-1]]
    else:
        cmd += ["--model", f"openai:smollm2@{vllm_url}"]
    peak = peak_pss = 0
    by_process: dict[str, int] = {}
    t0 = time.perf_counter()
    p = psutil.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    done = threading.Event()

    def poll() -> None:
        nonlocal peak, peak_pss
        while not done.is_set():
            rss, pss, each = _tree_memory(p)
            peak, peak_pss = max(peak, rss), max(peak_pss, pss)
            for k, v in each.items():
                by_process[k] = max(by_process.get(k, 0), v)
            time.sleep(0.5)

    th = threading.Thread(target=poll, daemon=True)
    th.start()
    out, _ = p.communicate()
    wall = time.perf_counter() - t0
    done.set()
    th.join()
    if p.returncode != 0:
        raise SystemExit(f"{arm} failed:\n{out[-3000:]}")
    import pyarrow.parquet as pq

    shards = list(store.glob("*/*.parquet"))
    tokens = sum(sum(pq.read_table(s, columns=["input_tokens"]).column(0).to_pylist())
                 for s in shards)
    size = sum(f.stat().st_size for f in store.rglob("*") if f.is_file())
    return {"wall_s": wall, "tokens": tokens, "tokens_per_s": tokens / wall,
            "peak_rss_mb": peak / 2**20, "peak_pss_mb": peak_pss / 2**20,
            "store_mb": size / 2**20,
            "peak_pss_by_process_mb": {k: round(v / 2**20) for k, v in
                                       sorted(by_process.items(), key=lambda kv: -kv[1])
                                       if v > 2**25}}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 4000])
    ap.add_argument("--arms", nargs="+", default=list(ARMS), choices=ARMS)
    ap.add_argument("--busy", action="store_true")
    ap.add_argument("--out", type=Path, default=Path("/tmp/signals_scaling.json"))
    args = ap.parse_args()
    results: list[dict[str, object]] = []
    server = None
    hog = subprocess.Popen([sys.executable, "-c", "while 1: pass"]) if args.busy else None
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        url = None
        if "vllm" in args.arms:
            python, why = vllm_server.vllm_python(Path(os.environ.get(
                "RECITATION_CACHE_DIR", Path.home() / ".cache" / "recitation")))
            assert python is not None, why
            from recitation.models.local import LocalModel

            server = vllm_server.start(python, LocalModel("smollm2").transformers_dir(),
                                       "smollm2", work)
            assert not (why := vllm_server.wait_ready(server)), why
            url = server.url
        try:
            for n in args.sizes:
                texts = work / f"t{n}.jsonl"
                texts.write_text("".join(json.dumps({"id": str(k), "text": t}) + "\n"
                                         for k, t in enumerate(passages(n))))
                for arm in args.arms:
                    r = run_arm(arm, texts, work / f"s-{arm}-{n}", url)
                    if server is not None and arm == "vllm":
                        r["server_rss_mb"] = _tree_rss(psutil.Process(server.proc.pid),
                                                       set()) / 2**20
                    results.append({"n": n, "arm": arm, "busy": args.busy, **r})
                    print(json.dumps(results[-1]), flush=True)
        finally:
            if server is not None:
                server.stop()
            if hog is not None:
                hog.kill()
    args.out.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
