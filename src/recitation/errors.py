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
        ├── BackendConnectionError  the server could not be reached (retried)
        ├── MalformedResponseError  the reply was not valid JSON / not the expected shape (retried)
        └── UnsupportedRequest      the backend cannot do what was asked (e.g. log-probs)

``BackendError.retryable`` tells the retry layer whether trying again can help.
"""

from __future__ import annotations


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
            f"Install it with: pip install 'recitation[{extra}]'"
        )


class BudgetExceeded(RecitationError):
    """The run's token or dollar budget is used up; the run stops cleanly."""


class BackendError(RecitationError):
    """A model backend failed."""

    retryable: bool = False

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


class BackendConnectionError(BackendError):
    retryable = True


class MalformedResponseError(BackendError):
    retryable = True


class UnsupportedRequest(BackendError):
    retryable = False
