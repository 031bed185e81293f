"""`recitation demo` end to end on the real embedded model, twice: the second run is answered
from the response cache. (Its speed-up is measured in benchmarks/bench_demo_cache.py.)"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from recitation.runs.store import RunStore

pytestmark = pytest.mark.model


def demo(tmp_path: Path, *extra: str) -> str:
    env = dict(os.environ, RECITATION_CACHE_DIR=str(tmp_path / "cache"), COLUMNS="160")
    p = subprocess.run([sys.executable, "-m", "recitation.cli", "demo", "--limit", "2",
                        "--runs-dir", str(tmp_path / "runs"), *extra],
                       env=env, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    return p.stdout


def test_demo_twice_second_from_cache(tmp_path: Path) -> None:
    first = demo(tmp_path)
    assert "Prefix probing" in first and "John 1:1" not in first  # limit 2: 1 + 1 passages
    for ref in ("Genesis 1:1", "1 Chronicles 1:5-8"):
        assert ref in first
    assert re.search(r"famous: 1 passage, mean ROUGE-L F1 [01]\.\d{3}", first)
    assert "backend calls: 2" in first and "from cache: 0" in first
    second = demo(tmp_path)
    assert "backend calls: 0" in second and "from cache: 2" in second
    runs = sorted((tmp_path / "runs").iterdir())
    assert len(runs) == 2
    with RunStore(runs[0]) as a, RunStore(runs[1]) as b:
        ra, rb = dict(a.results()), dict(b.results())
        assert ra == rb and len(ra) == 2
        assert all(0 <= r["rouge_l_f1"] <= 1 for r in ra.values())
        assert b.call_totals()["served_from_cache"] == 2
    third = demo(tmp_path, "--no-cache")
    assert "backend calls: 2" in third
