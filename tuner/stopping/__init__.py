"""Early stopping: rules the scheduler consults with each job's streamed objective values.

``early_stopping_type="Auto"`` uses the median stopping rule; the Hyperband strategy brings
its own rung decisions. ``stopping_rule_for`` picks the one a tuning job uses (or None), and
``told_value`` says what a strategy hears of a job that was stopped early.
"""

from __future__ import annotations

import math
from typing import Any

from tuner.stopping.base import StoppingRule, stop_reason
from tuner.stopping.hyperband import HyperbandRungs, bracket_cycle, check_resources
from tuner.stopping.median import MedianStoppingRule

EARLY_STOPPING_TYPES = ("Auto", "Off")


def stopping_rule_for(
    early_stopping_type: str,
    options: dict[str, Any],
    maximize: bool,
    strategy: object,
) -> StoppingRule | None:
    """The rule of a tuning job: the strategy's own rungs (Hyperband), the median rule for
    ``"Auto"`` (``options``: ``min_jobs``, ``warmup_steps``), or None."""
    rungs = getattr(strategy, "rungs", None)
    if isinstance(rungs, StoppingRule):
        return rungs
    if early_stopping_type == "Auto":
        return MedianStoppingRule(maximize, **options)
    return None


def told_value(last: float | None, worst_completed: float | None, maximize: bool) -> float | None:
    """What a strategy is told of a job stopped early: its last value, made no better than the
    worst full-budget result so far, so that a value after 3 epochs is never taken for a good
    final one (None when it reported nothing usable)."""
    if last is None or not math.isfinite(last):
        return None
    if worst_completed is None:
        return last
    return min(last, worst_completed) if maximize else max(last, worst_completed)


__all__ = [
    "EARLY_STOPPING_TYPES",
    "HyperbandRungs",
    "MedianStoppingRule",
    "StoppingRule",
    "bracket_cycle",
    "check_resources",
    "stop_reason",
    "stopping_rule_for",
    "told_value",
]
