"""CAMIA in its published setting for ``recitation bench claims`` (issue 49): the authors'
one sign per key (their 25 keys; ``camia_signs``), fixed on the development organism and
then used unchanged on the test organisms (``camia@published``,
:data:`recitation.bench.groundtruth.VARIANTS`).

The authors fit each key's sign on the labelled evaluation set itself (a key is negated when
its signals' mean over members exceeds the mean over non-members, ``run_ours_train_lr.py``);
here the same rule reads the development organism's members and non-members only (its
subsample when the benchmark subsamples CAMIA), so no test label reaches a score. Their
texts are 200-1,000 tokens long: run it on organisms of long passages
(``--preset lowfpr-long``: 256-token passages); on 64-token passages it is not their setting.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from recitation.errors import ConfigError

SIGNS = "camia-signs.json"


def development_signs(organism: str, epoch: int, texts: list[tuple[str, bool]], path: Path,
                      dtype: str = "float32") -> dict[str, int]:
    """Per-key signs measured on ``texts`` ((text, member?) of the development organism)
    with checkpoint ``epoch``; kept at ``path`` (``OUT/<organism>/``:data:`SIGNS`) and read
    back from there."""
    from recitation.detect.camia import check_signs, labelled_signals, signs_by_label
    from recitation.models.local import LocalModel

    if path.exists():
        return check_signs(json.loads(path.read_text(encoding="utf-8"))["signs"])
    model = LocalModel(f"organism:{organism}:epoch{epoch}", dtype=dtype)
    signals, members = asyncio.run(labelled_signals(model, texts))
    if sum(members) < 2 or len(members) - sum(members) < 2:
        raise ConfigError(f"camia@published: {organism} gives signals for {sum(members)} "
                          f"members and {len(members) - sum(members)} non-members; the signs "
                          "need at least 2 of each")
    signs = check_signs(signs_by_label(signals, members, per_key=True))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"organism": organism, "epoch": epoch, "texts": len(texts),
                                "with_signals": len(signals), "signs": signs}, indent=1)
                    + "\n", encoding="utf-8")
    return signs

