"""One description of a tuning job, shared by the Python API, the CLI and the REST API.

``describe`` and ``training_job_dict`` return plain JSON-able dicts; ``training_job_from_dict``
turns the latter back into a ``TrainingJob`` (how a client of the REST API gets records).
"""

from __future__ import annotations

import math
from dataclasses import asdict
from typing import Any

from tuner.failures import failure_groups
from tuner.records import (
    ObjectiveStatus,
    TrainingJob,
    TrainingStatus,
    TuningJob,
    TuningStatus,
)
from tuner.warm_start import summary as warm_start_summary

OBJECTIVE_DIGITS = 6  # significant digits an objective is shown with, at least
MAX_OBJECTIVE_DIGITS = 10


def objective_text(value: float | None) -> str:
    """An objective as text: the fewest significant digits from ``OBJECTIVE_DIGITS`` up to
    ``MAX_OBJECTIVE_DIGITS`` that read back as the same number (0.9999996 read as 1 at six
    digits, and two close bests as a tie), else ``MAX_OBJECTIVE_DIGITS``; "-" for None."""
    if value is None:
        return "-"
    if not math.isfinite(value):
        return str(value)
    for digits in range(OBJECTIVE_DIGITS, MAX_OBJECTIVE_DIGITS):
        text = f"{value:.{digits}g}"
        if float(text) == value:
            return text
    return f"{value:.{MAX_OBJECTIVE_DIGITS}g}"


def best_of(jobs: list[TrainingJob], maximize: bool) -> TrainingJob | None:
    """The job with the best succeeded objective (the earliest on ties), or None."""
    done = [
        j
        for j in jobs
        if j.objective_status is ObjectiveStatus.SUCCEEDED and j.objective is not None
    ]
    if not done:
        return None
    sign = 1.0 if maximize else -1.0
    return max(done, key=lambda j: (sign * (j.objective or 0.0), -j.number))


INTERRUPTED = "interrupted: its tuner ended while it ran and it could not be re-attached"
# a job that Ctrl-C or SIGTERM to its tuner stopped, once the tuning job is resumed
STOPPED_BY_SIGNAL = "interrupted: Ctrl-C or SIGTERM to its tuner stopped it; it runs again"
NOT_STARTED = "not started: "  # a launcher that did not answer; runs again, budget kept
ENDED_OUTSIDE = "interrupted from outside: "  # its platform ended it; runs again, budget kept


def ran_again(job: TrainingJob) -> bool:
    """A job recorded as lost, ended from outside or never started: its configuration runs
    again and it does not count towards ``max_jobs``."""
    reason = job.failure_reason or ""
    rerun = reason in (INTERRUPTED, STOPPED_BY_SIGNAL)
    return job.status is TrainingStatus.STOPPED and (
        rerun or reason.startswith((NOT_STARTED, ENDED_OUTSIDE))
    )


def stopped_early(job: TrainingJob) -> bool:
    """Whether a stopping rule (median rule, Hyperband rung) stopped the job."""
    return job.status is TrainingStatus.STOPPED and (job.failure_reason or "").startswith(
        "early stopping at step"
    )


def training_job_dict(job: TrainingJob) -> dict[str, Any]:
    data = asdict(job)
    data["status"] = job.status.value
    data["objective_status"] = job.objective_status.value
    data["duration"] = job.duration
    data["queued_seconds"] = job.queued_seconds
    return data


def training_job_from_dict(data: dict[str, Any]) -> TrainingJob:
    fields = {k: v for k, v in data.items() if k not in ("duration", "queued_seconds")}
    fields["status"] = TrainingStatus(fields["status"])
    fields["objective_status"] = ObjectiveStatus(fields["objective_status"])
    return TrainingJob(**fields)


def describe(record: TuningJob, jobs: list[TrainingJob]) -> dict[str, Any]:
    """Status and reason, limits, counters of job and objective states (``stopped_early``: jobs
    a stopping rule ended), the failed jobs' reasons grouped with counts
    (``tuner.failures.failure_groups``), best job, time used, and ``warm_start``: its parents
    and how many observations came from each (None without warm start), and
    ``strategy_state``: what its strategy said of itself after its last ask (``Strategy.describe``:
    e.g. ``restarts``, Hyperband's ``model_level``; None before its first ask)."""
    definition = record.definition
    maximize = definition.get("objective_type", "Maximize") == "Maximize"
    best = best_of(jobs, maximize)
    return {
        "name": record.name,
        "status": record.status.value,
        "status_reason": record.status_reason,
        "failure_reason": record.status_reason if record.status is TuningStatus.FAILED else None,
        "strategy": definition.get("strategy"),
        "early_stopping_type": definition.get("early_stopping_type", "Off"),
        "stopped_early": sum(stopped_early(j) for j in jobs),
        "objective": {
            "metric": definition.get("objective_metric_name"),
            "type": definition.get("objective_type", "Maximize"),
        },
        "limits": {
            "max_jobs": definition.get("max_jobs"),
            "max_parallel_jobs": definition.get("max_parallel_jobs"),
        },
        "training_job_status_counters": {
            s.value: sum(j.status is s for j in jobs) for s in TrainingStatus
        },
        "objective_status_counters": {
            s.value: sum(j.objective_status is s for j in jobs) for s in ObjectiveStatus
        },
        "failure_reasons": failure_groups(jobs),
        "best_training_job": training_job_dict(best) if best else None,
        "consumed_seconds": sum(j.duration or 0.0 for j in jobs),
        "created_at": record.created_at,
        "ended_at": record.ended_at,
        "owner": record.owner,
        "warm_start": warm_start_summary(record.warm_start),
        "strategy_state": record.strategy_state,
        "definition": definition,
    }
