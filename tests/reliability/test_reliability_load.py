"""Load and faults over real HTTP: a run through the runner, the run store and the openai
SDK against a local server injecting 5% 429 (half with Retry-After), 3% 500/503, 1%
timeouts, 1% malformed bodies and 1% dropped connections on a seeded schedule
(recitation.serve.chaos). The full 10,000-request size is benchmarks/bench_faults.py."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from recitation.runs.runner import execute
from recitation.runs.store import RunStore
from recitation.serve import RequestInfo
from recitation.serve.chaos import FaultMix, SeededFaults, run_load

KEY_ENV = "RECITATION_TEST_LOAD_KEY"
N = 600
LIMIT = 8


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-load-test-not-a-key")


def test_schedule_is_seeded_and_matches_the_mix() -> None:
    def infos(n: int) -> list[RequestInfo]:
        return [RequestInfo(i, "POST", "/v1/completions", {"prompt": f"p{i}"}) for i in range(n)]

    a, b = SeededFaults(seed=3), SeededFaults(seed=3)
    got_a = [a(i) for i in infos(20_000)]
    got_b = [b(i) for i in reversed(infos(20_000))]  # arrival order does not matter
    assert got_a == got_b[::-1] and a.injected == b.injected
    mix = FaultMix()
    for kind, p in [("rate_limited", mix.rate_limited), ("server_error", mix.server_error),
                    ("timeout", mix.timeout), ("malformed", mix.malformed),
                    ("reset", mix.reset)]:
        # binomial: 20,000 draws, within 5 standard deviations
        sd = (20_000 * p * (1 - p)) ** 0.5
        assert abs(a.injected[kind] - 20_000 * p) < 5 * sd, (kind, a.injected)
    with_retry_after = sum(1 for f in got_a if f and f.status == 429 and f.headers)
    assert 0 < with_retry_after < a.injected["rate_limited"]


def test_faulty_server_nothing_lost_nothing_billed_twice(tmp_path: Path) -> None:
    # A 20 s client timeout: the injected hangs are held until the client gives up, and a
    # healthy reply must never be that slow, even on a starved CPU (with 5 s, a CI run beside
    # a CPU hog once saw a healthy reply time out, be retried and billed twice).
    r = run_load(tmp_path, N, concurrency=LIMIT, seed=0, key_env=KEY_ENV, timeout=20.0)
    assert r.status == "completed", r
    assert r.results_stored == N and r.terminal_errors == 0 and r.lost == 0, r
    assert r.duplicates_billed == 0 and r.billed == N, r  # counted at the server
    assert 2 <= r.max_concurrent <= LIMIT, r  # counted at the server
    kinds = {"rate_limited", "server_error", "timeout", "malformed", "reset"}
    assert set(r.injected) == kinds, r
    # every injected fault cost exactly one retry; every HTTP request is an attempt on record
    assert r.retries >= sum(r.injected.values()), r
    assert r.http_requests == N + r.retries, r


def test_terminal_errors_are_recorded_and_resume_finishes(tmp_path: Path) -> None:
    """Faults that outlast the retries: the items are recorded as failed (the run is
    'incomplete'), every answered item is kept, and a resume finishes the rest without
    paying again for any answered call."""
    n = 60
    harsh = FaultMix(rate_limited=0.0, server_error=0.6, timeout=0.0, malformed=0.1,
                     reset=0.0)
    # no injected timeouts here, so a generous client timeout: on a starved CPU a healthy
    # reply can take longer than the default 5 s, and a client timeout is neither error kind
    r = run_load(tmp_path, n, concurrency=4, seed=1, max_attempts=2, mix=harsh,
                 key_env=KEY_ENV, timeout=60.0)
    assert r.status == "incomplete" and r.terminal_errors > 0 and r.results_stored > 0
    assert r.results_stored + r.terminal_errors == n and r.lost == 0
    run_dir = next((tmp_path / "runs").iterdir())
    with RunStore(run_dir) as s:
        errors = [c for c in s.calls() if c["error"]]
        assert errors and all(c["attempts"] == 2 for c in errors)
        assert all("ServerError" in c["error"] or "Malformed" in c["error"] for c in errors)
        kept = dict(s.results("prefix_probe"))
    # resume against a healthy server (the run's base_url is re-pointed to it)
    from recitation.models.scripted import ScriptedModel
    from recitation.serve import start_server

    with start_server(ScriptedModel(name="scripted")) as healthy:
        with RunStore(run_dir) as s:
            cfg = s.get_meta("config")
            cfg["model"]["base_url"] = healthy.url
            s.set_meta("config", cfg)
        out = asyncio.run(execute(run_dir, use_cache=False))
        assert out.status == "completed" and out.done_items == n
        assert len(healthy.completed) == r.terminal_errors  # only the failed ones sent
        again = asyncio.run(execute(run_dir, use_cache=False))  # nothing left: no call
        assert again.status == "completed" and len(healthy.completed) == r.terminal_errors
    with RunStore(run_dir) as s:
        after = dict(s.results("prefix_probe"))
    assert len(after) == n and all(after[k] == v for k, v in kept.items())
