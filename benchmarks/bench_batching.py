"""Local backend: batched generation vs one request at a time.

16 prompts x 64 new tokens, greedy, on the embedded SmolLM2-135M-Instruct (CPU). Both arms
run in the same process on the same loaded model; the ratio is what we report.

    .venv/bin/python benchmarks/bench_batching.py [--repeats 2] [--batch-size 16]
"""

from __future__ import annotations

import argparse
import asyncio
import platform
import statistics
import time

from recitation.corpus.kjv import kjv_passage
from recitation.models.base import GenerationRequest
from recitation.models.local import LocalModel

REFS = ["Genesis 1:1", "Genesis 1:2", "Exodus 20:13", "Psalms 23:1", "Psalms 23:2",
        "Proverbs 3:5", "Ecclesiastes 3:1", "Isaiah 40:31", "Matthew 5:5", "Matthew 6:9",
        "Matthew 7:7", "John 1:1", "John 3:16", "John 14:6", "Romans 6:23", "Luke 2:14"]


def requests(n_tokens: int) -> list[GenerationRequest]:
    return [GenerationRequest(prompt=" ".join(kjv_passage(r).split()[:12]),
                              max_tokens=n_tokens) for r in REFS]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--new-tokens", type=int, default=64)
    ap.add_argument("--batch-size", type=int, default=16)
    args = ap.parse_args()
    model = LocalModel()
    model.load()
    reqs = requests(args.new_tokens)
    model.generate_sync(reqs[:2])  # warm-up
    single, batched = [], []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        one = [model.generate_sync([r])[0] for r in reqs]
        single.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        many = []
        for i in range(0, len(reqs), args.batch_size):
            many += model.generate_sync(reqs[i : i + args.batch_size])
        batched.append(time.perf_counter() - t0)
    tokens = sum(g.usage.output_tokens for g in many)
    same = sum(a.text == b.text for a, b in zip(one, many, strict=True))
    s, b = statistics.median(single), statistics.median(batched)
    print(f"machine: {platform.machine()} {platform.processor()} threads={model.threads}")
    print(f"16 prompts x {args.new_tokens} new tokens (greedy), {tokens} tokens generated")
    print(f"one at a time: {s:.2f} s  ({tokens / s:.1f} tok/s)")
    print(f"batched ({args.batch_size}): {b:.2f} s  ({tokens / b:.1f} tok/s)")
    print(f"speed-up: {s / b:.2f}x   identical outputs: {same}/{len(reqs)}")


if __name__ == "__main__":
    asyncio.run(asyncio.sleep(0))
    main()
