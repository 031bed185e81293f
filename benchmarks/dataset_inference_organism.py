"""Dataset inference (report section "Dataset inference", metrics/dataset_inference.py)
measured on the quick organism: its 15 training passages against its 15 held-out passages of
the same novels, at epochs 0 (the base model), 1 and 2; then its false-positive rate: 40 + 40
passages of the same novels that no organism passage overlaps (benchmarks/null_fpr.py's
draw), scored once by the epoch-2 organism, split at random into two sets of non-members 100
times, each split tested at 5%.

    RECITATION_DATA=../shared/data .venv/bin/python benchmarks/dataset_inference_organism.py
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from null_fpr import unseen_passages  # type: ignore[import-not-found]

from recitation.metrics.dataset_inference import dataset_inference
from recitation.records import DetectRecord
from recitation.report.inference import _features
from recitation.runs.audits import load_manifest
from recitation.runs.store import RunStore


def audit(text: str, controls: str, spec: str, runs: Path) -> Path:
    before = set(runs.iterdir()) if runs.exists() else set()
    subprocess.run([sys.executable, "-m", "recitation.cli", "audit", "--text", text,
                    "--controls", controls, "--model", spec, "--passages", "0",
                    "--n-controls", "0", "--passage-words", "64", "--max-new-tokens", "40",
                    "--recap-passages", "0", "--no-pearl", "--bootstrap", "0",
                    "--runs-dir", str(runs)], check=True, capture_output=True, text=True)
    (folder,) = set(runs.iterdir()) - before
    return folder


def members_against_held_out(runs: Path) -> None:
    print("| model | p (one-sided) | t | held out (text / controls) | largest weights |")
    print("|---|---:|---:|---|---|")
    for spec in ("organism:quick:epoch0", "organism:quick:epoch1", "organism:quick:epoch2"):
        folder = audit("organism:quick:members", "organism:quick:held-out", spec, runs)
        report = json.loads((folder / "report.json").read_text(encoding="utf-8"))
        r = report["sections"]["dataset_inference"][spec]
        top = sorted(r["weights"].items(), key=lambda x: -abs(x[1]))[:3]
        print(f"| {spec} | {r['p_value']:.2g} | {r['t']:.2f} | {r['n_suspect']} / "
              f"{r['n_validation']} | {', '.join(f'{n} {w:.2f}' for n, w in top)} |",
              flush=True)


def non_members_split(runs: Path, work: Path, splits: int = 100) -> None:
    both = unseen_passages(11, 80)
    for name, part in (("a", both[:40]), ("b", both[40:])):
        (work / f"unseen-{name}.jsonl").write_text(
            "".join(json.dumps(p) + "\n" for p in part), encoding="utf-8")
    folder = audit(str(work / "unseen-a.jsonl"), str(work / "unseen-b.jsonl"),
                   "organism:quick:epoch2", runs)
    run = folder / "runs" / load_manifest(folder)["models"][0]["runs"]["detect"]
    with RunStore(run) as store:
        recs = [DetectRecord.model_validate(r) for _, r in store.results("detect")]
    a, b, names = _features(recs)
    pool = np.vstack([a, b])
    ps = []
    for seed in range(splits):
        order = np.random.default_rng(seed).permutation(len(pool))
        half = len(pool) // 2
        ps.append(dataset_inference(pool[order[:half]], pool[order[half:]], names,
                                    seed=seed).p_value)
    rejected = sum(p < 0.05 for p in ps)
    print(f"\nnon-members against non-members ({len(pool)} passages, {len(names)} features, "
          f"{splits} random splits into {half} + {len(pool) - half}): rejected at 5% in "
          f"{rejected} of {splits} ({rejected / splits:.0%}); the labelled split (a against "
          f"b): p = {dataset_inference(a, b, names, seed=0).p_value:.2g}")


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        members_against_held_out(Path(tmp) / "runs")
        non_members_split(Path(tmp) / "runs", Path(tmp))


if __name__ == "__main__":
    main()
