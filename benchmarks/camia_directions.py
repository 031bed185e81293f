"""CAMIA's signal directions, measured once on a development set (the quick organism at
epoch 2: its members and non-members), with the authors' rule (run_ours_train_lr.py): a
group of signals is negated when its mean over members (every value of every signal of the
group) exceeds its mean over non-members. Prints the table kept as
``recitation.detect.camia.DIRECTIONS``, each group's two means, and whether the kept table
agrees.

``--keys`` applies the rule per key instead, as the authors do (their 25 keys:
``recitation.detect.camia_signals.KEYS``), and ``--out FILE`` writes those signs as the JSON
object ``recitation detect --camia-signs FILE`` reads. Measure them on a development organism
disjoint from the one that is scored.

    .venv/bin/python benchmarks/camia_directions.py [--organism quick] [--epoch 2]
        [--keys [--out signs.json]]
"""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path

from recitation.detect.camia import DIRECTIONS, check_signs, labelled_signals, signs_by_label
from recitation.detect.camia_signals import group_of, key_of
from recitation.models.local import LocalModel
from recitation.organism.data import load_split
from recitation.organism.paths import organisms_root


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--organism", default="quick")
    ap.add_argument("--epoch", type=int, default=2)
    ap.add_argument("--keys", action="store_true", help="one sign per key (the authors')")
    ap.add_argument("--out", type=Path, default=None, help="with --keys: write the signs")
    args = ap.parse_args()
    passages = load_split(organisms_root() / args.organism / "split.json")
    model = LocalModel(f"organism:{args.organism}:epoch{args.epoch}")
    texts = [p.text for p in passages]
    signals, members = asyncio.run(
        labelled_signals(model, [(p.text, p.dose > 0) for p in passages]))
    by = key_of if args.keys else group_of
    found = signs_by_label(signals, members, per_key=args.keys)
    for g, sign in found.items():
        m = [v for s, mem in zip(signals, members, strict=True) if mem
             for k, v in s.items() if by(k) == g]
        n = [v for s, mem in zip(signals, members, strict=True) if not mem
             for k, v in s.items() if by(k) == g]
        print(f"{g:24s} members {sum(m) / len(m):12.5f} non-members "
              f"{sum(n) / len(n):12.5f} -> {sign:+d}")
    print(json.dumps(found), f"({len(texts) - len(signals)} passages without signals)")
    if args.keys:
        signs = check_signs(found)
        same = all(signs[k] == DIRECTIONS[group_of(k)] for k in signs)
        print("every key as its group in DIRECTIONS" if same else
              "some keys DIFFER from their group in DIRECTIONS")
        if args.out is not None:
            args.out.write_text(json.dumps(signs, indent=1) + "\n", encoding="utf-8")
    else:
        print("agrees with DIRECTIONS" if found == DIRECTIONS else "DIFFERS from DIRECTIONS")


if __name__ == "__main__":
    main()
