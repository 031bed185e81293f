"""Injected faults (429 + Retry-After, 500, timeout, malformed JSON, wrong-shape JSON) through
the real SDK backends and ManagedModel: retried, and — when they persist — reported clearly
and recorded in the run store. Also: the API key never reaches the store or the logs.

The server answers with the scripted model (fast); faults come from its fault hook.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from recitation.errors import (
    AuthenticationError,
    BackendConnectionError,
    BackendError,
    BackendTimeout,
    MalformedResponseError,
    RateLimitError,
    ServerError,
)
from recitation.models.anthropic_backend import AnthropicModel
from recitation.models.base import GenerationRequest, Model
from recitation.models.managed import ManagedModel, RetryPolicy
from recitation.models.openai_backend import OpenAIModel
from recitation.models.scripted import ScriptedModel
from recitation.runs.store import RunStore
from recitation.serve import FaultAction, RequestInfo, ServerHandle, start_server

KEY_ENV = "RECITATION_TEST_FAULT_KEY"
KEY = "sk-fault-test-SECRET-4242-do-not-store"
FAST = RetryPolicy(max_attempts=3, base_delay=0.01, max_delay=1.0)
SHORT_TIMEOUT = 1.0  # client timeout for the timeout fault
TIMEOUT = 15.0  # everywhere else: generous, the machine may be busy


class Faults:
    """A fault hook: the first ``times`` model requests get ``action``; the rest are answered."""

    def __init__(self) -> None:
        self.action: FaultAction | None = None
        self.times = 0
        self._lock = threading.Lock()

    def set(self, action: FaultAction, times: int = 10**9) -> None:
        self.action, self.times = action, times

    def __call__(self, info: RequestInfo) -> FaultAction | None:
        with self._lock:
            if self.action is None or self.times <= 0:
                return None
            self.times -= 1
            return self.action


@dataclass
class Backend:
    name: str
    make: Callable[[ServerHandle, float], Model]


def remote_like(m: OpenAIModel | AnthropicModel) -> Model:
    """``m`` resending a request that timed out, as to a remote server: the harness's hang
    ends when its client leaves (a real server on this machine would still be computing it,
    so a timeout there is not resent: tests/models/test_endpoint.py)."""
    m.resend_timeouts = True
    return m


BACKENDS = [
    Backend(
        "openai",
        lambda h, t: remote_like(OpenAIModel("scripted", base_url=h.url, api_key_env=KEY_ENV,
                                             timeout=t)),
    ),
    Backend(
        "anthropic",
        lambda h, t: remote_like(AnthropicModel(
            "scripted", base_url=h.root_url, api_key_env=KEY_ENV, timeout=t
        )),
    ),
]

# name -> (fault, recitation error, words the final message must contain)
FAULTS: dict[str, tuple[FaultAction, type[BackendError], list[str]]] = {
    "429": (FaultAction.rate_limited(retry_after=0.05), RateLimitError, ["HTTP 429"]),
    "500": (FaultAction.server_error(500), ServerError, ["HTTP 500"]),
    "timeout": (FaultAction.hang(), BackendTimeout, ["timed out"]),
    "dropped-connection": (
        FaultAction.drop_connection(),
        BackendConnectionError,
        ["connection error"],
    ),
    "malformed-json": (FaultAction.malformed_json(), MalformedResponseError, ["not valid JSON"]),
    "wrong-shape": (
        FaultAction.json_body({"unexpected": [1, 2]}),
        MalformedResponseError,
        ["unexpected shape"],
    ),
}


def timeout_for(fault: str) -> float:
    return SHORT_TIMEOUT if fault == "timeout" else TIMEOUT


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)


@pytest.fixture
def faults() -> Faults:
    return Faults()


@pytest.fixture
def server(faults: Faults) -> Iterator[ServerHandle]:
    with start_server(ScriptedModel(name="scripted"), fault_hook=faults) as h:
        yield h


@pytest.fixture
def store(tmp_path: Path) -> Iterator[RunStore]:
    with RunStore(tmp_path / "run", create=True) as s:
        yield s


REQ = GenerationRequest.chat("alpha beta gamma", max_tokens=2)


@pytest.mark.parametrize("backend", BACKENDS, ids=lambda b: b.name)
@pytest.mark.parametrize("fault", list(FAULTS))
async def test_transient_fault_is_retried(
    backend: Backend, fault: str, server: ServerHandle, faults: Faults, store: RunStore
) -> None:
    faults.set(FAULTS[fault][0], times=2)
    m = ManagedModel(backend.make(server, timeout_for(fault)), store=store, retry=FAST)
    [gen] = await m.generate([REQ])
    await m.aclose()
    assert gen.text == "alpha beta"
    assert len(server.received) == 3 and len(server.completed) == 1
    [call] = store.calls()
    assert call["error"] is None and call["attempts"] == 3
    assert m.stats.backend_calls == 1 and m.stats.failures == 0


@pytest.mark.parametrize("backend", BACKENDS, ids=lambda b: b.name)
@pytest.mark.parametrize("fault", list(FAULTS))
async def test_persistent_fault_is_reported_and_recorded(
    backend: Backend, fault: str, server: ServerHandle, faults: Faults, store: RunStore
) -> None:
    action, error, words = FAULTS[fault]
    faults.set(action)
    m = ManagedModel(backend.make(server, timeout_for(fault)), store=store, retry=FAST)
    with pytest.raises(error) as e:
        await m.generate([REQ])
    await m.aclose()
    msg = str(e.value)
    for word in [backend.name, "after 3 attempt(s)", *words]:
        assert word in msg, (word, msg)
    assert len(server.received) == 3 and server.completed == []
    [call] = store.calls()
    assert call["response"] is None and call["attempts"] == 3
    assert call["error"].startswith(error.__name__) and words[0] in call["error"]
    assert m.stats.failures == 1


@pytest.mark.parametrize("backend", BACKENDS, ids=lambda b: b.name)
async def test_retry_after_is_honoured(
    backend: Backend, server: ServerHandle, faults: Faults
) -> None:
    faults.set(FaultAction.rate_limited(retry_after=0.4), times=1)
    m = ManagedModel(
        backend.make(server, TIMEOUT), retry=RetryPolicy(3, base_delay=0.001, max_delay=5.0)
    )
    t0 = time.monotonic()
    [gen] = await m.generate([REQ])
    await m.aclose()
    assert gen.text == "alpha beta" and time.monotonic() - t0 >= 0.4


@pytest.mark.parametrize("backend", BACKENDS, ids=lambda b: b.name)
async def test_rejected_key_is_not_retried(
    backend: Backend, server: ServerHandle, faults: Faults, store: RunStore
) -> None:
    faults.set(FaultAction.server_error(401))
    m = ManagedModel(backend.make(server, TIMEOUT), store=store, retry=FAST)
    with pytest.raises(AuthenticationError, match=r"after 1 attempt\(s\).*HTTP 401"):
        await m.generate([REQ])
    await m.aclose()
    assert len(server.received) == 1


@pytest.mark.parametrize("backend", BACKENDS, ids=lambda b: b.name)
async def test_key_never_reaches_store_or_logs(
    backend: Backend,
    server: ServerHandle,
    faults: Faults,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Successful calls, retried failures and an error reply that echoes the key: the key is
    sent to the server, but no byte of the run store and no log line contains it."""
    caplog.set_level(logging.DEBUG)
    store = RunStore(tmp_path / "run", create=True)
    m = ManagedModel(backend.make(server, TIMEOUT), store=store, retry=FAST)
    await m.generate([REQ, GenerationRequest(prompt="delta epsilon", max_tokens=2)])
    echo_key = {"error": {"message": f"bad key {KEY}"}, "type": "error"}
    faults.set(FaultAction.json_body(echo_key, status=500), times=10**9)
    with pytest.raises(ServerError) as e:
        await m.generate([GenerationRequest(prompt="zeta", max_tokens=1)])
    faults.set(FaultAction.json_body(echo_key, status=403), times=10**9)
    with pytest.raises(AuthenticationError) as e2:
        await m.generate([GenerationRequest(prompt="eta", max_tokens=1)])
    await m.aclose()
    store.close()
    assert any(KEY in str(i.headers) for i in server.received)  # it was sent
    for err in (e.value, e2.value):
        assert KEY not in str(err) and "<redacted>" in str(err)
        assert KEY not in repr(err.__cause__) if err.__cause__ else True
    blob = b"".join(p.read_bytes() for p in (tmp_path / "run").iterdir() if p.is_file())
    assert len(blob) > 0 and KEY.encode() not in blob
    assert b"<redacted>" in blob  # the errors were recorded, scrubbed
    assert KEY not in caplog.text


def test_missing_key_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY_ENV)
    for make in (
        lambda: OpenAIModel("m", api_key_env=KEY_ENV),
        lambda: AnthropicModel("m", api_key_env=KEY_ENV),
    ):
        with pytest.raises(AuthenticationError, match=f"environment variable {KEY_ENV}"):
            make()


def test_retry_after_header_forms() -> None:
    from email.utils import formatdate

    from recitation.models._sdk import retry_after_seconds

    assert retry_after_seconds({"retry-after": "2"}) == 2.0
    assert retry_after_seconds({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    in_5s = retry_after_seconds({"retry-after": formatdate(time.time() + 5, usegmt=True)})
    assert in_5s is not None and 3.0 < in_5s <= 5.0
    assert retry_after_seconds({"retry-after": "soon"}) is None
    assert retry_after_seconds({}) is None


def test_display_url_drops_credentials() -> None:
    from recitation.models._sdk import display_url

    assert display_url("https://u:p@host:8443/v1/?key=s#f", "d") == "https://host:8443/v1"
    assert display_url("http://[::1]:8000/v1", "d") == "http://[::1]:8000/v1"
    assert display_url(None, "https://api.openai.com/v1") == "https://api.openai.com/v1"
