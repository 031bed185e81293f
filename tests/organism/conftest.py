"""The quick organism, built once per session for every test that needs a real one (the
model cache keeps it across sessions: a second build with the same inputs is reused)."""

from __future__ import annotations

from pathlib import Path

import pytest

from recitation.organism.build import BuildResult, build_organism
from recitation.organism.config import make_config
from recitation.organism.paths import organisms_root


@pytest.fixture(scope="session")
def quick(shared_data: Path) -> BuildResult:
    cfg = make_config(quick=True, data_dir=shared_data / "pdnc")
    return build_organism(cfg, root=organisms_root())
