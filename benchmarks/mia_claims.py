"""The claims benchmark's records into the repository and its tables into the docs.

    recitation bench claims --out bench/claims            # measure (resumes; hours on 2 cores)
    .venv/bin/python benchmarks/mia_claims.py --out bench/claims   # keep its records, write docs
    .venv/bin/python benchmarks/mia_claims.py --from-records       # docs from the kept records
    .venv/bin/python benchmarks/mia_claims.py --out bench/claims --keep-only  # a run part-way

Keeps ``OUT/claims.json`` as ``benchmarks/mia_claims.json`` and, for the test that recomputes
a threshold, a paired test and a bootstrap interval from them
(tests/bench/test_claims_records.py), the scores of the two methods of the first pair
compared at 1% FPR on every member, per test organism, in ``benchmarks/mia_claims_records.npz``
(dose, calibration half, the two scores; nothing else). The tables between the
``mia-claims`` markers of docs/leaderboard.md are written from ``benchmarks/mia_claims.json``.
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
from doc_markers import write_between  # benchmarks/ is on sys.path when run as a script

from recitation.bench.claims_run import RECORDS, load_scores
from recitation.bench.claims_tables import markdown

ROOT = Path(__file__).resolve().parents[1]
KEPT = ROOT / "benchmarks" / "mia_claims.json"
SCORES = ROOT / "benchmarks" / "mia_claims_records.npz"
DOCS = ROOT / "docs" / "leaderboard.md"
START, END = "<!-- mia-claims:start -->", "<!-- mia-claims:end -->"


def the_pair(res: dict[str, Any]) -> dict[str, Any]:
    """The first pair compared at 1% FPR on every member (the records' test recomputes it)."""
    return next(p for p in res["pairs"] if p["alpha"] == 0.01 and p["dose"] == "all")


def keep(out: Path) -> None:
    """Copy the run's records and the pair's scores into benchmarks/."""
    res = json.loads((out / "claims.json").read_text(encoding="utf-8"))
    shutil.copyfile(out / "claims.json", KEPT)
    pair = the_pair(res)
    arrays: dict[str, Any] = {"methods": np.array([pair["a"], pair["b"]])}
    names = [o["name"] for o in res["organisms"] if not o["dev"]]
    arrays["organisms"] = np.array(names)
    for name in names:
        org = load_scores(out / name / RECORDS)
        ids = [p["id"] for p in org.passages]
        arrays[f"{name}/dose"] = np.array([p["dose"] for p in org.passages], dtype=np.int8)
        arrays[f"{name}/calibration"] = np.array([p["calibration"] for p in org.passages])
        for m in (pair["a"], pair["b"]):
            arrays[f"{name}/{m}"] = np.array([org.scores[m].get(i, np.nan) for i in ids])
    np.savez_compressed(SCORES, **arrays)
    print(f"kept {KEPT} and {SCORES} (pair {pair['a']} / {pair['b']})")


def write_docs() -> None:
    res = json.loads(KEPT.read_text(encoding="utf-8"))
    write_between(DOCS, START, END, "Written by `benchmarks/mia_claims.py` from "
                  "`benchmarks/mia_claims.json` (the records of `recitation bench claims`).\n\n"
                  + markdown(res))
    print(f"wrote {DOCS}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=Path("bench") / "claims",
                    help="the output directory of `recitation bench claims`")
    ap.add_argument("--from-records", action="store_true",
                    help="only rewrite the docs from benchmarks/mia_claims.json")
    ap.add_argument("--keep-only", action="store_true",
                    help="keep the records, leave the docs (a run still part-way: its "
                    "tables rest on fewer organisms than configured, so nothing is published)")
    args = ap.parse_args()
    if not args.from_records:
        keep(args.out)
    if not args.keep_only:
        write_docs()


if __name__ == "__main__":
    main()
