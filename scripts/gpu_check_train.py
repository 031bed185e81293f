"""The GPU check's organism training steps and generation batch, through our code.

- **Training**: a private float32 copy (``LocalModel.load_private``, as the organism builder
  takes it), ``recitation.organism.train``'s ``deterministic``, ``make_optimizer`` and
  ``train_epoch`` (bfloat16 autocast on CUDA) over a few passages for a few epochs. Passes
  when every epoch's loss is finite and the last is below the first (the same passages are
  seen again: a model that learns lowers their loss).
- **Generation**: ``LocalModel.generate_sync`` on a batch of prompts, half greedy, half sampled
  (seeded, top-k 50), twice. Passes when every row gives tokens and ends for a reason the
  contract knows; whether the two runs gave the same text is reported (a seed draws the same
  way on every device, so they should).
"""

from __future__ import annotations

import hashlib
import math
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def passages(texts: Sequence[str]) -> list[Any]:
    """Member passages of ``texts``, each seen once an epoch."""
    from recitation.organism.data import Passage

    return [Passage(id=f"p{i}", novel="gpu-check", start=0, end=len(t), n_tokens=0,
                    sha256=hashlib.sha256(t.encode()).hexdigest(), member=True, dose=1,
                    text=t) for i, t in enumerate(texts)]


def training(model_dir: Path, texts: Sequence[str], device: str, *, epochs: int,
             batch_size: int, seed: int = 0, learning_rate: float = 1e-4) -> dict[str, Any]:
    """The training phase (module docstring)."""
    import torch

    from recitation.models.local import LocalModel
    from recitation.organism import train

    base = LocalModel(str(model_dir), device=device, dtype="float32")
    loaded = base.load_private()
    model, tok = loaded.model, loaded.tokenizer
    items = passages(texts)
    losses, seconds = [], []
    with train.deterministic(seed, torch.get_num_threads()):
        optimizer = train.make_optimizer(model, learning_rate)
        for epoch in range(1, epochs + 1):
            start = time.perf_counter()
            losses.append(train.train_epoch(model, optimizer, tok, items, seed=seed,
                                            epoch=epoch, batch_size=batch_size))
            if device.startswith("cuda"):
                torch.cuda.synchronize(device)
            seconds.append(time.perf_counter() - start)
    tokens = sum(len(tok(t)["input_ids"]) for t in texts)
    steps = epochs * math.ceil(len(texts) / batch_size)
    passed = all(math.isfinite(x) for x in losses) and losses[-1] < losses[0]
    del model, optimizer
    return {"passed": passed, "losses": losses, "epoch_seconds": seconds, "steps": steps,
            "batch_size": batch_size, "passages": len(texts),
            "autocast": train.autocast_name(base.device),
            "tokens_per_s": epochs * tokens / sum(seconds)}


def generation(model_dir: Path, prompts: Sequence[str], device: str,
               max_tokens: int) -> dict[str, Any]:
    """The generation phase (module docstring), in the device's default dtype."""
    from recitation.models.base import GenerationRequest
    from recitation.models.local import LocalModel

    lm = LocalModel(str(model_dir), device=device)
    requests = [GenerationRequest(prompt=p, max_tokens=max_tokens,
                                  temperature=0.0 if i % 2 == 0 else 1.0,
                                  seed=None if i % 2 == 0 else 1000 + i,
                                  top_k=None if i % 2 == 0 else 50)
                for i, p in enumerate(prompts)]
    first = lm.generate_sync(requests)
    start = time.perf_counter()
    second = lm.generate_sync(requests)
    wall = time.perf_counter() - start
    made = [g.usage.output_tokens for g in second]
    reasons = sorted({g.finish_reason for g in first + second})
    passed = all(n > 0 for n in made) and set(reasons) <= {"length", "stop"}
    return {"passed": passed, "rows": len(requests), "dtype": lm.dtype,
            "max_tokens": max_tokens, "tokens": sum(made), "seconds": wall,
            "tokens_per_s": sum(made) / wall, "finish_reasons": reasons,
            "repeatable": [g.text for g in first] == [g.text for g in second]}
