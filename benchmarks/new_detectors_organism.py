"""Gap-K% (white-box) and SaMIA (black-box) on the quick organism: its 15 training passages
against its 15 held-out passages of the same novels, with the base model (epoch 0: the same
passages, never fine-tuned on) beside the fine-tuned one (epoch 2), through ``recitation
detect``; LOSS and Min-K%++ for comparison. SaMIA's continuations are capped at 64 new
tokens (the passages are 64 tokens; the authors' 1,024 is about 25 minutes per model on 2
cores); 10 draws each, as the authors.

    RECITATION_DATA=../shared/data .venv/bin/python benchmarks/new_detectors_organism.py
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from recitation.organism.build import build_organism
from recitation.organism.config import make_config
from recitation.organism.data import load_split
from recitation.runs.runner import stored_report

SCORES = ("loss", "min_k_pp_20", "gap_k_20", "samia", "samia_zlib")


def write(path: Path, texts: list[str]) -> str:
    path.write_text("".join(json.dumps({"id": i, "text": t}) + "\n"
                            for i, t in enumerate(texts)), encoding="utf-8")
    return str(path)


def detect(spec: str, members: str, controls: str, runs: Path) -> tuple[dict[str, object], float]:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "recitation.cli", "detect", "--members", members,
                    "--controls", controls, "--model", spec, "--detectors", "whitebox",
                    "samia", "--samia-max-tokens", "64", "--passage-words",
                    "100", "--bootstrap", "1000", "--runs-dir", str(runs)],
                   check=True, capture_output=True, text=True)
    (run,) = list(runs.iterdir())
    return stored_report(run) or {}, time.perf_counter() - t0


def main() -> None:
    org = build_organism(make_config(quick=True))
    split = load_split(org.directory / "split.json")
    with tempfile.TemporaryDirectory() as tmp:
        members = write(Path(tmp) / "members.jsonl", [p.text for p in split if p.member])
        held = write(Path(tmp) / "held.jsonl", [p.text for p in split if not p.member])
        print("| model | " + " | ".join(f"`{s}` AUC [95% CI]" for s in SCORES) + " | wall |")
        print("|---|" + "---|" * (len(SCORES) + 1))
        for spec in ("organism:quick:epoch0", "organism:quick:epoch2"):
            report, wall = detect(spec, members, held, Path(tmp) / spec.replace(":", "-"))
            cells = []
            for s in SCORES:
                lab = (report.get("detectors", {}).get(s) or {}).get("labelled") or {}
                ci = lab.get("auc_ci") or [None, None]
                cells.append(f"{lab['auc']:.2f} [{ci[0]:.2f}, {ci[1]:.2f}]" if lab else "-")
            print(f"| {spec} | " + " | ".join(cells) + f" | {wall:.0f} s |", flush=True)


if __name__ == "__main__":
    main()
