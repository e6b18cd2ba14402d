"""Search strategies behind one ask/tell interface, and the factory that builds them by name.

Strategy modules are imported when a strategy is built, not when this package is: naming and
validating a strategy costs nothing, and the CLI's verbs that run none (``list``, ``describe``,
``report``) do not load scipy, scikit-optimize or Optuna.
"""

from __future__ import annotations

import importlib
from typing import Any

from tuner.errors import ValidationError
from tuner.space import SearchSpace
from tuner.strategies.base import Strategy

# name -> (module, class): imported on first use.
STRATEGIES: dict[str, tuple[str, str]] = {
    "Bayesian": ("tuner.strategies.bayesian", "BayesianStrategy"),
    "Random": ("tuner.strategies.random_search", "RandomStrategy"),
    "TPE": ("tuner.strategies.tpe", "TPEStrategy"),
    "Grid": ("tuner.strategies.grid", "GridStrategy"),
    "Hyperband": ("tuner.strategies.hyperband", "HyperbandStrategy"),
}


def strategy_name(name: str) -> str:
    """The canonical name of a strategy, matched without regard to case (no import)."""
    for known in STRATEGIES:
        if isinstance(name, str) and known.lower() == name.lower():
            return known
    raise ValidationError(f"strategy must be one of {sorted(STRATEGIES)}, got {name!r}")


def strategy_class(name: str) -> type[Strategy]:
    """The strategy class for a name, matched without regard to case."""
    module, attribute = STRATEGIES[strategy_name(name)]
    cls: type[Strategy] = getattr(importlib.import_module(module), attribute)
    return cls


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


def __getattr__(attribute: str) -> Any:
    """``BayesianStrategy`` and the other classes, imported when first asked for."""
    for module, name in STRATEGIES.values():
        if name == attribute:
            return getattr(importlib.import_module(module), name)
    raise AttributeError(f"module {__name__!r} has no attribute {attribute!r}")


__all__ = [
    "STRATEGIES",
    "BayesianStrategy",
    "GridStrategy",
    "HyperbandStrategy",
    "RandomStrategy",
    "Strategy",
    "TPEStrategy",
    "make_strategy",
    "strategy_class",
    "strategy_name",
]
