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
lands in :attr:`ServerHandle.completed` when the model's 200 answer is written to the socket
(it is counted just before the write, so a client holding its answer always finds it there;
a write that fails moves it out) — a client that went away first (killed, timed out) is never
counted there but in :attr:`ServerHandle.aborted`. A ``fault_hook`` can answer any request
with an injected fault (:class:`FaultAction`) instead.
"""

from __future__ import annotations

import asyncio
import json
import logging
import select
import socket
import sys
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ParamSpec, TypeVar

from recitation.models.base import Model
from recitation.serve.faults import FaultAction, FaultHook, RequestInfo
from recitation.serve.protocol import HTTPError, ModelAPI, error_body, error_for_exception

log = logging.getLogger("recitation.serve")
P = ParamSpec("P")
T = TypeVar("T")


LOOPBACK = ("127.0.0.1", "localhost", "::1")


# -- the HTTP layer ---------------------------------------------------------------------
def _peer_closed(sock: socket.socket) -> bool:
    """True when the client has closed its end (EOF or reset) — it will read no answer.

    Never blocks. It is called on other threads' connections (:meth:`_Recorder.enter`),
    whose owner may read the bytes that made the socket readable before the peek runs: a
    blocking peek then waited, holding the recorder's lock, until that client gave up
    (every request stalled for the client's timeout, then was sent again). ``poll``, not
    ``select``: ``select`` cannot watch a descriptor numbered 1024 or more."""
    try:
        poller = select.poll()
        poller.register(sock, select.POLLIN | select.POLLPRI)
        if not poller.poll(0):
            return False
        return sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
    except (BlockingIOError, InterruptedError):  # the bytes were read meanwhile: still there
        return False
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
        self.active: set[socket.socket] = set()  # connections with a request under way
        self.max_concurrent = 0

    def enter(self, conn: socket.socket) -> None:
        """A request arrived on ``conn``: the peak of requests under way whose client is
        still connected (a request its client gave up on does not count) is updated."""
        with self.lock:
            alive = sum(1 for c in self.active if not _peer_closed(c))
            self.active.add(conn)
            self.max_concurrent = max(self.max_concurrent, alive + 1)

    def leave(self, conn: socket.socket) -> None:
        with self.lock:
            self.active.discard(conn)

    def new(
        self, method: str, path: str, body: dict[str, Any] | None, headers: Mapping[str, str]
    ) -> RequestInfo:
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

    def move(self, src: list[RequestInfo], dst: list[RequestInfo], info: RequestInfo) -> None:
        if self.keep:
            with self.lock:
                if info in src:
                    src.remove(info)
                dst.append(info)


class _AbandoningExecutor(ThreadPoolExecutor):
    """The serving loop's default executor (where ``asyncio.to_thread`` model calls run).

    Each call runs on a daemon thread of its own, which neither :meth:`ServerHandle.stop`
    nor interpreter exit waits for: a generation under way when Ctrl-C arrives is abandoned
    rather than finished (the standard pool joins its workers at exit, so ``recitation
    serve`` used to wait for every queued generation before it could stop).
    """

    def __init__(self) -> None:
        super().__init__(thread_name_prefix="recitation-serve-model")
        self._running = 0
        self._running_lock = threading.Lock()

    def running(self) -> int:
        """How many submitted calls have not returned yet (abandoned ones included)."""
        with self._running_lock:
            return self._running

    def submit(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        fut: Future[T] = Future()

        def work() -> None:
            try:
                if fut.set_running_or_notify_cancel():
                    fut.set_result(fn(*args, **kwargs))
            except BaseException as e:  # handed to the awaiting coroutine
                fut.set_exception(e)
            finally:
                with self._running_lock:
                    self._running -= 1

        with self._running_lock:
            self._running += 1
        threading.Thread(target=work, name="recitation-serve-model", daemon=True).start()
        return fut

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Nothing to join: the worker threads are daemons, abandoned on stop."""


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(
        self,
        address: tuple[str, int],
        api: ModelAPI,
        recorder: _Recorder,
        fault_hook: FaultHook | None,
    ) -> None:
        super().__init__(address, _Handler)
        self.api = api
        self.recorder = recorder
        self.fault_hook = fault_hook
        self.stopping = threading.Event()

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that vanished (killed, timed out) is logged, not printed as a traceback."""
        err = sys.exc_info()[1]
        if isinstance(err, ConnectionError | TimeoutError):
            log.debug("client %s went away: %s", client_address, err)
            return
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "recitation-serve"
    server: _Server

    def setup(self) -> None:
        super().setup()
        # headers and body go out in two writes: without TCP_NODELAY, Nagle's algorithm and
        # the client's delayed ACK add ~40 ms to a kept-alive connection's every reply
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

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
        recorder = self.server.recorder
        recorder.enter(self.connection)
        try:
            self._handle_request(method)
        finally:
            recorder.leave(self.connection)

    def _handle_request(self, method: str) -> None:
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
            payload = (
                fault.body
                if fault.body is not None
                else error_body(path, status, f"injected fault: HTTP {status}")
            )
            self._send(info, status, payload, fault.headers, counts=False)
            return
        try:
            if bad is not None:
                raise bad
            reply = self._dispatch(method, path, body or {})
            status, payload, extra = 200, json.dumps(reply).encode(), {}
        except Exception as e:  # every failure becomes an error reply
            err = error_for_exception(e)
            status, payload, extra = (
                err.status,
                error_body(path, err.status, err.message, err.kind),
                err.headers,
            )
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

    def _send(
        self,
        info: RequestInfo,
        status: int,
        payload: bytes,
        headers: Mapping[str, str],
        *,
        counts: bool,
    ) -> None:
        recorder = self.server.recorder
        if _peer_closed(self.connection):
            recorder.add(recorder.aborted, info)
            self.close_connection = True
            return
        # Counted before the write, so a client that has its answer never finds it missing
        # from ``completed`` (recording after the write raced the client); a write that fails
        # moves it to ``aborted``.
        if counts:
            recorder.add(recorder.completed, info)
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
            if counts:
                recorder.move(recorder.completed, recorder.aborted, info)
            else:
                recorder.add(recorder.aborted, info)
            self.close_connection = True


class ServerHandle:
    """A running server. ``url`` is the OpenAI ``base_url``; ``root_url`` the Anthropic one."""

    def __init__(
        self,
        server: _Server,
        loop: asyncio.AbstractEventLoop,
        threads: list[threading.Thread],
        executor: _AbandoningExecutor,
    ) -> None:
        self._server = server
        self._loop = loop
        self._executor = executor
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
    def max_concurrent(self) -> int:
        """The most requests under way at once with their clients connected (counted when
        each request arrives)."""
        with self._server.recorder.lock:
            return self._server.recorder.max_concurrent

    @property
    def aborted(self) -> list[RequestInfo]:
        """Requests whose client went away before the answer could be written."""
        with self._server.recorder.lock:
            return list(self._server.recorder.aborted)

    def wait(self) -> None:
        """Block until :meth:`stop` (Ctrl-C raises KeyboardInterrupt here)."""
        while not self._stopped.wait(0.5):
            pass

    @property
    def busy(self) -> int:
        """How many model calls are under way."""
        return self._server.api.busy

    @property
    def model_threads_running(self) -> int:
        """Worker threads still inside a model call (after :meth:`stop`: abandoned ones)."""
        return self._executor.running()

    def stop(self) -> None:
        """Stop promptly: model calls under way are abandoned (their requests get HTTP 503)."""
        if self._stopped.is_set():
            return
        self._server.stopping.set()
        abandoned = self._server.api.abandon_all()
        if abandoned:
            log.info("stopping: abandoned %d model call(s) under way", abandoned)
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


def start_server(
    model: Model,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    fault_hook: FaultHook | None = None,
    record_requests: bool = True,
) -> ServerHandle:
    """Serve ``model`` on ``host:port`` (0: a free port) from background threads.

    The model's coroutines run on one asyncio loop in its own thread; HTTP requests are
    handled on threads of their own, so concurrent requests reach the model concurrently.
    ``record_requests=False`` keeps no request records (for long-running servers).
    """
    loop = asyncio.new_event_loop()
    executor = _AbandoningExecutor()
    loop.set_default_executor(executor)
    server = _Server((host, port), ModelAPI(model, loop), _Recorder(record_requests), fault_hook)
    loop_thread = threading.Thread(
        target=loop.run_forever, name="recitation-serve-loop", daemon=True
    )
    http_thread = threading.Thread(
        target=server.serve_forever,
        kwargs={"poll_interval": 0.05},
        name="recitation-serve-http",
        daemon=True,
    )
    loop_thread.start()
    http_thread.start()
    handle = ServerHandle(server, loop, [http_thread, loop_thread], executor)
    log.info("serving %s/%s at %s", model.backend, model.name, handle.url)
    return handle


__all__ = [
    "FaultAction",
    "FaultHook",
    "HTTPError",
    "ModelAPI",
    "RequestInfo",
    "ServerHandle",
    "error_body",
    "error_for_exception",
    "start_server",
]
