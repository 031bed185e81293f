"""The ``openai`` backend: any OpenAI-compatible endpoint through the official ``openai`` SDK.

Works with OpenAI, vLLM, llama.cpp server, Ollama, DeepSeek, OpenRouter, ``recitation serve``
— anything that speaks ``/chat/completions`` and (for plain prompts and scoring)
``/completions``. Set ``base_url`` to the server's API root including ``/v1``
(e.g. ``http://127.0.0.1:8000/v1``); the SDK appends ``/chat/completions``.

API key
    Read only from the environment variable named by ``api_key_env`` (default
    ``OPENAI_API_KEY``) when the model is built; a missing variable raises
    :class:`~recitation.errors.AuthenticationError` naming it. A server on this machine
    (127.0.0.1, localhost) is sent a placeholder unless a variable is named; another server
    that needs no key: set the variable to any value, or ``api_key_env=None`` here. The key
    never appears in :meth:`identity`, ``repr``, logs or our exception messages. A base URL
    without ``http://`` or ``https://`` is refused with the spec to write instead.

Requests
    Chat requests go to ``chat.completions``, plain prompts to the legacy ``completions``
    endpoint; ``temperature``, ``top_p``, ``seed`` (when set), ``max_tokens``, ``stop`` and
    ``logprobs`` are passed through. Chat calls send ``max_tokens`` (what vLLM, llama.cpp and
    most compatible servers read); when a server answers HTTP 400 asking for
    ``max_completion_tokens`` instead (OpenAI's reasoning models), the call is re-sent with
    it, and this model keeps using it. An HTTP 404 is diagnosed once (the server asked which
    models it serves: a base URL lacking ``/v1``, or a model name it does not serve) and
    raised as :class:`~recitation.errors.EndpointError`, which stops the run with the fix
    (:mod:`recitation.models.endpoint`). The SDK's own retries are off (``max_retries=0``):
    :class:`~recitation.models.managed.ManagedModel` retries. Requests of one call run
    concurrently, at most ``max_concurrency`` at a time. Whether seeds make sampling
    reproducible depends on the server.

Scoring
    :meth:`OpenAIModel.score` reads the prompt's token log-probabilities in whichever of two
    forms the server supports, found on the first text and then kept: ``echo=True,
    logprobs=1, max_tokens=0`` (the legacy OpenAI form: vLLM, ``recitation serve``), else
    ``extra_body={"prompt_logprobs": 1}`` (vLLM's own: each prompt token's log-probability
    and rank, and the likeliest token's, so Gap-K% can run too). Only servers that return
    prompt log-probabilities can score (not OpenAI's own chat models): when neither form
    gives them, :class:`~recitation.errors.UnsupportedRequest` says so. No API gives the
    whole distribution at every position (its mean and spread: Min-K%++), so detectors that
    need it are left out for this backend. ``capabilities.logprobs`` is true because the
    backend cannot know in advance.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from recitation.errors import (
    BackendError,
    EndpointError,
    MalformedResponseError,
    UnsupportedRequest,
)
from recitation.models._sdk import SDKModel, gather_bounded
from recitation.models.base import (
    Capabilities,
    Generation,
    GenerationRequest,
    TokenScores,
    Usage,
)
from recitation.models.endpoint import diagnose_not_found

log = logging.getLogger(__name__)

DEFAULT_BASE_URL = "https://api.openai.com/v1"


class OpenAIModel(SDKModel):
    backend = "openai"
    sdk_module = "openai"
    client_class = "AsyncOpenAI"
    default_base_url = DEFAULT_BASE_URL
    capabilities = Capabilities(
        chat=True, completion=True, logprobs=True, full_distribution=False, seeded_sampling=True,
        structured_output=True,
    )

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key_env: str | None = "OPENAI_API_KEY",
        timeout: float = 60.0,
        max_concurrency: int = 8,
    ) -> None:
        super().__init__(model, base_url=base_url, api_key_env=api_key_env, timeout=timeout,
                         max_concurrency=max_concurrency)
        self._chat_limit_param = "max_tokens"
        self._score_form: str | None = None  # "echo" / "prompt_logprobs", once found
        self._not_found: str | None = None  # the diagnosis of an HTTP 404, once made

    async def _call(self, fn: Any, **params: Any) -> Any:
        """One SDK call; an HTTP 404 is diagnosed (:meth:`_diagnose_404`)."""
        try:
            return await super()._call(fn, **params)
        except BackendError as e:
            if e.status != 404 or isinstance(e, EndpointError):
                raise
            raise await self._diagnose_404(e) from None

    async def _diagnose_404(self, err: BackendError) -> BackendError:
        """The 404 as an :class:`~recitation.errors.EndpointError` naming the wrong base URL
        or model name (:func:`~recitation.models.endpoint.diagnose_not_found`, asked once),
        else ``err`` as it was."""
        if self._not_found is None:
            client, _ = self._clients.get()
            self._not_found = await diagnose_not_found(
                lambda base: _served_models(client, base, self.timeout), self.backend,
                self.name, self.server) or ""
        if not self._not_found:
            return err
        return EndpointError(f"{err}; {self._not_found}", status=404)

    # -- generate ---------------------------------------------------------------------
    async def _generate_one(self, client: Any, req: GenerationRequest) -> Generation:
        params: dict[str, Any] = {
            "model": self.name,
            "max_tokens": req.max_tokens,
            "temperature": req.temperature,
            "top_p": req.top_p,
        }
        if req.seed is not None:
            params["seed"] = req.seed
        if req.top_k is not None:  # not OpenAI's parameter: vLLM and recitation serve take it
            params["extra_body"] = {"top_k": req.top_k}
        if req.stop:
            params["stop"] = list(req.stop)
        if req.messages is not None:
            params["messages"] = [{"role": m.role, "content": m.content} for m in req.messages]
            if req.logprobs:
                params["logprobs"] = True
            if req.response_schema is not None:
                params["response_format"] = {"type": "json_schema", "json_schema": {
                    "name": "reply", "schema": json.loads(req.response_schema)}}
            return self._parse(await self._chat(client, params), chat=True)
        params["prompt"] = req.prompt
        if req.logprobs:
            params["logprobs"] = 1
        reply = await self._call(client.completions.create, **params)
        return self._parse(reply, chat=False)

    async def _chat(self, client: Any, params: dict[str, Any]) -> Any:
        """``chat.completions.create``; switches to ``max_completion_tokens`` for good when
        the server rejects ``max_tokens`` (OpenAI's reasoning models do)."""
        if self._chat_limit_param != "max_tokens":
            params[self._chat_limit_param] = params.pop("max_tokens")
        try:
            return await self._call(client.chat.completions.create, **params)
        except BackendError as e:
            if not (
                e.status == 400 and "max_completion_tokens" in str(e) and "max_tokens" in params
            ):
                raise
        log.info("%s rejects max_tokens; sending max_completion_tokens instead", self._where)
        self._chat_limit_param = "max_completion_tokens"
        params["max_completion_tokens"] = params.pop("max_tokens")
        return await self._call(client.chat.completions.create, **params)

    def _parse(self, reply: Any, *, chat: bool) -> Generation:
        try:
            choice = reply.choices[0]
            text = choice.message.content if chat else choice.text
            if text is None and chat:
                text = ""
            if not isinstance(text, str):
                raise TypeError(f"text is {type(text).__name__}")
            lps = _chat_logprobs(choice) if chat else _completion_logprobs(choice)
            finish = "length" if choice.finish_reason == "length" else "stop"
            return Generation(
                text=text, finish_reason=finish, usage=_usage(reply), token_logprobs=lps
            )
        except (AttributeError, IndexError, KeyError, TypeError, ValueError) as e:
            raise self._malformed(reply, e) from None

    def _malformed(self, reply: Any, err: Exception) -> MalformedResponseError:
        shape = type(reply).__name__
        return MalformedResponseError(
            f"{self._where}: reply has an unexpected shape ({shape}: {type(err).__name__}: {err})"
        )

    # -- score ------------------------------------------------------------------------
    async def score(self, texts: list[str]) -> list[TokenScores]:
        client, sem = self._clients.get()
        return await gather_bounded(sem, texts, lambda t: self._score_one(client, t))

    async def _score_one(self, client: Any, text: str) -> TokenScores:
        if self._score_form is not None:
            return await SCORE_FORMS[self._score_form](self, client, text)
        refusals = []
        for name, form in SCORE_FORMS.items():  # the first text finds the server's form
            try:
                out = await form(self, client, text)
            except UnsupportedRequest as e:
                refusals.append(f"{name}: {e}")
                continue
            except BackendError as e:
                if e.status not in (400, 422):
                    raise
                refusals.append(f"{name}: {e}")
                continue
            log.info("%s returns prompt log-probabilities by %s", self._where, name)
            self._score_form = name
            return out
        raise UnsupportedRequest(
            f"{self._where} returned no prompt log-probabilities in either form; score() "
            f"needs a server that returns them (e.g. vLLM or `recitation serve`). "
            + " | ".join(refusals))

    async def _score_echo(self, client: Any, text: str) -> TokenScores:
        reply = await self._call(client.completions.create, model=self.name, prompt=text,
                                 echo=True, logprobs=1, max_tokens=0, temperature=0.0)
        try:
            lp = reply.choices[0].logprobs
        except (AttributeError, IndexError, KeyError, TypeError) as e:
            raise self._malformed(reply, e) from None
        if lp is None or not getattr(lp, "tokens", None) or lp.token_logprobs is None:
            raise UnsupportedRequest("no prompt log-probabilities for echo=True, logprobs=1, "
                                     "max_tokens=0")
        try:
            tokens, values = _prompt_part(text, lp)
            logprobs = tuple(float(v) for v in values[1:])
        except (TypeError, ValueError) as e:
            raise self._malformed(reply, e) from None
        return TokenScores(
            tokens=tokens, logprobs=logprobs, usage=Usage(_usage(reply).input_tokens, 0)
        )

    async def _score_prompt_logprobs(self, client: Any, text: str) -> TokenScores:
        reply = await self._call(client.completions.create, model=self.name, prompt=text,
                                 max_tokens=1, temperature=0.0,
                                 extra_body={"prompt_logprobs": 1})
        try:
            choice = reply.choices[0]
            rows = getattr(choice, "prompt_logprobs", None)
        except (AttributeError, IndexError, KeyError, TypeError) as e:
            raise self._malformed(reply, e) from None
        if not rows:
            raise UnsupportedRequest("no prompt_logprobs in the reply")
        try:
            tokens, gold, top, rank = _ranked_rows(text, rows)
        except (AttributeError, KeyError, TypeError, ValueError) as e:
            raise self._malformed(reply, e) from None
        return TokenScores(tokens=tokens, logprobs=gold, top_logprob=top, rank=rank,
                           usage=Usage(_usage(reply).input_tokens, 0))


SCORE_FORMS = {"echo": OpenAIModel._score_echo,
               "prompt_logprobs": OpenAIModel._score_prompt_logprobs}
"""The forms of prompt log-probabilities :meth:`OpenAIModel.score` tries, in this order."""


def _ranked_rows(text: str, rows: list[Any]) -> tuple[
        tuple[str, ...], tuple[float, ...], tuple[float, ...], tuple[int, ...]]:
    """vLLM's ``prompt_logprobs`` (one row per prompt token, the first ``None``; each row maps
    token ids to ``{logprob, rank, decoded_token}``: the prompt's token and the likeliest,
    one entry when they are the same) -> tokens, their log-probs, the likeliest's, their
    ranks. The first token's text is what the others' texts leave of ``text``."""
    gold, top, names, ranks = [], [], [], []
    for row in rows[1:]:
        entries = [dict(e) for e in row.values()]
        mine = max(entries, key=lambda e: int(e["rank"]))  # the prompt's own token
        best = min(entries, key=lambda e: int(e["rank"]))
        gold.append(float(mine["logprob"]))
        top.append(float(best["logprob"]))
        ranks.append(int(mine["rank"]))
        names.append(str(mine.get("decoded_token") or ""))
    rest = "".join(names)
    first = text[: len(text) - len(rest)] if rest and text.endswith(rest) else ""
    return (first, *names), tuple(gold), tuple(top), tuple(ranks)


async def _served_models(client: Any, base_url: str, timeout: float) -> list[str] | None:
    """The model names ``GET base_url/models`` lists, or None where nothing lists them."""
    try:
        page = await client.with_options(base_url=base_url, timeout=min(timeout, 30.0)
                                         ).models.list()
        return [str(m.id) for m in page.data]
    except Exception:  # any failure (404, no JSON, no list): nothing lists models there
        return None


def _usage(reply: Any) -> Usage:
    usage = getattr(reply, "usage", None)
    if usage is None:
        return Usage()
    return Usage(
        int(getattr(usage, "prompt_tokens", 0) or 0),
        int(getattr(usage, "completion_tokens", 0) or 0),
    )


def _chat_logprobs(choice: Any) -> tuple[float, ...] | None:
    lp = getattr(choice, "logprobs", None)
    content = getattr(lp, "content", None) if lp is not None else None
    if not content:
        return None
    return tuple(float(c.logprob) for c in content)


def _completion_logprobs(choice: Any) -> tuple[float, ...] | None:
    lp = getattr(choice, "logprobs", None)
    values = getattr(lp, "token_logprobs", None) if lp is not None else None
    if not values:
        return None
    return tuple(float(v) for v in values)


def _prompt_part(text: str, lp: Any) -> tuple[tuple[str, ...], list[Any]]:
    """The prompt's tokens and log-probs; drops generated tokens a server may have appended
    (it is told ``max_tokens=0``, but not every server obeys) when ``text_offset`` says so."""
    tokens = [str(t) for t in lp.tokens]
    values = list(lp.token_logprobs)
    offsets = getattr(lp, "text_offset", None)
    if offsets and len(offsets) == len(tokens):
        keep = sum(1 for o in offsets if int(o) < len(text))
        tokens, values = tokens[:keep], values[:keep]
    if len(values) != len(tokens):
        raise ValueError(f"{len(tokens)} tokens but {len(values)} log-probabilities")
    return tuple(tokens), values


__all__ = ["OpenAIModel"]
