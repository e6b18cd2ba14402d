"""The progress bar of a running tuning job (tqdm, on stderr), shared by the CLI and ``fit``.

One step per ended training job; the postfix shows the best objective so far and the status
of the last job when it did not complete. ``enabled=None`` means: shown when stderr is a
terminal (so logs, pipes and CI stay clean).
"""

from __future__ import annotations

import sys
from typing import Any

from tuner.records import TrainingJob, TrainingStatus, TuningStatus
from tuner.summary import objective_text, stopped_early


def wanted(enabled: bool | None) -> bool:
    """Whether to show a bar: ``enabled`` when given, else whether stderr is a terminal."""
    if enabled is not None:
        return enabled
    return bool(getattr(sys.stderr, "isatty", lambda: False)())


class ProgressBar:
    """Counts ended training jobs of one tuning job; call it as the scheduler's event handler."""

    def __init__(self, total: int, metric: str, maximize: bool, enabled: bool | None) -> None:
        from tqdm import tqdm

        self.metric = metric
        self.sign = 1.0 if maximize else -1.0
        self.best: float | None = None
        self.stopped_early = 0
        self.bar = tqdm(total=total, unit="job", disable=not wanted(enabled), file=sys.stderr)

    def __call__(self, kind: str, job: TrainingJob) -> None:
        if kind != "ended":
            return
        self.bar.update(1)
        value = job.objective if job.status is TrainingStatus.COMPLETED else None
        if value is not None and (self.best is None or self.sign * value > self.sign * self.best):
            self.best = value
        if stopped_early(job):
            self.stopped_early += 1
        shown = None if job.status is TrainingStatus.COMPLETED else job.status.value
        self._postfix(self.best, shown, self.stopped_early)

    def show(self, description: dict[str, Any]) -> None:
        """Follow a tuning job by its ``describe()`` (one run by a service)."""
        counters = description["training_job_status_counters"]
        ended = sum(counters.get(s.value, 0) for s in TrainingStatus if s.terminal)
        if ended > self.bar.n:
            self.bar.update(ended - self.bar.n)
        best = description.get("best_training_job")
        status = description["status"]
        ended_otherwise = status != TuningStatus.COMPLETED.value and TuningStatus(status).terminal
        self._postfix(
            best["objective"] if best else None,
            status if ended_otherwise else None,  # as the in-process bar says Failed or Stopped
            description.get("stopped_early") or 0,
        )

    def _postfix(self, best: float | None, status: str | None, early: int) -> None:
        """``best METRIC=value [status], N stopped early`` beside the bar (what there is)."""
        text = f"best {self.metric}={objective_text(best)}" if best is not None else ""
        text += f" {status}" if status else ""
        text += f", {early} stopped early" if early else ""
        if text:
            self.bar.set_postfix_str(text.strip())

    def close(self) -> None:
        self.bar.close()
