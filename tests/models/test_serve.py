"""`recitation serve`: the HTTP protocol, request accounting and fault injection.

Protocol tests use the scripted model (fast) and a plain HTTP client; the SDK backends are
tested against this server in test_openai_backend.py / test_anthropic_backend.py.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from recitation.errors import RateLimitError, UnsupportedRequest
from recitation.models.anthropic_backend import AnthropicModel
from recitation.models.base import Generation, GenerationRequest
from recitation.models.openai_backend import OpenAIModel
from recitation.models.scripted import ScriptedModel, echo_responder
from recitation.serve import FaultAction, RequestInfo, ServerHandle, start_server


@pytest.fixture
def server() -> Iterator[ServerHandle]:
    with start_server(ScriptedModel(name="scripted-echo")) as handle:
        yield handle


def post(handle: ServerHandle, path: str, body: Any, **kw: Any) -> httpx.Response:
    return httpx.post(f"{handle.root_url}{path}", json=body, timeout=10, **kw)


def wait_for(cond: Callable[[], bool], timeout: float = 60.0) -> None:
    """Poll until ``cond`` holds; the timeout is generous (other jobs load the machine)."""
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        time.sleep(0.01)


def test_url_shapes(server: ServerHandle) -> None:
    assert server.url == f"http://127.0.0.1:{server.port}/v1"
    assert server.root_url == f"http://127.0.0.1:{server.port}"
    assert server.port > 0


def test_models_lists_the_served_model(server: ServerHandle) -> None:
    r = httpx.get(f"{server.url}/models")
    assert r.status_code == 200
    assert [m["id"] for m in r.json()["data"]] == ["scripted-echo"]


def test_chat_completion_shape_and_usage(server: ServerHandle) -> None:
    r = post(
        server,
        "/v1/chat/completions",
        {
            "model": "anything",
            "max_tokens": 2,
            "temperature": 0,
            "messages": [
                {"role": "system", "content": "be brief"},
                {"role": "user", "content": [{"type": "text", "text": "alpha beta gamma"}]},
            ],
        },
    )
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["object"] == "chat.completion"
    choice = body["choices"][0]
    assert choice["message"] == {"role": "assistant", "content": "alpha beta"}
    assert choice["finish_reason"] == "length"
    assert body["usage"] == {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}
    assert [i.path for i in server.completed] == ["/v1/chat/completions"]


def test_completions_list_prompts_and_echo(server: ServerHandle) -> None:
    r = post(
        server,
        "/v1/completions",
        {"model": "m", "prompt": ["a b c", "d e"], "max_tokens": 5, "echo": True},
    )
    assert r.status_code == 200, r.text
    texts = [c["text"] for c in r.json()["choices"]]
    assert texts == ["a b ca b c", "d ed e"]  # echo: prompt + continuation


def test_prompt_logprobs_via_echo(server: ServerHandle) -> None:
    r = post(
        server,
        "/v1/completions",
        {"model": "m", "prompt": "one two three", "echo": True, "logprobs": 1, "max_tokens": 0},
    )
    assert r.status_code == 200, r.text
    lp = r.json()["choices"][0]["logprobs"]
    assert lp["tokens"] == ["one", "two", "three"]
    assert lp["token_logprobs"][0] is None
    assert lp["token_logprobs"][1:] == pytest.approx([-1.38629436, -1.79175947])


@pytest.mark.parametrize(
    "path, body, fragment",
    [
        (
            "/v1/chat/completions",
            {"messages": [{"role": "user", "content": "x"}], "temperature": "hot"},
            "'temperature' must be",
        ),
        ("/v1/chat/completions", {"messages": []}, "'messages' must be a non-empty list"),
        ("/v1/chat/completions", {"messages": [{"role": "tool", "content": "x"}]}, "role must be"),
        (
            "/v1/chat/completions",
            {"messages": [{"role": "user", "content": "x"}], "n": 2},
            "'n' must be 1",
        ),
        ("/v1/completions", {"prompt": [1, 2, 3]}, "token ids are not supported"),
        ("/v1/completions", {"prompt": "x", "stream": True}, "streaming is not supported"),
        (
            "/v1/completions",
            {"prompt": "x", "echo": True, "logprobs": 1, "max_tokens": 3},
            "only with max_tokens 0",
        ),
    ],
)
def test_bad_requests_get_openai_style_400(
    server: ServerHandle, path: str, body: dict[str, Any], fragment: str
) -> None:
    r = post(server, path, body)
    assert r.status_code == 400
    assert fragment in r.json()["error"]["message"]
    assert server.completed == []


def test_anthropic_errors_use_the_messages_error_format(server: ServerHandle) -> None:
    r = post(server, "/v1/messages", {"model": "m", "messages": [{"role": "user", "content": "x"}]})
    assert r.status_code == 400
    assert r.json() == {
        "type": "error",
        "error": {"type": "invalid_request_error", "message": "max_tokens: Field required"},
    }


def test_unknown_route_and_invalid_json(server: ServerHandle) -> None:
    assert httpx.post(f"{server.url}/nope", json={}).status_code == 404
    r = httpx.post(
        f"{server.url}/completions",
        content=b"{not json",
        headers={"Content-Type": "application/json"},
    )
    assert r.status_code == 400 and "not valid JSON" in r.json()["error"]["message"]


def test_model_errors_become_http_errors() -> None:
    def responder(req: GenerationRequest) -> str | BaseException:
        if "limit" in (req.prompt or ""):
            return RateLimitError("slow down", retry_after=2.0)
        if "unsupported" in (req.prompt or ""):
            return UnsupportedRequest("cannot do that")
        return echo_responder(req)

    with start_server(ScriptedModel(responder)) as h:
        r = post(h, "/v1/completions", {"prompt": "limit", "max_tokens": 1})
        assert r.status_code == 429 and r.headers["retry-after"] == "2"
        r = post(h, "/v1/completions", {"prompt": "unsupported", "max_tokens": 1})
        assert r.status_code == 400 and "cannot do that" in r.json()["error"]["message"]
        assert h.completed == [] and len(h.received) == 2


def test_fault_hook_status_headers_and_body() -> None:
    faults = {
        0: FaultAction.rate_limited(retry_after=1.5),
        1: FaultAction.server_error(503),
        2: FaultAction.malformed_json(b'{"choices": ['),
        3: FaultAction.json_body({"unexpected": True}),
    }

    def hook(info: RequestInfo) -> FaultAction | None:
        return faults.get(info.index)

    body = {"prompt": "x y", "max_tokens": 1}
    with start_server(ScriptedModel(), fault_hook=hook) as h:
        r = post(h, "/v1/completions", body)
        assert r.status_code == 429 and r.headers["retry-after"] == "1.5"
        assert post(h, "/v1/completions", body).status_code == 503
        r = post(h, "/v1/completions", body)
        assert r.status_code == 200 and r.content == b'{"choices": ['
        assert post(h, "/v1/completions", body).json() == {"unexpected": True}
        assert post(h, "/v1/completions", body).status_code == 200  # no fault: answered
        assert len(h.received) == 5
        assert len(h.completed) == 1  # injected replies are never model answers


def test_delay_then_answer_counts_as_completed() -> None:
    with start_server(ScriptedModel(), fault_hook=lambda i: FaultAction.hang(0.3)) as h:
        t0 = time.monotonic()
        r = post(h, "/v1/completions", {"prompt": "x y", "max_tokens": 1})
        assert r.status_code == 200 and time.monotonic() - t0 >= 0.3
        assert len(h.completed) == 1


def test_client_timing_out_during_a_hang_is_not_completed() -> None:
    with start_server(ScriptedModel(), fault_hook=lambda i: FaultAction.hang()) as h:
        with pytest.raises(httpx.ReadTimeout):
            httpx.post(f"{h.url}/completions", json={"prompt": "x", "max_tokens": 1}, timeout=0.2)
        wait_for(lambda: len(h.aborted) == 1)
        assert h.completed == [] and len(h.received) == 1


def test_peer_check_never_blocks_when_the_bytes_were_read_meanwhile(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The race behind a stalled request: poll says a connection is readable, then its
    owner thread reads those bytes before the peek. The check must answer "still there"
    at once; a blocking peek waited (holding the server's request lock) until the client
    timed out. Poll (and select) are faked as readable on a socket with nothing to read."""
    import select
    import socket

    from recitation.serve import server as serve

    class ReadablePoll:
        def register(self, *_a: Any) -> None: ...

        def poll(self, *_a: Any) -> list[tuple[int, int]]:
            return [(0, select.POLLIN)]

    a, b = socket.socketpair()
    with a, b:
        monkeypatch.setattr(serve.select, "poll", ReadablePoll)
        monkeypatch.setattr(serve.select, "select", lambda r, w, x, *_a: (r, [], []))
        answer: list[bool] = []
        t = threading.Thread(target=lambda: answer.append(serve._peer_closed(a)), daemon=True)
        t.start()
        t.join(30)
        assert answer == [False], "the check blocked on a socket with nothing to read"
        monkeypatch.undo()
        b.sendall(b"x")  # data waiting: open; peer closed: closed
        assert serve._peer_closed(a) is False and a.recv(1) == b"x"
        b.close()
        assert serve._peer_closed(a) is True


