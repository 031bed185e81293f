"""The HTTP server: any recitation model over an OpenAI- and Anthropic-compatible API on
127.0.0.1, and the harness that puts it under faults.

* :mod:`.server` — :func:`start_server`, :class:`ServerHandle` (threads, sockets, request
  records);
* :mod:`.protocol` — the wire protocols without HTTP (OpenAI chat / completions, Anthropic
  Messages) translated into model calls and back;
* :mod:`.faults` — what a request looked like and the fault the server answers instead
  (:class:`FaultAction`), for tests and benchmarks;
* :mod:`.chaos` — seeded fault schedules and a whole run under load through the openai backend
  (tests/reliability, benchmarks/bench_faults.py);
* :mod:`.cli` — the ``recitation serve`` command.

The server's API is importable from the package: ``from recitation.serve import
start_server``.
"""

from __future__ import annotations

from recitation.serve.faults import FaultAction, FaultHook, RequestInfo
from recitation.serve.protocol import HTTPError, ModelAPI, error_body, error_for_exception
from recitation.serve.server import LOOPBACK, ServerHandle, start_server

__all__ = [
    "LOOPBACK",
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
