"""``build_organism``: data, split, fine-tuning and checkpoints, rebuilt only when an input
changes.

The fingerprint covers the config fields that change the weights, the novels' texts, the
base model's file(s), the builder's format, the torch / transformers versions and the
source of the training code (:data:`~recitation.organism.config.TRAINING_CODE`). An
organism whose manifest carries the same fingerprint (and whose checkpoints are all there)
is returned as it is; otherwise it is built in a temporary folder beside it and swapped in
when complete, so an interrupted build never leaves a half organism behind.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, overload

from recitation._cachedir import cached_folder, file_lock, link_files
from recitation.digest import file_sha256
from recitation.organism import train
from recitation.organism.config import (
    FORMAT,
    TRAINING_CODE,
    OrganismConfig,
    digest,
    source_digest,
)
from recitation.organism.data import (
    Passage,
    load_novels,
    novels_digest,
    save_split,
    split_passages,
    split_summary,
)
from recitation.organism.paths import MANIFEST, SPLIT, organism_dir, organisms_root

log = logging.getLogger(__name__)

EpochCallback = Callable[[int, float | None, float], None]
"""Called after each checkpoint with (epoch, training loss or None for epoch 0, seconds)."""


@dataclass(frozen=True)
class BuildResult:
    directory: Path
    manifest: dict[str, Any]
    reused: bool


def base_identity(spec: str) -> dict[str, Any]:
    """What the base model is, by content: the GGUF file's hash, or every file's hash of a
    transformers directory."""
    from recitation.models.local import resolve_model_path

    directory, gguf = resolve_model_path(spec)
    files = [directory / gguf] if gguf else sorted(p for p in directory.rglob("*")
                                                   if p.is_file())
    return {"spec": spec, "files": {str(p.relative_to(directory)): file_sha256(p)
                                    for p in files}}


def library_versions() -> dict[str, str]:
    """The torch and transformers versions (part of the fingerprint), read without
    importing either (an audit that finds its organism built imports no model library)."""
    from recitation._pkgdata import installed_version

    out = {m: installed_version(m) for m in ("torch", "transformers")}
    missing = [m for m, v in out.items() if v is None]
    if missing:
        from recitation.errors import require

        for m in missing:
            require(m, "the model organism")  # raises with the install command
    return {m: str(v) for m, v in out.items()}


def fingerprint(cfg: OrganismConfig, data_digest: str, base: dict[str, Any]) -> str:
    """The identity of everything that makes the weights (the training code's source
    included: a change to the training loop rebuilds)."""
    code = (*TRAINING_CODE, "recitation.organism.work") if cfg.split == "work" else TRAINING_CODE
    if cfg.nonmembers_seed is not None:
        code = (*code, "recitation.organism.shared_split")
    return digest({"format": FORMAT, "config": cfg.fingerprint_fields(), "data": data_digest,
                   "base": base, "versions": library_versions(),
                   "code": source_digest(*code)})


def up_to_date(directory: Path, fp: str) -> dict[str, Any] | None:
    """The manifest of ``directory`` if it has fingerprint ``fp`` and all its checkpoints."""
    try:
        manifest: dict[str, Any] = json.loads((directory / MANIFEST).read_text("utf-8"))
    except (OSError, json.JSONDecodeError):
        return None
    if manifest.get("fingerprint") != fp:
        return None
    if not all((directory / f"epoch{e['epoch']}" / "config.json").exists()
               for e in manifest.get("epochs", [])):
        return None
    return manifest


def build_organism(cfg: OrganismConfig, *, root: Path | None = None, force: bool = False,
                   on_epoch: EpochCallback | None = None) -> BuildResult:
    """Build organism ``cfg.name`` (or reuse it when up to date, unless ``force``)."""
    root = root or organisms_root()
    target = organism_dir(cfg.name, root)
    novels = load_novels(cfg)
    data_digest = novels_digest(novels)
    base = base_identity(cfg.base)
    fp = fingerprint(cfg, data_digest, base)
    with file_lock(root, cfg.name):
        manifest = None if force else up_to_date(target, fp)
        if manifest is not None:
            return BuildResult(target, manifest, reused=True)
        tmp = root / f".{cfg.name}.building{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        try:
            meta = {"format": FORMAT, "fingerprint": fp, "data": data_digest, "base": base}
            manifest = _build_into(tmp, cfg, novels, meta, on_epoch)
            (tmp / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n", "utf-8")
            old = root / f".{cfg.name}.old{os.getpid()}"
            if target.exists():
                os.replace(target, old)
            os.replace(tmp, target)
            shutil.rmtree(old, ignore_errors=True)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return BuildResult(target, manifest, reused=False)


_OFFSETS: dict[tuple[str, str], Any] = {}
"""(tokenizer, text digest) -> the text's token character offsets (int32 [n, 2]): one
tokenization of a novel per process, however many organisms it builds (8.6 s for the PDNC
novels each time otherwise)."""
_OFFSETS_MAX = 64


class _Spans(Sequence[tuple[int, int]]):
    """A read-only view of an int64 ``[n, 2]`` array as ``(start, end)`` pairs, converted
    when read: the split reads two offsets per passage, and converting a whole novel's
    offsets to a list cost 4.5 s per organism build."""

    def __init__(self, arr: Any) -> None:
        self._arr = arr

    def __len__(self) -> int:
        return int(self._arr.shape[0])

    @overload
    def __getitem__(self, i: int) -> tuple[int, int]: ...

    @overload
    def __getitem__(self, i: slice) -> list[tuple[int, int]]: ...

    def __getitem__(self, i: int | slice) -> tuple[int, int] | list[tuple[int, int]]:
        if isinstance(i, slice):
            return [(int(a), int(b)) for a, b in self._arr[i].tolist()]
        a, b = self._arr[i]
        return int(a), int(b)


def token_offsets(tok: Any, text: str) -> Sequence[tuple[int, int]]:
    """The character span of each token of ``text`` (no special tokens) under ``tok``,
    remembered per process (the tokenizer is a pure function of its files, named by
    ``name_or_path``)."""
    import numpy as np

    key = (str(getattr(tok, "name_or_path", id(tok))), hashlib.sha256(text.encode()).hexdigest())
    arr = _OFFSETS.get(key)
    if arr is None:
        enc = tok(text, add_special_tokens=False, return_offsets_mapping=True)
        arr = np.asarray(enc["offset_mapping"], dtype=np.int64).reshape(-1, 2)
        if len(_OFFSETS) >= _OFFSETS_MAX:
            _OFFSETS.pop(next(iter(_OFFSETS)))
        _OFFSETS[key] = arr
    return _Spans(arr)


def _build_into(folder: Path, cfg: OrganismConfig, novels: Any, meta: dict[str, Any],
                on_epoch: EpochCallback | None) -> dict[str, Any]:
    from recitation.models.local import LocalModel

    t0 = time.perf_counter()
    base = LocalModel(cfg.base, threads=cfg.threads, dtype="float32", device=cfg.device)
    loaded = base.load_private()
    model, tok = loaded.model, loaded.tokenizer
    meta = meta | {"device": base.device, "dtype": "float32",
                   "autocast": train.autocast_name(base.device)}

    def offsets(text: str) -> Sequence[tuple[int, int]]:
        return token_offsets(tok, text)

    def count(text: str) -> int:
        return len(tok(text, add_special_tokens=True)["input_ids"])

    if cfg.split == "work":
        from recitation.organism.work import work_passages

        passages = work_passages(cfg, novels, offsets, count)
    elif cfg.nonmembers_seed is not None:
        from recitation.organism.shared_split import shared_nonmember_split

        passages = shared_nonmember_split(cfg, novels, offsets, count)
    else:
        passages = split_passages(cfg, novels, offsets, count)
    save_split(folder / SPLIT, passages, meta | {"name": cfg.name,
                                                 "config": cfg.model_dump(mode="json")})
    epochs = _train(folder, cfg, model, tok, passages, on_epoch, meta["base"])
    return meta | {
        "name": cfg.name, "config": cfg.model_dump(mode="json"),
        "versions": library_versions(),
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "split": split_summary(passages),
        "train_tokens_per_epoch": sum(p.n_tokens * p.dose for p in passages),
        "epochs": epochs, "build_seconds": round(time.perf_counter() - t0, 1)}


def base_checkpoint(model: Any, tok: Any, target: Path, base: dict[str, Any]) -> str:
    """Epoch 0, the unchanged base model: saved once per base model (and torch /
    transformers versions) under the model cache's ``base-checkpoints/``, then hard-linked
    into ``target`` (copied where the file system cannot link), so organisms do not each
    write a copy of it. Returns its weights' digest (:func:`train.state_digest`)."""
    from recitation.models.local import model_cache_dir

    key = digest({"format": FORMAT, "base": base, "versions": library_versions()})[:16]

    def save(folder: Path) -> None:
        train.save_checkpoint(model, tok, folder, lora=False)
        (folder / "digest.txt").write_text(train.state_digest(model) + "\n", "utf-8")

    shared, _ = cached_folder(model_cache_dir() / "base-checkpoints", key, save)
    link_files(shared, target, skip=("digest.txt",))
    return (shared / "digest.txt").read_text("utf-8").strip()


