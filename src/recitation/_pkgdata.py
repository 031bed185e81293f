"""Locate data files that other packages ship (KJV text, HumanEval, model weights) without
importing those packages (some import heavy or unavailable dependencies)."""

from __future__ import annotations

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
