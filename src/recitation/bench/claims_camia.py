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
from pathlib import Path
from typing import TYPE_CHECKING

from recitation.errors import ConfigError

if TYPE_CHECKING:
    from recitation.bench.claims_run import ClaimsConfig, Progress

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



def published_signs(cfg: ClaimsConfig, out: Path) -> dict[str, int]:
    """The signs the test organisms' ``camia@published`` uses: those written (or restored,
    :func:`restore_signs`) at ``OUT/<development organism>/``:data:`SIGNS`, else measured on
    the development organism's subsample (:func:`development_signs`; the organism built)."""
    from recitation.bench.claims_run import organism_name, subsample_nonmembers
    from recitation.bench.groundtruth import subsample
    from recitation.organism.data import load_split
    from recitation.organism.paths import SPLIT, organism_dir

    name = organism_name(cfg, cfg.dev_seed, True)
    path = out / name / SIGNS
    if path.exists():
        return check_kept(path)
    passages = subsample(load_split(organism_dir(name) / SPLIT), cfg.sub_members,
                         subsample_nonmembers(cfg, name), cfg.seed)
    return development_signs(name, 1, [(p.text, p.member) for p in passages], path, cfg.dtype)


def settle_signs(cfg: ClaimsConfig, out: Path, keep: Path | None,
                 progress: Progress | None) -> None:
    """Once the development organism is measured (``camia@published`` among the units): its
    signs measured now, where its organism is built (or read back), and kept in ``keep``, so
    a run resumed elsewhere needs the development organism no more."""
    from recitation.bench.claims_run import PUBLISHED_CAMIA

    if PUBLISHED_CAMIA not in cfg.generating:
        return
    signs = published_signs(cfg, out)
    if progress:
        flipped = sorted(k for k, v in signs.items() if v < 0)
        progress(f"camia@published: the development signs negate {len(flipped)} of "
                 f"{len(signs)} keys ({', '.join(flipped) or 'none'})")
    if keep is not None:
        keep_signs(cfg, out, keep)


def check_kept(path: Path) -> dict[str, int]:
    """The signs at ``path``, checked (one of +1 / -1 per key of the authors' 25)."""
    from recitation.detect.camia import check_signs

    try:
        return check_signs(json.loads(path.read_text(encoding="utf-8"))["signs"])
    except (OSError, ValueError, KeyError, TypeError, ConfigError) as exc:
        raise ConfigError(f"camia@published: the signs at {path} cannot be read ({exc}); "
                          "remove the file to measure them again on the development "
                          "organism") from exc


def kept_name(cfg: ClaimsConfig) -> str:
    from recitation.bench.claims_run import organism_name

    return f"{organism_name(cfg, cfg.dev_seed, True)}-{SIGNS}"


def keep_signs(cfg: ClaimsConfig, out: Path, keep: Path) -> None:
    """A copy of the development organism's signs in ``keep`` once they are measured."""
    from recitation.bench.claims_run import organism_name

    src = out / organism_name(cfg, cfg.dev_seed, True) / SIGNS
    if src.exists():
        keep.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, keep / kept_name(cfg))


def restore_signs(cfg: ClaimsConfig, out: Path, keep: Path, progress: Progress | None) -> None:
    """The kept signs given back to a fresh ``out`` (kept there already: left as they are)."""
    from recitation.bench.claims_run import organism_name

    src = keep / kept_name(cfg)
    dst = out / organism_name(cfg, cfg.dev_seed, True) / SIGNS
    if not src.exists() or dst.exists():
        return
    check_kept(src)
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dst)
    if progress:
        progress(f"camia@published: the development signs restored from {src}")
