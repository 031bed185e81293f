"""The fault-injection harness of :mod:`recitation.serve.server`: what a request looked like
(:class:`RequestInfo`) and what the server does instead of answering it
(:class:`FaultAction`), for the tests and benchmarks that put a real HTTP server under
faults (:mod:`recitation.serve.chaos` seeds them)."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any


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
"""Answers a request with a fault (or ``None``: answer normally)."""
