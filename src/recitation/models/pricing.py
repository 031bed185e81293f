"""Price table for cost accounting (US dollars per million tokens).

Prices change; the defaults below are list prices as published by the providers in 2025 and
are a starting point. Users extend or override them with ``prices:`` in a run config or
``--prices FILE.yaml`` (``model-name: {input: 2.0, output: 8.0}``). A model is matched by
its exact name first, then by the longest table entry its name starts with
(``gpt-4.1-2025-04-14`` -> ``gpt-4.1``). Unknown models cost 0 and are reported as unpriced.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from recitation.errors import ConfigError


@dataclass(frozen=True)
class Price:
    input: float  # USD per 1M input tokens
    output: float  # USD per 1M output tokens

    def cost(self, input_tokens: int, output_tokens: int) -> float:
        return (input_tokens * self.input + output_tokens * self.output) / 1_000_000


DEFAULT_PRICES: dict[str, Price] = {
    "gpt-4.1": Price(2.00, 8.00),
    "gpt-4.1-mini": Price(0.40, 1.60),
    "gpt-4.1-nano": Price(0.10, 0.40),
    "gpt-4o": Price(2.50, 10.00),
    "gpt-4o-mini": Price(0.15, 0.60),
    "o3": Price(2.00, 8.00),
    "o4-mini": Price(1.10, 4.40),
    "deepseek-chat": Price(0.27, 1.10),
    "deepseek-reasoner": Price(0.55, 2.19),
    "claude-3-7-sonnet": Price(3.00, 15.00),
    "claude-sonnet-4": Price(3.00, 15.00),
    "claude-opus-4": Price(15.00, 75.00),
    "claude-3-5-haiku": Price(0.80, 4.00),
    "gemini-2.5-pro": Price(1.25, 10.00),
    "gemini-2.5-flash": Price(0.30, 2.50),
}


class PriceTable:
    def __init__(self, extra: Mapping[str, Price | Mapping[str, float]] | None = None) -> None:
        self._prices: dict[str, Price] = dict(DEFAULT_PRICES)
        for name, p in (extra or {}).items():
            self._prices[name] = p if isinstance(p, Price) else _parse_price(name, p)

    def lookup(self, model: str) -> Price | None:
        if model in self._prices:
            return self._prices[model]
        best = max((k for k in self._prices if model.startswith(k)), key=len, default=None)
        return self._prices[best] if best else None

    def cost(self, model: str, input_tokens: int, output_tokens: int) -> float:
        price = self.lookup(model)
        return price.cost(input_tokens, output_tokens) if price else 0.0


def _parse_price(name: str, p: Mapping[str, float]) -> Price:
    try:
        return Price(float(p["input"]), float(p["output"]))
    except (KeyError, TypeError, ValueError) as e:
        raise ConfigError(
            f"prices.{name}: expected {{input: <usd per 1M>, output: <usd per 1M>}}, got {p!r}"
        ) from e
