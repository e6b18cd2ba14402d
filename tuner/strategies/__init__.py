"""Search strategies behind one ask/tell interface, and the factory that builds them by name."""

from __future__ import annotations

from typing import Any

from tuner.errors import ValidationError
from tuner.space import SearchSpace
from tuner.strategies.base import Strategy
from tuner.strategies.bayesian import BayesianStrategy
from tuner.strategies.grid import GridStrategy
from tuner.strategies.random_search import RandomStrategy
from tuner.strategies.tpe import TPEStrategy

STRATEGIES: dict[str, type[Strategy]] = {
    cls.name: cls for cls in (BayesianStrategy, RandomStrategy, TPEStrategy, GridStrategy)
}


def strategy_class(name: str) -> type[Strategy]:
    """The strategy class for a name, matched without regard to case."""
    for known, cls in STRATEGIES.items():
        if isinstance(name, str) and known.lower() == name.lower():
            return cls
    raise ValidationError(f"strategy must be one of {sorted(STRATEGIES)}, got {name!r}")


def make_strategy(
    name: str,
    space: SearchSpace,
    maximize: bool = True,
    seed: int | None = None,
    options: dict[str, Any] | None = None,
) -> Strategy:
    """Build a strategy by name; ``options`` are its keyword arguments (validated)."""
    cls = strategy_class(name)
    try:
        return cls(space, maximize, seed, **(options or {}))
    except TypeError as exc:
        raise ValidationError(f"bad strategy_options for {cls.name}: {exc}") from None


__all__ = [
    "STRATEGIES",
    "BayesianStrategy",
    "GridStrategy",
    "RandomStrategy",
    "Strategy",
    "TPEStrategy",
    "make_strategy",
    "strategy_class",
]
