"""End to end through the CLI, over real HTTP: a run killed with SIGKILL mid-way resumes with
zero duplicate completed calls (counted at the server) and zero lost results; the API key
never reaches the store or the output; a missing key is a clear error."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import yaml

from recitation.models.scripted import ScriptedModel
from recitation.runs.store import RunStore
from recitation.serve import FaultAction, RequestInfo, start_server

SECRET = "sk-test-DO-NOT-LEAK-4242"
N = 12
HOLD_AT = 7  # the 8th request is held until the client dies


def write_corpus(path: Path) -> None:
    # Public-domain text (KJV, Genesis 1), one passage per line.
    base = ("And God said Let there be light and there was light And God saw the light "
            "that it was good and God divided the light from the darkness").split()
    with path.open("w") as fh:
        for i in range(N):
            words = base[i:] + base[:i]
            fh.write(json.dumps({"id": f"p{i:02d}", "text": " ".join(words)}) + "\n")


def cli(*args: str, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "recitation.cli", *args], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def test_sigkill_then_resume(tmp_path: Path) -> None:
    state = {"armed": True}

    def hook(info: RequestInfo) -> FaultAction | None:
        if info.path.endswith("/completions") and state["armed"] and info.index == HOLD_AT:
            return FaultAction.hang()
        return FaultAction(delay=0.05)

    corpus = tmp_path / "corpus.jsonl"
    write_corpus(corpus)
    with start_server(ScriptedModel(), fault_hook=hook) as server:
        cfg = {"job": "prefix_probe", "cache": False,
               "model": {"backend": "openai", "model": "scripted", "base_url": server.url,
                         "api_key_env": "RECITATION_TEST_KEY", "batch_size": 1,
                         "concurrency": 1, "max_attempts": 2, "retry_base_delay": 0.01},
               "params": {"source": "jsonl", "path": str(corpus), "max_new_tokens": 8}}
        (tmp_path / "run.yaml").write_text(yaml.safe_dump(cfg))
        env = dict(os.environ, RECITATION_TEST_KEY=SECRET, PYTHONUNBUFFERED="1")
        runs = tmp_path / "runs"
        proc = cli("run", str(tmp_path / "run.yaml"), "--runs-dir", str(runs), env=env)
        deadline = time.time() + 120
        while len(server.received) <= HOLD_AT and time.time() < deadline:
            assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
            time.sleep(0.05)
        assert len(server.received) == HOLD_AT + 1, "the run never reached the held request"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        state["armed"] = False
        run_dir = next(runs.iterdir())
        with RunStore(run_dir) as s:
            assert len(s.done_items()) == HOLD_AT  # every answered item was kept
            assert s.get_meta("status") == "running"
        out = cli("resume", run_dir.name, "--runs-dir", str(runs), env=env)
        text, _ = out.communicate(timeout=120)
        assert out.returncode == 0, text
        prompts = [r.body["prompt"] for r in server.completed if r.body]
        assert len(prompts) == N and len(set(prompts)) == N  # zero duplicate completed calls
        assert len([r for r in server.aborted]) >= 1  # the held request died with the client
    with RunStore(run_dir) as s:
        recs = dict(s.results("prefix_probe"))
        assert sorted(recs) == [f"p{i:02d}" for i in range(N)]
        assert s.get_meta("status") == "completed"
    assert "completed" in text
    blob = b"".join(p.read_bytes() for p in run_dir.iterdir() if p.is_file())
    assert SECRET.encode() not in blob and SECRET not in text


def test_missing_api_key_is_a_clear_error(tmp_path: Path) -> None:
    cfg = {"job": "prefix_probe", "model": {"backend": "openai", "model": "gpt-4.1",
                                             "base_url": "http://127.0.0.1:9/v1",
                                             "api_key_env": "RECITATION_ABSENT_KEY"}}
    (tmp_path / "run.yaml").write_text(yaml.safe_dump(cfg))
    env = {k: v for k, v in os.environ.items() if k != "RECITATION_ABSENT_KEY"}
    p = cli("run", str(tmp_path / "run.yaml"), "--runs-dir", str(tmp_path / "runs"), env=env)
    text, _ = p.communicate(timeout=60)
    assert p.returncode == 1
    assert "RECITATION_ABSENT_KEY" in text and "error" in text.lower()
