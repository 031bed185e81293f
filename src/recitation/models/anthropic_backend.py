"""The ``anthropic`` backend: Claude models through the official ``anthropic`` SDK.

``base_url`` is the server root *without* ``/v1`` (the SDK appends ``/v1/messages``): the
default is Anthropic's API; against ``recitation serve`` use ``http://127.0.0.1:PORT``.

API key
    Read only from the environment variable named by ``api_key_env`` (default
    ``ANTHROPIC_API_KEY``) when the model is built; a missing variable raises
    :class:`~recitation.errors.AuthenticationError` naming it. For a local server that needs no
    key, set the variable to any value or pass ``api_key_env=None``. The key is passed to the
    SDK explicitly (so the SDK consults no other credential source) and never appears in
    :meth:`identity`, ``repr``, logs or our exception messages.

What the Messages API offers, and so what this backend does
    * Chat only: system messages become the ``system`` parameter (several are joined with a
      blank line). A plain-prompt request is sent as a single user message — the model answers
      it as a chat turn, it does not continue the text.
    * ``max_tokens`` and stop sequences (``stop_sequences``).
    * No sampling controls: since API version 2026-10-21 (the one SDK 2.x sends) the API
      rejects ``temperature``, ``top_p`` and ``top_k`` with HTTP 400 even at their defaults,
      and the SDK no longer has them. ``temperature``, ``top_p`` and ``seed`` of a request are
      therefore not sent: the API's own sampling applies, and even a "greedy" request
      (``temperature == 0``) is not guaranteed to be reproducible
      (``capabilities.seeded_sampling`` is false). A warning is logged once per model.
    * No log-probabilities: ``score`` and ``logprobs=True`` raise
      :class:`~recitation.errors.UnsupportedRequest`.
    * The SDK's own retries are off; :class:`~recitation.models.managed.ManagedModel` retries.
"""

from __future__ import annotations

import logging
from typing import Any

from recitation.errors import MalformedResponseError, UnsupportedRequest
from recitation.models._sdk import SDKModel
from recitation.models.base import Capabilities, Generation, GenerationRequest, Usage

log = logging.getLogger(__name__)

DEFAULT_BASE_URL = "https://api.anthropic.com"


def messages_params(model: str, req: GenerationRequest) -> dict[str, Any]:
    """The ``messages.create`` arguments for one request."""
    if req.logprobs:
        raise UnsupportedRequest("the anthropic backend cannot return log-probabilities")
    system: list[str] = []
    turns: list[dict[str, str]] = []
    if req.prompt is not None:
        turns.append({"role": "user", "content": req.prompt})
    for m in req.messages or ():
        if m.role == "system":
            system.append(m.content)
        else:
            turns.append({"role": m.role, "content": m.content})
    params: dict[str, Any] = {"model": model, "max_tokens": req.max_tokens, "messages": turns}
    if system:
        params["system"] = "\n\n".join(system)
    if req.stop:
        params["stop_sequences"] = list(req.stop)
    return params


class AnthropicModel(SDKModel):
    backend = "anthropic"
    sdk_module = "anthropic"
    client_class = "AsyncAnthropic"
    default_base_url = DEFAULT_BASE_URL
    capabilities = Capabilities(
        chat=True, completion=False, logprobs=False, full_distribution=False,
        seeded_sampling=False, reproducible=False,
    )

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key_env: str | None = "ANTHROPIC_API_KEY",
        timeout: float = 60.0,
        max_concurrency: int = 8,
    ) -> None:
        super().__init__(model, base_url=base_url, api_key_env=api_key_env, timeout=timeout,
                         max_concurrency=max_concurrency)
        self._warned_sampling = False
        if self.server.endswith("/v1"):
            log.warning(
                "%s: base_url ends with /v1, but the anthropic SDK appends "
                "/v1/messages itself; use the server root",
                self._where,
            )

    async def _generate_one(self, client: Any, req: GenerationRequest) -> Generation:
        params = messages_params(self.name, req)
        if not self._warned_sampling:
            self._warned_sampling = True
            log.warning(
                "%s: the Messages API takes no temperature, top_p or seed; the "
                "server's own sampling applies to every request",
                self._where,
            )
        reply = await self._call(client.messages.create, **params)
        return self._parse(reply)

    def _parse(self, reply: Any) -> Generation:
        try:
            blocks = reply.content
            if not isinstance(blocks, list):
                raise TypeError(f"content is {type(blocks).__name__}, not a list")
            text = "".join(b.text for b in blocks if getattr(b, "type", None) == "text")
            usage = reply.usage
            n_in = int(getattr(usage, "input_tokens", 0) or 0) if usage is not None else 0
            n_out = int(getattr(usage, "output_tokens", 0) or 0) if usage is not None else 0
        except (AttributeError, TypeError, ValueError) as e:
            raise MalformedResponseError(
                f"{self._where}: reply has an unexpected shape ({type(reply).__name__}: "
                f"{type(e).__name__}: {e})"
            ) from None
        finish = "length" if reply.stop_reason == "max_tokens" else "stop"
        return Generation(text=text, finish_reason=finish, usage=Usage(n_in, n_out))


__all__ = ["AnthropicModel", "messages_params"]
