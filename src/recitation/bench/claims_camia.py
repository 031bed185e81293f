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

The signs are kept beside the records (``--keep``: ``<development organism>-camia-signs.json``)
and given back to a fresh output folder, so the test organisms of a run resumed on another
machine read them without the development organism (its weights stay on the machine that
built it).
"""

from __future__ import annotations

import asyncio
import json
import shutil
from collections.abc import Callable
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
        return check_kept(path)
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



def published_signs(dev: str, out: Path, texts: Callable[[], list[tuple[str, bool]]],
                    dtype: str) -> dict[str, int]:
    """The signs the test organisms' ``camia@published`` uses: those written (or restored,
    :func:`restore_signs`) at ``OUT/<dev>/``:data:`SIGNS`, else measured on ``texts()``
    ((text, member?) of development organism ``dev``'s subsample: the organism built here)
    by :func:`development_signs`."""
    path = out / dev / SIGNS
    if path.exists():
        return check_kept(path)
    return development_signs(dev, 1, texts(), path, dtype)


def signs_line(signs: dict[str, int]) -> str:
    """What a run prints once the signs are fixed: the keys they negate."""
    flipped = sorted(k for k, v in signs.items() if v < 0)
    return (f"camia@published: the development signs negate {len(flipped)} of {len(signs)} "
            f"keys ({', '.join(flipped) or 'none'})")


def check_kept(path: Path) -> dict[str, int]:
    """The signs at ``path``, checked (one of +1 / -1 per key of the authors' 25)."""
    from recitation.detect.camia import check_signs

    try:
        return check_signs(json.loads(path.read_text(encoding="utf-8"))["signs"])
    except (OSError, ValueError, KeyError, TypeError, ConfigError) as exc:
        raise ConfigError(f"camia@published: the signs at {path} cannot be read ({exc}); "
                          "remove the file to measure them again on the development "
                          "organism") from exc


def keep_signs(dev: str, out: Path, keep: Path) -> None:
    """A copy of development organism ``dev``'s signs in ``keep`` (``<dev>-``:data:`SIGNS`)
    once they are measured."""
    src = out / dev / SIGNS
    if src.exists():
        keep.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, keep / f"{dev}-{SIGNS}")


def restore_signs(dev: str, out: Path, keep: Path, progress: Callable[[str], None] | None
                  ) -> None:
    """The kept signs given back to a fresh ``out`` (kept there already: left as they are)."""
    src, dst = keep / f"{dev}-{SIGNS}", out / dev / SIGNS
    if not src.exists() or dst.exists():
        return
    check_kept(src)
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dst)
    if progress:
        progress(f"camia@published: the development signs restored from {src}")
