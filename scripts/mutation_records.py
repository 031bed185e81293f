"""The records of scripts/mutation.sh (issue 46 item 6): the mutmut configuration of one
target, its results once run, and the "Mutation testing" section of docs/developing.md
written from them.

    mutation_records.py config TARGET          the [tool.mutmut] table for TARGET
    mutation_records.py globs TARGET           the mutant names TARGET keeps (mutmut run ...)
    mutation_records.py collect DIR TARGET S   DIR's results -> docs/mutation-results.json
    mutation_records.py write                  the JSON + the equivalents -> the docs section

A TARGET is one line of scripts/mutation-targets.txt: ``PATH[::FUNC,...] TEST_FILE ...``.
An equivalent mutant is listed in scripts/mutation-equivalent.toml by its function, the
line it changes and the line it writes, with the reason (so the list survives renumbering;
an entry that no longer matches a survivor is reported as stale).
"""

from __future__ import annotations

import ast
import difflib
import fcntl
import json
import platform
import subprocess
import sys
import tempfile
import tomllib
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "docs" / "mutation-results.json"
EQUIVALENT = REPO / "scripts" / "mutation-equivalent.toml"
DOC = REPO / "docs" / "developing.md"
BEGIN, END = "<!-- mutation:begin (scripts/mutation_records.py) -->", "<!-- mutation:end -->"
TARGET_SCORE = 0.90
KILLED = {1, 3, 36, 37, -24, 24, 152, 255, -11, -9}  # mutmut's killed, timeout, type check
NOT_RUN = {None, 34, 2}  # not checked, skipped, interrupted


@dataclass(frozen=True)
class Target:
    path: str
    functions: tuple[str, ...]
    tests: tuple[str, ...]

    @classmethod
    def parse(cls, line: str) -> Target:
        words = line.split()
        if len(words) < 2 or not words[0].partition("::")[0].endswith(".py"):
            raise SystemExit(f"a target is 'PATH[::FUNC,...] TEST_FILE ...', got {line!r}")
        path, _, funcs = words[0].partition("::")
        return cls(path, tuple(f for f in funcs.split(",") if f), tuple(words[1:]))

    @property
    def key(self) -> str:
        return self.path + ("::" + ",".join(self.functions) if self.functions else "")

    @property
    def module(self) -> str:
        return self.path.removeprefix("src/").removesuffix(".py").replace("/", ".")

    def globs(self) -> list[str]:
        # mutmut's names: module.x_function__mutmut_N, module.xǁClassǁmethod__mutmut_N
        return [f"{self.module}.x" + (f"ǁ{f.replace('.', 'ǁ')}" if "." in f else f"_{f}")
                + "__mutmut_*" for f in self.functions]

    def config(self) -> str:
        def arr(xs: list[str]) -> str:
            return "[" + ", ".join(json.dumps(x) for x in xs) + "]"
        return "\n".join([
            "[tool.mutmut]",
            'source_paths = ["src/"]',
            f"only_mutate = {arr([self.path])}",
            f"pytest_add_cli_args_test_selection = {arr(list(self.tests))}",
            # -p no:randomly etc. are not installed; addopts off: no --durations noise
            'pytest_add_cli_args = ["-p", "no:cacheprovider", "-q", "-o", "addopts=", '
            '"-m", "not slow and not model"]',
            "use_git_change_detection = false",
        ]) + "\n"


def _functions(mutated: Path) -> dict[str, list[str]]:
    """Every function of mutmut's mutated copy of a module, by name, as its lines without the
    ``def`` line (the original is ``NAME__mutmut_orig``, mutant N ``NAME__mutmut_N``)."""
    source = mutated.read_text()
    lines = source.splitlines()
    return {node.name: lines[node.lineno:node.end_lineno]
            for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno}


def _diff(functions: dict[str, list[str]], name: str) -> str:
    """A mutant's changed lines, as ``mutmut show`` prints them ("-" the original's)."""
    func = name.rsplit(".", 1)[1]
    orig = functions[func.rsplit("__mutmut_", 1)[0] + "__mutmut_orig"]
    return "\n".join(line for line in difflib.unified_diff(orig, functions[func], lineterm="")
                     if line[:1] in "+-" and not line.startswith(("+++", "---")))


def collect(workdir: Path, target: Target, seconds: float) -> dict[str, object]:
    """The results of one run: every kept mutant's exit code, the survivors' diffs."""
    meta = json.loads((workdir / "mutants" / (target.path + ".meta")).read_text())
    codes: dict[str, int | None] = meta["exit_code_by_key"]
    prefixes = tuple(g.removesuffix("*") for g in target.globs())
    kept = {k: v for k, v in codes.items() if not prefixes or k.startswith(prefixes)}
    not_run = sorted(k for k, v in kept.items() if v in NOT_RUN)
    if not_run:
        raise SystemExit(f"{len(not_run)} mutants were not run (e.g. {not_run[0]}): rerun")
    functions = _functions(workdir / "mutants" / target.path)
    survivors = {k: _diff(functions, k) for k, v in sorted(kept.items()) if v not in KILLED}
    sha = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO,
                         capture_output=True, text=True).stdout.strip()
    return {"target": target.key, "path": target.path, "functions": list(target.functions),
            "tests": list(target.tests), "tool": f"mutmut {version('mutmut')}",
            "python": platform.python_version(), "seconds": round(seconds),
            "date": datetime.now(UTC).strftime("%Y-%m-%d"), "commit": sha,
            "mutants": len(kept), "killed": sum(v in KILLED for v in kept.values()),
            "survivors": survivors}


