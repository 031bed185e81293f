"""The extract job end to end: CLI -> run store -> EchoTrace file -> ``recitation evaluate``;
SIGKILL mid-book then resume (counted at an HTTP server); the embedded model directly and
served through ``recitation serve`` + the openai backend give identical files."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from recitation.corpus.echotrace import load_echotrace, parse_extraction_path
from recitation.extract import prompts
from recitation.models.base import GenerationRequest
from recitation.models.scripted import ScriptedModel, echo_responder
from recitation.runs.store import RunStore
from recitation.serve import FaultAction, RequestInfo, start_server

BOOK = "Adventures_of_Huckleberry_Finn_-_Mark_Twain"


def book_file(shared_data: Path) -> Path:
    folder = shared_data / "echotrace" / "books" / BOOK
    return next(folder.glob("*_summary_*.json"))


def responder(req: GenerationRequest) -> str:
    """A deterministic stand-in target/helper: judges say Yes, the rest echo the prompt."""
    system = next((m.content for m in req.messages or () if m.role == "system"), "")
    if system.startswith(prompts.VERIFIER_SYSTEM):
        return "Yes"
    return echo_responder(req)


def cli(*args: str, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "recitation.cli", *args], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def extract_args(book: Path, target: str, out: Path, runs: Path, *extra: str) -> list[str]:
    return ["extract", "--book", str(book), "--target", target, "--chapters", "0",
            "--max-event-words", "120", "--methods", "prefix,dsp,dsp_jailbreak,recap",
            "--max-new-tokens", "24", "--feedback-max-tokens", "24", "--rounds", "2",
            "--out", str(out), "--runs-dir", str(runs), "--no-cache", *extra]


def sent_bodies(requests: list[RequestInfo]) -> list[str]:
    return [json.dumps(r.body, sort_keys=True) for r in requests if r.body]


def test_sigkill_mid_book_then_resume_and_evaluate(shared_data: Path, tmp_path: Path) -> None:
    book = book_file(shared_data)
    second = load_echotrace(book).chapters[0].events
    first_words = [e for e in second if len(e.text.split()) <= 120][1].first_sentence.split()
    second_first = " ".join(w for w in first_words[:4] if w.isalpha())
    state = {"armed": True}

    def hook(info: RequestInfo) -> FaultAction | None:
        if state["armed"] and second_first in json.dumps(info.body):
            return FaultAction.hang()  # the 2nd event never gets an answer: kill now
        return None

    env = dict(os.environ, RECITATION_KEY="x", PYTHONUNBUFFERED="1")
    out, runs = tmp_path / "out", tmp_path / "runs"
    with start_server(ScriptedModel(responder), fault_hook=hook) as server:
        target = f"openai:scripted@{server.url}"
        # one event per chunk, so the first event is stored before the second starts
        args = extract_args(book, target, out, runs, "--target-key-env", "RECITATION_KEY",
                            "--concurrency", "1", "--batch-size", "1")
        proc = cli(*args, env=env)
        deadline = time.time() + 120
        while not any(second_first in json.dumps(r.body) for r in server.received):
            assert proc.poll() is None and time.time() < deadline, proc.stdout.read()  # type: ignore[union-attr]
            time.sleep(0.1)
        time.sleep(0.3)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        run_dir = next(runs.iterdir())
        with RunStore(run_dir) as store:
            done = store.done_items()
        assert len(done) == 1
        completed = sent_bodies(server.completed)
        n_before = len(server.completed)
        state["armed"] = False
        res = cli("resume", str(run_dir), "--runs-dir", str(runs), env=env)
        assert res.wait(timeout=300) == 0, res.stdout.read()  # type: ignore[union-attr]
        after = sent_bodies(server.completed[n_before:])
    assert completed and after and not set(completed) & set(after)  # nothing asked again
    assert not any(second_first in b for b in completed)
    exp = cli("extract", "--export", str(run_dir), "--out", str(out), "--runs-dir", str(runs),
              env=env)
    assert exp.wait(timeout=120) == 0, exp.stdout.read()  # type: ignore[union-attr]
    files = list(out.glob("*_extraction_*.json"))
    assert len(files) == 1 and parse_extraction_path(files[0]).model == "scripted"
    events = list(load_echotrace(files[0]).events())
    assert len(events) == 3
    for ev in events:
        agent = ev.extra["LLM_completions"]["Agent_Extraction"]
        assert "simple_agent_extraction" in agent and "simple_agent_extraction_refined_0" in agent
    ev_out = subprocess.run([sys.executable, "-m", "recitation.cli", "evaluate", str(files[0]),
                             "--out", str(tmp_path / "metrics")], env=env, capture_output=True,
                            text=True, timeout=120)
    assert ev_out.returncode == 0, ev_out.stdout + ev_out.stderr
    metrics = json.loads(next((tmp_path / "metrics").glob("*.json")).read_text())
    assert set(metrics["rouge_scores"]) >= {"prefix-probing", "simple_agent_extraction"}
    assert all(0 <= v <= 1 for v in metrics["rouge_scores"].values())


def _run_job(params: dict[str, Any], model: dict[str, Any], runs: Path) -> list[Any]:
    import asyncio

    from recitation.runs.config import parse_config
    from recitation.runs.runner import create_run, execute

    cfg = parse_config({"job": "extract", "cache": False, "model": model, "params": params})
    run_dir = create_run(cfg, runs)
    outcome = asyncio.run(execute(run_dir))
    assert outcome.status == "completed", outcome.message
    with RunStore(run_dir) as store:
        return sorted(store.results("extract"))


@pytest.mark.model
@pytest.mark.slow
def test_embedded_direct_equals_served(shared_data: Path, tmp_path: Path, local_model: Any,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Every method on the real SmolLM2, directly and through recitation serve: same texts."""
    monkeypatch.setenv("RECITATION_SERVE_KEY", "unused")
    params = {"book": str(book_file(shared_data)), "chapters": [0], "max_event_words": 70,
              "recap": {"max_new_tokens": 24, "feedback_max_tokens": 24, "max_rounds": 1},
              "filter": {"time_budget_s": 3, "threshold": 0.0}}
    direct = _run_job(params, {"backend": "local", "model": "smollm2", "concurrency": 1},
                      tmp_path / "a")
    with start_server(local_model) as server:
        served = _run_job(params, {"backend": "openai", "model": "smollm2",
                                   "base_url": server.url, "api_key_env": "RECITATION_SERVE_KEY"},
                          tmp_path / "b")
    assert [i for i, _ in direct] == [i for i, _ in served] and direct
    for (_, a), (_, b) in zip(direct, served, strict=True):
        assert a["llm_completions"] == b["llm_completions"]
        assert a["rouge_l"] == b["rouge_l"]
        agent = a["llm_completions"]["Agent_Extraction"]
        assert "simple_agent_extraction" in agent
        # scored exactly when the first extraction was accepted (a refusal gets no filter)
        accepted = "simple_agent_extraction_refined_0" in agent
        assert (a["filter"] is not None) == accepted
        if accepted:
            assert 0 <= a["filter"]["score"] <= 1
