"""``recitation demo``: a small audit with a positive control.

Two models are audited on the same text against the same controls: the embedded SmolLM2
(or ``--model``) and the quick model organism (:mod:`recitation.organism`: SmolLM2
fine-tuned for two epochs on 15 public-domain PDNC passages; built once, about two minutes
on two CPU cores, then reused). The text is the organism's 15 training passages; the
controls are its 15 held-out passages from the same novels, which neither model was
fine-tuned on. Prefix probing and the white-box detectors run on every passage, RECAP's
feedback loop on three of each group (two rounds, short hints). The organism should be
flagged and its passages extracted; the base model and the controls should not. Both
models' calls are cached, so a second demo is answered from the response cache.
"""

from __future__ import annotations

import json
from pathlib import Path

from recitation.audit.run import AuditSettings, create_audit
from recitation.runs.runner import default_runs_dir

ORGANISM = "organism:quick:epoch2"
CONTROLS_REASON = (
    "the organism's held-out passages: drawn from the same novels, in the same proportions, "
    "as its training passages, and never in its fine-tuning data; for the base model they "
    "are as (un)familiar as the training passages, so both sides differ only in training")


def demo_inputs(out: Path) -> tuple[Path, Path]:
    """Build (or reuse) the quick organism; write its members and held-out passages."""
    from recitation.organism.build import build_organism
    from recitation.organism.config import make_config
    from recitation.organism.data import load_split

    built = build_organism(make_config(quick=True))
    passages = load_split(built.directory / "split.json")
    out.mkdir(parents=True, exist_ok=True)
    files = (out / "organism-training-passages.jsonl", out / "held-out-passages.jsonl")
    for path, member in zip(files, (True, False), strict=True):
        rows = [{"id": p.id, "text": p.text} for p in passages if p.member == member]
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                        encoding="utf-8")
    return files


def create_demo(base: str, *, limit: int = 0, pearl: bool = False, cache: bool = True,
                runs_dir: Path | None = None, recap_passages: int | None = None) -> Path:
    """The demo audit, created (not run). RECAP runs on ``recap_passages`` passages of each
    group (default: 3, or half of ``limit`` and at least 1)."""
    runs = runs_dir or default_runs_dir()
    text, controls = demo_inputs(runs / "demo-inputs")
    if recap_passages is None:
        recap_passages = min(3, max(1, limit // 2)) if limit else 3
    settings = AuditSettings(passages=limit, controls=limit, passage_words=64,
                             max_new_tokens=40, pearl=pearl, target_fpr=0.1,
                             n_bootstrap=200, cache=cache,
                             recap_passages=recap_passages,
                             recap_rounds=2, recap_hint_tokens=128)
    return create_audit([str(text)], [base, ORGANISM], [str(controls)], settings,
                        runs_dir=runs, name="demo", controls_reason=CONTROLS_REASON)
