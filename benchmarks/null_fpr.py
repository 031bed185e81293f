"""The reproduction null's false-verdict rate, measured: the quick organism audited with no
controls (`recitation audit`, prefix probing, the null's reference model: the embedded
SmolLM2, the organism's base) on its 15 training passages once (also served by `recitation
serve` and audited through the OpenAI-compatible backend), then on 15 passages drawn
at random (one set per seed) from the same novels, outside every passage of its split
(never in its fine-tuning data), 64 words each as the demo's; and on famous KJV verses,
which the organism reproduces from its base model's pretraining, as the reference does.

    RECITATION_DATA=../shared/data .venv/bin/python benchmarks/null_fpr.py [SEEDS] [N]

Prints one line per audit (verdict, spans tested, spans beyond chance, their log10 p) and
the count of "memorized" verdicts on the unseen sets: the false verdicts.
"""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from recitation.audit.inputs import load_passages
from recitation.organism.paths import organism_dir

SPEC = "organism:quick:epoch2"
WORDS = 64


def unseen_passages(seed: int, n: int) -> list[dict[str, str]]:
    """``n`` 64-word windows of the organism's novels that overlap none of its passages."""
    split = json.loads((organism_dir("quick") / "split.json").read_text(encoding="utf-8"))
    taken: dict[str, list[tuple[int, int]]] = {}
    for p in split["passages"]:
        taken.setdefault(p["novel"], []).append((int(p["start"]), int(p["end"])))
    data = Path(os.environ.get("RECITATION_DATA", "../shared/data")) / "pdnc"
    rng = random.Random(seed)
    novels = sorted(taken)
    out: list[dict[str, str]] = []
    while len(out) < n:
        novel = rng.choice(novels)
        text = (data / novel / "novel_text.txt").read_bytes().decode("utf-8")  # as the split
        start = text.find(" ", rng.randrange(0, max(1, len(text) - 2000))) + 1
        spans = [m.span() for m in re.finditer(r"\S+", text[start:start + 4000])][:WORDS]
        if len(spans) < WORDS:
            continue
        words, end = [text[start + a:start + b] for a, b in spans], start + spans[-1][1]
        if any(a < end and start < b for a, b in taken[novel]):
            continue
        out.append({"id": f"{novel}@{start}", "text": " ".join(words)})
    return out


def audit(text: str, work: Path, spec: str = SPEC) -> dict[str, object]:
    runs = work / "runs"
    before = set(runs.iterdir()) if runs.exists() else set()
    subprocess.run([sys.executable, "-m", "recitation.cli", "audit", "--text", text,
                    "--model", spec, "--passages", "0", "--passage-words", str(WORDS),
                    "--max-new-tokens", "40", "--recap-passages", "0", "--no-pearl",
                    "--runs-dir", str(runs)], check=True, capture_output=True, text=True,
                   env=dict(os.environ, OPENAI_API_KEY="local"))  # `recitation serve`: any
    (folder,) = set(runs.iterdir()) - before
    (model,) = json.loads((folder / "report.json").read_text(encoding="utf-8"))["models"]
    return dict(model)


def line(name: str, model: dict[str, object]) -> str:
    v = model["verdict"]
    null = model["extraction"]["text"]["null"]  # type: ignore[index]
    ps = sorted(round(s["log10_p"], 1) for s in null["spans"] if s["log10_p"] is not None)
    return (f"| {name} | {v['label']} | {null['n']} | {len(null['spans'])} | "  # type: ignore[index]
            f"{null['beyond_chance']} | {ps} |")


def main() -> None:
    seeds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 15
    print("| audited text | verdict | passages | verbatim spans | beyond chance | "
          "log10 p of the spans |")
    print("|---|---|---:|---:|---:|---|")
    false = 0
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        print(line("training passages (members)", audit("organism:quick:members", work)),
              flush=True)
        from recitation.models.local import LocalModel
        from recitation.serve import start_server

        with start_server(LocalModel(SPEC)) as server:  # as a served model is audited
            print(line("training passages, served (`recitation serve`, openai backend)",
                       audit("organism:quick:members", work, f"openai:organism@{server.url}")),
                  flush=True)
        print(line("held-out passages (the organism's split)",
                   audit("organism:quick:held-out", work)), flush=True)
        famous = work / "kjv-famous.jsonl"  # quoted everywhere: the reference knows them too
        famous.write_text("".join(json.dumps({"id": p.id, "text": p.text}) + "\n"
                                  for p in load_passages("kjv:famous-long", WORDS)),
                          encoding="utf-8")
        print(line("famous KJV verses (in the base model's pretraining)",
                   audit(str(famous), work)), flush=True)
        for seed in range(seeds):
            path = work / f"unseen-{seed}.jsonl"
            path.write_text("".join(json.dumps(p) + "\n" for p in unseen_passages(seed, n)),
                            encoding="utf-8")
            model = audit(str(path), work)
            false += str(model["verdict"]["label"]).startswith("memorized")  # type: ignore[index]
            print(line(f"unseen passages, seed {seed}", model), flush=True)
    print(f"\nfalse 'memorized' verdicts on unseen text: {false} of {seeds} audits")


if __name__ == "__main__":
    main()
