"""Load and fault injection: a whole run through the openai backend against a local server
that misbehaves on a seeded schedule, with the figures that say whether anything was lost.

:class:`SeededFaults` is a fault hook for :func:`recitation.serve.server.start_server`. Each model
request is keyed by its prompt and by how many times the server has seen that prompt, and a
hash of ``(seed, prompt, attempt)`` picks its fate from a :class:`FaultMix` (by default 5%
HTTP 429 — half of them with ``Retry-After`` —, 3% HTTP 500/503, 1% held until the client
times out, 1% a malformed 200 body, 1% a dropped connection). The schedule does not depend
on timing or on the order requests arrive in: the same seed injects the same faults.

:func:`run_load` runs a ``prefix_probe`` run of ``n`` distinct passages (KJV words, public
domain) through the real runner, run store and openai SDK against that server, and returns a
:class:`LoadResult`: requests, injected faults, retries, results stored, terminal errors,
lost results, duplicate successful calls (counted at the server: a prompt answered with HTTP
200 twice is billed twice) and the peak concurrency the server saw. Used by
``tests/reliability`` (scaled down) and ``benchmarks/bench_faults.py`` (10,000 requests).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import threading
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from recitation.models.scripted import ScriptedModel
from recitation.runs.config import parse_config
from recitation.runs.runner import create_run, execute
from recitation.runs.store import RunStore
from recitation.serve.faults import FaultAction, RequestInfo
from recitation.serve.server import start_server

# Public domain (KJV, Genesis 1:1-4); passages are rotations of it behind a unique number.
_WORDS = ("In the beginning God created the heaven and the earth And the earth was without "
          "form and void and darkness was upon the face of the deep And the Spirit of God "
          "moved upon the face of the waters").split()


@dataclass(frozen=True)
class FaultMix:
    """Probability of each fault per request (the rest are answered normally)."""

    rate_limited: float = 0.05  # HTTP 429; every other one carries Retry-After
    server_error: float = 0.03  # HTTP 500 or 503
    timeout: float = 0.01  # held until the client gives up
    malformed: float = 0.01  # HTTP 200 with a body that is not JSON
    reset: float = 0.01  # connection closed without a reply
    retry_after: float = 0.05  # seconds, in the Retry-After header

    def pick(self, u: float) -> str | None:
        for kind in ("rate_limited", "server_error", "timeout", "malformed", "reset"):
            p = float(getattr(self, kind))
            if u < p:
                return kind
            u -= p
        return None


def prompt_of(body: dict[str, Any] | None) -> str:
    """The text a request asks about: ``prompt``, or the last message's content."""
    if not body:
        return ""
    if isinstance(body.get("prompt"), str):
        return str(body["prompt"])
    msgs = body.get("messages")
    if isinstance(msgs, list) and msgs and isinstance(msgs[-1], dict):
        return str(msgs[-1].get("content", ""))
    return json.dumps(body, sort_keys=True)


class SeededFaults:
    """A fault hook injecting :class:`FaultMix` on a schedule fixed by ``seed``."""

    def __init__(self, mix: FaultMix | None = None, seed: int = 0) -> None:
        self.mix = mix or FaultMix()
        self.seed = seed
        self.injected: Counter[str] = Counter()
        self._seen: Counter[str] = Counter()
        self._lock = threading.Lock()

    def _uniform(self, key: str, attempt: int) -> float:
        digest = hashlib.sha256(f"{self.seed}\0{key}\0{attempt}".encode()).digest()
        return int.from_bytes(digest[:8], "big") / 2**64

    def __call__(self, info: RequestInfo) -> FaultAction | None:
        if info.method != "POST":
            return None
        key = prompt_of(info.body)
        with self._lock:
            attempt = self._seen[key]
            self._seen[key] += 1
        u = self._uniform(key, attempt)
        kind = self.mix.pick(u)
        if kind is None:
            return None
        with self._lock:
            self.injected[kind] += 1
        odd = int(u * 1e9) % 2 == 1
        if kind == "rate_limited":
            return FaultAction.rate_limited(self.mix.retry_after if odd else None)
        if kind == "server_error":
            return FaultAction.server_error(503 if odd else 500)
        if kind == "timeout":
            return FaultAction.hang()
        if kind == "malformed":
            return FaultAction.malformed_json()
        return FaultAction.drop_connection()


