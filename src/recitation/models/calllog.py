"""What a managed model needs from the place it records its calls, as protocols.

:class:`~recitation.models.managed.ManagedModel` writes every call to a :class:`CallLog`
(a resumed run answers from it and repeats no call) and, for deterministic calls, to a
:class:`ResponseStore` shared across runs. The run store
(:class:`recitation.runs.store.RunStore`) and the response cache
(:class:`recitation.runs.store.ResponseCache`) implement them; the models never import the
run machinery, so the layers point one way: ``runs`` -> ``models``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True)
class CallRecord:
    """One model call as recorded: its hash, request, response, usage, cost and outcome."""

    key: str
    kind: str
    backend: str
    model: str
    request: dict[str, Any]
    response: dict[str, Any] | None
    input_tokens: int = 0
    output_tokens: int = 0
    latency_s: float = 0.0
    cost_usd: float = 0.0
    source: str = "backend"  # backend | cache | store
    error: str | None = None
    attempts: int = 1


class CallLog(Protocol):
    """A run's record of calls (implemented by ``RunStore``)."""

    def record_call(self, call: CallRecord) -> None:
        """Append one call (successful or failed)."""

    def lookup_call(self, key: str, nth: int = 0) -> dict[str, Any] | None:
        """The response of the ``nth`` successful call with this hash, if any."""


class ResponseStore(Protocol):
    """A cross-run store of deterministic responses (implemented by ``ResponseCache``)."""

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored response for this call hash, if any."""

    def put(self, key: str, kind: str, response: dict[str, Any]) -> None:
        """Store the response of a deterministic call."""
