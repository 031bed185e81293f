"""The blind baseline (``recitation.detect.blind``) on every built-in control set, the
organisms' member/non-member splits and a made-up mismatch (King James verses against two
novels): its AUC with the interval, whether it separates the sets and the telling n-grams.

    .venv/bin/python benchmarks/blind_baseline.py [--no-docs]

Needs the reference data (``RECITATION_DATA``, PDNC) and the embedded model's tokenizer
(the organisms' splits are cut in its tokens; no weights are trained). Writes its records
to ``benchmarks/blind_baseline.json`` and the table between the ``blind-baseline`` markers
of docs/detection.md from them.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from doc_markers import write_between  # benchmarks/ is on sys.path when run as a script

from recitation.detect.blind import blind_baseline

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("RECITATION_DATA", ROOT.parent / "shared" / "data"))
DOCS = ROOT / "docs" / "detection.md"
RECORDS = ROOT / "benchmarks" / "blind_baseline.json"
START, END = "<!-- blind-baseline:start -->", "<!-- blind-baseline:end -->"
BUILTIN = (("kjv:famous", "builtin:kjv-devotional"), ("kjv:famous", "builtin:kjv-pastiche"),
           ("kjv:famous-long", "builtin:kjv-devotional-long"),
           ("humaneval:0-19", "builtin:fresh-code"))


def builtin_case(members: str, controls: str) -> tuple[str, str, list[str], list[str]]:
    from recitation.detect.samples import load_samples

    m = [s.text for s in load_samples(members, "member")]
    c = [s.text for s in load_samples(controls, "control")]
    return f"`{members}`", f"`{controls}`", m, c


def organism_case(preset: str) -> tuple[str, str, list[str], list[str]]:
    import transformers

    from recitation.models.local import LocalModel
    from recitation.organism.build import token_offsets
    from recitation.organism.config import LOWFPR, make_config
    from recitation.organism.data import load_novels, split_passages

    cfg = LOWFPR if preset == "lowfpr" else make_config(quick=True)
    tok = transformers.AutoTokenizer.from_pretrained(
        LocalModel(cfg.base).transformers_dir(), local_files_only=True)
    ps = split_passages(cfg, load_novels(cfg), lambda t: token_offsets(tok, t),
                        lambda t: len(tok(t, add_special_tokens=True)["input_ids"]))
    return (f"the {preset} organism's members", "its non-members",
            [p.text for p in ps if p.member], [p.text for p in ps if not p.member])


def _passages(words: list[str], n: int, seed: int) -> list[str]:
    """``n`` passages of 50 words at seeded random starts (as tests/audit/test_audit_blind)."""
    rng = random.Random(seed)
    return [" ".join(words[s:s + 50]) for s in (rng.randrange(len(words) - 50)
                                                 for _ in range(n))]


def mismatch_case() -> tuple[str, str, list[str], list[str]]:
    from recitation.corpus.kjv import kjv_verses
    from recitation.corpus.pdnc import load_pdnc_novel

    kjv = " ".join(kjv_verses().values()).split()
    novels = [w for n in ("NorthangerAbbey", "Emma")
              for w in load_pdnc_novel(DATA / "pdnc" / n).text.split()]
    return ("KJV passages (50 words)", "passages of *Northanger Abbey* and *Emma*",
            _passages(kjv, 12, 0), _passages(novels, 16, 1))


def cases() -> list[Callable[[], tuple[str, str, list[str], list[str]]]]:
    return ([lambda a=a, b=b: builtin_case(a, b) for a, b in BUILTIN]
            + [lambda: organism_case("lowfpr"), lambda: organism_case("quick"),
               mismatch_case])


def measure(seed: int) -> list[dict[str, Any]]:
    out = []
    for case in cases():
        text_name, control_name, text, controls = case()
        t0 = time.perf_counter()
        got = blind_baseline(text, controls, seed=seed)
        assert got is not None
        out.append({"text": text_name, "controls": control_name, "seed": seed,
                    "seconds": round(time.perf_counter() - t0, 2)} | got)
        print(f"{text_name} / {control_name}: AUC {got['auc']:.3f} {got['auc_ci']}", flush=True)
    return out


def table(records: list[dict[str, Any]]) -> str:
    rows = ["| text | controls | blind AUC [95%] | separates | telling n-grams |",
            "|---|---|---|---|---|"]
    for r in records:
        lo, hi = r["auc_ci"]
        words = ", ".join(w["ngram"] for w in r["words"])
        rows.append(f"| {r['text']} ({r['n_text']}) | {r['controls']} ({r['n_controls']}) | "
                    f"{r['auc']:.2f} [{lo:.2f}, {hi:.2f}] | "
                    f"{'yes' if r['separates'] else 'no'} | {words} |")
    return "\n".join(rows)


def write_docs(records: list[dict[str, Any]]) -> None:
    note = (f"Written by `benchmarks/blind_baseline.py` on {datetime.date.today().isoformat()} "
            f"from its records (`benchmarks/blind_baseline.json`; seed {records[0]['seed']}, "
            f"1,000 bootstrap resamples, threshold {records[0]['threshold']:g}):")
    write_between(DOCS, START, END, f"{note}\n\n{table(records)}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-docs", action="store_true", help="print the table only")
    args = p.parse_args()
    records = measure(args.seed)
    RECORDS.write_text(json.dumps(records, indent=1) + "\n", encoding="utf-8")
    print(table(records))
    if not args.no_docs:
        write_docs(records)


if __name__ == "__main__":
    main()
