"""``recitation demo``: a small audit with a positive control.

The packaged ``recitation/data/demo-audit.yaml`` (:func:`recitation.audit.config.demo_config`,
also runnable as ``recitation run``): the embedded SmolLM2 (or ``--model``) and the quick
model organism (:mod:`recitation.organism`: SmolLM2 fine-tuned for two epochs on 15
public-domain PDNC passages; built once, about two minutes on two CPU cores, then reused) on
the organism's 15 training passages, against its 15 held-out passages from the same novels,
which neither model was fine-tuned on. Prefix probing and the white-box detectors run on
every passage, RECAP's feedback loop on three of each group (two rounds, short hints). The
organism should be flagged and its passages extracted; the base model and the controls
should not. Both models' calls are cached, so a second demo is answered from the response
cache.
"""

from __future__ import annotations

from pathlib import Path

from recitation.audit.config import create_from_config, demo_config, parse_audit_config

ORGANISM = "organism:quick:epoch2"


def create_demo(base: str, *, limit: int = 0, pearl: bool = False, cache: bool = True,
                runs_dir: Path | None = None, recap_passages: int | None = None) -> Path:
    """The demo audit, created (not run): the demo config with ``base`` in place of its
    first model. RECAP runs on ``recap_passages`` passages of each group (default: the
    config's 3, or half of ``limit`` and at least 1)."""
    cfg = demo_config()
    if recap_passages is None:
        recap_passages = (min(cfg.params.recap_passages, max(1, limit // 2)) if limit
                          else cfg.params.recap_passages)
    params = cfg.params.model_dump() | {"passages": limit, "controls": limit, "pearl": pearl,
                                        "cache": cache, "recap_passages": recap_passages}
    models = [base, *[m for m in cfg.models[1:] if m != base]]
    demo = parse_audit_config(cfg.model_dump() | {"params": params, "models": models},
                              source="recitation demo")
    return create_from_config(demo, runs_dir)
