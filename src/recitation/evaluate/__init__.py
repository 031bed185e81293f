"""The RECAP evaluator: EchoTrace extraction files scored as the RECAP release scores them.

* :mod:`.scoring` — ROUGE-L recall and verbatim 40-token passages per book and method, the
  released Metrics JSON layout, comparison with the released numbers;
* :mod:`.cli` — the ``recitation evaluate`` command (inputs found, files scored in parallel,
  deviations from the release reported).

The scoring API is importable from the package: ``from recitation.evaluate import
evaluate_file``.
"""

from __future__ import annotations

from recitation.evaluate.scoring import (
    Deviation,
    EvaluateConfig,
    compare,
    evaluate_book,
    evaluate_file,
    evaluate_files,
    group_means,
    load_released,
    release_revision,
    released_metrics_path,
    resolve_config,
)

__all__ = [
    "Deviation",
    "EvaluateConfig",
    "compare",
    "evaluate_book",
    "evaluate_file",
    "evaluate_files",
    "group_means",
    "load_released",
    "release_revision",
    "released_metrics_path",
    "resolve_config",
]
