"""Plain, immutable snapshots of stored tuning and training jobs, and their status values.

Status names follow SageMaker: a tuning job is InProgress, Stopping, Completed, Stopped or
Failed; a training job is Pending (recorded, not started), InProgress, Completed, Failed or
Stopped; its objective is Pending, Succeeded or Failed.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class TuningStatus(StrEnum):
    IN_PROGRESS = "InProgress"
    STOPPING = "Stopping"
    COMPLETED = "Completed"
    STOPPED = "Stopped"
    FAILED = "Failed"

    @property
    def terminal(self) -> bool:
        return self in (TuningStatus.COMPLETED, TuningStatus.STOPPED, TuningStatus.FAILED)


class TrainingStatus(StrEnum):
    PENDING = "Pending"
    IN_PROGRESS = "InProgress"
    COMPLETED = "Completed"
    FAILED = "Failed"
    STOPPED = "Stopped"

    @property
    def terminal(self) -> bool:
        return self in (TrainingStatus.COMPLETED, TrainingStatus.FAILED, TrainingStatus.STOPPED)


class ObjectiveStatus(StrEnum):
    PENDING = "Pending"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"


@dataclass(frozen=True)
class TuningJob:
    name: str
    status: TuningStatus
    status_reason: str | None
    definition: dict[str, Any]
    stop_requested: bool
    created_at: float
    ended_at: float | None
    owner: str | None = None
    lease_expires: float | None = None
    warm_start: dict[str, Any] | None = None  # what it took from its parents (tuner.warm_start)
    strategy_state: dict[str, Any] | None = None  # its strategy's describe(), after its last ask
    pauses: tuple[tuple[float, float], ...] = ()  # (ended, reopened): a Ctrl-C'd job resumed

    def active_seconds(self, until: float) -> float:
        """Seconds from its creation to ``until``, less the pauses before it: how long it had
        run then (a comparison interrupted overnight and resumed did not take the night)."""
        paused = sum(max(0.0, min(end, until) - start) for start, end in self.pauses)
        return until - self.created_at - paused


@dataclass(frozen=True)
class TrainingJob:
    name: str
    tuning_job_name: str
    number: int
    status: TrainingStatus
    objective_status: ObjectiveStatus
    hyperparameters: dict[str, Any]
    objective: float | None
    failure_reason: str | None
    exit_code: int | None
    handle: str | None
    workdir: str | None
    gpus: str | None
    created_at: float
    started_at: float | None  # launched (for a cluster: submitted to its queue)
    ended_at: float | None
    running_at: float | None = None  # its program began running
    artifacts_uri: str | None = None  # where its outputs were uploaded (s3://...)

    @property
    def duration(self) -> float | None:
        """Seconds of training: from when it began running (not queued) to its end."""
        began = self.running_at if self.running_at is not None else self.started_at
        if began is None or self.ended_at is None:
            return None
        return self.ended_at - began

    @property
    def queued_seconds(self) -> float | None:
        """Seconds it waited in a queue between its launch and the start of its program."""
        if self.started_at is None:
            return None
        began = self.running_at if self.running_at is not None else self.ended_at
        return None if began is None else max(0.0, began - self.started_at)
