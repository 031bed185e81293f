"""PROPME end to end on the ground-truth organism: index the PDNC novels (a document per
chapter) plus the organism's training passages, then run the three prompt sets on the
organism and on its base model (SmolLM2): the generic prompts drawn from the packaged
everyday-sentence sample (the default, as the authors draw theirs from Tatoeba), the base
model writing the specific prompts for both (the second run takes them from the response
cache), prefixes of 16 words (ours: the organism's 64-token passages are shorter than the
100 tokens the authors' prefixes need), SimpleTrace under the authors' definitions.

    .venv/bin/recitation organism build --quick          # once (docs/organism.md)
    nice -n 5 .venv/bin/python benchmarks/propme_organism.py [--organism quick] [--n 15]

Runs each target under both definitions (``propme``: the authors' computation, the
default of ``recitation propme``; ``recitation``: ours) and writes the table of every run
into docs/tracing.md between the ``propme-organism`` markers (``--no-docs``: print only);
the reports are in the runs' stores (``recitation runs show``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from doc_markers import write_between  # benchmarks/ is on sys.path when run as a script

from recitation.trace.sources import iter_corpus

DATA = Path(os.environ.get("RECITATION_DATA", Path(__file__).resolve().parents[2] / "shared"
                           / "data"))


def organism_passages(name: str) -> list[dict[str, object]]:
    out = subprocess.run([str(Path(sys.executable).parent / "recitation"), "organism", "path",
                          f"{name}:epoch0"], capture_output=True, text=True, check=True)
    split = json.loads((Path(out.stdout.strip()).parent / "split.json").read_text())
    return [p for p in split["passages"] if p["member"]]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--organism", default="quick")
    ap.add_argument("--epoch", type=int, default=2)
    ap.add_argument("--n", type=int, default=15)
    ap.add_argument("--prefix-words", type=int, default=16)
    ap.add_argument("--max-new-tokens", type=int, default=64)
    ap.add_argument("--work", type=Path, default=Path("runs/propme-organism"))
    ap.add_argument("--no-docs", action="store_true")
    args = ap.parse_args()
    corpus = args.work / "corpus"
    corpus.mkdir(parents=True, exist_ok=True)
    with (corpus / "a_pdnc.jsonl").open("w", encoding="utf-8") as f:
        for d in iter_corpus(DATA / "pdnc", chapters=True):
            f.write(json.dumps({"text": d.text, "source": "pdnc", **d.metadata}) + "\n")
    train = [{"text": p["text"], "source": f"organism-{args.organism}", "id": p["id"],
              "dose": p["dose"]} for p in organism_passages(args.organism)]
    lines = "".join(json.dumps(r) + "\n" for r in train)
    (corpus / "b_organism_train.jsonl").write_text(lines, encoding="utf-8")
    (args.work / "train.jsonl").write_text(lines, encoding="utf-8")
    cli = str(Path(sys.executable).parent / "recitation")
    subprocess.run([cli, "index", "build", str(corpus), str(args.work / "idx"), "--overwrite"],
                   check=True)
    rows = []
    for definitions in ("propme", "recitation"):
        for target in (f"organism:{args.organism}:epoch{args.epoch}", "smollm2"):
            runs = args.work / "runs" / definitions
            subprocess.run([cli, "propme", "--index", str(args.work / "idx"), "--target",
                            target, "--helper", "smollm2", "--n", str(args.n),
                            "--prefix-words", str(args.prefix_words), "--prefix-docs",
                            str(args.work / "train.jsonl"), "--max-new-tokens",
                            str(args.max_new_tokens), "--domain", DOMAIN, "--runs-dir",
                            str(runs), "--engine", "numpy", "--definitions", definitions],
                           check=True)
            rows += table_rows(definitions, target, latest_run(runs))
    table = "\n".join([HEADER, *rows])
    print(table)
    if not args.no_docs:
        write_docs(table, args)


DOMAIN = "English novels of the 19th and early 20th century"
HEADER = ("| definitions | target | set | generations | ALS | FMR | NVR (batch) | max NVR | "
          "NVR > 0.5 (propme) / >= 0.5 (ours) |\n|---|---|---|---|---|---|---|---|---|")
DOCS = Path(__file__).resolve().parents[1] / "docs" / "tracing.md"
START, END = "<!-- propme-organism:start -->", "<!-- propme-organism:end -->"


def latest_run(runs: Path) -> Path:
    return max((d for d in runs.iterdir() if (d / "run.sqlite").exists()),
               key=lambda d: d.stat().st_mtime)


def table_rows(definitions: str, target: str, run_dir: Path) -> list[str]:
    from recitation.runs.runner import stored_report

    report = stored_report(run_dir) or {}
    rows = []
    for s, g in report.get("groups", {}).items():
        rows.append(f"| {definitions} | {target} | {s} | {g['total_generations']} | "
                    f"{g['average_longest_span_length']:.1f} | {g['full_match_ratio']:.2f} | "
                    f"{g['avg_nv_recall']:.2f} | {g['max_nv_recall']:.2f} | "
                    f"{g['generations_above_nv_recall_threshold_ratio']:.2f} |")
    return rows


def write_docs(table: str, args: argparse.Namespace) -> None:
    """The table between the markers of docs/tracing.md, with the command and the date."""
    import datetime

    note = (f"Written by `benchmarks/propme_organism.py --n {args.n} --max-new-tokens "
            f"{args.max_new_tokens} --prefix-words {args.prefix_words}` on "
            f"{datetime.date.today().isoformat()} (organism:{args.organism}:epoch{args.epoch}"
            ", 16-word prefixes, generic prompts from the packaged sentences, specific ones "
            "written by SmolLM2):")
    write_between(DOCS, START, END, f"{note}\n\n{table}")

if __name__ == "__main__":
    main()
