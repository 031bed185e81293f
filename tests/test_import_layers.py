"""Layers that point one way: no import cycle anywhere in ``src/recitation``.

The graph is read from the source (``ast``), not from ``sys.modules``, so it sees every
import statement wherever it is written:

- module-level imports;
- function-level (lazy) imports: they **count**. A lazy import only defers the loading; the
  dependency is the same, and a lazy import back into a caller (``detect/cli.py`` taking
  ``_execute`` from ``cli.py``) is exactly the knot this test forbids;
- imports under ``if TYPE_CHECKING:``: they **count** too; a type that must be imported
  from the layer above is a layer pointing back (``detect/results.py`` now states what it reads
  of a job as a ``Protocol`` instead of importing ``detect/job.py``).

Not counted: names looked up at run time through ``importlib`` (the job registry in
``runs/jobs.py`` maps ``"detect"`` to ``"recitation.detect.job:DetectJob"``): that is a
plug-in lookup by name, the lower layer does not depend on the code of the one above.

``from recitation.pkg import name`` resolves to the submodule ``recitation.pkg.name`` when
there is one, else to ``recitation.pkg``; relative imports resolve against the package.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"


def _modules(src: Path) -> dict[str, tuple[Path, bool]]:
    out = {}
    for path in sorted(src.rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        out[".".join(parts[:-1] if is_pkg else parts)] = (path, is_pkg)
    return out


def _imported(node: ast.Import | ast.ImportFrom, package: str) -> list[str]:
    """Dotted names an import statement may load (most specific first is not needed)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    base = node.module or ""
    if node.level:
        parts = package.split(".")
        parts = parts[: len(parts) - (node.level - 1)]
        base = ".".join(parts + ([base] if base else []))
    return [f"{base}.{a.name}" for a in node.names] + [base]


