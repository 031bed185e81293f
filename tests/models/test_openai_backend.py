"""The openai backend against `recitation serve` (a real HTTP server started by the test).

Equality tests serve the real SmolLM2 LocalModel and compare with LocalModel's own output;
the rest serve the scripted model.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from recitation.errors import (
    AuthenticationError,
    BackendConnectionError,
    BackendError,
    EndpointError,
    UnsupportedRequest,
)
from recitation.models.base import GenerationRequest, Message
from recitation.models.local import LocalModel
from recitation.models.openai_backend import OpenAIModel
from recitation.models.scripted import ScriptedModel
from recitation.serve import FaultAction, RequestInfo, ServerHandle, start_server

KEY_ENV = "RECITATION_TEST_OPENAI_KEY"
KEY = "sk-test-0123456789abcdef"


@pytest.fixture
def key(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(KEY_ENV, KEY)
    return KEY


@pytest.fixture
def scripted_server() -> Iterator[ServerHandle]:
    with start_server(ScriptedModel(name="scripted")) as h:
        yield h


def client_for(h: ServerHandle, **kw: Any) -> OpenAIModel:
    return OpenAIModel("scripted", base_url=h.url, api_key_env=KEY_ENV, **kw)


# -- against the real embedded model --------------------------------------------------------
@pytest.fixture(scope="module")
def local_server(local_model: LocalModel) -> Iterator[ServerHandle]:
    with start_server(local_model) as h:
        yield h


CHAT = [
    GenerationRequest.chat("What is the capital of France?", max_tokens=10),
    GenerationRequest(
        messages=(
            Message("system", "You are a poet."),
            Message("user", "Write one line about the sea."),
        ),
        max_tokens=10,
        stop=("\n",),
    ),
]
PLAIN = [
    GenerationRequest(prompt="In the beginning God created", max_tokens=12),
    GenerationRequest(prompt="The quick brown fox", max_tokens=12, stop=(".",)),
]


@pytest.mark.model
@pytest.mark.parametrize("requests", [CHAT, PLAIN], ids=["chat", "completion"])
async def test_greedy_generation_equals_local_model(
    local_model: LocalModel, local_server: ServerHandle, requests: list[GenerationRequest]
) -> None:
    remote = OpenAIModel("smollm2", base_url=local_server.url, api_key_env=None)
    try:
        got = await remote.generate(requests)
    finally:
        await remote.aclose()
    want = [(await local_model.generate([r]))[0] for r in requests]
    assert [g.text for g in got] == [w.text for w in want]
    assert all(g.text for g in got)
    assert [g.finish_reason for g in got] == [w.finish_reason for w in want]
    assert [g.usage for g in got] == [w.usage for w in want]


@pytest.mark.model
async def test_generation_logprobs_and_seeded_sampling_match(
    local_model: LocalModel, local_server: ServerHandle
) -> None:
    reqs = [
        GenerationRequest.chat("Name a colour.", max_tokens=8, logprobs=True),
        GenerationRequest(prompt="Once upon a time", max_tokens=8, logprobs=True),
        GenerationRequest(prompt="Once upon a time", max_tokens=8, temperature=0.9, seed=7),
    ]
    remote = OpenAIModel("smollm2", base_url=local_server.url, api_key_env=None)
    got = await remote.generate(reqs)
    await remote.aclose()
    want = [(await local_model.generate([r]))[0] for r in reqs]
    for g, w in zip(got[:2], want[:2], strict=True):
        assert g.token_logprobs is not None and w.token_logprobs is not None
        assert g.token_logprobs == pytest.approx(w.token_logprobs, abs=1e-4)
    assert got[2].text == want[2].text


@pytest.mark.model
async def test_prompt_logprobs_equal_local_score(
    local_model: LocalModel, local_server: ServerHandle
) -> None:
    texts = [
        "In the beginning God created the heaven and the earth.",
        "And Enos lived ninety years, and begat Cainan.",
    ]
    remote = OpenAIModel("smollm2", base_url=local_server.url, api_key_env=None)
    got = await remote.score(texts)
    await remote.aclose()
    want = await local_model.score(texts)
    for g, w in zip(got, want, strict=True):
        assert g.tokens == w.tokens
        assert len(g.logprobs) == len(w.tokens) - 1
        assert g.logprobs == pytest.approx(w.logprobs, abs=1e-4)
        assert g.usage.input_tokens == len(w.tokens)


# -- request shape, keys, concurrency (scripted model) -------------------------------------
async def test_parameters_reach_the_server(scripted_server: ServerHandle, key: str) -> None:
    m = client_for(scripted_server)
    await m.generate(
        [
            GenerationRequest.chat(
                "a b c",
                system="sys",
                max_tokens=2,
                temperature=0.5,
                top_p=0.9,
                seed=3,
                stop=("x", "y"),
                logprobs=True,
            ),
            GenerationRequest(prompt="d e f", max_tokens=2, logprobs=True),
        ]
    )
    await m.aclose()
    by_path = {i.path: i for i in scripted_server.received}
    chat = by_path["/v1/chat/completions"]
    assert chat.body is not None and chat.body["messages"] == [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "a b c"},
    ]
    assert {
        k: chat.body[k] for k in ("max_tokens", "temperature", "top_p", "seed", "stop", "logprobs")
    } == {
        "max_tokens": 2,
        "temperature": 0.5,
        "top_p": 0.9,
        "seed": 3,
        "stop": ["x", "y"],
        "logprobs": True,
    }
    plain = by_path["/v1/completions"]
    assert plain.body is not None and plain.body["prompt"] == "d e f"
    assert plain.body["logprobs"] == 1 and "seed" not in plain.body
    assert chat.headers["authorization"] == f"Bearer {key}"


async def test_requests_of_one_call_run_concurrently_and_bounded(key: str) -> None:
    """Measured at the server, not by the clock: each request waits at a barrier until
    ``limit`` requests are inside the server at once (so the call must run them concurrently,
    or the barrier times out and the call fails), and the server records the most requests
    it ever held at once (never above the client's limit)."""
    state: dict[str, Any] = {"barrier": None, "peak": 0, "live": 0}
    lock = threading.Lock()

    def hook(info: RequestInfo) -> FaultAction | None:
        with lock:
            state["live"] += 1
            state["peak"] = max(state["peak"], state["live"])
        try:
            state["barrier"].wait()
            time.sleep(0.05)  # a request over the limit would arrive meanwhile
        finally:
            with lock:
                state["live"] -= 1
        return None

    with start_server(ScriptedModel(), fault_hook=hook) as h:
        reqs = [GenerationRequest(prompt=f"p {i}", max_tokens=2) for i in range(4)]
        for limit in (4, 2):
            state.update(barrier=threading.Barrier(limit, timeout=60), peak=0)
            m = client_for(h, max_concurrency=limit)
            out = await m.generate(reqs)
            await m.aclose()
            assert [g.text for g in out] == [f"p {i}" for i in range(4)]  # order kept
            assert state["peak"] == limit


async def test_works_across_event_loops(scripted_server: ServerHandle, key: str) -> None:
    m = client_for(scripted_server)
    req = [GenerationRequest(prompt="one two", max_tokens=2)]
    assert (await m.generate(req))[0].text == "one two"

    def in_new_loop() -> str:
        return asyncio.run(m.generate(req))[0].text

    assert await asyncio.to_thread(in_new_loop) == "one two"


# -- API keys ----------------------------------------------------------------------------------
def test_missing_key_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    with pytest.raises(AuthenticationError) as e:
        OpenAIModel("gpt-x", api_key_env=KEY_ENV)
    msg = str(e.value)
    assert KEY_ENV in msg and "not set" in msg and "127.0.0.1" in msg
    monkeypatch.setenv(KEY_ENV, "  ")
    with pytest.raises(AuthenticationError, match=KEY_ENV):
        OpenAIModel("gpt-x", api_key_env=KEY_ENV)


def test_key_is_not_in_repr_identity_or_attributes(key: str) -> None:
    m = OpenAIModel(
        "gpt-x", base_url="http://user:pw@127.0.0.1:9/v1?token=abc", api_key_env=KEY_ENV
    )
    assert m.identity() == {
        "backend": "openai",
        "model": "gpt-x",
        "base_url": "http://127.0.0.1:9/v1",
    }
    for text in (repr(m), str(m.identity()), str(vars(m).get("server"))):
        assert key not in text and "pw" not in text


async def test_no_key_needed_sends_a_placeholder(scripted_server: ServerHandle) -> None:
    m = OpenAIModel("scripted", base_url=scripted_server.url, api_key_env=None)
    assert (await m.generate([GenerationRequest(prompt="a", max_tokens=1)]))[0].text == "a"
    await m.aclose()
    assert scripted_server.received[0].headers["authorization"] == "Bearer no-key-needed"


async def test_a_spec_on_this_machine_needs_no_key_unless_one_is_named(
        scripted_server: ServerHandle, monkeypatch: pytest.MonkeyPatch) -> None:
    """``openai:NAME@http://127.0.0.1:PORT/v1`` (a vLLM or llama.cpp server here) with
    OPENAI_API_KEY unset sends the placeholder; a remote endpoint, or a key variable named
    on purpose, still needs its key."""
    from recitation.models.config import ModelConfig, parse_model_spec
    from recitation.models.registry import build_backend

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    m = build_backend(ModelConfig(**parse_model_spec(f"openai:scripted@{scripted_server.url}")))
    assert (await m.generate([GenerationRequest(prompt="a", max_tokens=1)]))[0].text == "a"
    await m.aclose()
    assert scripted_server.received[0].headers["authorization"] == "Bearer no-key-needed"
    with pytest.raises(AuthenticationError, match="OPENAI_API_KEY"):
        build_backend(ModelConfig(**parse_model_spec("openai:m@http://10.1.2.3:8000/v1")))
    with pytest.raises(AuthenticationError, match=KEY_ENV):
        build_backend(ModelConfig(**parse_model_spec(f"openai:m@{scripted_server.url}"),
                                  api_key_env=KEY_ENV))


async def test_rejected_key_is_authentication_error_without_the_key(key: str) -> None:
    body = FaultAction.json_body(
        {"error": {"message": f"Incorrect API key provided: {key}", "type": "auth"}}, 401
    )
    with start_server(ScriptedModel(), fault_hook=lambda i: body) as h:
        m = client_for(h)
        with pytest.raises(AuthenticationError) as e:
            await m.generate([GenerationRequest(prompt="a", max_tokens=1)])
        await m.aclose()
    assert e.value.status == 401 and not e.value.retryable
    assert key not in str(e.value) and "<redacted>" in str(e.value)


# -- score and errors --------------------------------------------------------------------------
async def test_score_without_prompt_logprobs_is_unsupported(key: str) -> None:
    reply = {
        "id": "c",
        "object": "text_completion",
        "created": 0,
        "model": "m",
        "choices": [{"index": 0, "text": "hello", "finish_reason": "length", "logprobs": None}],
    }
    with start_server(ScriptedModel(), fault_hook=lambda i: FaultAction.json_body(reply)) as h:
        m = client_for(h)
        with pytest.raises(UnsupportedRequest, match="no prompt log-probabilities"):
            await m.score(["hello world"])
        await m.aclose()
    body = h.received[0].body
    assert body is not None
    assert (body["echo"], body["logprobs"], body["max_tokens"]) == (True, 1, 0)


def _vllm_prompt_logprobs_reply(info: RequestInfo) -> FaultAction:
    """A server that refuses ``echo`` (HTTP 400) and answers ``prompt_logprobs`` the way vLLM
    0.32 does (its reply to "one two three", the gold token second-likeliest at "two")."""
    body = info.body or {}
    if body.get("echo"):
        return FaultAction.json_body({"error": {"message": "echo is not supported"}}, 400)
    assert body["prompt_logprobs"] == 1 and body["max_tokens"] == 1
    rows = [None,
            {"7": {"logprob": -2.5, "rank": 2, "decoded_token": " two"},
             "9": {"logprob": -0.5, "rank": 1, "decoded_token": " four"}},
            {"8": {"logprob": -0.25, "rank": 1, "decoded_token": " three"}}]
    return FaultAction.json_body({
        "id": "c", "object": "text_completion", "created": 0, "model": "m",
        "choices": [{"index": 0, "text": " and", "finish_reason": "length", "logprobs": None,
                     "prompt_logprobs": rows}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}})


async def test_score_finds_the_prompt_logprobs_form_and_keeps_it(key: str) -> None:
    """Echo refused: the prompt_logprobs form, found on the first text and used for the rest;
    the gold token's log-probability and the likeliest token's read by rank."""
    with start_server(ScriptedModel(), fault_hook=_vllm_prompt_logprobs_reply) as h:
        m = client_for(h)
        first = await m.score(["one two three"])
        again = await m.score(["one two three", "one two three"])
        await m.aclose()
    for s in (*first, *again):
        assert s.tokens == ("one", " two", " three")
        assert s.logprobs == (-2.5, -0.25) and s.top_logprob == (-0.5, -0.25)
        assert s.rank == (2, 1)
        assert s.usage.input_tokens == 3
    echoed = [r for r in h.received if r.body and r.body.get("echo")]
    assert len(echoed) == 1 and len(h.received) == 4  # echo tried once, never again


async def test_score_via_scripted_server(scripted_server: ServerHandle, key: str) -> None:
    m = client_for(scripted_server)
    [s] = await m.score(["one two three"])
    await m.aclose()
    assert s.tokens == ("one", "two", "three") and len(s.logprobs) == 2


async def test_other_4xx_is_a_non_retryable_backend_error(key: str) -> None:
    fault = FaultAction.json_body({"error": {"message": "model not found"}}, 404)
    with start_server(ScriptedModel(), fault_hook=lambda i: fault) as h:
        m = client_for(h)
        with pytest.raises(BackendError) as e:
            await m.generate([GenerationRequest(prompt="a", max_tokens=1)])
        await m.aclose()
    # a 404 is diagnosed (tests/models/test_endpoint.py): here nothing lists models either
    assert type(e.value) is EndpointError and not e.value.retryable
    assert "HTTP 404" in str(e.value) and "model not found" in str(e.value)
    assert "nothing at" in str(e.value)


async def test_unreachable_server_is_a_connection_error(key: str) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed once we leave: nothing listens there
    m = OpenAIModel("m", base_url=f"http://127.0.0.1:{port}/v1", api_key_env=KEY_ENV)
    with pytest.raises(BackendConnectionError) as e:
        await m.generate([GenerationRequest(prompt="a", max_tokens=1)])
    await m.aclose()
    assert e.value.retryable and f"127.0.0.1:{port}" in str(e.value)


async def test_switches_to_max_completion_tokens_when_asked(key: str) -> None:
    """OpenAI's reasoning models reject max_tokens with a 400 naming the replacement."""
    reject = FaultAction.json_body(
        {
            "error": {
                "message": "Unsupported parameter: 'max_tokens' is not supported with this model. "
                "Use 'max_completion_tokens' instead.",
                "type": "invalid_request_error",
                "param": "max_tokens",
                "code": "unsupported_parameter",
            }
        },
        400,
    )

    def hook(info: RequestInfo) -> FaultAction | None:
        return reject if info.body and "max_tokens" in info.body else None

    with start_server(ScriptedModel(), fault_hook=hook) as h:
        m = client_for(h)
        req = [GenerationRequest.chat("one two three", max_tokens=2)]
        assert (await m.generate(req))[0].text == "one two"
        assert (await m.generate(req))[0].text == "one two"
        await m.aclose()
    sent = [i.body for i in h.received]
    assert [("max_tokens" in b, b.get("max_completion_tokens")) for b in sent if b] == [
        (True, None),
        (False, 2),
        (False, 2),
    ]
