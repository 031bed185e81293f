"""Reliability under load and faults, full size (issue 14); figures in docs/reliability.md
and docs/benchmarks.md.

    python benchmarks/bench_faults.py [--requests 10000] [--concurrency 16] [--seed 0]
        [--overhead-calls 400] [--out bench/faults.json]

1. ``--requests`` model requests through the runner, the run store and the openai backend
   against a local server injecting 5% 429 (half with Retry-After), 3% 500/503, 1% timeouts,
   1% malformed bodies and 1% dropped connections (recitation.serve.chaos): throughput, retries,
   lost results, duplicate successful calls and peak concurrency (both counted at the server).
2. The toolkit's own overhead per call: the same completion request sent alternately by the
   bare ``openai`` SDK and by ``ManagedModel(OpenAIModel)`` with a run store, to the same
   fault-free server, one call at a time; overhead = toolkit time - bare time, per pair.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from recitation.models.base import GenerationRequest
from recitation.models.managed import ManagedModel
from recitation.models.openai_backend import OpenAIModel
from recitation.models.scripted import ScriptedModel
from recitation.runs.store import RunStore
from recitation.serve import start_server
from recitation.serve.chaos import run_load

KEY_ENV = "RECITATION_BENCH_KEY"


async def overhead(calls: int, workdir: Path) -> dict[str, Any]:
    import openai

    with start_server(ScriptedModel(name="scripted"), record_requests=False) as server:
        bare = openai.AsyncOpenAI(base_url=server.url, api_key="bench", max_retries=0,
                                  timeout=30)
        store = RunStore(workdir / "overhead-run", create=True)
        managed = ManagedModel(OpenAIModel("scripted", base_url=server.url,
                                           api_key_env=KEY_ENV, timeout=30), store=store)
        diffs, t_bare, t_tool = [], [], []
        for i in range(calls + 20):  # the first 20 pairs warm both clients up
            prompt = f"Passage {i:06d} In the beginning God created the heaven"
            t0 = time.perf_counter()
            await bare.completions.create(model="scripted", prompt=prompt + " b",
                                          max_tokens=4, temperature=0.0)
            t1 = time.perf_counter()
            await managed.generate([GenerationRequest(prompt=prompt + " t", max_tokens=4)])
            t2 = time.perf_counter()
            if i >= 20:
                t_bare.append(t1 - t0)
                t_tool.append(t2 - t1)
                diffs.append((t2 - t1) - (t1 - t0))
        await bare.close()
        await managed.aclose()
        store.close()
    ms = 1000.0
    return {"calls": calls,
            "bare_sdk_ms_median": statistics.median(t_bare) * ms,
            "toolkit_ms_median": statistics.median(t_tool) * ms,
            "overhead_ms_median": statistics.median(diffs) * ms,
            "overhead_ms_mean": statistics.fmean(diffs) * ms}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=10_000)
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--overhead-calls", type=int, default=400)
    ap.add_argument("--out", default="bench/faults.json")
    args = ap.parse_args()
    logging.disable(logging.WARNING)  # one retry warning per injected fault otherwise
    os.environ.setdefault(KEY_ENV, "sk-bench-not-a-key")
    work = Path(tempfile.mkdtemp(prefix="recitation-bench-faults-"))
    os.environ.setdefault("RECITATION_CACHE_DIR", str(work / "cache"))
    out: dict[str, Any] = {"overhead": asyncio.run(overhead(args.overhead_calls, work))}
    print(json.dumps(out["overhead"], indent=1), flush=True)
    t0, c0 = time.perf_counter(), time.process_time()
    load = run_load(work / "load", args.requests, concurrency=args.concurrency,
                    seed=args.seed, key_env=KEY_ENV)
    out["load"] = load.to_dict() | {"cpu_s": time.process_time() - c0,
                                    "total_s": time.perf_counter() - t0}
    out["machine"] = {"cpus": os.cpu_count(), "load_avg": os.getloadavg()}
    print(json.dumps(out["load"], indent=1))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
