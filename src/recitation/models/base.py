"""The one backend contract every model speaks.

A backend implements two async batch methods:

* ``generate(requests) -> list[Generation]`` — chat or plain completion, greedy
  (``temperature == 0``) or sampled with a seed, ``max_tokens`` and stop sequences.
* ``score(texts) -> list[TokenScores]`` — per-token log-probabilities of each text
  (only where ``capabilities.logprobs`` is true).

and may expose its tokenizer (``tokenizer() -> Tokenizer | None``, where
``capabilities.tokenizer`` is true). :class:`Capabilities` is all a method asks of a backend:
what it can answer, whether it batches, whether it runs here (and so costs nothing). Methods
never look behind the contract (no unwrapping of a managed model, no backend-name tests, no
price tables): each :class:`Generation` and :class:`TokenScores` carries its own cost.

Everything around a backend (response cache, run store, rate limits, retries, budgets,
cost) lives in :mod:`recitation.models.managed` and talks to backends only through this
contract, so any backend — or the scripted one used in unit tests — gets all of it.
"""

from __future__ import annotations

import abc
import hashlib
import json
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from recitation.models.tokenizer import Tokenizer

if TYPE_CHECKING:
    from recitation.models.config import ModelConfig

Role = Literal["system", "user", "assistant"]


@dataclass(frozen=True)
class Message:
    role: Role
    content: str


@dataclass(frozen=True)
class GenerationRequest:
    """One generation call.

    Exactly one of ``messages`` (chat) or ``prompt`` (plain completion) is set.
    ``temperature == 0`` means greedy decoding; sampled calls should carry a ``seed``
    (they are cached and resumed only when they do).
    """

    messages: tuple[Message, ...] | None = None
    prompt: str | None = None
    max_tokens: int = 128
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int | None = None
    stop: tuple[str, ...] = ()
    logprobs: bool = False
    # A JSON schema (as a JSON string, so requests stay hashable) the reply must follow.
    # Backends with structured output enforce it (openai: response_format json_schema);
    # others ignore it, so callers still put the schema in the prompt and parse leniently.
    response_schema: str | None = None
    # Sample among the k likeliest tokens only (SaMIA's top-k 50); None: no such cut. The
    # local backend and OpenAI-compatible servers that take it (vLLM, recitation serve)
    # honour it; OpenAI's and Anthropic's APIs do not.
    top_k: int | None = None

    def __post_init__(self) -> None:
        if (self.messages is None) == (self.prompt is None):
            raise ValueError("GenerationRequest needs exactly one of 'messages' or 'prompt'")
        if self.max_tokens < 0:
            raise ValueError(f"max_tokens must be >= 0, got {self.max_tokens}")
        if self.temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {self.temperature}")

    @staticmethod
    def chat(text: str, *, system: str | None = None, **kw: Any) -> GenerationRequest:
        msgs = ([Message("system", system)] if system else []) + [Message("user", text)]
        return GenerationRequest(messages=tuple(msgs), **kw)

    @property
    def is_chat(self) -> bool:
        return self.messages is not None

    @property
    def text(self) -> str:
        """What the model reads: the prompt, or the messages' contents joined."""
        return self.prompt if self.prompt is not None else \
            "".join(m.content for m in self.messages or ())

    @property
    def deterministic(self) -> bool:
        """Greedy calls, and sampled calls with a seed, give the same answer again."""
        return self.temperature == 0 or self.seed is not None

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["messages"] = [asdict(m) for m in self.messages] if self.messages is not None else None
        d["stop"] = list(self.stop)
        for key in ("response_schema", "top_k"):
            if d[key] is None:
                del d[key]  # keeps the cache keys of calls without them unchanged
        return d

    @staticmethod
    def from_dict(d: dict[str, Any]) -> GenerationRequest:
        d = dict(d)
        if d.get("messages") is not None:
            d["messages"] = tuple(Message(m["role"], m["content"]) for m in d["messages"])
        d["stop"] = tuple(d.get("stop") or ())
        return GenerationRequest(**d)


@dataclass(frozen=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens, self.output_tokens + other.output_tokens
        )

    @property
    def total(self) -> int:
        return self.input_tokens + self.output_tokens


@dataclass(frozen=True)
class Generation:
    text: str
    finish_reason: str = "stop"  # "stop" | "length" | "error"
    usage: Usage = field(default_factory=Usage)
    token_logprobs: tuple[float, ...] | None = None
    cached: bool = False  # served from a cache or the run store, not the backend
    # What the call costs at the price table of the managed model that answered it (0 from a
    # bare backend, and on a backend whose capabilities say ``local``). Replayed calls (run
    # store, cache) carry the price of the call too, though nobody paid for it again. Not
    # part of ``to_dict``: stored responses are price-free, the price is the run's.
    cost_usd: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "finish_reason": self.finish_reason,
            "usage": asdict(self.usage),
            "token_logprobs": list(self.token_logprobs) if self.token_logprobs else None,
        }

    @staticmethod
    def from_dict(d: dict[str, Any], *, cached: bool = False) -> Generation:
        lp = d.get("token_logprobs")
        return Generation(
            text=d["text"],
            finish_reason=d.get("finish_reason", "stop"),
            usage=Usage(**d.get("usage", {})),
            token_logprobs=tuple(lp) if lp else None,
            cached=cached,
        )


