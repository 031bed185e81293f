"""CAMIA's signal directions, measured once on a development set (the quick organism at
epoch 2: its members and non-members), with the authors' rule (run_ours_train_lr.py): a group
of signals is negated when its mean over members (every value of every signal of the group)
exceeds its mean over non-members. Prints the table kept as
``recitation.detect.camia.DIRECTIONS``, each group's two means, and whether the kept table
agrees.

    .venv/bin/python benchmarks/camia_directions.py [--organism quick] [--epoch 2]
"""

from __future__ import annotations

import argparse
import asyncio
import json

from recitation.detect.camia import DIRECTIONS, signals_of
from recitation.detect.camia_signals import group_of, repeated
from recitation.models.local import LocalModel
from recitation.organism.data import load_split
from recitation.organism.paths import organisms_root


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--organism", default="quick")
    ap.add_argument("--epoch", type=int, default=2)
    args = ap.parse_args()
    passages = load_split(organisms_root() / args.organism / "split.json")
    model = LocalModel(f"organism:{args.organism}:epoch{args.epoch}")
    texts = [p.text for p in passages]
    got = asyncio.run(model.score(texts + [repeated(t) for t in texts]))
    sums: dict[str, dict[bool, list[float]]] = {}
    skipped = 0
    for p, plain, rep in zip(passages, got[: len(texts)], got[len(texts):], strict=True):
        try:
            found_signals = signals_of(plain, rep)
        except ValueError:
            skipped += 1
            continue
        for k, v in found_signals.items():
            sums.setdefault(group_of(k), {True: [], False: []})[p.dose > 0].append(v)
    found = {}
    for g, by in sums.items():
        m, n = sum(by[True]) / len(by[True]), sum(by[False]) / len(by[False])
        found[g] = -1 if m > n else 1
        print(f"{g:20s} members {m:12.5f} non-members {n:12.5f} -> {found[g]:+d}")
    print(json.dumps(found), f"({skipped} passages without signals)")
    print("agrees with DIRECTIONS" if found == DIRECTIONS else "DIFFERS from DIRECTIONS")


if __name__ == "__main__":
    main()
