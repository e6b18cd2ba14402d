"""Search strategies behind one ask/tell interface, and the factory that builds them by name.

Strategy modules are imported when a strategy is built, not when this package is: naming and
validating a strategy costs nothing, and the CLI's verbs that run none (``list``, ``describe``,
``report``) do not load scipy, scikit-optimize or Optuna.
"""

from __future__ import annotations

import importlib
import inspect
from typing import Any

from tuner.choices import canonical
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
    known = canonical(name, STRATEGIES)
    if known in STRATEGIES:
        return str(known)
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
    """Build a strategy by name; ``options`` are its keyword arguments.

    Each strategy declares its options as the keyword parameters of its constructor after
    ``seed``; an unknown option, a value that is not a JSON scalar (string, number, boolean,
    null) or a value the strategy refuses raises ``ValidationError`` naming the option, the
    rule and the value. Definitions call this when they are parsed, so what would fail when
    the tuning job starts fails before anything is stored.
    """
    cls = strategy_class(name)
    options = dict(options or {})
    declared = option_names(cls)
    for key, value in options.items():
        if key not in declared:
            raise ValidationError(
                f"strategy_options: {cls.name} takes the options {sorted(declared)}, "
                f"got an unknown option {key!r:.80}"
            )
        if value is not None and not isinstance(value, str | int | float | bool):
            raise ValidationError(
                f"strategy_options.{key} must be a string, number, boolean or null, "
                f"got {type(value).__name__}"
            )
    try:
        return cls(space, maximize, seed, **options)
    except ValidationError as exc:
        raise ValidationError(f"strategy_options for {cls.name}: {exc}") from None
    except (TypeError, ValueError, OverflowError) as exc:
        raise ValidationError(
            f"strategy_options for {cls.name} must be accepted by the strategy, "
            f"got {options!r:.200}: {exc}"
        ) from None


def option_names(cls: type[Strategy]) -> set[str]:
    """The options a strategy declares: its constructor's keyword parameters after ``seed``."""
    skip = {"self", "space", "maximize", "seed"}
    return {
        p.name
        for p in inspect.signature(cls.__init__).parameters.values()
        if p.name not in skip and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    }


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
    "option_names",
    "strategy_class",
    "strategy_name",
]
