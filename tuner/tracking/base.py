"""The interface the scheduler consults to mirror a tuning job into an experiment tracker.

The scheduler calls these methods from its loop; every one of them returns at once (a tracker
queues the work and does it in its own thread), never raises for a tracker-side problem, and
never changes what the tuning job does. The store stays the record of the tuning job: a
tracker may fall behind or lose its connection, and catches up from the store.

Order of calls: ``start`` once, before the scheduler replays the store; then ``job_started``,
``points`` (each batch of metric points read from a job's log, in order) and ``job_ended`` as
they happen; ``close`` once at the end, with the tuning job's final record, or with None when
the scheduler leaves a tuning job that another process will go on running.
"""

from __future__ import annotations

from collections.abc import Sequence

from tuner.metrics import MetricPoint
from tuner.records import TrainingJob, TuningJob


class Tracker:
    """Mirrors one tuning job into a tracker; the methods here do nothing."""

    def start(self) -> None:
        """The scheduler starts (or resumes) the tuning job."""

    def job_started(self, job: TrainingJob) -> None:
        """A training job was launched."""

    def points(self, job: TrainingJob, points: Sequence[MetricPoint]) -> None:
        """New metric points of a running job, in the order they were read."""

    def job_ended(self, job: TrainingJob) -> None:
        """A training job ended (its final record)."""

    def close(self, record: TuningJob | None) -> None:
        """The scheduler is done: ``record`` is the tuning job's final state, or None when it
        goes on in another process. Waits a bounded time for the tracker to catch up."""