def test_answers_on_descriptors_above_1024() -> None:
    """A process with more than 1024 files open (a long test session, a busy server): the
    server's "has the client gone?" check used select(), which cannot watch a descriptor
    numbered 1024 or more, so every reply on such a connection was dropped (the client saw
    a disconnect and retried). With every descriptor below 1100 taken, each answer arrives
    and counts as completed, and a client that leaves during a hang is still noticed."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 1200:
        pytest.skip(f"the hard limit on open files ({hard}) is below 1200")
    if soft != resource.RLIM_INFINITY and soft < 1200:
        resource.setrlimit(resource.RLIMIT_NOFILE, (1200, hard))
    held: list[int] = []
    try:
        while not held or held[-1] < 1100:
            held.append(os.open(os.devnull, os.O_RDONLY))
        with start_server(ScriptedModel(), fault_hook=lambda i: (
                FaultAction.hang() if i.body and i.body.get("prompt") == "hang" else None)) as h:
            for _ in range(3):
                r = post(h, "/v1/completions", {"prompt": "x y", "max_tokens": 1})
                assert r.status_code == 200, r.text
            assert len(h.completed) == 3 and h.aborted == []
            with pytest.raises(httpx.ReadTimeout):
                httpx.post(f"{h.url}/completions", json={"prompt": "hang", "max_tokens": 1},
                           timeout=0.2)
            wait_for(lambda: len(h.aborted) == 1)
    finally:
        for fd in held:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


CLIENT = textwrap.dedent("""
    import sys, httpx
    httpx.post(sys.argv[1] + "/completions", json={"prompt": "a b c", "max_tokens": 2},
               timeout=60)
