"""The interface the scheduler consults to stop training jobs early from their streamed values.

A job's intermediate values are the successive matches of the objective regex in its log: the
k-th reported value is step k (1-based). The scheduler calls ``report`` once per step of a
running job, in the order the values arrived, and acts on what it returns: a reason (the job is
then stopped through its launcher) or None (it goes on).

Contract every rule keeps:
- Decisions depend only on the sequence of reports (job, number, configuration, step, value)
  it was given, never on the clock, so replaying the stored points of a tuning job in the order
  they were parsed rebuilds the same state and the same decisions (resume after a crash never
  stops or promotes anything twice).
- ``report`` is called at most once per (job, step) and returns a reason at most once per job;
  ``decided(job)`` gives that reason afterwards and ``decided_at(job)`` the step it was decided
  at (the stopped job's objective is its value there). ``forget(job)`` drops a job's values (a job
  interrupted from outside, whose configuration runs again).
- Values are in the user's direction; rules compare in minimization form.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod

from tuner.space import Config


class StoppingRule(ABC):
    """Decides, step by step, whether a running training job should stop now."""

    def __init__(self, maximize: bool) -> None:
        self.maximize = maximize
        self._decided: dict[str, tuple[str, int]] = {}  # job -> (reason, step)

    def report(self, job: str, number: int, config: Config, step: int, value: float) -> str | None:
        """The reason to stop ``job`` at ``step`` (``value`` reported there), or None."""
        if job in self._decided:
            return None
        loss = -value if self.maximize else value
        if not math.isfinite(loss):
            loss = math.inf
        reason = self._judge(job, number, config, step, loss)
        if reason is not None:
            self._decided[job] = (reason, step)
        return reason

    def decided(self, job: str) -> str | None:
        """The reason ``job`` was (or is to be) stopped, or None."""
        decision = self._decided.get(job)
        return None if decision is None else decision[0]

    def decided_at(self, job: str) -> int | None:
        """The step at which ``job`` was (or is to be) stopped, or None."""
        decision = self._decided.get(job)
        return None if decision is None else decision[1]

    def forget(self, job: str) -> None:
        """Drop what ``job`` reported: it was interrupted from outside and its configuration
        runs again, whose values must not be judged against its own first run's."""
        self._decided.pop(job, None)
        self._forget(job)

    @abstractmethod
    def _forget(self, job: str) -> None:
        """Drop the job's recorded values."""

    @abstractmethod
    def _judge(self, job: str, number: int, config: Config, step: int, loss: float) -> str | None:
        """Record the step and decide (minimization form; non-finite values are ``inf``)."""


def stop_reason(step: int) -> str:
    """The failure reason of a job stopped early at ``step``."""
    return f"early stopping at step {step}"
