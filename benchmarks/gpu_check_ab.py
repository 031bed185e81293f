"""A/B of the local backend's scoring loop on one GPU, one batch of 64 texts of about 512
tokens, the GPU check's 1B model (random weights, bfloat16): the forward pass alone; the
per-row loop of 28f2f3f (its ``_decode.py`` as ``.gpu-check/old_decode.py``); today's batched
statistics, compiled (the default on CUDA) and eager (``RECITATION_COMPILE_STATS=0``). Best
and median of REPS calls after a warm-up, the largest difference between old and new, and
torch's profile of one call of each. Kept: benchmarks/gpu_check/h200-3-ab-stats.json
(docs/benchmarks.md, "GPU check").

    git show 28f2f3f:src/recitation/models/_decode.py > .gpu-check/old_decode.py
    bash scripts/gpu_check.sh --prepare              # the tokenizer and wheels
    # on the GPU machine, .gpu-check carried:
    PYTHONPATH=.gpu-check/site python3 benchmarks/gpu_check_ab.py   # writes $OUT/profile.json

``DEV=cpu SMALL=1 NTEXTS=4 REPS=1`` runs it on a CPU with the two-layer models."""

from __future__ import annotations

import importlib
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

DEV = os.environ.get("DEV", "cuda")
REPS = int(os.environ.get("REPS", 5))


def sync() -> None:
    import torch

    if DEV == "cuda":
        torch.cuda.synchronize()


def timed(f: Callable[[], Any]) -> dict[str, float]:
    f()
    sync()
    ts = []
    for _ in range(REPS):
        s = time.perf_counter()
        f()
        sync()
        ts.append(time.perf_counter() - s)
    ts.sort()
    return {"min_s": ts[0], "median_s": ts[len(ts) // 2]}


def differences(a: list[Any], b: list[Any]) -> dict[str, Any]:
    diff: dict[str, Any] = {}
    for field in ("logprobs", "mean_logprob", "std_logprob", "top_logprob"):
        diff[field] = max(max((abs(x - y) for x, y in zip(getattr(p, field),
                                                          getattr(q, field), strict=True)),
                              default=0.0) for p, q in zip(a, b, strict=True))
    same = sum(x == y for p, q in zip(a, b, strict=True) for x, y in zip(p.rank, q.rank,
                                                                        strict=True))
    diff["rank_equal_share"] = same / sum(len(p.rank) for p in a)
    diff["same_tokens"] = all(p.token_ids == q.token_ids for p, q in zip(a, b, strict=True))
    return diff


def main() -> None:
    sys.path[:0] = ["scripts", "src", ".gpu-check"]
    import torch
    import transformers
    from torch.profiler import ProfilerActivity, profile

    gm = importlib.import_module("gpu_check_models")
    old = importlib.import_module("old_decode")
    from recitation.models import _decode as new
    from recitation.models.local import LocalModel

    archs = gm.SMALL if os.environ.get("SMALL") else gm.ARCHS
    tokdir = Path(".gpu-check/tokenizer")
    folder = gm.build_model(archs["llama-1b"], tokdir, Path("/tmp/ab/llama-1b"), seed=0,
                            device=DEV)
    tok = transformers.AutoTokenizer.from_pretrained(tokdir, local_files_only=True)
    texts = gm.make_texts(tok, int(os.environ.get("NTEXTS", 64)), [512], 1)
    loaded = LocalModel(str(folder), device=DEV, dtype="bfloat16").load()
    model, t = loaded.model, loaded.tokenizer
    enc = new._encode(t, texts, [True] * len(texts))
    ids, mask = enc["input_ids"].to(DEV), enc["attention_mask"].to(DEV)
    pos = (mask.long().cumsum(-1) - 1).clamp(min=0)
    out: dict[str, Any] = {"tokens": int(mask.sum())}

    @torch.inference_mode()
    def forward() -> Any:
        return model(input_ids=ids, attention_mask=mask, position_ids=pos).logits

    def eager() -> Any:
        os.environ["RECITATION_COMPILE_STATS"] = "0"
        try:
            return new.score_texts(model, t, texts)
        finally:
            os.environ.pop("RECITATION_COMPILE_STATS")

    start = time.perf_counter()
    new.score_texts(model, t, texts)
    sync()
    out["first_compiled_call_s"] = time.perf_counter() - start
    out["logits_dtype"] = str(forward().dtype)
    runs = {"forward": forward, "old": lambda: old.score_texts(model, t, texts),
            "new": lambda: new.score_texts(model, t, texts), "new_eager": eager}
    for name, f in runs.items():
        res = timed(f)
        out[name] = res | {"tok_per_s": out["tokens"] / res["min_s"]}
        print(name, out[name], flush=True)
    out["old_vs_new"] = differences(old.score_texts(model, t, texts),
                                    new.score_texts(model, t, texts))
    print("old vs new", out["old_vs_new"], flush=True)
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if DEV == "cuda" else [])
    for name in ("old", "new"):
        with profile(activities=acts) as prof:
            runs[name]()
            sync()
        key = "cuda_time_total" if DEV == "cuda" else "cpu_time_total"
        out[f"profile_{name}"] = prof.key_averages().table(sort_by=key, row_limit=18)
        print(f"--- profile {name}\n{out[f'profile_{name}']}", flush=True)
    Path(os.environ.get("OUT", "/tmp"), "profile.json").write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
