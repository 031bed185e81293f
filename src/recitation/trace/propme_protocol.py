"""How PROPME's prompts reach the target and what of its reply is traced (the ``propme``
job, :mod:`recitation.trace.propme_job`).

The authors (N-essuno/PropMe, ``memorization_experiment/generation/generate_vllm.py``, run by
``run_generations_all.sh`` for the generic, specific and prefix sets alike) send every prompt
of every set as a plain completion to a vLLM server's ``/v1/completions`` (no chat template;
their models are base models), the prompt's text as it is in the prompt file, and keep
``completion.strip()`` (whitespace cut at both ends; an empty completion is kept) as the
text SimpleTrace traces (``03_tracing/data_loading.py``: the ``completion`` field).

``definitions="propme"`` (the default) does the same: each set as a plain completion to every
target whose backend offers one (``Capabilities.completion``), the reply stripped before it is
traced. A backend with chat only (e.g. Anthropic's API) cannot follow that protocol: its
generic and specific prompts go as the user's message and its prefixes with the copy-exactly
request, and the report says so. ``definitions="recitation"`` keeps ours: generic and
specific as chat to a chat-capable target (the way such a model is used), prefixes as
completions where the backend has them, and the reply traced as the model wrote it
(unstripped: leading whitespace is part of a continuation's text, and on a token-level index
it decides how the first word is tokenized). ``mode="chat"`` or ``"completion"`` forces one
mode for every set under either definitions.

Each record says what was sent (``sent_as``: ``completion`` or ``chat``), whether the reply
was stripped (``stripped``) and the reply as received (``raw_generation``); ``generation``
is the traced text.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

from recitation.models.base import Capabilities, GenerationRequest
from recitation.prompts import copy_exactly

SentAs = Literal["completion", "chat"]
Mode = Literal["auto", "chat", "completion"]
NON_ADVERSARIAL = ("generic", "specific")


def sent_as(kind: str, caps: Capabilities, mode: Mode, definitions: str) -> SentAs:
    """How a prompt of set ``kind`` is sent: ``mode`` when it names one; under ``propme``
    a plain completion wherever the backend offers it (the authors'); under ``recitation``
    prefixes as completions and the generic and specific prompts as chat where the backend
    offers each (ours)."""
    if mode != "auto":
        return mode
    if definitions == "propme" or kind == "prefix":
        return "completion" if caps.completion else "chat"
    return "chat" if caps.chat else "completion"


def propme_request(kind: str, prompt: str, how: SentAs, max_new_tokens: int
                   ) -> GenerationRequest:
    """The request for one prompt: the prompt's text as it is (completion), or as the user's
    message (generic, specific) or inside the copy-exactly request (prefix) over chat."""
    kw: dict[str, Any] = {"max_tokens": max_new_tokens, "temperature": 0.0}
    if how == "completion":
        return GenerationRequest(prompt=prompt, **kw)
    return GenerationRequest.chat(copy_exactly(prompt) if kind == "prefix" else prompt, **kw)


def strips(definitions: str) -> bool:
    """Whether the reply is stripped before it is traced (the authors' ``.strip()``)."""
    return definitions == "propme"


def traced_text(reply: str, definitions: str) -> str:
    """What SimpleTrace traces of a reply: ``reply.strip()`` under ``propme``, else the
    reply as the model wrote it."""
    return reply.strip() if strips(definitions) else reply


def protocol(records: Iterable[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """Per set, how many prompts went as completions and as chat, and how many replies were
    stripped (records stored before these fields existed are not counted; a sampled
    prompt counts once, by its first sample)."""
    out: dict[str, dict[str, int]] = {}
    for r in records:
        if "sent_as" not in r or r.get("sample"):
            continue
        c = out.setdefault(r["set"], {"completion": 0, "chat": 0, "stripped": 0})
        c[r["sent_as"]] += 1
        c["stripped"] += int(bool(r.get("stripped")))
    return out


def protocol_notes(counts: dict[str, dict[str, int]], definitions: str, mode: Mode
                   ) -> list[str]:
    """What the summary says about the protocol: under ``propme``, every set sent any other
    way than as a plain completion (the authors' way could not be, or was not, followed);
    under ``recitation``, that the protocol is ours."""
    chat = {s: c["chat"] for s, c in counts.items() if c["chat"]}
    if definitions != "propme":
        if not any(c["chat"] for s, c in counts.items() if s in NON_ADVERSARIAL):
            return []
        return ["ours (--definitions recitation): generic and specific prompts sent as chat "
                "and replies traced unstripped; the authors send every set as a plain "
                "completion and trace the stripped reply (--definitions propme)"]
    if not chat:
        return []
    why = ("--mode chat was asked" if mode == "chat" else
           "the target's backend offers no plain completion (chat only)")
    sent = ", ".join(f"{n} {s}" for s, n in chat.items())
    return [f"not the authors' protocol: they send every set as a plain completion (no chat "
            f"template; generate_vllm.py, /v1/completions) to every model, but {why}: "
            f"{sent} prompt(s) sent as chat instead (generic and specific as the user's "
            "message, prefixes inside the copy-exactly request); replies still traced "
            "stripped"]
