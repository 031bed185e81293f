"""Where organisms live, and resolving a checkpoint name such as ``epoch3`` to its folder.

An organism named ``NAME`` is kept under ``<model cache>/organisms/NAME/``: ``manifest.json``
(fingerprint, config, losses, timings), ``split.json`` (every passage with its dose) and one
transformers directory per epoch (``epoch0`` = the base model, ``epoch1``...). The model
cache is the one :func:`recitation.models.local.model_cache_dir` names (converted GGUF
weights live there too): ``$RECITATION_MODEL_CACHE_DIR``, else ``$RECITATION_CACHE_DIR/models``,
else the user cache directory's ``models`` folder.

This module imports nothing from :mod:`recitation.models` (the builder does), so the local
backend looks :func:`organism_checkpoint` (the model spec ``organism:quick:epoch2``) and
:func:`checkpoint_identity` (what a checkpoint is, for the response cache) up by name through
``importlib`` without a layer pointing back.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from recitation.errors import ConfigError

DEFAULT_NAME = "default"
QUICK_NAME = "quick"
LOWFPR_NAME = "lowfpr"
LOWFPR_QUICK_NAME = "lowfpr-quick"
LOWFPR_LONG_NAME = "lowfpr-long"
BOOK_NAME = "book"
BOOK_QUICK_NAME = "book-quick"
MANIFEST = "manifest.json"
SPLIT = "split.json"
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_CHECKPOINT_RE = re.compile(r"^(?:(?P<name>[^:]+):)?epoch(?P<epoch>\d+)$")
_EPOCH_DIR_RE = re.compile(r"^epoch(?P<epoch>\d+)$")
MODEL_PREFIX = "organism:"
"""How a model spec names a checkpoint: ``organism:epoch3``, ``organism:quick:epoch2``."""


def organisms_root() -> Path:
    """The folder holding every organism (not created here)."""
    explicit = os.environ.get("RECITATION_MODEL_CACHE_DIR")
    if explicit:
        return Path(explicit) / "organisms"
    base = os.environ.get("RECITATION_CACHE_DIR")
    if not base:
        from platformdirs import user_cache_dir

        base = user_cache_dir("recitation")
    return Path(base) / "models" / "organisms"


def check_name(name: str) -> str:
    """``name`` if it can name an organism folder, else :class:`ConfigError`."""
    if not _NAME_RE.match(name):
        raise ConfigError(f"organism name {name!r}: use letters, digits, '_', '-', '.' "
                          "(at most 64 characters, not starting with a dot)")
    return name


def organism_dir(name: str = DEFAULT_NAME, root: Path | None = None) -> Path:
    """The folder of organism ``name`` (it may not exist yet)."""
    return (root or organisms_root()) / check_name(name)


def read_manifest(name: str = DEFAULT_NAME, root: Path | None = None) -> dict[str, Any]:
    """The manifest of a built organism, or :class:`ConfigError` saying how to build it."""
    path = organism_dir(name, root) / MANIFEST
    if not path.exists():
        raise ConfigError(f"organism {name!r} is not built (no {path}); build it with "
                          f"'{build_command(name)}'")
    try:
        data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ConfigError(f"organism {name!r}: unreadable manifest {path}: {exc}; rebuild "
                          f"it with '{build_command(name)}'") from exc
    return data


def build_command(name: str) -> str:
    """The command line that builds organism ``name`` with its preset."""
    if name == QUICK_NAME:
        return "recitation organism build --quick"
    if name in (LOWFPR_NAME, LOWFPR_QUICK_NAME, LOWFPR_LONG_NAME, BOOK_NAME, BOOK_QUICK_NAME):
        return f"recitation organism build --preset {name}"
    if name == DEFAULT_NAME:
        return "recitation organism build"
    return f"recitation organism build --name {name}"


def parse_checkpoint(spec: str) -> tuple[str, int]:
    """``"epoch3"`` -> ``("default", 3)``; ``"quick:epoch2"`` -> ``("quick", 2)``."""
    m = _CHECKPOINT_RE.match(spec.strip())
    if not m:
        raise ConfigError(f"organism checkpoint {spec!r}: write epochN or NAME:epochN "
                          "(e.g. epoch3, quick:epoch2)")
    return check_name(m.group("name") or DEFAULT_NAME), int(m.group("epoch"))


def organism_checkpoint(spec: str, root: Path | None = None) -> Path:
    """The transformers directory of checkpoint ``spec`` (``epoch3``, ``quick:epoch2``) of a
    built organism; :class:`ConfigError` names the epochs there are, or how to build it."""
    name, epoch = parse_checkpoint(spec)
    manifest = read_manifest(name, root)
    epochs = [int(e["epoch"]) for e in manifest.get("epochs", [])]
    if epoch not in epochs:
        raise ConfigError(f"organism {name!r} has no epoch {epoch}: it has epochs "
                          f"{epochs} (rebuild with more: '{build_command(name)} --epochs "
                          f"{epoch}')")
    path = organism_dir(name, root) / f"epoch{epoch}"
    if not (path / "config.json").exists():
        raise ConfigError(f"organism {name!r}: checkpoint {path} is missing; rebuild it with "
                          f"'{build_command(name)}'")
    return path


def checkpoint_identity(directory: Path) -> dict[str, str] | None:
    """What checkpoint folder ``directory`` is, when it is one of an organism: ``model``
    (``organism:NAME:epochN``), ``fingerprint`` (the organism's) and ``weights`` (the SHA-256
    of that epoch's parameters, from the manifest). None for any other folder, or when the
    manifest cannot say (the caller then hashes the files)."""
    m = _EPOCH_DIR_RE.match(directory.name)
    manifest_path = directory.parent / MANIFEST
    if m is None or not manifest_path.is_file():
        return None
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None
    if not isinstance(manifest, dict):
        return None
    epoch = int(m.group("epoch"))
    entry: dict[str, Any] = next(
        (e for e in manifest.get("epochs", []) if e.get("epoch") == epoch), {})
    fp, weights = manifest.get("fingerprint"), entry.get("digest")
    if not (isinstance(fp, str) and isinstance(weights, str)):
        return None
    name = manifest.get("name") or directory.parent.name
    return {"model": f"{MODEL_PREFIX}{name}:epoch{epoch}", "fingerprint": fp,
            "weights": weights}