def import_graph(src: Path, root: str) -> dict[str, set[str]]:
    """Module -> modules of package ``root`` it imports (anywhere in its source)."""
    mods = _modules(src)

    def resolve(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {m: set() for m in mods if m.split(".")[0] == root}
    for mod in graph:
        path, is_pkg = mods[mod]
        package = mod if is_pkg else mod.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            names = _imported(node, package)
            if isinstance(node, ast.ImportFrom):  # `from a.b import c`: c, or else a.b
                names = [n for n in names[:-1] if n in mods] or names[-1:]
            for name in names:
                target = resolve(name) if name.split(".")[0] == root else None
                if target is not None and target != mod:
                    graph[mod].add(target)
    return graph


def cycles(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """Strongly connected components with more than one node (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(graph.get(start, ())))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(graph.get(child, ()))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    comp = []
                    while True:
                        top = stack.pop()
                        on_stack.discard(top)
                        comp.append(top)
                        if top == node:
                            break
                    if len(comp) > 1:
                        found.append(sorted(comp))
    return found


def _describe(graph: Mapping[str, set[str]], comps: list[list[str]]) -> str:
    return "\n".join(
        " <-> ".join(c) + ": " + ", ".join(f"{a} -> {b}" for a in c for b in sorted(graph[a])
                                          if b in c)
        for c in comps)


def package_graph(graph: Mapping[str, set[str]], depth: int = 2) -> dict[str, set[str]]:
    """The module graph folded to ``recitation.<subpackage>`` nodes."""
    def top(m: str) -> str:
        return ".".join(m.split(".")[:depth])

    out: dict[str, set[str]] = {}
    for a, targets in graph.items():
        out.setdefault(top(a), set()).update(top(b) for b in targets if top(b) != top(a))
    return out


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    g = import_graph(SRC, "recitation")
    assert len(g) > 50 and "recitation.detect.job" in g  # the walk found the package
    return g


def test_no_import_cycle_between_modules(graph: dict[str, set[str]]) -> None:
    comps = cycles(graph)
    assert not comps, "import cycles (lazy imports count):\n" + _describe(graph, comps)


def test_no_import_cycle_between_subpackages(graph: dict[str, set[str]]) -> None:
    packages = package_graph(graph)
    comps = cycles(packages)
    assert not comps, "subpackages import each other:\n" + _describe(packages, comps)


def _reaches(graph: Mapping[str, set[str]], src_prefix: str, dst_prefix: str) -> list[str]:
    return sorted(f"{a} -> {b}" for a, targets in graph.items() for b in targets
                  if (a == src_prefix or a.startswith(src_prefix + "."))
                  and (b == dst_prefix or b.startswith(dst_prefix + ".")))


@pytest.mark.parametrize(("lower", "upper"), [
    ("recitation.models", "recitation.runs"),  # model config + call-log protocol live there
    ("recitation.models", "recitation.detect"),
    ("recitation.models", "recitation.extract"),
    ("recitation.models", "recitation.organism"),  # organism:... is resolved by importlib
    ("recitation.runs", "recitation.detect"),  # jobs are found by name, not imported
    ("recitation.runs", "recitation.extract"),
    ("recitation.runs", "recitation.cli"),
    ("recitation.detect", "recitation.cli"),  # commands share runs.console, not cli.py
    ("recitation.extract", "recitation.cli"),
    ("recitation.metrics", "recitation.models"),
    ("recitation.corpus", "recitation.models"),
    # the report reads the run store only: no method, model or audit code
    ("recitation.report", "recitation.detect"),
    ("recitation.report", "recitation.extract"),
    ("recitation.report", "recitation.trace"),
    ("recitation.report", "recitation.models"),
    ("recitation.report", "recitation.audit"),
    ("recitation.runs", "recitation.report"),
    ("recitation.runs", "recitation.audit"),
    ("recitation.runs", "recitation.probes"),  # probe jobs are found by name
    ("recitation.probes", "recitation.cli"),
    ("recitation.report", "recitation.probes"),
    # the server and the RECAP evaluator are packages on top: nothing below reaches them
    ("recitation.models", "recitation.serve"),
    ("recitation.runs", "recitation.serve"),
    ("recitation.serve", "recitation.cli"),
    ("recitation.metrics", "recitation.evaluate"),
    ("recitation.corpus", "recitation.evaluate"),
    ("recitation.evaluate", "recitation.cli"),
])
def test_lower_layer_does_not_import_upper(graph: dict[str, set[str]], lower: str,
                                           upper: str) -> None:
    assert not _reaches(graph, lower, upper)


def test_the_printing_runner_has_its_own_module(graph: dict[str, set[str]]) -> None:
    for command in ("recitation.cli", "recitation.detect.cli", "recitation.extract.cli"):
        assert "recitation.runs.console" in graph[command]
    assert not {m for m in graph["recitation.runs.console"] if not m.startswith("recitation.runs")}


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")


def test_the_walk_sees_lazy_relative_and_type_checking_imports(tmp_path: Path) -> None:
    """The checker itself can fail: a function-level cycle, a relative one and a
    TYPE_CHECKING one are each found; a plug-in lookup by string is not an edge."""
    _write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/a.py": "def f():\n    from pkg.b import g\n    return g\n",
        "pkg/b.py": "from pkg import a\ng = 1\n",
        "pkg/sub/__init__.py": "",
        "pkg/sub/c.py": "from . import d\n",
        "pkg/sub/d.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                        "    from .c import X\n",
        "pkg/e.py": "import importlib\nm = importlib.import_module('pkg.f')\n",
        "pkg/f.py": "from pkg import e\n",
    })
    g = import_graph(tmp_path, "pkg")
    assert g["pkg.a"] == {"pkg.b"} and g["pkg.b"] == {"pkg.a"}
    assert g["pkg.e"] == set() and g["pkg.f"] == {"pkg.e"}
    assert sorted(cycles(g)) == [["pkg.a", "pkg.b"], ["pkg.sub.c", "pkg.sub.d"]]
    assert cycles(package_graph(g)) == [["pkg.a", "pkg.b"]]  # pkg.sub.c <-> d stay inside
    assert cycles({"x": {"y"}, "y": {"z"}, "z": set()}) == []
