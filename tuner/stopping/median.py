"""The median stopping rule (SageMaker's ``TrainingJobEarlyStoppingType: Auto``).

A job whose value at step k is worse than the median of the running averages (mean of steps
1..k) of the other jobs that already reported step k is stopped at step k, provided at least
``min_jobs`` such jobs exist and k > ``warmup_steps``.
"""

from __future__ import annotations

import bisect

from tuner.errors import ValidationError
from tuner.space import Config
from tuner.stopping.base import StoppingRule, stop_reason

DEFAULT_MIN_JOBS = 3
DEFAULT_WARMUP_STEPS = 1


class MedianStoppingRule(StoppingRule):
    """See the module docstring."""

    def __init__(
        self,
        maximize: bool,
        min_jobs: int = DEFAULT_MIN_JOBS,
        warmup_steps: int = DEFAULT_WARMUP_STEPS,
    ) -> None:
        super().__init__(maximize)
        if not isinstance(min_jobs, int) or min_jobs < 1:
            raise ValidationError(
                f"early stopping min_jobs must be an integer >= 1, got {min_jobs!r}"
            )
        if not isinstance(warmup_steps, int) or warmup_steps < 0:
            raise ValidationError(
                f"early stopping warmup_steps must be an integer >= 0, got {warmup_steps!r}"
            )
        self.min_jobs = min_jobs
        self.warmup_steps = warmup_steps
        self._sums: dict[str, list[float]] = {}  # job -> cumulative loss sums, index k-1
        self._averages: dict[int, dict[str, float]] = {}  # step -> job -> its running average
        self._ranked: dict[int, list[float]] = {}  # step -> those averages, sorted (the median
        # at each step was a sort of every job's: quadratic over a long tuning job)

    def _judge(self, job: str, number: int, config: Config, step: int, loss: float) -> str | None:
        sums = self._sums.setdefault(job, [])
        if step != len(sums) + 1:  # steps arrive in order; anything else is a replay slip
            return None
        sums.append((sums[-1] if sums else 0.0) + loss)
        others = self._averages.setdefault(step, {})
        ranked = self._ranked.setdefault(step, [])
        stop = step > self.warmup_steps and len(others) >= self.min_jobs and loss > _median(ranked)
        if job in others:  # a job reported again under the same name replaces its average
            _remove(ranked, others[job])
        others[job] = sums[-1] / step
        bisect.insort(ranked, others[job])
        return stop_reason(step) if stop else None

    def _forget(self, job: str) -> None:
        self._sums.pop(job, None)
        for step, averages in self._averages.items():
            if job in averages:
                _remove(self._ranked[step], averages.pop(job))


def _median(ranked: list[float]) -> float:
    """The median of a sorted, non-empty list (as ``statistics.median``)."""
    middle = len(ranked) // 2
    return ranked[middle] if len(ranked) % 2 else (ranked[middle - 1] + ranked[middle]) / 2


def _remove(ranked: list[float], value: float) -> None:
    del ranked[bisect.bisect_left(ranked, value)]
