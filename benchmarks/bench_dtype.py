"""The local backend in bfloat16 against float32 (the baseline), one process, one organism.

Scoring: the organism's first ``--texts`` passages, members and non-members, in batches of 16
(the benchmark's scoring batch); generation: ``--gen`` sampled 64-token continuations of
passages' first halves in one batch of 64 (the lowfpr preset's generation batch). Both arms
on the same checkpoint, float32 first; the speed ratio is what we report. Agreement: the
Spearman correlation of the two arms' per-text LOSS (scipy) and each arm's ROC AUC of LOSS
for members against non-members (scikit-learn).

    .venv/bin/python benchmarks/bench_dtype.py [--organism lowfpr] [--epoch 1] [--texts 400]
"""

from __future__ import annotations

import argparse
import json
import platform
import time

from recitation.models.base import GenerationRequest
from recitation.models.local import LocalModel
from recitation.organism.data import load_split
from recitation.organism.paths import organisms_root


def _arm(spec: str, dtype: str, texts: list[str], gen: list[GenerationRequest]
         ) -> tuple[list[float], float, float, int]:
    model = LocalModel(spec, dtype=dtype, score_batch_size=16)
    model.score_sync(texts[:16])  # warm-up (loads the weights)
    t0 = time.perf_counter()
    scores = model.score_sync(texts)
    t_score = time.perf_counter() - t0
    t0 = time.perf_counter()
    outs = model.generate_sync(gen)
    t_gen = time.perf_counter() - t0
    loss = [-sum(s.logprobs) / len(s.logprobs) for s in scores]
    return loss, t_score, t_gen, sum(o.usage.output_tokens for o in outs)


def main() -> None:
    from scipy.stats import spearmanr
    from sklearn.metrics import roc_auc_score

    ap = argparse.ArgumentParser()
    ap.add_argument("--organism", default="lowfpr")
    ap.add_argument("--epoch", type=int, default=1)
    ap.add_argument("--texts", type=int, default=400)
    ap.add_argument("--gen", type=int, default=64)
    args = ap.parse_args()
    passages = load_split(organisms_root() / args.organism / "split.json")
    members = [p for p in passages if p.dose > 0][: args.texts // 2]
    others = [p for p in passages if p.dose == 0][: args.texts // 2]
    texts = [p.text for p in members + others]
    labels = [1] * len(members) + [0] * len(others)
    gen = [GenerationRequest(prompt=t[: len(t) // 2], max_tokens=64, temperature=1.0,
                             top_k=50, seed=i) for i, t in enumerate(texts[: args.gen])]
    spec = f"organism:{args.organism}:epoch{args.epoch}"
    res = {}
    for dtype in ("float32", "bfloat16"):
        loss, ts, tg, ntok = _arm(spec, dtype, texts, gen)
        res[dtype] = {"score_s": round(ts, 2), "gen_s": round(tg, 2), "gen_tokens": ntok,
                      "auc_loss": round(float(roc_auc_score(labels, [-v for v in loss])), 4),
                      "loss": loss}
    a, b = res["float32"], res["bfloat16"]
    summary = {
        "machine": platform.processor() or platform.machine(), "model": spec,
        "texts": len(texts), "continuations": len(gen),
        "score_speedup": round(a["score_s"] / b["score_s"], 2),
        "gen_speedup": round(a["gen_s"] / b["gen_s"], 2),
        "spearman_loss": round(float(spearmanr(a["loss"], b["loss"]).statistic), 5),
        "max_abs_loss_diff": round(max(abs(x - y) for x, y in zip(a["loss"], b["loss"],
                                                                  strict=True)), 4),
        **{f"{k}_{d}": res[d][k] for d in res for k in ("score_s", "gen_s", "gen_tokens",
                                                         "auc_loss")}}
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
