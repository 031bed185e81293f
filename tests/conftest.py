"""Shared fixtures, and what a missing dependency does to a test.

Reference data (../shared/data) is found through one setting, ``RECITATION_DATA``.

A test that cannot run here (reference data, an optional package, the o200k file, Debian's
chromium) skips with a message saying how to get what it needs, except under CI
(``CI=true``, any case), where it fails: a skip there would hide coverage. Tests ask through
one helper, :func:`require_or_skip`, reached as

- the ``require`` fixture in a test or fixture body: ``require(condition, message)``, and
  ``require.module(name, install)`` for an import (``pytest.importorskip`` that fails under
  CI);
- the ``requires(condition, message)`` marker, for parameters and whole tests; ``condition``
  may be a callable, called when the test is set up (an exception it raises is the test's
  error, never a skip);
- a test file skipped as a whole at import (a module-level ``pytest.importorskip``) is a
  collection error under CI, which stops the run before any test as an ``ImportError``
  would (:func:`pytest_make_collect_report`).

Skips that are not about this machine's setup and stay skips under CI call ``pytest.skip``
directly and say why in their message.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[1]
SETUP = "bash scripts/test.sh (or: bash scripts/setup.sh all,dev) installs it"


def under_ci() -> bool:
    """``CI=true`` (any case): what is missing fails instead of skipping."""
    return os.environ.get("CI", "").lower() == "true"


def require_or_skip(condition: object, message: str) -> None:
    """Nothing when ``condition`` holds; otherwise skip with ``message`` (which says how to
    install what is missing), or fail under CI."""
    __tracebackhide__ = True  # the skip or failure points at the test's line
    if condition:
        return
    if under_ci():
        pytest.fail(f"{message} [CI=true: a missing dependency fails instead of skipping]",
                    pytrace=False)
    pytest.skip(message)


def _missing(e: ImportError, module: str) -> bool:
    """``e`` says ``module`` (or a package above it) is not installed, as opposed to an
    installed module failing to import (a broken wheel: an error, never a skip)."""
    parts = module.split(".")
    names = {".".join(parts[:i]) for i in range(1, len(parts) + 1)}
    return isinstance(e, ModuleNotFoundError) and e.name in names


def import_or_skip(module: str, install: str = SETUP) -> ModuleType:
    """``module`` imported, or :func:`require_or_skip`'s skip (failure under CI) when it is
    not installed; an installed module that fails to import raises its error."""
    __tracebackhide__ = True
    try:
        return importlib.import_module(module)
    except ImportError as e:
        if not _missing(e, module):
            raise
    require_or_skip(False, f"{module} is not installed: {install}")
    raise AssertionError("not reached: require_or_skip skipped or failed")


class Require:
    """The ``require`` fixture: ``require(condition, message)`` and
    ``require.module(name, install)``."""

    def __call__(self, condition: object, message: str) -> None:
        __tracebackhide__ = True
        require_or_skip(condition, message)

    def module(self, name: str, install: str = SETUP) -> ModuleType:
        __tracebackhide__ = True
        return import_or_skip(name, install)


@pytest.fixture(scope="session")
def require() -> Require:
    return Require()


@pytest.fixture(autouse=True)
def _requires_marks(request: pytest.FixtureRequest) -> None:
    """The ``requires(condition, message)`` marks of a test (a fixture: a skip is reported
    at the test's line)."""
    for mark in request.node.iter_markers("requires"):
        condition, message = mark.args
        require_or_skip(condition() if callable(condition) else condition, message)


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(
        collector: pytest.Collector) -> Generator[None, pytest.CollectReport, pytest.CollectReport]:
    """A test file skipped as a whole when imported (``pytest.importorskip`` at module
    level): the skip names the setup command; under CI it is a failure."""
    report = yield
    if report.skipped and isinstance(collector, pytest.Module):
        longrepr = report.longrepr
        reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
        reason = reason.removeprefix("Skipped: ")
        if under_ci():
            report.outcome = "failed"
            report.longrepr = (f"{collector.nodeid} skipped as a whole: {reason} "
                               "[CI=true: a missing dependency fails instead of skipping]")
        elif isinstance(longrepr, tuple) and SETUP not in reason:
            report.longrepr = (longrepr[0], longrepr[1], f"{reason} ({SETUP})")
    return report


ORGANISM_FIXTURES = ("quick", "demo_audit", "recitation_runner", "book_quick")
"""Fixtures built on the quick organism: their tests share one pytest-xdist worker."""

@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """With pytest-xdist (``-n 2 --dist loadgroup``, what scripts/test.sh runs) the
    ``model`` tests form two groups, each run by one worker: those on the quick organism
    (built once, audited once) and the other real-model tests. The tests without a model
    fill the gaps on every worker. A test that names its group keeps it; one on the quick
    organism that names the model group is moved to the end of the run."""
    borrowed = []
    for item in items:
        if item.get_closest_marker("model") is None:
            continue
        uses = getattr(item, "fixturenames", ())
        organism = any(f in uses for f in ORGANISM_FIXTURES)
        mark = item.get_closest_marker("xdist_group")
        if mark is None:
            item.add_marker(pytest.mark.xdist_group("organism" if organism else "model"))
        elif organism and mark.args[:1] == ("model",):
            borrowed.append(item)
    if borrowed:
        ids = {id(i) for i in borrowed}
        items[:] = [i for i in items if id(i) not in ids] + borrowed


def _worker_threads() -> None:
    """Under pytest-xdist each worker's local models get the machine's cores divided by the
    workers (``RECITATION_THREADS``, unless set): two workers at 2 threads each on a 2-core
    machine would each wait on the other. Measured: a generation-heavy test runs at 1
    thread nearly as fast as at 2 (docs/developing.md)."""
    count = os.environ.get("PYTEST_XDIST_WORKER_COUNT")
    if count and not os.environ.get("RECITATION_THREADS"):
        os.environ["RECITATION_THREADS"] = str(max(1, (os.cpu_count() or 1) // int(count)))


_worker_threads()


MODEL_FIXTURES = ("local_model", "quick", "demo_audit", "book_quick")
"""Fixtures that load (or build) a real model: a test using one is marked ``model``."""


@pytest.fixture(autouse=True)
def _model_marker(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """The ``model`` marker says what it means: a test not marked ``model`` that loads real
    weights in this process (or asks for a fixture that does) fails, naming the marker."""
    if request.node.get_closest_marker("model") is not None:
        _check_grouped(request)
        return
    used = [f for f in MODEL_FIXTURES if f in request.fixturenames]
    if used:
        pytest.fail(f"{request.node.nodeid} uses {used} (a real model) but is not marked "
                    "'model': add @pytest.mark.model", pytrace=False)
    from recitation.models.local import LocalModel

    def refuse(self: LocalModel, *, shared: bool) -> None:
        pytest.fail(f"{request.node.nodeid} loads the real model {self.spec!r} but is not "
                    "marked 'model': add @pytest.mark.model", pytrace=False)

    monkeypatch.setattr(LocalModel, "_load", refuse)


def _check_grouped(request: pytest.FixtureRequest) -> None:
    """On a pytest-xdist worker with ``--dist loadgroup`` a ``model`` test carries its group
    in its id (``...@model``), or it fails: pytest-xdist 3.8 cannot group under pytest 9.2
    (it sets ``item._nodeid``, which pytest 9.2 no longer reads), and ungrouped model tests
    build the organism on both workers (measured: 5 more minutes)."""
    # set on pytest-xdist's workers only (xdist/remote.py); absent in a plain run
    if getattr(request.config.option, "loadgroup", False) and "@" not in request.node.nodeid:
        pytest.fail(f"--dist loadgroup did not group {request.node.nodeid}: pytest "
                    f"{pytest.__version__} with this pytest-xdist cannot; install the versions "
                    "pyproject.toml names (bash scripts/setup.sh all,dev) or run with -n 0",
                    pytrace=False)


def data_dir() -> Path:
    return Path(os.environ.get("RECITATION_DATA", REPO.parent / "shared" / "data"))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    d = data_dir()
    require_or_skip((d / "README.md").exists(),
                    f"reference data not found at {d}: put the project's shared/ folder beside "
                    "the repository or set RECITATION_DATA to its data/ directory")
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


@pytest.fixture(scope="session")
def quick(shared_data: Path):  # type: ignore[no-untyped-def]
    """The quick organism (SmolLM2 fine-tuned on PDNC passages), built once per session for
    every test that needs a real one, in the session's model cache (an empty one builds it
    for real; an up-to-date one with the same fingerprint is reused, as for users)."""
    from recitation.organism.build import build_organism
    from recitation.organism.config import make_config
    from recitation.organism.paths import organisms_root

    return build_organism(make_config(quick=True, data_dir=shared_data / "pdnc"),
                          root=organisms_root())


@pytest.fixture(scope="session")
def book_quick(shared_data: Path):  # type: ignore[no-untyped-def]
    """The whole-work organism's quick version (SmolLM2 fine-tuned on the first two chapters
    of Pride and Prejudice, checkpoints at epochs 1, 4 and 16), built once per session as
    :func:`quick` is."""
    from recitation.organism.build import build_organism
    from recitation.organism.config import make_config
    from recitation.organism.paths import organisms_root

    return build_organism(make_config(preset="book-quick", data_dir=shared_data / "pdnc"),
                          root=organisms_root())


def _session_cache() -> Path:
    from recitation._cachedir import cache_dir

    return cache_dir()


SESSION_CACHE = _session_cache()
"""The cache folder the suite was started with (``RECITATION_CACHE_DIR``, e.g. CI's, else the
user's), read before any test points its own there. The real-model runs that a suite repeats
unchanged (the benchmark, the demo audit, PROPME on the organism) keep their model answers in
its response cache, as a user's second run does: a first run on an empty cache computes every
answer for real; a second reads them back. The keys carry the weights and a digest of the
decoding code and the torch / transformers versions (``LocalModel.answer_code``), so a change
to any of them computes again. Every other test gets a cache of its own."""


@pytest.fixture(scope="session")
def session_cache() -> Path:
    """:data:`SESSION_CACHE`, for a fixture of a wider scope that sets it itself."""
    return SESSION_CACHE


@pytest.fixture
def session_responses(monkeypatch: pytest.MonkeyPatch) -> Path:
    """This test's response cache is :data:`SESSION_CACHE`'s (its models stay where they
    are)."""
    monkeypatch.setenv("RECITATION_CACHE_DIR", str(SESSION_CACHE))
    return SESSION_CACHE


def run_demo(work: Path, shared: Path, *extra: str) -> str:
    """``recitation demo --limit 4 --recap-passages 1`` in a process of its own, its runs
    under ``work``, its answers in the session's response cache (:data:`SESSION_CACHE`); its
    output (a non-zero exit fails the test with the output). RECAP on one passage of each
    group: RECAP is most of the demo's time."""
    return run_recitation(shared, "demo", "--limit", "4", "--recap-passages", "1",
                          "--runs-dir", str(work / "runs"), *extra)


def run_recitation(shared: Path, *args: str) -> str:
    """``recitation ARGS`` in a process of its own with the session's response cache
    (:data:`SESSION_CACHE`) and model cache; its output (a non-zero exit fails the test
    with the output)."""
    import subprocess
    import sys

    from recitation.models.local import model_cache_dir

    env = dict(os.environ, RECITATION_CACHE_DIR=str(SESSION_CACHE), COLUMNS="200",
               RECITATION_DATA=str(shared), RECITATION_MODEL_CACHE_DIR=str(model_cache_dir()))
    p = subprocess.run([sys.executable, "-m", "recitation.cli", *args],
                       env=env, capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stdout + p.stderr
    return p.stdout


@pytest.fixture(scope="session")
def demo_audit(tmp_path_factory: pytest.TempPathFactory, shared_data: Path,
               quick: object) -> tuple[Path, str]:
    """One real ``recitation demo --limit 4`` (the embedded model and the quick organism,
    prefix probing, white-box detectors, RECAP) per session: (its work folder, its output).
    The demo test, the report's browser and redaction tests read this one audit."""
    work = tmp_path_factory.mktemp("demo")
    return work, run_demo(work, shared_data)


@pytest.fixture(scope="session")
def recitation_runner() -> Callable[..., str]:
    """:func:`run_recitation`, for a test that runs the command line in a process of its
    own beside the session's demo."""
    return run_recitation



@pytest.fixture
def write_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[[str, str], None]:
    """``write_plugin(module, source)``: a plug-in module written into a temporary folder on
    ``sys.path`` (a fresh import in each test), for the tests that add a made-up method,
    backend or report section with one registry line."""
    import sys
    import textwrap

    folder = tmp_path / "plugins"
    folder.mkdir()
    monkeypatch.syspath_prepend(str(folder))

    def write(module: str, source: str) -> None:
        (folder / f"{module}.py").write_text(textwrap.dedent(source), encoding="utf-8")
        monkeypatch.delitem(sys.modules, module, raising=False)

    return write
