"""The suite's own rules (tests/conftest.py) in a pytest of their own: a ``model`` test runs in
a plain ``pytest`` (what a contributor types for one test) and under pytest-xdist's
``--dist loadgroup`` (what scripts/test.sh runs), where it is put in a group."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

CONFTEST = Path(__file__).with_name("conftest.py")

MODEL_TEST = '''
import os
import pytest

@pytest.mark.model
def test_grouped_under_xdist(request):
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    assert request.node.nodeid.endswith("@model") == bool(worker), request.node.nodeid
'''


@pytest.mark.parametrize("args", [[], ["-n", "1", "--dist", "loadgroup"]],
                         ids=["plain", "xdist-loadgroup"])
def test_a_model_test_runs_plain_and_grouped(tmp_path: Path, args: list[str]) -> None:
    shutil.copy(CONFTEST, tmp_path / "conftest.py")
    (tmp_path / "test_one.py").write_text(MODEL_TEST, encoding="utf-8")
    # not this run's pytest-xdist worker identity (when the suite itself runs on workers)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        "-o", "addopts=", *args, str(tmp_path)], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0 and "1 passed" in p.stdout, p.stdout + p.stderr
