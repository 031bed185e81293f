"""The GPU check's throughput phase: prompt scoring of the 1B model in bfloat16 through
``LocalModel.score_sync`` (token-budget batches, SDPA, the per-position vocabulary statistics,
the per-token records), against the device's measured matrix-product peak and a naive loop.

- **Peak**: the best rate of ``torch.matmul`` on two square bfloat16 matrices (``n = 8192`` on
  a GPU), timed between device synchronisations, best of several rounds; float32's the same
  way (the naive loop's ceiling: on CUDA float32 products run without TF32, torch's
  default).
- **Ours**: texts scored after a warm-up pass, whole passes until ``seconds`` have gone; FLOPs
  by ``Arch.forward_flops`` over the texts' tokens (padding is not counted: it is waste).
- **Forward alone**: the model's forward pass over the same texts in the same batch size,
  nothing else: how much of the time the statistics and the records take.
- **Naive**: one text at a time, float32, no batching: the forward pass, ``log_softmax`` and
  the tokens' log p brought to the CPU; timed for at most ``naive_seconds``, compared per
  token.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def synchronize(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize(device)


def matmul_peak(device: str, dtype: str, n: int, seconds: float = 2.0) -> dict[str, Any]:
    """The best FLOP/s of ``n x n`` products in ``dtype`` on ``device`` (rounds of 10 after
    three warm-ups, for about ``seconds``, at least 3 rounds)."""
    import torch

    gen = torch.Generator(device="cpu").manual_seed(0)
    a = torch.randn(n, n, generator=gen).to(device=device, dtype=getattr(torch, dtype))
    b = torch.randn(n, n, generator=gen).to(device=device, dtype=getattr(torch, dtype))
    for _ in range(3):
        torch.matmul(a, b)
    synchronize(device)
    best, rounds, start = 0.0, 0, time.perf_counter()
    while rounds < 3 or time.perf_counter() - start < seconds:
        t = time.perf_counter()
        for _ in range(10):
            torch.matmul(a, b)
        synchronize(device)
        best = max(best, 10 * 2.0 * n**3 / (time.perf_counter() - t))
        rounds += 1
    return {"n": n, "dtype": dtype, "flops_per_s": best, "rounds": rounds}


def our_scoring(model_dir: Path, texts: Sequence[str], device: str, seconds: float,
                max_passes: int = 10) -> dict[str, Any]:
    """``LocalModel.score_sync`` in bfloat16: a warm-up on a batch's worth of texts (a
    quarter of them at most), then
    whole passes over ``texts`` until ``seconds`` have gone (at least one)."""
    from recitation.models.local import LocalModel

    lm = LocalModel(str(model_dir), device=device, dtype="bfloat16")
    lm.score_sync(list(texts[: max(1, min(64, len(texts) // 4))]))
    lengths: list[int] = []
    passes, start = 0, time.perf_counter()
    while passes < 1 or (time.perf_counter() - start < seconds and passes < max_passes):
        out = lm.score_sync(list(texts))
        synchronize(device)
        lengths += [len(s.token_ids or ()) for s in out]
        passes += 1
    wall = time.perf_counter() - start
    return {"texts": len(texts), "passes": passes, "seconds": wall,
            "tokens": sum(lengths), "tokens_per_s": sum(lengths) / wall,
            "batch_texts": lm.score_batch_size, "token_budget": lm.token_budget,
            "lengths": lengths}


def forward_only(model_dir: Path, texts: Sequence[str], device: str) -> dict[str, Any]:
    """The bfloat16 model's forward pass alone over ``texts`` (longest first, as many at a
    time as our scoring takes: its batch size, within its token budget; left-padded, logits
    of every position as scoring takes them)."""
    import torch

    from recitation.models.local import LocalModel

    lm = LocalModel(str(model_dir), device=device, dtype="bfloat16")
    loaded = lm.load()
    model, tok = loaded.model, loaded.tokenizer
    rows = sorted((tok(t)["input_ids"] for t in texts), key=len, reverse=True)
    batch = min(lm.score_batch_size, (lm.token_budget or 1 << 62) // len(rows[0])) or 1
    batches = [tok.pad({"input_ids": rows[i:i + batch]}, padding=True, return_tensors="pt")
               for i in range(0, len(rows), batch)]
    with loaded.lock, torch.inference_mode():
        _forward(model, batches[0], device)
        synchronize(device)
        start = time.perf_counter()
        for enc in batches:
            _forward(model, enc, device)
        synchronize(device)
    wall = time.perf_counter() - start
    tokens = sum(len(r) for r in rows)
    return {"seconds": wall, "tokens": tokens, "tokens_per_s": tokens / wall,
            "batch_texts": batch, "lengths": [len(r) for r in rows]}


def _forward(model: Any, enc: Any, device: str) -> Any:
    ids, mask = enc["input_ids"].to(device), enc["attention_mask"].to(device)
    pos = (mask.long().cumsum(-1) - 1).clamp(min=0)
    return model(input_ids=ids, attention_mask=mask, position_ids=pos).logits


def naive_loop(model_dir: Path, texts: Sequence[str], device: str,
               seconds: float) -> dict[str, Any]:
    """One text at a time in float32 (module docstring), for at most ``seconds`` (at least
    two texts after one of warm-up)."""
    import torch
    import transformers

    tok = transformers.AutoTokenizer.from_pretrained(model_dir, local_files_only=True)
    model: Any = transformers.AutoModelForCausalLM.from_pretrained(
        model_dir, local_files_only=True, dtype=torch.float32)
    model = model.to(device).eval()

    def score(text: str) -> int:
        ids = tok(text, return_tensors="pt")["input_ids"].to(device)
        logp = torch.log_softmax(model(input_ids=ids).logits[0, :-1].float(), dim=-1)
        logp.gather(-1, ids[0, 1:].unsqueeze(-1)).squeeze(-1).cpu()
        return int(ids.shape[1])

    with torch.inference_mode():
        score(texts[0])
        synchronize(device)
        lengths: list[int] = []
        start = time.perf_counter()
        for text in texts[1:]:
            lengths.append(score(text))
            if len(lengths) >= 2 and time.perf_counter() - start >= seconds:
                break
        synchronize(device)
    wall = time.perf_counter() - start
    return {"texts": len(lengths), "seconds": wall, "tokens": sum(lengths),
            "tokens_per_s": sum(lengths) / wall, "lengths": lengths}


def share(arch: Any, run: dict[str, Any], peak: dict[str, Any]) -> float:
    """The FLOP/s ``run`` reached (``arch.forward_flops`` of its texts' lengths over its
    time) as a share of ``peak``'s."""
    rate: float = arch.forward_flops(run["lengths"]) / run["seconds"]
    run["flops_per_s"] = rate
    return rate / float(peak["flops_per_s"])
