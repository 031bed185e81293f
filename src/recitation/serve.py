"""Serve any :class:`~recitation.models.base.Model` over HTTP on 127.0.0.1.

``recitation serve`` (or :func:`start_server`) lets any OpenAI or Anthropic client use a
recitation model — by default the embedded SmolLM2. Endpoints:

* ``GET  /v1/models``            the one served model.
* ``POST /v1/chat/completions``  OpenAI chat (``messages``, ``max_tokens`` /
  ``max_completion_tokens``, ``temperature``, ``top_p``, ``seed``, ``stop``, ``logprobs``).
* ``POST /v1/completions``       OpenAI legacy completions (``prompt`` as a string or a list of
  strings, same parameters, ``echo``). ``echo: true, logprobs: N, max_tokens: 0`` returns the
  prompt's own token log-probabilities (vLLM style: ``token_logprobs[0]`` is ``null``) from
  ``model.score`` when the model can score.
* ``POST /v1/messages``          the Anthropic Messages API (``system``, ``messages``,
  ``max_tokens``, ``stop_sequences``). API version 2026-10-21 (anthropic SDK 2.x) has no
  sampling parameters, so the served model decodes greedily here unless the request carries
  ``temperature`` / ``top_p`` (older clients), which are honoured.

Client set-up against a server at ``http://127.0.0.1:PORT``:

* openai SDK: ``AsyncOpenAI(base_url="http://127.0.0.1:PORT/v1", api_key="anything")``
  — :attr:`ServerHandle.url`; the SDK appends ``/chat/completions``.
* anthropic SDK: ``AsyncAnthropic(base_url="http://127.0.0.1:PORT", api_key="anything")``
  — :attr:`ServerHandle.root_url`; the SDK appends ``/v1/messages`` itself.

Routes also answer without the ``/v1`` prefix (``/chat/completions``...), so a client whose
base URL lacks ``/v1`` works too. The server checks no key and ignores the requested
``model`` name (it serves one model).
API defaults are the APIs' own: ``temperature`` 1.0 when omitted, ``max_tokens`` 16 for
completions. Not supported (HTTP 400): streaming, ``n > 1``, token-id prompts, tools.
Generated-token logprobs carry no token strings (the backend contract does not return them).

Test instrumentation: every request is recorded in :attr:`ServerHandle.received`; a request
lands in :attr:`ServerHandle.completed` only once the model's 200 answer was written to the
socket in full — a client that went away first (killed, timed out) is never counted there but
in :attr:`ServerHandle.aborted`. A ``fault_hook`` can answer any request with an injected
fault (:class:`FaultAction`) instead.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import math
import select
import socket
import sys
import threading
import time
import uuid
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypeVar

from recitation.errors import (
    AuthenticationError,
    BackendError,
    BackendTimeout,
    RateLimitError,
    ServerError,
    UnsupportedRequest,
)
from recitation.models.base import (
    Generation,
    GenerationRequest,
    Message,
    Model,
    Role,
    TokenScores,
)

log = logging.getLogger(__name__)
T = TypeVar("T")


@dataclass(frozen=True)
class RequestInfo:
    """One request as the server received it (``body`` is the parsed JSON, if any)."""

    index: int
    method: str
    path: str
    body: dict[str, Any] | None
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)


@dataclass(frozen=True)
class FaultAction:
    """What the server does instead of (or before) answering a request.

    The server first waits ``delay`` seconds (``math.inf``: until the client goes away or the
    server stops). Then, with ``drop``, it closes the connection without a reply; if
    ``status`` and ``body`` are both ``None``, it answers normally; otherwise it sends
    ``status`` (default 200) with ``headers`` and ``body`` (default: an error JSON in the
    API's format).
    """

    status: int | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    body: bytes | None = None
    delay: float = 0.0
    drop: bool = False

    @staticmethod
    def rate_limited(retry_after: float | None = 0.0) -> FaultAction:
        headers = {} if retry_after is None else {"Retry-After": f"{retry_after:g}"}
        return FaultAction(status=429, headers=headers)

    @staticmethod
    def server_error(status: int = 500) -> FaultAction:
        return FaultAction(status=status)

    @staticmethod
    def hang(seconds: float = math.inf) -> FaultAction:
        """Hold the request ``seconds`` (then answer normally), or until the client leaves."""
        return FaultAction(delay=seconds)

    @staticmethod
    def drop_connection() -> FaultAction:
        """Close the connection without answering (the client sees a connection error)."""
        return FaultAction(drop=True)

    @staticmethod
    def malformed_json(body: bytes = b'{"id": "cmpl-1", "choices": [{"text": ') -> FaultAction:
        """A 200 reply whose body is not valid JSON."""
        return FaultAction(status=200, body=body)

    @staticmethod
    def json_body(payload: Any, status: int = 200) -> FaultAction:
        """A reply with an arbitrary JSON body (e.g. one of the wrong shape)."""
        return FaultAction(status=status, body=json.dumps(payload).encode())


FaultHook = Callable[[RequestInfo], FaultAction | None]


class HTTPError(Exception):
    """An error reply: HTTP status, message and API error type."""

    def __init__(self, status: int, message: str, kind: str = "invalid_request_error",
                 headers: Mapping[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.kind = kind
        self.headers = dict(headers or {})


# -- request parsing --------------------------------------------------------------------
def _field(body: dict[str, Any], name: str, kinds: tuple[type, ...], default: Any) -> Any:
    value = body.get(name, default)
    if value is None:
        return default
    if isinstance(value, bool) and bool not in kinds or not isinstance(value, kinds):
        wanted = " or ".join(k.__name__ for k in kinds)
        raise HTTPError(400, f"'{name}' must be {wanted}, got {type(value).__name__}")
    return value


def _stops(body: dict[str, Any], name: str) -> tuple[str, ...]:
    stop = body.get(name)
    if stop is None:
        return ()
    if isinstance(stop, str):
        return (stop,)
    if isinstance(stop, list) and all(isinstance(s, str) for s in stop):
        return tuple(stop)
    raise HTTPError(400, f"'{name}' must be a string or a list of strings")


def _sampling(body: dict[str, Any], max_tokens: int, stop_field: str = "stop",
              temperature: float = 1.0) -> dict[str, Any]:
    if body.get("stream"):
        raise HTTPError(400, "streaming is not supported by recitation serve")
    if _field(body, "n", (int,), 1) != 1:
        raise HTTPError(400, "'n' must be 1")
    if body.get("top_k") is not None:
        raise HTTPError(400, "'top_k' is not supported")
    return dict(
        max_tokens=max_tokens,
        temperature=float(_field(body, "temperature", (int, float), temperature)),
        top_p=float(_field(body, "top_p", (int, float), 1.0)),
        seed=_field(body, "seed", (int,), None),
        stop=_stops(body, stop_field),
    )


def _content_text(content: Any, where: str) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if not (isinstance(part, dict) and part.get("type") == "text"
                    and isinstance(part.get("text"), str)):
                raise HTTPError(400, f"{where}: only text content parts are supported")
            parts.append(part["text"])
        return "".join(parts)
    raise HTTPError(400, f"{where}: content must be a string or a list of text parts")


_ROLES: dict[str, Role] = {"system": "system", "developer": "system", "user": "user",
                           "assistant": "assistant"}


def _messages(raw: Any) -> list[Message]:
    if not isinstance(raw, list) or not raw:
        raise HTTPError(400, "'messages' must be a non-empty list")
    out = []
    for i, m in enumerate(raw):
        if not isinstance(m, dict) or m.get("role") not in _ROLES:
            raise HTTPError(400, f"messages[{i}]: role must be one of {sorted(_ROLES)}")
        out.append(Message(_ROLES[m["role"]], _content_text(m.get("content"), f"messages[{i}]")))
    return out


def _request(**kw: Any) -> GenerationRequest:
    try:
        return GenerationRequest(**kw)
    except ValueError as e:
        raise HTTPError(400, str(e)) from e


# -- the API logic (no HTTP here) -------------------------------------------------------
class ModelAPI:
    """Translates API bodies into model calls and model results into API bodies."""

    def __init__(self, model: Model, loop: asyncio.AbstractEventLoop) -> None:
        self.model = model
        self.loop = loop

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def generate(self, requests: list[GenerationRequest]) -> list[Generation]:
        return self.run(self.model.generate(requests))

    def models(self) -> dict[str, Any]:
        return {"object": "list", "data": [
            {"id": self.model.name, "object": "model", "created": 0, "owned_by": "recitation"}]}

    def chat_completions(self, body: dict[str, Any]) -> dict[str, Any]:
        limit = body.get("max_completion_tokens", body.get("max_tokens"))
        max_tokens = int(_field({"max_tokens": limit}, "max_tokens", (int,), 128))
        req = _request(messages=tuple(_messages(body.get("messages"))),
                       logprobs=bool(body.get("logprobs")), **_sampling(body, max_tokens))
        gen = self.generate([req])[0]
        logprobs: dict[str, Any] | None = None
        if req.logprobs and gen.token_logprobs is not None:
            logprobs = {"content": [{"token": "", "logprob": lp, "bytes": None,
                                     "top_logprobs": []} for lp in gen.token_logprobs]}
        choice = {"index": 0, "message": {"role": "assistant", "content": gen.text},
                  "finish_reason": _openai_finish(gen), "logprobs": logprobs}
        return self._openai_reply("chat.completion", [choice], gen.usage.input_tokens,
                                  gen.usage.output_tokens)

    def completions(self, body: dict[str, Any]) -> dict[str, Any]:
        prompts = _prompts(body.get("prompt"))
        max_tokens = int(_field(body, "max_tokens", (int,), 16))
        n_logprobs = _field(body, "logprobs", (int,), None)
        echo = bool(body.get("echo"))
        if echo and n_logprobs is not None:
            if max_tokens != 0:
                raise HTTPError(400, "echo with logprobs is supported only with max_tokens 0 "
                                "(prompt log-probabilities)")
            return self._prompt_logprobs(prompts)
        params = _sampling(body, max_tokens)
        reqs = [_request(prompt=p, logprobs=n_logprobs is not None, **params) for p in prompts]
        gens = self.generate(reqs) if max_tokens > 0 or not echo else []
        choices = []
        for i, p in enumerate(prompts):
            gen = gens[i] if gens else Generation(text="", finish_reason="length")
            lp = None
            if gen.token_logprobs is not None:
                lp = {"tokens": None, "token_logprobs": list(gen.token_logprobs),
                      "top_logprobs": None, "text_offset": None}
            choices.append({"index": i, "text": (p if echo else "") + gen.text,
                            "finish_reason": _openai_finish(gen), "logprobs": lp})
        return self._openai_reply("text_completion", choices,
                                  sum(g.usage.input_tokens for g in gens),
                                  sum(g.usage.output_tokens for g in gens))

    def _prompt_logprobs(self, prompts: list[str]) -> dict[str, Any]:
        if not self.model.capabilities.logprobs:
            raise HTTPError(400, f"model '{self.model.name}' cannot return log-probabilities")
        scores: list[TokenScores] = self.run(self.model.score(prompts))
        choices = [{
            "index": i, "text": p, "finish_reason": "length",
            "logprobs": {"tokens": list(s.tokens),
                         "token_logprobs": [None, *s.logprobs][: len(s.tokens)],
                         "top_logprobs": None, "text_offset": None},
        } for i, (p, s) in enumerate(zip(prompts, scores, strict=True))]
        return self._openai_reply("text_completion", choices,
                                  sum(s.usage.input_tokens for s in scores), 0)

    def _openai_reply(self, obj: str, choices: list[dict[str, Any]], n_in: int,
                      n_out: int) -> dict[str, Any]:
        prefix = "chatcmpl" if obj == "chat.completion" else "cmpl"
        return {"id": f"{prefix}-{uuid.uuid4().hex[:24]}", "object": obj,
                "created": int(time.time()), "model": self.model.name, "choices": choices,
                "usage": {"prompt_tokens": n_in, "completion_tokens": n_out,
                          "total_tokens": n_in + n_out}}

    def messages(self, body: dict[str, Any]) -> dict[str, Any]:
        if "max_tokens" not in body:
            raise HTTPError(400, "max_tokens: Field required")
        max_tokens = int(_field(body, "max_tokens", (int,), 0))
        msgs = _messages(body.get("messages"))
        if any(m.role == "system" for m in msgs):
            raise HTTPError(400, "messages: use the top-level 'system' parameter")
        system = body.get("system")
        if system is not None:
            msgs.insert(0, Message("system", _content_text(system, "system")))
        # API version 2026-10-21 has no sampling parameters: decode greedily unless an
        # (older) client sends a temperature.
        req = _request(messages=tuple(msgs),
                       **_sampling(body, max_tokens, "stop_sequences", temperature=0.0))
        gen = self.generate([req])[0]
        return {
            "id": f"msg_{uuid.uuid4().hex[:24]}", "type": "message", "role": "assistant",
            "model": self.model.name, "content": [{"type": "text", "text": gen.text}],
            "stop_reason": "max_tokens" if gen.finish_reason == "length" else "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": gen.usage.input_tokens,
                      "output_tokens": gen.usage.output_tokens},
        }


def _openai_finish(gen: Generation) -> str:
    return "length" if gen.finish_reason == "length" else "stop"


def _prompts(raw: Any) -> list[str]:
    if isinstance(raw, str):
        return [raw]
    if isinstance(raw, list) and raw and all(isinstance(p, str) for p in raw):
        return list(raw)
    raise HTTPError(400, "'prompt' must be a string or a non-empty list of strings "
                         "(token ids are not supported)")


def error_for_exception(err: BaseException) -> HTTPError:
    """The HTTP reply for an exception raised by the served model."""
    if isinstance(err, HTTPError):
        return err
    msg = f"{type(err).__name__}: {err}"
    if isinstance(err, RateLimitError):
        headers = {} if err.retry_after is None else {"Retry-After": f"{err.retry_after:g}"}
        return HTTPError(429, msg, "rate_limit_error", headers)
    if isinstance(err, AuthenticationError):
        return HTTPError(401, msg, "authentication_error")
    if isinstance(err, UnsupportedRequest | ValueError):
        return HTTPError(400, msg, "invalid_request_error")
    if isinstance(err, ServerError):
        return HTTPError(500, msg, "api_error")
    if isinstance(err, BackendTimeout):
        return HTTPError(504, msg, "api_error")
    if isinstance(err, BackendError):
        return HTTPError(502, msg, "api_error")
    log.error("model call failed", exc_info=err)
    return HTTPError(500, f"internal error: {msg}", "api_error")


def error_body(path: str, status: int, message: str, kind: str | None = None) -> bytes:
    """An error body in the format of the API that ``path`` belongs to."""
    kind = kind or {400: "invalid_request_error", 401: "authentication_error",
                    404: "not_found_error", 429: "rate_limit_error"}.get(status, "api_error")
    if path.endswith("/messages"):
        return json.dumps({"type": "error", "error": {"type": kind, "message": message}}).encode()
    return json.dumps({"error": {"message": message, "type": kind, "param": None,
                                 "code": None}}).encode()


# -- the HTTP layer ---------------------------------------------------------------------
def _peer_closed(sock: socket.socket) -> bool:
    """True when the client has closed its end (EOF or reset) — it will read no answer."""
    try:
        readable, _, _ = select.select([sock], [], [], 0)
        if not readable:
            return False
        return sock.recv(1, socket.MSG_PEEK) == b""
    except (OSError, ValueError):
        return True


class _Recorder:
    """Thread-safe request records."""

    def __init__(self, keep: bool) -> None:
        self.keep = keep
        self.lock = threading.Lock()
        self.count = 0
        self.received: list[RequestInfo] = []
        self.completed: list[RequestInfo] = []
        self.aborted: list[RequestInfo] = []

    def new(self, method: str, path: str, body: dict[str, Any] | None,
            headers: Mapping[str, str]) -> RequestInfo:
        with self.lock:
            info = RequestInfo(self.count, method, path, body, headers)
            self.count += 1
            if self.keep:
                self.received.append(info)
        return info

    def add(self, bucket: list[RequestInfo], info: RequestInfo) -> None:
        if self.keep:
            with self.lock:
                bucket.append(info)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], api: ModelAPI, recorder: _Recorder,
                 fault_hook: FaultHook | None) -> None:
        super().__init__(address, _Handler)
        self.api = api
        self.recorder = recorder
        self.fault_hook = fault_hook
        self.stopping = threading.Event()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "recitation-serve"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        log.debug("%s - %s", self.address_string(), format % args)

    def do_GET(self) -> None:  # noqa: N802
        self._handle("GET")

    def do_POST(self) -> None:  # noqa: N802
        self._handle("POST")

    def _read_body(self) -> tuple[dict[str, Any] | None, HTTPError | None]:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if not raw:
            return None, None
        try:
            body = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            return None, HTTPError(400, f"request body is not valid JSON: {e}")
        if not isinstance(body, dict):
            return None, HTTPError(400, "request body must be a JSON object")
        return body, None

    def _handle(self, method: str) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        body, bad = self._read_body()
        headers = {k.lower(): v for k, v in self.headers.items()}
        info = self.server.recorder.new(method, path, body, headers)
        fault = self._fault(info)
        if fault is not None and (fault.drop or fault.delay > 0 and not self._wait(fault.delay)):
            self.server.recorder.add(self.server.recorder.aborted, info)
            self.close_connection = True
            if fault.drop:
                self.connection.shutdown(socket.SHUT_RDWR)
            return
        if fault is not None and (fault.status is not None or fault.body is not None):
            status = fault.status or 200
            payload = fault.body if fault.body is not None else error_body(
                path, status, f"injected fault: HTTP {status}")
            self._send(info, status, payload, fault.headers, counts=False)
            return
        try:
            if bad is not None:
                raise bad
            reply = self._dispatch(method, path, body or {})
            status, payload, extra = 200, json.dumps(reply).encode(), {}
        except Exception as e:  # every failure becomes an error reply
            err = error_for_exception(e)
            status, payload, extra = err.status, error_body(path, err.status, err.message,
                                                            err.kind), err.headers
        self._send(info, status, payload, extra, counts=status == 200)

    def _fault(self, info: RequestInfo) -> FaultAction | None:
        if self.server.fault_hook is None:
            return None
        try:
            return self.server.fault_hook(info)
        except Exception as e:  # a broken hook answers 500 rather than killing the thread
            log.exception("fault hook failed")
            return FaultAction(status=500, body=error_body(info.path, 500, f"fault hook: {e}"))

    def _dispatch(self, method: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
        api = self.server.api
        routes: dict[tuple[str, str], Callable[[dict[str, Any]], dict[str, Any]]] = {
            ("GET", "/v1/models"): lambda _b: api.models(),
            ("POST", "/v1/chat/completions"): api.chat_completions,
            ("POST", "/v1/completions"): api.completions,
            ("POST", "/v1/messages"): api.messages,
        }
        route = routes.get((method, path if path.startswith("/v1/") else f"/v1{path}"))
        if route is None:
            raise HTTPError(404, f"no route for {method} {path}", "not_found_error")
        return route(body)

    def _wait(self, seconds: float) -> bool:
        """Hold the request; False when the client went away or the server is stopping."""
        deadline = time.monotonic() + seconds
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return True
            if self.server.stopping.wait(min(0.02, left)) or _peer_closed(self.connection):
                return False

    def _send(self, info: RequestInfo, status: int, payload: bytes,
              headers: Mapping[str, str], *, counts: bool) -> None:
        recorder = self.server.recorder
        if _peer_closed(self.connection):
            recorder.add(recorder.aborted, info)
            self.close_connection = True
            return
        try:
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
            self.wfile.flush()
        except OSError:
            recorder.add(recorder.aborted, info)
            self.close_connection = True
            return
        if counts:
            recorder.add(recorder.completed, info)


class ServerHandle:
    """A running server. ``url`` is the OpenAI ``base_url``; ``root_url`` the Anthropic one."""

    def __init__(self, server: _Server, loop: asyncio.AbstractEventLoop,
                 threads: list[threading.Thread]) -> None:
        self._server = server
        self._loop = loop
        self._threads = threads
        host, port = server.server_address[:2]
        self.host = str(host)
        self.port = int(port)
        self.root_url = f"http://{self.host}:{self.port}"
        self.url = f"{self.root_url}/v1"
        self._stopped = threading.Event()

    @property
    def received(self) -> list[RequestInfo]:
        """Every request received so far (a snapshot)."""
        with self._server.recorder.lock:
            return list(self._server.recorder.received)

    @property
    def completed(self) -> list[RequestInfo]:
        """Requests whose model answer (HTTP 200) was written to the socket in full."""
        with self._server.recorder.lock:
            return list(self._server.recorder.completed)

    @property
    def aborted(self) -> list[RequestInfo]:
        """Requests whose client went away before the answer could be written."""
        with self._server.recorder.lock:
            return list(self._server.recorder.aborted)

    def wait(self) -> None:
        """Block until :meth:`stop` (Ctrl-C raises KeyboardInterrupt here)."""
        while not self._stopped.wait(0.5):
            pass

    def stop(self) -> None:
        if self._stopped.is_set():
            return
        self._server.stopping.set()
        self._server.shutdown()
        self._server.server_close()
        self._loop.call_soon_threadsafe(self._loop.stop)
        for t in self._threads:
            t.join(timeout=10)
        if not self._loop.is_running():
            self._loop.close()
        self._stopped.set()

    def __enter__(self) -> ServerHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_server(model: Model, host: str = "127.0.0.1", port: int = 0, *,
                 fault_hook: FaultHook | None = None,
                 record_requests: bool = True) -> ServerHandle:
    """Serve ``model`` on ``host:port`` (0: a free port) from background threads.

    The model's coroutines run on one asyncio loop in its own thread; HTTP requests are
    handled on threads of their own, so concurrent requests reach the model concurrently.
    ``record_requests=False`` keeps no request records (for long-running servers).
    """
    loop = asyncio.new_event_loop()
    server = _Server((host, port), ModelAPI(model, loop), _Recorder(record_requests),
                     fault_hook)
    loop_thread = threading.Thread(target=loop.run_forever, name="recitation-serve-loop",
                                   daemon=True)
    http_thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                                   name="recitation-serve-http", daemon=True)
    loop_thread.start()
    http_thread.start()
    handle = ServerHandle(server, loop, [http_thread, loop_thread])
    log.info("serving %s/%s at %s", model.backend, model.name, handle.url)
    return handle


# -- CLI --------------------------------------------------------------------------------
def add_serve_parser(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Register ``recitation serve``."""
    p = subparsers.add_parser(
        "serve", help="serve a local model over an OpenAI- and Anthropic-compatible HTTP API",
        description="Serve a model on an OpenAI-compatible (/v1/chat/completions, "
                    "/v1/completions, /v1/models) and Anthropic-compatible (/v1/messages) "
                    "HTTP API. No API key is checked: keep it on 127.0.0.1.")
    p.add_argument("--model", default="smollm2",
                   help="model spec: 'smollm2' (embedded), a transformers directory or a .gguf")
    p.add_argument("--backend", default="local", choices=["local"], help="model backend")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8000, help="port (0: any free port)")
    p.set_defaults(func=serve_command)


def serve_command(args: argparse.Namespace) -> int:
    from recitation.models.local import LocalModel

    model = LocalModel(args.model)
    if args.host not in ("127.0.0.1", "localhost", "::1"):
        log.warning("serving on %s: the server checks no API key", args.host)
    try:
        handle = start_server(model, args.host, args.port, record_requests=False)
    except OSError as e:
        print(f"cannot listen on {args.host}:{args.port}: {e.strerror or e}", file=sys.stderr)
        return 2
    try:
        model.load()  # before announcing the URL, so the first request is not slow
        print(f"Serving {model.name} at {handle.url}")
        print(f"  openai:    OpenAI(base_url='{handle.url}', api_key='unused')")
        print(f"  anthropic: Anthropic(base_url='{handle.root_url}', api_key='unused')")
        print("Press Ctrl-C to stop.", flush=True)
        handle.wait()
    except KeyboardInterrupt:
        print("stopping")
    finally:
        handle.stop()
    return 0


__all__ = ["FaultAction", "FaultHook", "HTTPError", "ModelAPI", "RequestInfo", "ServerHandle",
           "add_serve_parser", "error_body", "error_for_exception", "serve_command",
           "start_server"]