def _split(diff: str) -> tuple[str, str]:
    was = " / ".join(ln[1:].strip() for ln in diff.splitlines() if ln.startswith("-"))
    now = " / ".join(ln[1:].strip() for ln in diff.splitlines() if ln.startswith("+"))
    return was, now


def equivalents() -> list[dict[str, str]]:
    if not EQUIVALENT.exists():
        return []
    return list(tomllib.loads(EQUIVALENT.read_text())["mutant"])


def classify(record: dict[str, object], equiv: list[dict[str, str]]
             ) -> tuple[list[tuple[str, str, str, str]], list[tuple[str, str, str]]]:
    """(equivalent: name, was, now, reason), (not killed: name, was, now)."""
    same, left = [], []
    survivors = record["survivors"]
    assert isinstance(survivors, dict)
    for name, diff in survivors.items():
        func = name.rsplit("__mutmut_", 1)[0]
        was, now = _split(diff)
        reason = next((e["reason"] for e in equiv if e["function"] == func
                       and e["was"].strip() == was and e["now"].strip() == now), None)
        if reason is None:
            left.append((name, was, now))
        else:
            same.append((name, was, now, reason))
    return same, left


def _stale(records: list[dict[str, object]], equiv: list[dict[str, str]]) -> list[str]:
    seen = set()
    for r in records:
        survivors = r["survivors"]
        assert isinstance(survivors, dict)
        for name, diff in survivors.items():
            seen.add((name.rsplit("__mutmut_", 1)[0], *_split(diff)))
    return [f"{e['function']}: {e['now']}" for e in equiv
            if (e["function"], e["was"].strip(), e["now"].strip()) not in seen]


def _row(r: dict[str, object], n_eq: int, n_left: int) -> tuple[str, float]:
    mutants, killed = int(str(r["mutants"])), int(str(r["killed"]))
    live = mutants - n_eq
    score = killed / live if live else 1.0
    funcs, tests = r["functions"], r["tests"]
    assert isinstance(funcs, list) and isinstance(tests, list)
    what = f"`{r['path']}`" + (f" ({', '.join(funcs)})" if funcs else "")
    m, s = divmod(int(str(r["seconds"])), 60)
    return (f"| {what} | {mutants} | {killed} | {n_eq} | {n_left} | {score:.1%} "
            f"| {m} min {s:02d} s | {', '.join(f'`{t}`' for t in tests)} |", score)


def _code(s: str) -> str:
    return "`" + s.replace("`", "'").replace("|", "\\|") + "`"


def section(records: list[dict[str, object]], equiv: list[dict[str, str]]) -> tuple[str, bool]:
    """The docs section's body, and whether every module reaches the target score."""
    tools = sorted({str(r["tool"]) for r in records})
    lines = [f"Results of the last run ({', '.join(tools)}, Python "
             f"{', '.join(sorted({str(r['python']) for r in records}))}; written by "
             "`scripts/mutation_records.py write`, do not edit by hand). Score: killed / "
             "(mutants - equivalent); a timeout counts as killed.", "",
             "| module | mutants | killed | equivalent | not killed | score | run time | "
             "tests run |", "|---|---|---|---|---|---|---|---|"]
    ok, details = True, []
    for r in records:
        same, left = classify(r, equiv)
        row, score = _row(r, len(same), len(left))
        ok &= score >= TARGET_SCORE
        lines.append(row)
        details.append(f"\n`{r['target']}` (run {r['date']} on {r['commit']}):\n")
        details += [f"- not killed: {_code(n.rsplit('.', 1)[1])} {_code(w)} -> {_code(nw)}"
                    for n, w, nw in left]
        details += [f"- equivalent: {_code(n.rsplit('.', 1)[1])} {_code(w)} -> {_code(nw)}: "
                    f"{why}" for n, w, nw, why in same]
        if not same and not left:
            details.append("- every mutant killed")
    stale = _stale(records, equiv)
    if stale:
        details.append("\nListed as equivalent but no longer a survivor (remove from "
                       "scripts/mutation-equivalent.toml): " + "; ".join(stale))
    return "\n".join(lines + details), ok


def write() -> bool:
    records = list(json.loads(RESULTS.read_text()).values()) if RESULTS.exists() else []
    body, ok = section(records, equivalents())
    doc = DOC.read_text()
    if BEGIN not in doc:
        raise SystemExit(f"{DOC} has no {BEGIN!r} marker")
    head, _, rest = doc.partition(BEGIN)
    _, _, tail = rest.partition(END)
    DOC.write_text(f"{head}{BEGIN}\n{body}\n{END}{tail}")
    print(body)
    return ok


def main(argv: list[str]) -> int:
    cmd, args = argv[0], argv[1:]
    if cmd == "config":
        print(Target.parse(args[0]).config(), end="")
    elif cmd == "globs":
        for glob in Target.parse(args[0]).globs():
            print(glob)
    elif cmd == "collect":
        target = Target.parse(args[1])
        record = collect(Path(args[0]), target, float(args[2]))
        with open(Path(tempfile.gettempdir()) / "recitation-mutation-results.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # two runs at once each keep their results
            results = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
            results[target.key] = record
            RESULTS.write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n")
    elif cmd == "write":
        return 0 if write() else 1
    else:
        raise SystemExit(__doc__)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