@dataclass
class LoadResult:
    """What :func:`run_load` measured (see the module docstring)."""

    requests: int  # work items = distinct model requests the run must make
    concurrency_limit: int
    seed: int
    status: str = ""
    wall_s: float = 0.0
    throughput_rps: float = 0.0  # requests answered per second of wall time
    http_requests: int = 0  # requests the server received (attempts included)
    injected: dict[str, int] = field(default_factory=dict)
    retries: int = 0  # attempts beyond the first, from the run store
    results_stored: int = 0
    terminal_errors: int = 0  # items whose call failed after every retry (recorded)
    lost: int = 0  # items with neither a stored result nor a recorded terminal error
    billed: int = 0  # HTTP 200 model answers written by the server
    duplicates_billed: int = 0  # prompts answered with HTTP 200 more than once
    max_concurrent: int = 0  # peak requests under way at the server

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def write_passages(path: Path, n: int) -> None:
    """``n`` distinct passages, one JSON object per line."""
    with path.open("w", encoding="utf-8") as fh:
        for i in range(n):
            k = i % len(_WORDS)
            words = _WORDS[k:] + _WORDS[:k]
            fh.write(json.dumps({"id": f"p{i:06d}", "text": f"Passage {i:06d} "
                                 + " ".join(words)}) + "\n")


def load_config(url: str, corpus: Path, *, concurrency: int, timeout: float,
                max_attempts: int, key_env: str) -> dict[str, Any]:
    """The run configuration :func:`run_load` uses (also for kill-and-resume trials)."""
    return {"job": "prefix_probe", "cache": False, "name": "load",
            "model": {"backend": "openai", "model": "scripted", "base_url": url,
                      "api_key_env": key_env, "concurrency": concurrency, "batch_size": 16,
                      "timeout": timeout, "max_attempts": max_attempts,
                      "retry_base_delay": 0.02,
                      # its hangs end when the client leaves (a remote server's timeouts)
                      "resend_timeouts": True},
            "params": {"source": "jsonl", "path": str(corpus), "max_words": 12,
                       "max_new_tokens": 4}}


def _tally(result: LoadResult, run_dir: Path, billed: list[RequestInfo]) -> None:
    with RunStore(run_dir) as store:
        done = store.done_items()
        calls = store.calls()
        failed = {e["item_id"] for e in store.events()
                  if e["level"] == "error" and e["item_id"] and e["item_id"] not in done}
        ids = [i for i, _ in store.items()]
    result.results_stored = len(done)
    result.terminal_errors = len(failed)
    result.lost = len([i for i in ids if i not in done and i not in failed])
    result.retries = sum(int(c["attempts"]) - 1 for c in calls)
    prompts = Counter(prompt_of(r.body) for r in billed if r.method == "POST")
    result.billed = sum(prompts.values())
    result.duplicates_billed = sum(c - 1 for c in prompts.values() if c > 1)


def run_load(workdir: Path, n: int, *, concurrency: int = 8, seed: int = 0,
             timeout: float = 5.0, max_attempts: int = 8, mix: FaultMix | None = None,
             key_env: str = "OPENAI_API_KEY") -> LoadResult:
    """Run ``n`` requests through the runner and the openai backend against a faulty local
    server; the API key is read from ``key_env`` (any value: the server checks none)."""
    workdir.mkdir(parents=True, exist_ok=True)
    corpus = workdir / "passages.jsonl"
    write_passages(corpus, n)
    faults = SeededFaults(mix, seed)
    result = LoadResult(n, concurrency, seed)
    with start_server(ScriptedModel(name="scripted"), fault_hook=faults) as server:
        cfg = parse_config(load_config(server.url, corpus, concurrency=concurrency,
                                       timeout=timeout, max_attempts=max_attempts,
                                       key_env=key_env), source="chaos")
        run_dir = create_run(cfg, workdir / "runs")
        t0 = time.perf_counter()
        outcome = asyncio.run(execute(run_dir, use_cache=False))
        result.wall_s = time.perf_counter() - t0
        result.status = outcome.status
        result.http_requests = len(server.received)
        result.max_concurrent = server.max_concurrent
        billed = server.completed
    result.injected = dict(sorted(faults.injected.items()))
    _tally(result, run_dir, billed)
    result.throughput_rps = result.results_stored / result.wall_s if result.wall_s else 0.0
    return result


__all__ = ["FaultMix", "LoadResult", "SeededFaults", "load_config", "prompt_of", "run_load",
           "write_passages"]
