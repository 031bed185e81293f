"""The wire protocols of ``recitation serve``, without HTTP: OpenAI chat / completions and
the Anthropic Messages API translated into model calls and back.

:class:`ModelAPI` takes a parsed JSON body and returns the reply body, raising
:class:`HTTPError` for what the client got wrong; :func:`error_for_exception` maps errors of
the served model to HTTP statuses; :func:`error_body` writes an error in the API's format.
See :mod:`recitation.serve.server` for what is supported.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import logging
import threading
import time
import uuid
from collections.abc import Coroutine, Mapping
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

log = logging.getLogger("recitation.serve")
T = TypeVar("T")


class HTTPError(Exception):
    """An error reply: HTTP status, message and API error type."""

    def __init__(
        self,
        status: int,
        message: str,
        kind: str = "invalid_request_error",
        headers: Mapping[str, str] | None = None,
    ) -> None:
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


def _sampling(
    body: dict[str, Any], max_tokens: int, stop_field: str = "stop", temperature: float = 1.0
) -> dict[str, Any]:
    if body.get("stream"):
        raise HTTPError(400, "streaming is not supported by recitation serve")
    if _field(body, "n", (int,), 1) != 1:
        raise HTTPError(400, "'n' must be 1")
    top_k = _field(body, "top_k", (int,), None)
    if top_k is not None and top_k < 1:
        raise HTTPError(400, "'top_k' must be a positive integer")
    return dict(
        max_tokens=max_tokens,
        temperature=float(_field(body, "temperature", (int, float), temperature)),
        top_p=float(_field(body, "top_p", (int, float), 1.0)),
        seed=_field(body, "seed", (int,), None),
        stop=_stops(body, stop_field),
        top_k=top_k,
    )


def _content_text(content: Any, where: str) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if not (
                isinstance(part, dict)
                and part.get("type") == "text"
                and isinstance(part.get("text"), str)
            ):
                raise HTTPError(400, f"{where}: only text content parts are supported")
            parts.append(part["text"])
        return "".join(parts)
    raise HTTPError(400, f"{where}: content must be a string or a list of text parts")


_ROLES: dict[str, Role] = {
    "system": "system",
    "developer": "system",
    "user": "user",
    "assistant": "assistant",
}


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
        self._lock = threading.Lock()
        self._inflight: set[concurrent.futures.Future[Any]] = set()
        self._stopping = False

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the model's loop; HTTP 503 once :meth:`abandon_all` was called."""
        with self._lock:
            if self._stopping:
                coro.close()
                raise HTTPError(503, "the server is stopping")
            fut = asyncio.run_coroutine_threadsafe(coro, self.loop)
            self._inflight.add(fut)
        try:
            return fut.result()
        except concurrent.futures.CancelledError as e:
            raise HTTPError(503, "the server stopped before the model answered") from e
        finally:
            with self._lock:
                self._inflight.discard(fut)

    @property
    def busy(self) -> int:
        """How many model calls are under way."""
        with self._lock:
            return len(self._inflight)

    def abandon_all(self) -> int:
        """Refuse new model calls and cancel those under way (their callers get HTTP 503).

        A blocking call already running on a worker thread cannot be interrupted; it is
        abandoned (its result is dropped). Returns how many calls were cancelled.
        """
        with self._lock:
            self._stopping = True
            pending = list(self._inflight)
        for fut in pending:
            fut.cancel()
        return len(pending)

    def generate(self, requests: list[GenerationRequest]) -> list[Generation]:
        return self.run(self.model.generate(requests))

    def models(self) -> dict[str, Any]:
        return {
            "object": "list",
            "data": [
                {"id": self.model.name, "object": "model", "created": 0, "owned_by": "recitation"}
            ],
        }

    def chat_completions(self, body: dict[str, Any]) -> dict[str, Any]:
        limit = body.get("max_completion_tokens", body.get("max_tokens"))
        max_tokens = int(_field({"max_tokens": limit}, "max_tokens", (int,), 128))
        req = _request(
            messages=tuple(_messages(body.get("messages"))),
            logprobs=bool(body.get("logprobs")),
            **_sampling(body, max_tokens),
        )
        gen = self.generate([req])[0]
        logprobs: dict[str, Any] | None = None
        if req.logprobs and gen.token_logprobs is not None:
            logprobs = {
                "content": [
                    {"token": "", "logprob": lp, "bytes": None, "top_logprobs": []}
                    for lp in gen.token_logprobs
                ]
            }
        choice = {
            "index": 0,
            "message": {"role": "assistant", "content": gen.text},
            "finish_reason": _openai_finish(gen),
            "logprobs": logprobs,
        }
        return self._openai_reply(
            "chat.completion", [choice], gen.usage.input_tokens, gen.usage.output_tokens
        )

    def completions(self, body: dict[str, Any]) -> dict[str, Any]:
        prompts = _prompts(body.get("prompt"))
        max_tokens = int(_field(body, "max_tokens", (int,), 16))
        n_logprobs = _field(body, "logprobs", (int,), None)
        echo = bool(body.get("echo"))
        if echo and n_logprobs is not None:
            if max_tokens != 0:
                raise HTTPError(
                    400,
                    "echo with logprobs is supported only with max_tokens 0 "
                    "(prompt log-probabilities)",
                )
            return self._prompt_logprobs(prompts)
        params = _sampling(body, max_tokens)
        reqs = [_request(prompt=p, logprobs=n_logprobs is not None, **params) for p in prompts]
        gens = self.generate(reqs) if max_tokens > 0 or not echo else []
        choices = []
        for i, p in enumerate(prompts):
            gen = gens[i] if gens else Generation(text="", finish_reason="length")
            lp = None
            if gen.token_logprobs is not None:
                lp = {
                    "tokens": None,
                    "token_logprobs": list(gen.token_logprobs),
                    "top_logprobs": None,
                    "text_offset": None,
                }
            choices.append(
                {
                    "index": i,
                    "text": (p if echo else "") + gen.text,
                    "finish_reason": _openai_finish(gen),
                    "logprobs": lp,
                }
            )
        return self._openai_reply(
            "text_completion",
            choices,
            sum(g.usage.input_tokens for g in gens),
            sum(g.usage.output_tokens for g in gens),
        )

    def _prompt_logprobs(self, prompts: list[str]) -> dict[str, Any]:
        if not self.model.capabilities.logprobs:
            raise HTTPError(400, f"model '{self.model.name}' cannot return log-probabilities")
        scores: list[TokenScores] = self.run(self.model.score(prompts))
        choices = [
            {
                "index": i,
                "text": p,
                "finish_reason": "length",
                "logprobs": {
                    "tokens": list(s.tokens),
                    "token_logprobs": [None, *s.logprobs][: len(s.tokens)],
                    "top_logprobs": None,
                    "text_offset": None,
                },
            }
            for i, (p, s) in enumerate(zip(prompts, scores, strict=True))
        ]
        return self._openai_reply(
            "text_completion", choices, sum(s.usage.input_tokens for s in scores), 0
        )

    def _openai_reply(
        self, obj: str, choices: list[dict[str, Any]], n_in: int, n_out: int
    ) -> dict[str, Any]:
        prefix = "chatcmpl" if obj == "chat.completion" else "cmpl"
        return {
            "id": f"{prefix}-{uuid.uuid4().hex[:24]}",
            "object": obj,
            "created": int(time.time()),
            "model": self.model.name,
            "choices": choices,
            "usage": {
                "prompt_tokens": n_in,
                "completion_tokens": n_out,
                "total_tokens": n_in + n_out,
            },
        }

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
        req = _request(
            messages=tuple(msgs), **_sampling(body, max_tokens, "stop_sequences", temperature=0.0)
        )
        gen = self.generate([req])[0]
        return {
            "id": f"msg_{uuid.uuid4().hex[:24]}",
            "type": "message",
            "role": "assistant",
            "model": self.model.name,
            "content": [{"type": "text", "text": gen.text}],
            "stop_reason": "max_tokens" if gen.finish_reason == "length" else "end_turn",
            "stop_sequence": None,
            "usage": {
                "input_tokens": gen.usage.input_tokens,
                "output_tokens": gen.usage.output_tokens,
            },
        }


def _openai_finish(gen: Generation) -> str:
    return "length" if gen.finish_reason == "length" else "stop"


def _prompts(raw: Any) -> list[str]:
    if isinstance(raw, str):
        return [raw]
    if isinstance(raw, list) and raw and all(isinstance(p, str) for p in raw):
        return list(raw)
    raise HTTPError(
        400,
        "'prompt' must be a string or a non-empty list of strings (token ids are not supported)",
    )


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
    kind = kind or {
        400: "invalid_request_error",
        401: "authentication_error",
        404: "not_found_error",
        429: "rate_limit_error",
    }.get(status, "api_error")
    if path.endswith("/messages"):
        return json.dumps({"type": "error", "error": {"type": kind, "message": message}}).encode()
    return json.dumps(
        {"error": {"message": message, "type": kind, "param": None, "code": None}}
    ).encode()


__all__ = ["HTTPError", "ModelAPI", "error_body", "error_for_exception"]
