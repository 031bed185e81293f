"""scripts/mutation_records.py, the records of scripts/mutation.sh: a target's line, the
mutant names it keeps, the survivors' diffs read from mutmut's mutated copy, the equivalents
matched by function and lines, and the score in the docs section (mutmut itself not run)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def mr() -> ModuleType:
    spec = importlib.util.spec_from_file_location("mutation_records",
                                                  REPO / "scripts" / "mutation_records.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up there
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]
    return module


def test_a_target_line_and_the_mutant_names_it_keeps(mr: ModuleType) -> None:
    t = mr.Target.parse("src/recitation/detect/whitebox.py::gap_k,Det.score tests/a.py tests/b.py")
    assert (t.path, t.functions, t.tests) == ("src/recitation/detect/whitebox.py",
                                              ("gap_k", "Det.score"), ("tests/a.py", "tests/b.py"))
    assert t.module == "recitation.detect.whitebox"
    assert t.globs() == ["recitation.detect.whitebox.x_gap_k__mutmut_*",
                         "recitation.detect.whitebox.xǁDetǁscore__mutmut_*"]
    whole = mr.Target.parse("src/recitation/metrics/fdr.py tests/metrics/test_fdr.py")
    assert whole.globs() == [] and whole.key == "src/recitation/metrics/fdr.py"
    config = whole.config()
    assert 'only_mutate = ["src/recitation/metrics/fdr.py"]' in config
    assert 'pytest_add_cli_args_test_selection = ["tests/metrics/test_fdr.py"]' in config
    assert "not slow and not model" in config
    for bad in ("src/recitation/metrics/fdr.py", "src/y.txt tests/x.py"):
        with pytest.raises(SystemExit, match="a target is"):
            mr.Target.parse(bad)


def test_every_listed_target_exists() -> None:
    lines = [ln for ln in (REPO / "scripts" / "mutation-targets.txt").read_text().splitlines()
             if ln.strip() and not ln.lstrip().startswith("#")]
    assert lines
    for line in lines:
        path, *tests = line.split()
        assert (REPO / path.partition("::")[0]).is_file(), line
        assert tests and all((REPO / t).is_file() for t in tests), line


MUTATED = '''
def x_f__mutmut_orig(a):
    b = a + 1
    return b * 2

def x_f__mutmut_1(a):
    b = a - 1
    return b * 2

def x_f__mutmut_2(a):
    b = a + 1
    return b * 3
'''


def _collected(mr: ModuleType, tmp_path: Path, codes: dict[str, int | None]) -> dict[str, object]:
    mutated = tmp_path / "mutants" / "src" / "pkg" / "m.py"
    mutated.parent.mkdir(parents=True)
    mutated.write_text(MUTATED)
    (tmp_path / "mutants" / "src" / "pkg" / "m.py.meta").write_text(
        json.dumps({"exit_code_by_key": codes}))
    record: dict[str, object] = mr.collect(tmp_path, mr.Target.parse("src/pkg/m.py t.py"), 61.0)
    return record


def test_survivors_diffs_and_the_score(mr: ModuleType, tmp_path: Path) -> None:
    record = _collected(mr, tmp_path, {"pkg.m.x_f__mutmut_1": 0, "pkg.m.x_f__mutmut_2": 1})
    assert record["mutants"] == 2 and record["killed"] == 1 and record["seconds"] == 61
    assert record["survivors"] == {"pkg.m.x_f__mutmut_1": "-    b = a + 1\n+    b = a - 1"}
    equiv = [{"function": "pkg.m.x_f", "was": "b = a + 1", "now": "b = a - 1", "reason": "why"},
             {"function": "pkg.m.x_f", "was": "gone", "now": "gone too", "reason": "old"}]
    same, left = mr.classify(record, equiv)
    assert same == [("pkg.m.x_f__mutmut_1", "b = a + 1", "b = a - 1", "why")] and left == []
    body, ok = mr.section([record], equiv)
    assert ok and "| 2 | 1 | 1 | 0 | 100.0% | 1 min 01 s |" in body
    assert "no longer a survivor" in body and "gone too" in body
    body, ok = mr.section([record], [])
    assert not ok and "| 2 | 1 | 0 | 1 | 50.0% |" in body
    assert "not killed: `x_f__mutmut_1` `b = a + 1` -> `b = a - 1`" in body


def test_a_mutant_not_run_stops_the_records(mr: ModuleType, tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="1 mutants were not run"):
        _collected(mr, tmp_path, {"pkg.m.x_f__mutmut_1": None, "pkg.m.x_f__mutmut_2": 1})


def test_the_equivalents_file_parses_and_names_functions(mr: ModuleType) -> None:
    for e in mr.equivalents():
        assert set(e) == {"function", "was", "now", "reason"}, e
        assert e["reason"].strip() and ".x" in e["function"], e
