"""Locate data files that other packages ship (KJV text, HumanEval, model weights) without
importing those packages (some import heavy or unavailable dependencies)."""

from __future__ import annotations

import importlib
import importlib.util
from pathlib import Path

from recitation.errors import CorpusError, require_spec


def package_file(module: str, relpath: str, *, purpose: str, install: str | None = None,
                 error: type[Exception] = CorpusError) -> Path:
    """``<module's folder>/<relpath>``.

    A missing package raises :class:`~recitation.errors.MissingDependencyError` with the
    install command of :data:`recitation.errors.DEPENDENCIES`; a package outside every
    extra passes its own ``install`` hint and gets ``error``. A package installed without
    the file raises ``error``."""
    if install is None:
        spec = require_spec(module, purpose)
    else:
        spec = importlib.util.find_spec(module)
        if spec is None:
            raise error(f"{purpose} needs the '{module}' package: {install}")
    if not spec.submodule_search_locations:
        raise error(f"the '{module}' package has no folder to hold {relpath}")
    path = Path(list(spec.submodule_search_locations)[0]) / relpath
    if not path.exists():
        raise error(f"the '{module}' package is installed but {path} is missing")
    return path


def installed_version(module: str) -> str | None:
    """``module.__version__`` without importing the module where its distribution (of the
    same name) is installed: read from the package metadata, the same string (torch
    ``2.13.0+cpu``), in milliseconds where the import of torch or transformers takes
    seconds. An already imported module, or one found only on ``sys.path`` (a source tree),
    answers through its ``__version__``; None when the module is not there."""
    import sys
    from importlib.metadata import PackageNotFoundError, version

    if (loaded := sys.modules.get(module)) is not None and hasattr(loaded, "__version__"):
        return str(loaded.__version__)
    try:
        return version(module)
    except PackageNotFoundError:
        pass
    try:
        return str(importlib.import_module(module).__version__)
    except Exception:  # noqa: BLE001 - absent or broken: no version to state
        return None
