"""What is wrong with an API model's endpoint, said with the fix.

* :func:`check_base_url`: a base URL without ``http://`` or ``https://``
  (``openai:NAME@127.0.0.1:8011``) is refused before anything is sent, with the spec to
  write instead; without this check such a URL reads as a remote server and asks for a key.
* :func:`diagnose_not_found`: an OpenAI-compatible server answered HTTP 404. The server is
  asked which models it serves (``GET BASE/models``, then ``GET BASE/v1/models`` when the
  base lacks ``/v1``), and the answer names the mistake: a base URL that lacks ``/v1``, or a
  model name the server does not serve (with the names it serves).
* :func:`timeout_message`: a request that timed out on a server on this machine (not sent
  again: the server is still computing it), with the options that give it more time.
"""

from __future__ import annotations

import difflib
from collections.abc import Awaitable, Callable, Sequence
from urllib.parse import urlsplit

from recitation.errors import ConfigError

ListModels = Callable[[str], Awaitable[list[str] | None]]
"""The model names a base URL's ``GET /models`` lists, or None where it lists none."""

SHOWN = 8
"""Served model names listed in a diagnosis at most."""


def check_base_url(backend: str, model: str, base_url: str | None) -> None:
    """A ConfigError, with the spec to write, unless ``base_url`` is an http(s) URL."""
    if base_url is None:
        return
    parts = urlsplit(base_url)
    if parts.scheme in ("http", "https") and parts.netloc:
        return
    bare = base_url.split("://", 1)[-1]
    fixed = f"http://{bare.rstrip('/')}"
    if backend == "openai" and not urlsplit(fixed).path.strip("/"):
        fixed += "/v1"
    raise ConfigError(f"model '{backend}:{model}@{base_url}': the endpoint '{base_url}' is "
                      f"not an http:// or https:// URL; write the model as "
                      f"{backend}:{model}@{fixed}")


def _names(served: Sequence[str]) -> str:
    more = f" and {len(served) - SHOWN} more" if len(served) > SHOWN else ""
    return ", ".join(f"'{n}'" for n in served[:SHOWN]) + more


def _closest(model: str, served: Sequence[str]) -> str:
    close = difflib.get_close_matches(model, list(served), n=1, cutoff=0.0)
    return close[0] if close else served[0]


async def diagnose_not_found(list_models: ListModels, backend: str, model: str,
                             base_url: str) -> str | None:
    """Why an OpenAI-compatible server at ``base_url`` answered HTTP 404 to a request for
    ``model``, with the spec to write; None when the server lists ``model`` (the 404 has
    another cause) or cannot be asked."""
    base = base_url.rstrip("/")
    served = await list_models(base)
    if served is not None:
        if model in served:
            return None
        if not served:
            return f"the server at {base} serves no model (GET {base}/models lists none)"
        return (f"the server at {base} serves no model named '{model}'; it serves "
                f"{_names(served)}: write the model as {backend}:{_closest(model, served)}"
                f"@{base}")
    alt = f"{base}/v1"
    if not base.endswith("/v1") and (served := await list_models(alt)) is not None:
        name = model if model in served or not served else _closest(model, served)
        also = ("" if name == model else
                f"; and it serves no model named '{model}' (it serves {_names(served)})")
        return (f"the base URL {base} lacks /v1 (the server's API is at {alt}){also}: "
                f"write the model as {backend}:{name}@{alt}")
    return (f"nothing at {base} lists models (GET {base}/models"
            + ("" if base.endswith("/v1") else f", {alt}/models") + "): is it the API "
            "root of an OpenAI-compatible server (e.g. http://127.0.0.1:8000/v1)?")


def timeout_message(where: str, timeout: float) -> str:
    """A request to a server on this machine that got no answer in ``timeout`` seconds."""
    return (f"{where}: no answer within {timeout:g} s. A server on this machine keeps "
            f"computing a request after its client gives up, so it is not sent again (it "
            f"would only queue behind itself); give requests more time: recitation audit "
            f"--timeout SECONDS (or fewer at once: --concurrency N), recitation detect or "
            f"extract --timeout SECONDS, or the model's timeout in a run config")
