"""A real vLLM OpenAI server on 127.0.0.1 for the tests (CPU build, its own environment:
scripts/vllm_env.sh), started and stopped by the test session."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
START_TIMEOUT = 420.0
"""Seconds a server may take to answer /health: about 50 s here with --enforce-eager on an
idle machine, several times that beside a busy test worker."""


def vllm_python(cache: Path) -> tuple[Path | None, str]:
    """The vLLM environment's python, made once (scripts/vllm_env.sh) in the cache folder
    ``cache`` (or ``RECITATION_VLLM_ENV``), and the script's output (why, when it failed)."""
    env = dict(os.environ, RECITATION_CACHE_DIR=str(cache))
    p = subprocess.run(["bash", str(REPO / "scripts" / "vllm_env.sh")], capture_output=True,
                       text=True, timeout=1200, env=env)
    lines = p.stdout.strip().splitlines()
    if p.returncode != 0 or not lines:
        return None, (p.stdout + p.stderr)[-3000:]
    return Path(lines[-1]), ""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class VLLMServer:
    """One server process (its own process group), its port and log."""

    name: str
    port: int
    proc: subprocess.Popen[bytes]
    log: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def spec(self) -> str:
        """The toolkit's model spec for it (the openai backend)."""
        return f"openai:{self.name}@{self.url}"

    def log_tail(self) -> str:
        return self.log.read_text(errors="replace")[-4000:] if self.log.exists() else ""

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)


def start(python: Path, model_dir: Path, name: str, work: Path) -> VLLMServer:
    """Start ``vllm.entrypoints.openai.api_server`` on ``model_dir`` (served as ``name``) on
    127.0.0.1, float32, eager, with its temp files under ``work``; returns at once."""
    tmp = work / f"{name}-tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    port = _free_port()
    env = dict(os.environ, TMPDIR=str(tmp), HF_HUB_OFFLINE="1", VLLM_CPU_KVCACHE_SPACE="1",
               VLLM_NO_USAGE_STATS="1", DO_NOT_TRACK="1", PYTHONPATH="")
    log = work / f"{name}.log"
    cmd = [str(python), "-m", "vllm.entrypoints.openai.api_server", "--model", str(model_dir),
           "--served-model-name", name, "--host", "127.0.0.1", "--port", str(port),
           "--dtype", "float32", "--max-model-len", "2048", "--enforce-eager", "--seed", "0"]
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env,
                                cwd=work, start_new_session=True)
    return VLLMServer(name, port, proc, log)


def wait_ready(server: VLLMServer, timeout: float = START_TIMEOUT) -> str:
    """'' once the server answers /health, else why not (it exited, or the time ran out)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.proc.poll() is not None:
            return f"vLLM exited with {server.proc.returncode}:\n{server.log_tail()}"
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{server.port}/health", timeout=5):
                return ""
        except OSError:
            time.sleep(1.0)
    return f"vLLM not ready after {timeout:.0f} s:\n{server.log_tail()}"
