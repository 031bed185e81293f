"""kill -9 at seeded points during an extraction (``recitation extract``) and during a PEARL
run (``recitation detect --detectors pearl``), then ``recitation resume``: the final results
equal those of an uninterrupted run, and no answered request is sent again.

The kill point is not a time: the server holds every request from the k-th on (k drawn from a
seeded RNG), the test waits until the client is blocked on one, and kills it there. The run
is a child forked from multiprocessing's fork server (a clean single-threaded process with
recitation imported: no interpreter start-up per trial, and no lock inherited from this
process's threads, such as the HTTP server's, which once left a plain fork waiting); the target
is the scripted model behind a real HTTP server (openai backend), since what is tested here
is resume, not the model.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import random
import signal
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from recitation.cli import main
from recitation.models.base import GenerationRequest
from recitation.models.scripted import ScriptedModel, echo_responder
from recitation.runs.store import RunStore
from recitation.serve import FaultAction, RequestInfo, ServerHandle, start_server

TRIALS = 5
KEY_ENV = "RECITATION_TEST_KILL_KEY"
BOOK = "Adventures_of_Huckleberry_Finn_-_Mark_Twain"


def responder(req: GenerationRequest) -> str:
    """Deterministic: judges say Yes, the rest echo the prompt (see test_extract_e2e)."""
    from recitation.extract import prompts

    system = next((m.content for m in req.messages or () if m.role == "system"), "")
    return "Yes" if system.startswith(prompts.VERIFIER_SYSTEM) else echo_responder(req)


def _child(argv: list[str], env: dict[str, str]) -> None:
    """The run, in the environment of the test that started it (the fork server was started
    by an earlier test, with that test's environment)."""
    os.environ.clear()
    os.environ.update(env)
    os._exit(main(argv))


def _fork_server() -> Any:
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["recitation.cli"])
    return ctx


class Gate:
    """Fault hook: from request ``at`` on, every model request is held until disarmed."""

    def __init__(self) -> None:
        self.at: int | None = None

    def __call__(self, info: RequestInfo) -> FaultAction | None:
        if self.at is not None and info.method == "POST" and info.index >= self.at:
            return FaultAction.hang()
        return None


def results_of(runs: Path, job: str) -> dict[str, Any]:
    [run_dir] = list(runs.iterdir())
    with RunStore(run_dir) as s:
        assert s.get_meta("status") == "completed"
        return dict(s.results(job))


def _stored_answers(runs: Path) -> int:
    """Successful calls in the run store, read while the run writes (WAL: a reader never
    blocks the writer)."""
    dbs = list(runs.glob("*/run.sqlite"))
    if not dbs:
        return 0
    db = sqlite3.connect(f"file:{dbs[0]}?mode=ro", uri=True, timeout=30)
    try:
        return int(db.execute("SELECT count(*) FROM calls WHERE response IS NOT NULL "
                              "AND source = 'backend'").fetchone()[0])
    except sqlite3.OperationalError:  # the schema is not written yet
        return 0
    finally:
        db.close()


def killed_then_resumed(argv: Callable[[Path, str], list[str]], server: ServerHandle, gate: Gate,
                        at: int, runs: Path) -> list[str]:
    """Run ``argv`` in a forked child, SIGKILL it once it waits on request ``at``, resume."""
    start, done_before = len(server.received), len(server.completed)
    gate.at = start + at
    child = _fork_server().Process(target=_child, args=(argv(runs, server.url),
                                                        dict(os.environ)))
    child.start()
    try:
        # generous bounds, not timing: CI runs this beside CPU-bound processes (a 120 s bound
        # ran out once there while the run's answers were still being committed)
        deadline = time.monotonic() + 600
        while len(server.received) <= start + at:
            assert child.is_alive(), f"the run ended before request {at}"
            assert time.monotonic() < deadline, "the run never reached the kill point"
            time.sleep(0.02)
        # every request before the gate is answered (with concurrency, the one before it may
        # still be in the server when the gated one arrives: killed then, its answer would
        # reach the server's log but never the store), and every answer the server gave is
        # committed before the kill (an answer still on its way to the store when the process
        # dies is asked again on resume: not what is tested here)
        before_gate = {r.index for r in server.received[start:start + at]
                       if r.method == "POST"}
        deadline = time.monotonic() + 600
        while (before_gate - {r.index for r in [*server.completed, *server.aborted]}
               or _stored_answers(runs) < len(server.completed) - done_before):
            assert time.monotonic() < deadline, (
                f"answers never reached the store: {_stored_answers(runs)} stored, "
                f"{len(server.completed) - done_before} answered")
            time.sleep(0.02)
    finally:  # a failed wait must not leave the child behind (pytest would wait for it)
        if child.is_alive():
            os.kill(child.pid, signal.SIGKILL)  # type: ignore[arg-type]
    child.join()
    assert child.exitcode == -signal.SIGKILL
    answered = [json.dumps(r.body, sort_keys=True) for r in server.completed[done_before:]]
    gate.at = None
    n_before = len(server.completed)
    [run_dir] = list(runs.iterdir())
    with RunStore(run_dir) as s:
        assert s.get_meta("status") == "running"  # it really died mid-run
    assert main(["resume", str(run_dir), "--runs-dir", str(runs)]) == 0
    again = [json.dumps(r.body, sort_keys=True) for r in server.completed[n_before:]]
    return [b for b in again if b in answered]


def trials(name: str, argv: Callable[[Path, str], list[str]], job: str, tmp_path: Path,
           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-kill-test-not-a-key")
    gate = Gate()
    with start_server(ScriptedModel(responder, name="scripted"), fault_hook=gate) as server:
        ref_runs = tmp_path / "ref"
        assert main(argv(ref_runs, server.url)) == 0
        want = results_of(ref_runs, job)
        n_requests = len([r for r in server.received if r.method == "POST"])
        assert n_requests >= 8
        rng = random.Random(f"{name}-kill")
        points = sorted(rng.sample(range(1, n_requests - 1), TRIALS))
        for k in points:
            runs = tmp_path / f"trial-{k}"
            repeated = killed_then_resumed(argv, server, gate, k, runs)
            # answers already given are served from the run store, never asked again
            # (deterministic requests; a request held at the kill was never answered)
            assert repeated == [], (k, repeated[:2])
            assert results_of(runs, job) == want, f"kill at request {k}"


def test_kill9_during_extraction_then_resume(shared_data: Path, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    book = next((shared_data / "echotrace" / "books" / BOOK).glob("*_summary_*.json"))
    def argv(runs: Path, url: str) -> list[str]:
        return ["extract", "--book", str(book), "--target", f"openai:scripted@{url}",
                "--target-key-env", KEY_ENV, "--chapters", "0", "--max-event-words", "120",
                "--methods", "prefix,dsp,recap", "--max-new-tokens", "16",
                "--feedback-max-tokens", "16", "--rounds", "2",
                "--out", str(runs.with_name(runs.name + "-out")),
                "--runs-dir", str(runs), "--no-cache", "--concurrency", "2"]

    trials("extract", argv, "extract", tmp_path, monkeypatch)


def test_kill9_during_pearl_then_resume(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def argv(runs: Path, url: str) -> list[str]:
        return ["detect", "--model", f"openai:scripted@{url}", "--api-key-env", KEY_ENV,
                "--detectors", "pearl", "--members", "kjv:famous", "--controls",
                "builtin:kjv-pastiche", "--limit", "3", "--outputs", "2",
                "--max-new-tokens", "12", "--no-cache", "--concurrency", "2",
                "--runs-dir", str(runs)]

    trials("pearl", argv, "detect", tmp_path, monkeypatch)