def _train(folder: Path, cfg: OrganismConfig, model: Any, tok: Any,
           passages: list[Passage], on_epoch: EpochCallback | None,
           base: dict[str, Any]) -> list[dict[str, Any]]:
    epochs: list[dict[str, Any]] = []

    def checkpoint(epoch: int, loss: float | None, seconds: float) -> None:
        path = folder / f"epoch{epoch}"
        if epoch and cfg.keep_epochs and epoch not in cfg.keep_epochs:
            log.info("organism %s: epoch %d loss %s (%.0f s), not kept", cfg.name, epoch,
                     loss, seconds)
            if on_epoch is not None:
                on_epoch(epoch, loss, seconds)
            return
        if epoch == 0:
            weights = base_checkpoint(model, tok, path, base)
        else:
            train.save_checkpoint(model, tok, path, lora=cfg.lora)
            weights = train.state_digest(model)
        epochs.append({"epoch": epoch, "train_loss": loss, "seconds": round(seconds, 1),
                       "digest": weights})
        log.info("organism %s: epoch %d loss %s (%.0f s)", cfg.name, epoch, loss, seconds)
        if on_epoch is not None:
            on_epoch(epoch, loss, seconds)

    with train.deterministic(cfg.seed, cfg.threads):
        checkpoint(0, None, 0.0)
        if cfg.lora:
            model = train.attach_lora(model, cfg.lora_rank)
        optimizer = train.make_optimizer(model, cfg.learning_rate)
        for epoch in range(1, cfg.epochs + 1):
            t = time.perf_counter()
            loss = train.train_epoch(model, optimizer, tok, passages, seed=cfg.seed,
                                     epoch=epoch, batch_size=cfg.batch_size)
            checkpoint(epoch, loss, time.perf_counter() - t)
    return epochs
