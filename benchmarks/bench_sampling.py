"""The local backend's sampling step: draws among the kept tokens only (``_decode._pick``, now)
against the previous step (the baseline: a ``torch.multinomial`` draw over the whole
vocabulary with the cut tokens zeroed), both on the same loaded model in one process.

Generation: ``--gen`` sampled 64-token continuations (temperature 1, top-k 50: SaMIA's
setting) of passages' first halves in one batch, as the lowfpr preset decodes them, plus the
same rows at temperature 0.3 with no cut (PEARL's setting). Each arm runs ``--repeats``
times, alternating; the best time is reported. Both steps draw from the same distribution
(tests/models/test_decode_sampling.py checks ours against it by chi-square); a seed gives a
different draw in each.

    .venv/bin/python benchmarks/bench_sampling.py [--organism lowfpr] [--dtype bfloat16]
"""

from __future__ import annotations

import argparse
import json
import platform
import time

import torch

from recitation.models import _decode
from recitation.models.base import GenerationRequest
from recitation.models.local import LocalModel
from recitation.organism.data import load_split
from recitation.organism.paths import organisms_root

CURRENT = _decode._pick


def previous_pick(logits: torch.Tensor, req: GenerationRequest,
                  gen: torch.Generator | None) -> int:
    """The sampling step before this change, verbatim: the baseline."""
    if req.temperature == 0:
        return int(torch.argmax(logits).item())
    probs = torch.softmax(logits / req.temperature, dim=-1)
    if req.top_k is not None and req.top_k < probs.shape[-1]:
        cut = torch.topk(probs, req.top_k).values[-1]
        probs = torch.where(probs >= cut, probs, torch.zeros_like(probs))
        probs = probs / probs.sum()
    if req.top_p < 1.0:
        sorted_p, order = torch.sort(probs, descending=True)
        keep = torch.cumsum(sorted_p, dim=-1) - sorted_p < req.top_p
        probs = torch.zeros_like(probs).scatter(0, order[keep], sorted_p[keep])
    return int(torch.multinomial(probs, 1, generator=gen).item())


def _timed(model: LocalModel, reqs: list[GenerationRequest], pick: object) -> tuple[float, int]:
    _decode._pick = pick  # type: ignore[assignment]
    try:
        t0 = time.perf_counter()
        outs = model.generate_sync(reqs)
        return time.perf_counter() - t0, sum(o.usage.output_tokens for o in outs)
    finally:
        _decode._pick = CURRENT


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--organism", default="lowfpr")
    ap.add_argument("--epoch", type=int, default=1)
    ap.add_argument("--dtype", default="bfloat16")
    ap.add_argument("--gen", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args()
    passages = load_split(organisms_root() / args.organism / "split.json")[: args.gen]
    model = LocalModel(f"organism:{args.organism}:epoch{args.epoch}", dtype=args.dtype)
    model.score_sync([passages[0].text])  # loads the weights
    summary: dict[str, object] = {"machine": platform.processor() or platform.machine(),
                                  "dtype": args.dtype, "continuations": len(passages)}
    for name, kw in (("samia", {"temperature": 1.0, "top_k": 50}),
                     ("pearl", {"temperature": 0.3})):
        reqs = [GenerationRequest(prompt=p.text[: len(p.text) // 2], max_tokens=64, seed=i,
                                  **kw) for i, p in enumerate(passages)]  # type: ignore[arg-type]
        best: dict[str, float] = {}
        for _ in range(args.repeats):
            for arm, pick in (("previous", previous_pick), ("current", CURRENT)):
                t, ntok = _timed(model, reqs, pick)
                best[arm] = min(best.get(arm, t), t)
                summary[f"{name}_{arm}_tokens"] = ntok
        summary |= {f"{name}_{k}_s": round(v, 2) for k, v in best.items()}
        summary[f"{name}_speedup"] = round(best["previous"] / best["current"], 2)
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