""")


def _killed_client(url: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", CLIENT, url])


def test_client_killed_while_request_is_held_is_not_completed() -> None:
    with start_server(ScriptedModel(), fault_hook=lambda i: FaultAction.hang(30)) as h:
        proc = _killed_client(h.url)
        wait_for(lambda: len(h.received) == 1, timeout=20)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        wait_for(lambda: len(h.aborted) == 1)
        assert h.completed == []


def test_client_killed_while_the_model_works_is_not_completed() -> None:
    """The model finishes after the client died: the answer must not count."""
    client_dead = threading.Event()

    def slow(req: GenerationRequest) -> str:
        client_dead.wait(60)  # answer only once the client is gone, however busy the machine
        return echo_responder(req)

    with start_server(ScriptedModel(slow)) as h:
        proc = _killed_client(h.url)
        wait_for(lambda: len(h.received) == 1)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        client_dead.set()
        wait_for(lambda: len(h.aborted) == 1)
        assert h.completed == []


def test_stop_releases_hung_requests() -> None:
    """stop() lets go of a request held forever (the client would give up only after 60 s)."""
    h = start_server(ScriptedModel(), fault_hook=lambda i: FaultAction.hang())
    proc = _killed_client(h.url)
    try:
        wait_for(lambda: len(h.received) == 1)
        h.stop()
        wait_for(lambda: len(h.aborted) == 1, timeout=40)
        assert h.completed == []
    finally:
        proc.kill()
        proc.wait()


class _BlockingModel(ScriptedModel):
    """Generates only once ``gate`` is set, blocking a worker thread as LocalModel does."""

    def __init__(self) -> None:
        super().__init__()
        self.started = threading.Event()
        self.gate = threading.Event()

    async def generate(self, requests: list[GenerationRequest]) -> list[Generation]:
        self.started.set()
        await asyncio.to_thread(self.gate.wait, 120)
        return await super().generate(requests)


def test_stop_abandons_a_model_call_under_way() -> None:
    """Stopping does not wait for a busy worker thread: the waiting request gets HTTP 503 at
    once (before, it hung until its client gave up, and the process could not exit until
    the worker finished)."""
    model = _BlockingModel()
    h = start_server(model)
    replies: list[httpx.Response] = []
    body = {"prompt": "a b", "max_tokens": 2}
    client = threading.Thread(
        target=lambda: replies.append(httpx.post(f"{h.url}/completions", json=body, timeout=90))
    )
    try:
        client.start()
        assert model.started.wait(60)
        wait_for(lambda: h.model_threads_running == 1)
        assert h.busy == 1
        h.stop()
        client.join(80)
        assert [r.status_code for r in replies] == [503]
        assert "stop" in replies[0].json()["error"]["message"]
        assert h.model_threads_running == 1  # abandoned, still blocked: nobody waited for it
        assert post_after_stop_fails(h)
    finally:
        model.gate.set()
        client.join(80)
    wait_for(lambda: h.model_threads_running == 0)


def post_after_stop_fails(h: ServerHandle) -> bool:
    try:
        httpx.post(f"{h.url}/completions", json={"prompt": "x"}, timeout=10)
    except httpx.TransportError:
        return True
    return False


def test_record_requests_off_keeps_nothing() -> None:
    with start_server(ScriptedModel(), record_requests=False) as h:
        assert post(h, "/v1/completions", {"prompt": "x", "max_tokens": 1}).status_code == 200
        assert h.received == [] and h.completed == []


@pytest.mark.model
async def test_serve_cli_serves_the_embedded_model(tmp_path: Path) -> None:
    """`recitation serve --port 0` prints its URL, answers both SDK backends (greedily: the
    same text), and stops cleanly on Ctrl-C. (Equality with LocalModel itself is tested in
    test_openai_backend.py with an in-process server.)"""
    code = "from recitation.cli import main; raise SystemExit(main())"
    with open(tmp_path / "stderr.txt", "w") as err:
        proc = subprocess.Popen(
            [sys.executable, "-c", code, "serve", "--port", "0", "--threads", "1"],
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
        )
    try:
        assert proc.stdout is not None
        line = await asyncio.to_thread(proc.stdout.readline)
        assert line.startswith("Serving "), line + (tmp_path / "stderr.txt").read_text()
        url = line.split(" at ")[1].strip()
        assert url.startswith("http://127.0.0.1:") and url.endswith("/v1")
        req = GenerationRequest.chat("Say hello.", max_tokens=6)
        texts = []
        for remote in (
            OpenAIModel("smollm2", base_url=url, api_key_env=None),
            AnthropicModel("smollm2", base_url=url.removesuffix("/v1"), api_key_env=None),
        ):
            texts.append((await remote.generate([req]))[0].text)
            await remote.aclose()
        assert texts[0] and texts[0] == texts[1]
        # Ctrl-C during a long generation: the server abandons it and exits cleanly (a normal
        # interpreter exit under a running torch thread aborts; the old server waited for it).
        long_req = {"prompt": "1, 2, 3, 4,", "max_tokens": 3000, "temperature": 0}
        busy = threading.Thread(target=_post_quietly, args=(f"{url}/completions", long_req))
        busy.start()
        await asyncio.sleep(1.0)  # usually inside the model by now; if not, still a valid test
        proc.send_signal(signal.SIGINT)
        # generous: the server must exit, not within a tight bound (the machine may be busy)
        assert await asyncio.to_thread(proc.wait, 120) == 0
        busy.join(60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.model
@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
def test_serve_stops_on_a_signal_even_with_sigint_ignored(sig: str, tmp_path: Path) -> None:
    """A background job of a non-interactive shell starts with SIGINT ignored (Python then
    installs no KeyboardInterrupt handler): the server still stops on SIGINT, and on SIGTERM,
    with exit code 0."""
    code = "from recitation.cli import main; raise SystemExit(main())"

    def ignore_sigint() -> None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)

    with open(tmp_path / "stderr.txt", "w") as err:
        proc = subprocess.Popen(
            [sys.executable, "-c", code, "serve", "--port", "0", "--threads", "1"],
            stdout=subprocess.PIPE, stderr=err, text=True, preexec_fn=ignore_sigint)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("Serving "), line + (tmp_path / "stderr.txt").read_text()
        proc.send_signal(getattr(signal, sig))
        assert proc.wait(120) == 0, (tmp_path / "stderr.txt").read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _post_quietly(url: str, body: dict[str, Any]) -> None:
    try:
        httpx.post(url, json=body, timeout=120)
    except httpx.HTTPError:
        pass  # the server went away mid-request: expected


def test_routes_answer_without_the_v1_prefix(server: ServerHandle) -> None:
    r = post(server, "/chat/completions", {"messages": [{"role": "user", "content": "a b"}]})
    assert r.status_code == 200 and r.json()["choices"][0]["message"]["content"] == "a b"
    assert httpx.get(f"{server.root_url}/models").status_code == 200
