"""The anthropic backend against `recitation serve`'s Messages API (/v1/messages)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from recitation.errors import AuthenticationError, UnsupportedRequest
from recitation.models.anthropic_backend import AnthropicModel, messages_params
from recitation.models.base import GenerationRequest, Message
from recitation.models.local import LocalModel
from recitation.models.scripted import ScriptedModel
from recitation.serve import FaultAction, ServerHandle, start_server

KEY_ENV = "RECITATION_TEST_ANTHROPIC_KEY"
KEY = "sk-ant-test-abcdef0123456789"


@pytest.fixture
def key(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(KEY_ENV, KEY)
    return KEY


@pytest.fixture
def scripted_server() -> Iterator[ServerHandle]:
    with start_server(ScriptedModel(name="scripted")) as h:
        yield h


def client_for(h: ServerHandle) -> AnthropicModel:
    return AnthropicModel("scripted", base_url=h.root_url, api_key_env=KEY_ENV)


@pytest.fixture(scope="module")
def local_server(local_model: LocalModel) -> Iterator[ServerHandle]:
    with start_server(local_model) as h:
        yield h


@pytest.mark.model
async def test_messages_equal_local_model_greedy(
    local_model: LocalModel, local_server: ServerHandle
) -> None:
    """The server decodes /v1/messages greedily (the API takes no temperature), so the
    answer equals LocalModel's greedy answer to the same chat; a plain prompt is sent as one
    user message."""
    reqs = [
        GenerationRequest(
            messages=(
                Message("system", "You are a helpful assistant."),
                Message("user", "What is two plus two?"),
            ),
            max_tokens=8,
        ),
        GenerationRequest(prompt="Name a fruit.", max_tokens=8, stop=("\n",)),
    ]
    remote = AnthropicModel("smollm2", base_url=local_server.root_url, api_key_env=None)
    got = await remote.generate(reqs)
    await remote.aclose()
    as_chat = [reqs[0], GenerationRequest.chat("Name a fruit.", max_tokens=8, stop=("\n",))]
    want = [(await local_model.generate([r]))[0] for r in as_chat]
    assert [g.text for g in got] == [w.text for w in want]
    assert all(g.text for g in got)
    assert [g.finish_reason for g in got] == [w.finish_reason for w in want]
    assert [g.usage for g in got] == [w.usage for w in want]


async def test_request_shape(scripted_server: ServerHandle, key: str) -> None:
    m = client_for(scripted_server)
    out = await m.generate(
        [
            GenerationRequest(
                messages=(
                    Message("system", "one"),
                    Message("system", "two"),
                    Message("user", "a b c"),
                    Message("assistant", "d"),
                    Message("user", "e f g"),
                ),
                max_tokens=2,
                temperature=0.7,
                top_p=0.5,
                seed=1,
                stop=("zz",),
            )
        ]
    )
    await m.aclose()
    assert out[0].text == "e f" and out[0].finish_reason == "length"
    assert out[0].usage.input_tokens == 3 and out[0].usage.output_tokens == 2
    [info] = scripted_server.received
    assert info.path == "/v1/messages" and info.body is not None
    assert info.body["system"] == "one\n\ntwo"
    assert info.body["messages"] == [
        {"role": "user", "content": "a b c"},
        {"role": "assistant", "content": "d"},
        {"role": "user", "content": "e f g"},
    ]
    assert info.body["max_tokens"] == 2 and info.body["stop_sequences"] == ["zz"]
    # API version 2026-10-21 rejects sampling parameters: none are sent
    assert not {"temperature", "top_p", "top_k", "seed"} & set(info.body)
    assert info.headers.get("authorization") == f"Bearer {key}"
    assert "anthropic-version" in info.headers


def test_plain_prompt_becomes_one_user_message() -> None:
    p = messages_params("m", GenerationRequest(prompt="continue this", max_tokens=5))
    assert p == {
        "model": "m",
        "max_tokens": 5,
        "messages": [{"role": "user", "content": "continue this"}],
    }


async def test_logprobs_and_score_are_unsupported(scripted_server: ServerHandle, key: str) -> None:
    m = client_for(scripted_server)
    assert not m.capabilities.logprobs and not m.capabilities.seeded_sampling
    with pytest.raises(UnsupportedRequest, match="log-probabilities"):
        await m.generate([GenerationRequest.chat("x", logprobs=True)])
    with pytest.raises(UnsupportedRequest):
        await m.score(["x y"])
    assert scripted_server.received == []


def test_missing_key_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "must-not-be-used-for-another-variable")
    with pytest.raises(AuthenticationError) as e:
        AnthropicModel("claude-x", api_key_env=KEY_ENV)
    assert KEY_ENV in str(e.value) and "not set" in str(e.value)


def test_key_is_not_in_repr_or_identity(key: str) -> None:
    m = AnthropicModel("claude-x", api_key_env=KEY_ENV)
    assert m.identity() == {
        "backend": "anthropic",
        "model": "claude-x",
        "base_url": "https://api.anthropic.com",
    }
    assert key not in repr(m) and key not in str(m.identity())


async def test_rejected_key_is_authentication_error_without_the_key(key: str) -> None:
    body = FaultAction.json_body(
        {
            "type": "error",
            "error": {"type": "authentication_error", "message": f"invalid x-api-key {key}"},
        },
        401,
    )
    with start_server(ScriptedModel(), fault_hook=lambda i: body) as h:
        m = client_for(h)
        with pytest.raises(AuthenticationError) as e:
            await m.generate([GenerationRequest.chat("x")])
        await m.aclose()
    assert "HTTP 401" in str(e.value) and "invalid x-api-key" in str(e.value)
    assert key not in str(e.value)


def test_base_url_with_v1_gets_a_warning(key: str, caplog: pytest.LogCaptureFixture) -> None:
    AnthropicModel("m", base_url="http://127.0.0.1:9/v1", api_key_env=KEY_ENV)
    assert "appends /v1/messages itself" in caplog.text
