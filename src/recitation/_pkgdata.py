"""Locate data files that other packages ship (KJV text, HumanEval, model weights) without
importing those packages (some import heavy or unavailable dependencies)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from recitation.errors import CorpusError


def package_file(module: str, relpath: str, *, purpose: str, install: str,
                 error: type[Exception] = CorpusError) -> Path:
    """``<module's folder>/<relpath>``; raises ``error`` saying how to install it."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise error(f"{purpose} needs the '{module}' package: {install}")
    path = Path(list(spec.submodule_search_locations)[0]) / relpath
    if not path.exists():
        raise error(f"the '{module}' package is installed but {path} is missing")
    return path