@dataclass(frozen=True)
class TokenScores:
    """Per-token log-probabilities of a text under a model.

    ``logprobs[i]`` is log p(tokens[i] | tokens[:i]); the first token has no context and
    is not scored, so ``len(logprobs) == len(tokens) - 1`` aligned with ``tokens[1:]``.
    ``mean_logprob[i]`` / ``std_logprob[i]`` (when the backend can) are the mean and standard
    deviation of log p over the vocabulary under the model's own next-token distribution at
    that position — what Min-K%++ normalises by — and ``top_logprob[i]`` the log p of the
    most likely token there (Gap-K%). ``token_ids`` are the tokens' ids and ``rank[i]`` the
    rank of ``tokens[i + 1]`` in that distribution (1: the likeliest), where the backend
    gives them (the local backend; vLLM's ``prompt_logprobs``).
    """

    tokens: tuple[str, ...]
    logprobs: tuple[float, ...]
    mean_logprob: tuple[float, ...] | None = None
    std_logprob: tuple[float, ...] | None = None
    usage: Usage = field(default_factory=Usage)
    cached: bool = False
    cost_usd: float = 0.0  # as Generation.cost_usd
    top_logprob: tuple[float, ...] | None = None
    token_ids: tuple[int, ...] | None = None
    rank: tuple[int, ...] | None = None

    def to_dict(self) -> dict[str, Any]:
        d = {
            "tokens": list(self.tokens),
            "logprobs": list(self.logprobs),
            "mean_logprob": list(self.mean_logprob) if self.mean_logprob else None,
            "std_logprob": list(self.std_logprob) if self.std_logprob else None,
            "usage": asdict(self.usage),
        }
        for name in ("top_logprob", "token_ids", "rank"):  # only where the backend gives
            if value := getattr(self, name):  # them (stored answers unchanged)
                d[name] = list(value)
        return d

    @staticmethod
    def from_dict(d: dict[str, Any], *, cached: bool = False) -> TokenScores:
        def tup(x: Any) -> tuple[float, ...] | None:
            return tuple(x) if x else None

        return TokenScores(
            tokens=tuple(d["tokens"]),
            logprobs=tuple(d["logprobs"]),
            mean_logprob=tup(d.get("mean_logprob")),
            std_logprob=tup(d.get("std_logprob")),
            usage=Usage(**d.get("usage", {})),
            cached=cached,
            top_logprob=tup(d.get("top_logprob")),
            token_ids=tuple(d["token_ids"]) if d.get("token_ids") else None,
            rank=tuple(d["rank"]) if d.get("rank") else None,
        )


@dataclass(frozen=True)
class Capabilities:
    chat: bool = True
    completion: bool = True
    logprobs: bool = False  # score() works
    full_distribution: bool = False  # score() fills mean_logprob / std_logprob
    seeded_sampling: bool = True
    structured_output: bool = False  # honours GenerationRequest.response_schema
    # Greedy and seeded calls give the same answer again (so the cross-run cache may serve
    # them). False for APIs that ignore sampling settings (Anthropic's current API).
    reproducible: bool = True
    # One generate()/score() call of many requests runs as one batch on the backend (so a
    # managed model sends Limits.batch_size requests per call, not one).
    batching: bool = False
    tokenizer: bool = False  # Model.tokenizer() returns the model's own tokenizer
    # The model runs on this machine: no per-token price, every call costs $0.
    local: bool = False


class Model(abc.ABC):
    """A model backend. Subclasses set ``backend`` and ``name`` and implement the two calls."""

    backend: str = "abstract"
    name: str = "unnamed"
    capabilities: Capabilities = Capabilities()

    @classmethod
    def from_config(cls, cfg: ModelConfig) -> Model:
        """The backend for one model config (the backend registry builds every model
        through this). By default ``cls(cfg.model)``; a backend that needs more of the
        config (an endpoint, a key variable) overrides it."""
        return cls(cfg.model)  # type: ignore[call-arg]

    @abc.abstractmethod
    async def generate(self, requests: list[GenerationRequest]) -> list[Generation]:
        """Answer each request; the result list is aligned with ``requests``."""

    async def score(self, texts: list[str]) -> list[TokenScores]:
        from recitation.errors import UnsupportedRequest

        raise UnsupportedRequest(f"backend '{self.backend}' cannot return log-probabilities")

    def tokenizer(self) -> Tokenizer | None:
        """The model's own tokenizer, or None when the backend exposes none (say so in
        ``capabilities.tokenizer``)."""
        return None

    def answer_identity(self) -> dict[str, Any]:
        """:meth:`identity` with :meth:`answer_code` where there is one: what the response
        cache keys answers by, and the token-signal store its folders."""
        ident = self.identity()
        code = self.answer_code()
        return ident | {"answer_code": code} if code else ident

    def identity(self) -> dict[str, Any]:
        """What distinguishes this model's outputs (goes into every cache key)."""
        return {"backend": self.backend, "model": self.name}

    def answer_code(self) -> str | None:
        """A digest of the code that turns weights into answers, for backends that run the
        model in this process (the local backend's decoding loop): it joins every cache and
        resume key, so answers cached by other decoding code are never reused. ``None`` for
        a served model (its server answers for its own code)."""
        return None

    def provenance(self) -> dict[str, Any]:
        """What a report says answered the run: the identity, plus (where a backend knows
        them) the weights' file and SHA-256. Never secrets."""
        return self.identity()

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        """Release resources (HTTP clients, ...)."""


def request_key(identity: dict[str, Any], kind: str, payload: dict[str, Any]) -> str:
    """A stable hash over backend identity, call kind and every parameter of the call."""
    blob = json.dumps({"id": identity, "kind": kind, "p": payload}, sort_keys=True)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()
