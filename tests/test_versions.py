"""Library versions read from package metadata: the strings the imports give, without the
imports (an audit answered from the cache, or one that finds its organism built, imports no
model library)."""

from __future__ import annotations

import json
import subprocess
import sys

from recitation._pkgdata import installed_version


def test_installed_versions_equal_the_imported_modules_versions() -> None:
    script = (
        "import json, sys\n"
        "from recitation._pkgdata import installed_version\n"
        "from recitation.organism.build import library_versions\n"
        "from recitation.runs.runner import _versions\n"
        "got = [library_versions(), _versions()]\n"
        "imported = sorted(m for m in ('torch', 'transformers', 'openai', 'anthropic') "
        "if m in sys.modules)\n"
        "import anthropic, openai, torch, transformers\n"
        "real = {m.__name__: m.__version__ for m in (torch, transformers, openai, anthropic)}\n"
        "print(json.dumps([got, imported, real]))\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True).stdout
    (lib, runner), imported, real = json.loads(out.strip().splitlines()[-1])
    assert imported == []  # read without importing any of them
    assert lib == {"torch": real["torch"], "transformers": real["transformers"]}
    assert {k: runner[k] for k in real} == real


def test_a_module_that_is_not_there_has_no_version() -> None:
    assert installed_version("recitation_no_such_module") is None
