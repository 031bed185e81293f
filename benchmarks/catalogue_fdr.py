"""Catalogue verdicts (report section "Catalogue", metrics/fdr.py) on a model organism: 20
works of PDNC passages, 6 of them fine-tuned into the model, audited in one command against
one control set at q = 0.1; then the false discovery proportion over repeated catalogues.

The organism ``catalogue`` (SmolLM2 fine-tuned on 18 PDNC passages of 64 tokens, each seen 4
times per epoch, 2 epochs; 192 passages of the same novels held out, drawn by the same paired
split) is built first if missing:

    recitation organism build --quick --name catalogue --doses 4 --members-per-dose 18 \\
        --nonmembers 192

A work is 3 passages: the 18 training passages make 6 trained works; 42 held-out passages
make 14 untrained works; the other 150 held-out passages are the controls (50 units of 3).
Works are groups of passages drawn at random, not whole novels: the untrained works and the
control units are then exchangeable by construction, which is what the conformal p-value
assumes (whole novels as works would also test how familiar the base model is with each
novel). For each model (the organism at epochs 2 and 1, and the base model, for which every
work is untrained): one real ``recitation audit`` of one catalogue (seed 0; its verdict as
printed), then 1,000 catalogues re-drawn from the same scored passages (the scores of a
passage do not depend on how passages are grouped), each tested at q = 0.1: the mean false
discovery proportion (FDR), the share of catalogues with any false discovery, and the mean
share of trained works found.

    RECITATION_DATA=../shared/data .venv/bin/python benchmarks/catalogue_fdr.py
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from recitation.metrics.fdr import catalogue_tests
from recitation.organism.data import load_split
from recitation.organism.paths import organism_dir
from recitation.records import DetectRecord, oriented_scores
from recitation.runs.audits import load_manifest
from recitation.runs.store import RunStore

M, TRAINED, UNTRAINED, Q, REPEATS = 3, 6, 14, 0.1, 1000


def write_catalogue(members: list[str], others: list[str], texts: dict[str, str],
                    seed: int, tmp: Path) -> tuple[list[str], str, dict[str, str]]:
    """Works (jsonl files) and controls of one draw; the map detect sample id -> passage."""
    rng = np.random.default_rng(seed)
    mem = [members[i] for i in rng.permutation(len(members))]
    oth = [others[i] for i in rng.permutation(len(others))]
    groups = {f"trained{k:02d}": mem[k * M:(k + 1) * M] for k in range(TRAINED)}
    groups |= {f"untrained{k:02d}": oth[k * M:(k + 1) * M] for k in range(UNTRAINED)}
    ids: dict[str, str] = {}
    files = []
    for name, ps in groups.items():
        path = tmp / f"{name}.jsonl"
        path.write_text("".join(json.dumps({"id": i, "text": texts[p]}) + "\n"
                                for i, p in enumerate(ps)), encoding="utf-8")
        files.append(str(path))
        ids |= {f"text:{name}:{i}": p for i, p in enumerate(ps)}
    ctl = oth[UNTRAINED * M:]
    cpath = tmp / "controls.jsonl"
    cpath.write_text("".join(json.dumps({"id": i, "text": texts[p]}) + "\n"
                             for i, p in enumerate(ctl)), encoding="utf-8")
    ids |= {f"controls:controls:{i}": p for i, p in enumerate(ctl)}
    return files, str(cpath), ids


def audit(files: list[str], controls: str, spec: str, runs: Path) -> tuple[Path, str]:
    args = [sys.executable, "-m", "recitation.cli", "audit", "--controls", controls,
            "--model", spec, "--passages", "0", "--n-controls", "0", "--passage-words", "64",
            "--max-new-tokens", "40", "--recap-passages", "0", "--no-pearl",
            "--bootstrap", "0", "--fdr-q", str(Q), "--runs-dir", str(runs)]
    for f in files:
        args += ["--text", f]
    p = subprocess.run(args, check=True, capture_output=True, text=True,
                       env={**__import__("os").environ, "COLUMNS": "200"})
    line = next(x for x in p.stdout.splitlines() if x.startswith("catalogue, "))
    (folder,) = list(runs.iterdir())
    return folder, line


def passage_scores(folder: Path, ids: dict[str, str]) -> tuple[str, dict[str, float]]:
    """The catalogue's score (the report's choice) of every passage, by passage id."""
    report = json.loads((folder / "report.json").read_text(encoding="utf-8"))
    (cat,) = report["sections"]["catalogue"]["models"].values()
    run = folder / "runs" / load_manifest(folder)["models"][0]["runs"]["detect"]
    with RunStore(run) as store:
        d = oriented_scores(DetectRecord.model_validate(r) for _, r in store.results("detect"))
    sc = d[cat["score"]]
    return cat["score"], {ids[k]: v for lab in ("member", "control") for k, v in sc[lab].items()}


def redraws(members: list[str], others: list[str], score: dict[str, float]
            ) -> dict[str, float]:
    fdp, anyfalse, power = [], 0, []
    for rep in range(REPEATS):
        rng = np.random.default_rng([rep, 17])
        mem = [members[i] for i in rng.permutation(len(members))]
        oth = [others[i] for i in rng.permutation(len(others))]
        works = {f"t{k}": [score[p] for p in mem[k * M:(k + 1) * M]] for k in range(TRAINED)}
        works |= {f"u{k}": [score[p] for p in oth[k * M:(k + 1) * M]] for k in range(UNTRAINED)}
        controls = [score[p] for p in oth[UNTRAINED * M:]]
        tests, _ = catalogue_tests(works, controls, Q, seed=rep)
        found = [t.work for t in tests if t.discovered]
        false = sum(w.startswith("u") for w in found)
        fdp.append(false / max(1, len(found)))
        anyfalse += false > 0
        power.append(sum(w.startswith("t") for w in found) / TRAINED)
    return {"fdr": float(np.mean(fdp)), "any_false": anyfalse / REPEATS,
            "power": float(np.mean(power))}


def main() -> None:
    split = load_split(organism_dir("catalogue") / "split.json")
    texts = {p.id: p.text for p in split}
    members = [p.id for p in split if p.member]
    others = [p.id for p in split if not p.member]
    print(f"organism catalogue: {len(members)} trained passages, {len(others)} held out; "
          f"{TRAINED} trained + {UNTRAINED} untrained works of {M}, "
          f"{len(others) - UNTRAINED * M} controls; q = {Q}; {REPEATS} re-drawn catalogues")
    print("| model | one audit (seed 0), as printed | score | FDR (mean FDP) | "
          "P(any false discovery) | trained works found (mean) |")
    print("|---|---|---|---:|---:|---:|")
    for spec in ("organism:catalogue:epoch2", "organism:catalogue:epoch1", "smollm2"):
        with tempfile.TemporaryDirectory() as tmp:
            files, controls, ids = write_catalogue(members, others, texts, 0, Path(tmp))
            folder, line = audit(files, controls, spec, Path(tmp) / "runs")
            name, score = passage_scores(folder, ids)
        r = redraws(members, others, score)
        print(f"| {spec} | {line.split(': ', 1)[1]} | {name} | {r['fdr']:.3f} | "
              f"{r['any_false']:.3f} | {r['power']:.2f} |", flush=True)


if __name__ == "__main__":
    main()
