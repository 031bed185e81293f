"""The claims benchmark's analysis into the repository and its tables into the docs.

    recitation bench claims --out bench/claims --keep benchmarks/mia_claims   # measure (hours)
    .venv/bin/python benchmarks/mia_claims.py --out bench/claims   # keep its analysis, write docs
    .venv/bin/python benchmarks/mia_claims.py --from-records       # docs from the kept analysis
    .venv/bin/python benchmarks/mia_claims.py --out bench/claims --keep-only  # a run part-way

``--keep benchmarks/mia_claims`` keeps every organism's records (gzip: each passage's dose,
calibration half and every score) in the repository as they are written, so a run that
spans sessions resumes on a fresh machine at the first unit missing, and
tests/bench/test_claims_records.py recomputes a threshold, a paired test and a bootstrap
interval from them. This script keeps the analysis, ``OUT/claims.json``, as
``benchmarks/mia_claims.json``; the tables between the ``mia-claims`` markers of
docs/leaderboard.md are written from it.
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

from doc_markers import write_between  # benchmarks/ is on sys.path when run as a script

from recitation.bench.claims_tables import markdown

ROOT = Path(__file__).resolve().parents[1]
KEPT = ROOT / "benchmarks" / "mia_claims.json"
DOCS = ROOT / "docs" / "leaderboard.md"
START, END = "<!-- mia-claims:start -->", "<!-- mia-claims:end -->"


def keep(out: Path) -> None:
    """Copy the run's analysis into benchmarks/."""
    json.loads((out / "claims.json").read_text(encoding="utf-8"))  # a readable analysis
    shutil.copyfile(out / "claims.json", KEPT)
    print(f"kept {KEPT}")


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
                    help="keep the analysis, leave the docs (a run still part-way: its "
                    "tables rest on fewer organisms than configured, so nothing is published)")
    args = ap.parse_args()
    if not args.from_records:
        keep(args.out)
    if not args.keep_only:
        write_docs()


if __name__ == "__main__":
    main()
