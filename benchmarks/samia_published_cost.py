"""What SaMIA's published setting (``samia@published``: up to 1,024 tokens, prompt included,
as the authors' ``generate(max_length=1024)``) generates on a claims organism, and so what
it costs (issue 49): the new tokens of each sampled continuation, how many stop before the
cap, and the generation rate.

    .venv/bin/python benchmarks/samia_published_cost.py [--texts 4] [--threads N]

Reads the development organism's checkpoint (``recitation organism build`` for the claims
benchmark: ``organism:claims-dev:epoch1``) and its subsample's texts as
``recitation bench claims`` wrote them (``--data``, default ``bench/claims/claims-dev/data``);
builds each text's requests with the detector itself (``SamiaDetector.requests``, the
published setting's parameters) and decodes them together, as the benchmark unit does.
Writes ``benchmarks/samia_published_cost.json``. ``--texts`` members and as many
non-members; the rate depends on the host and on what else it runs (the record says both).
"""

from __future__ import annotations

import argparse
import datetime
import json
import time
from collections import Counter
from pathlib import Path
from types import SimpleNamespace
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RECORDS = ROOT / "benchmarks" / "samia_published_cost.json"
CHECKPOINT = "organism:claims-dev:epoch1"  # the development organism's fine-tuned weights


def first(path: Path, n: int) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for _, line in zip(range(n), f, strict=False)]


def measure(data: Path, texts: int, threads: int | None, beside: str) -> dict[str, Any]:
    from recitation.bench.claims_run import host
    from recitation.detect.job import DetectParams
    from recitation.detect.samia import SamiaDetector
    from recitation.detect.samples import Sample
    from recitation.models.local import LocalModel

    rows = ([(r, "member") for r in first(data / "members_sub.jsonl", texts)]
            + [(r, "control") for r in first(data / "nonmembers_sub.jsonl", texts)])
    ctx = SimpleNamespace(params=DetectParams(samia_max_tokens=None, samia_words="whitespace"),
                          seed=0)
    det = SamiaDetector()
    reqs = [r for row, label in rows for r in det.requests(
        ctx, Sample(id=row["id"], text=row["text"], label=label, source="claims-dev"))]
    model = LocalModel(CHECKPOINT, dtype="bfloat16", threads=threads)
    model.load()
    t0 = time.perf_counter()
    out = model.generate_sync(reqs)
    wall = time.perf_counter() - t0
    new = [g.usage.output_tokens for g in out]
    return {"date": datetime.date.today().isoformat(), "host": host(), "threads": model.threads,
            "beside": beside, "organism": "claims-dev epoch1, bfloat16",
            "texts": [row["id"] for row, _ in rows], "continuations": len(out),
            "cap": [r.max_tokens for r in reqs], "new_tokens": new,
            "finish": dict(Counter(g.finish_reason for g in out)),
            "wall_seconds": round(wall, 1), "tokens_per_second": round(sum(new) / wall, 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=ROOT / "bench" / "claims" / "claims-dev" / "data")
    ap.add_argument("--texts", type=int, default=4, help="members (and as many non-members)")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--beside", default="nothing", help="what else the host ran (recorded)")
    args = ap.parse_args()
    rec = measure(args.data, args.texts, args.threads, args.beside)
    RECORDS.write_text(json.dumps(rec, indent=1) + "\n", encoding="utf-8")
    print(f"{rec['continuations']} continuations: {rec['finish']}; new tokens "
          f"{min(rec['new_tokens'])}-{max(rec['new_tokens'])}; {rec['tokens_per_second']} tok/s")


if __name__ == "__main__":
    main()
