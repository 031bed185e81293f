"""The one registry mechanism (recitation.registry) on its own: the built-in table read at
call time, entry points after it, one "unknown name" message, and what a plug-in may not do.
The four registries built on it: tests/test_outside_plugin.py (an installed package) and the
contract tests of each (tests/test_methods_registry.py, tests/models/test_contract.py)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from recitation import methods, registry
from recitation.errors import ConfigError
from recitation.models.config import BACKENDS
from recitation.registry import Registry, paths, unknown
from recitation.report import sections
from recitation.runs import jobs


def test_every_plug_in_point_is_one_registry() -> None:
    assert {r.group for r in (methods.REGISTRY, BACKENDS, sections.REGISTRY,
                              jobs.REGISTRY)} == set(registry.GROUPS.values())
    assert methods.REGISTRY.builtin is methods.METHODS and jobs.REGISTRY.builtin is jobs.JOBS


def test_the_unknown_message() -> None:
    e = unknown("backend", "opnai", ["local", "openai"], "model.backend")
    assert str(e) == ("model.backend: unknown backend 'opnai' (did you mean 'openai'?); "
                      "choose from local, openai")
    assert str(unknown("job", "zzz", ["a", "b"])) == "unknown job 'zzz'; choose from a, b"


def test_the_builtin_table_is_read_at_call_time(monkeypatch: pytest.MonkeyPatch) -> None:
    table = {"one": "json:dumps"}
    reg = paths("job", table)
    assert reg.names() == ["one"] and "two" not in reg
    monkeypatch.setitem(table, "two", "json:loads")
    assert reg.names() == ["one", "two"] and reg.load("two").__name__ == "loads"
    with pytest.raises(ConfigError, match="job registry: module 'json' has no 'nothing'"):
        Registry("job", {"x": "json:nothing"}, lambda n, p: p.path).load("x")


@pytest.fixture
def on_path(tmp_path: Path) -> Iterator[Path]:
    sys.path.insert(0, str(tmp_path))
    registry.refresh()
    try:
        yield tmp_path
    finally:
        sys.path.remove(str(tmp_path))
        registry.refresh()


def _dist(root: Path, name: str, entry_points: str) -> None:
    info = root / f"{name}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n",
                                   encoding="utf-8")
    (info / "entry_points.txt").write_text(entry_points, encoding="utf-8")


def test_plug_ins_come_after_the_table_and_may_not_clash(on_path: Path) -> None:
    _dist(on_path, "aplug", "[recitation.jobs]\nzeta = json:dumps\n")
    registry.refresh()
    reg = paths("job", {"alpha": "json:loads"})
    assert reg.names() == ["alpha", "zeta"]
    origin = reg.origin("zeta")
    assert origin is not None and origin.package == "aplug" and reg.origin("alpha") is None
    assert reg.load("zeta").__name__ == "dumps"
    _dist(on_path, "bplug", "[recitation.jobs]\nzeta = json:loads\n")
    registry.refresh()
    with pytest.raises(ConfigError, match="plug-in 'bplug'.*and plug-in 'aplug'.*both "
                       "register 'zeta'"):
        reg.names()


def test_listing_the_plug_in_points_imports_no_plug_in_code() -> None:
    """Command-line choices read the registries: naming what is registered imports none of
    it (bench groundtruth's units included)."""
    import subprocess

    code = ("import sys; from recitation import methods; from recitation.models.config import "
            "backend_names; from recitation.bench.groundtruth import units; "
            "from recitation.runs.jobs import REGISTRY; methods.families('detector'); "
            "backend_names(); units(); REGISTRY.names(); print(sorted(m for m in sys.modules "
            "if m.startswith(('recitation.detect.', 'recitation.models.local', "
            "'recitation.extract.', 'recitation.probes.'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"
