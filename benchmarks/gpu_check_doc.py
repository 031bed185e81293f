"""docs/benchmarks.md's GPU check tables, from the kept records of its runs
(benchmarks/gpu_check/: ``index.json`` lists the full-mode runs; ``h200-3-ab-stats.json`` is
the A/B of ``benchmarks/gpu_check_ab.py``). Nothing is measured here: the records were
written by ``scripts/gpu_check.py --json`` on the GPU machine.

    .venv/bin/python benchmarks/gpu_check_doc.py          # rewrites the tables in the doc
    .venv/bin/python benchmarks/gpu_check_doc.py --check  # exit 1 if the doc differs
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from recitation.bench.markers import write_between

ROOT = Path(__file__).resolve().parents[1]
RECORDS = ROOT / "benchmarks" / "gpu_check"
DOC = ROOT / "docs" / "benchmarks.md"
START, END = "<!-- gpu-check:start -->", "<!-- gpu-check:end -->"


def load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((RECORDS / name).read_text(encoding="utf-8"))
    return data


def run_row(n: int, entry: dict[str, Any], rec: dict[str, Any]) -> str:
    t, env = rec["throughput"], rec["environment"]
    ours, fwd, naive = t["ours"], t["forward_only"], t["naive"]
    peaks = t["peak_bfloat16"]["flops_per_s"] / t["peak_float32"]["flops_per_s"]
    worst = max(v["float32"]["worst"] for v in rec["correctness"].values())
    failed = [c["name"].split(": ", 1)[-1] for c in rec["checks"] if c["verdict"] == "FAIL"]
    return (f"| {n} | {entry['date']} | {entry['code']} | {ours['tokens_per_s'] / 1e3:.1f} "
            f"| {ours['share_of_peak']:.1%} | {fwd['share_of_peak']:.1%} "
            f"| {naive['tokens_per_s'] / 1e3:.1f} | {t['ratio_to_naive']:.1f}x ({peaks:.1f}x) "
            f"| {worst:.1e} | {', '.join(failed) or 'none'} | {env['torch']} |")


def runs_table() -> list[str]:
    rows = ["| run | date | code | ours, ktok/s | ours, share of the bf16 peak | forward "
            "alone, share | naive, ktok/s | ours / naive (peaks' ratio) | worst float32 "
            "difference vs CPU | goals failed | torch |",
            "|---|---|---|---|---|---|---|---|---|---|---|"]
    index = json.loads((RECORDS / "index.json").read_text(encoding="utf-8"))
    for n, entry in enumerate(index, 1):
        rows.append(run_row(n, entry, load(entry["file"])))
    return rows


def ab_table() -> list[str]:
    ab = load("h200-3-ab-stats.json")
    fwd = ab["forward"]["min_s"]
    names = {"forward": "the forward pass alone", "old": "28f2f3f: statistics row by row",
             "new_eager": "the batch's statistics together, eager",
             "new": "the batch's statistics together, compiled (default on CUDA)"}
    rows = [f"One batch: 64 texts, {ab['tokens']:,} tokens; best of 5 calls after a warm-up "
            f"(the first compiled call, with its compile: {ab['first_compiled_call_s']:.1f} s).",
            "", "| loop | seconds (best / median) | ktok/s | beyond the forward pass, ms |",
            "|---|---|---|---|"]
    for key, label in names.items():
        r = ab[key]
        extra = "" if key == "forward" else f"{(r['min_s'] - fwd) * 1e3:.0f}"
        rows.append(f"| {label} | {r['min_s']:.3f} / {r['median_s']:.3f} "
                    f"| {r['tok_per_s'] / 1e3:.1f} | {extra} |")
    d = ab["old_vs_new"]
    rows += ["", f"Old against new (compiled), largest difference: log p {d['logprobs']:.1e}, "
             f"mean {d['mean_logprob']:.1e}, std {d['std_logprob']:.1e}, top "
             f"{d['top_logprob']:.1e}; ranks equal: {d['rank_equal_share']:.0%}; same "
             f"tokens: {d['same_tokens']}."]
    return rows


def body() -> str:
    return "\n".join(["Full mode on one NVIDIA H200 (`scripts/gpu_check.sh --device cuda "
                      "--json ...`), records in benchmarks/gpu_check/:", "", *runs_table(),
                      "", *ab_table()])


def main(argv: list[str]) -> int:
    if "--check" in argv:  # the doc as it is against the doc rewritten from the records
        with tempfile.TemporaryDirectory() as tmp:
            copy = Path(tmp) / DOC.name
            shutil.copyfile(DOC, copy)
            write_between(copy, START, END, body())
            return 0 if copy.read_text(encoding="utf-8") == DOC.read_text(encoding="utf-8") \
                else 1
    write_between(DOC, START, END, body())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
