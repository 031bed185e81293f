"""Shared fixtures.

Reference data (../shared/data) is found through one setting, ``RECITATION_DATA``; where it
is absent tests skip with a message saying how to get it, except under CI (``CI=true``),
where its absence is a failure.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def data_dir() -> Path:
    return Path(os.environ.get("RECITATION_DATA", REPO.parent / "shared" / "data"))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    d = data_dir()
    if not (d / "README.md").exists():
        msg = (f"reference data not found at {d}: put the project's shared/ folder beside "
               "the repository or set RECITATION_DATA to its data/ directory")
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(msg)
        pytest.skip(msg)
    return d


@pytest.fixture(autouse=True)
def _isolated_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each test gets its own response cache and runs directory. Converted model weights
    stay in the shared model cache so the GGUF is converted once."""
    if "RECITATION_MODEL_CACHE_DIR" not in os.environ:
        from recitation.models.local import model_cache_dir

        monkeypatch.setenv("RECITATION_MODEL_CACHE_DIR", str(model_cache_dir()))
    monkeypatch.setenv("RECITATION_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("RECITATION_RUNS_DIR", str(tmp_path / "runs"))
    yield


@pytest.fixture(scope="session")
def local_model():  # type: ignore[no-untyped-def]
    """The real embedded SmolLM2 model, loaded once per session."""
    from recitation.models.local import LocalModel

    m = LocalModel()
    m.load()
    return m
