"""Response bodies of the REST API (their JSON Schemas are the OpenAPI document's)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel


class Health(BaseModel):
    status: str


class Problem(BaseModel):
    detail: Any


class TuningJobSummary(BaseModel):
    name: str
    status: str
    status_reason: str | None
    strategy: str | None
    created_at: float
    ended_at: float | None


class StepAgreementOut(BaseModel):
    step: int
    jobs: int
    spearman: float | None
    best_kept: float | None


class Fidelity(BaseModel):
    """``tuner.fidelity.report``: how each step ranks the completed jobs as they end."""

    completed_jobs: int
    eta: int
    steps: list[StepAgreementOut]
    suggested_min_resource: int | None
    rule: str


class TuningJobPage(BaseModel):
    items: list[TuningJobSummary]
    limit: int
    offset: int
    next_offset: int | None


class TrainingJobOut(BaseModel):
    name: str
    tuning_job_name: str
    number: int
    status: str
    objective_status: str
    hyperparameters: dict[str, Any]
    objective: float | None
    failure_reason: str | None
    exit_code: int | None
    handle: str | None
    workdir: str | None
    gpus: str | None
    created_at: float
    started_at: float | None
    ended_at: float | None
    duration: float | None
    running_at: float | None = None
    queued_seconds: float | None = None
    artifacts_uri: str | None = None


class Objective(BaseModel):
    metric: str | None
    type: str


class Limits(BaseModel):
    max_jobs: int | None
    max_parallel_jobs: int | None


class FailureGroup(BaseModel):
    """Failed training jobs that share a reason (``tuner.failures.failure_groups``)."""

    reason: str
    count: int
    example: str
    training_jobs: list[str]


class TuningJobDescription(BaseModel):
    name: str
    status: str
    status_reason: str | None
    failure_reason: str | None
    strategy: str | None
    early_stopping_type: str = "Off"
    stopped_early: int = 0
    objective: Objective
    limits: Limits
    training_job_status_counters: dict[str, int]
    objective_status_counters: dict[str, int]
    failure_reasons: list[FailureGroup] = []
    best_training_job: TrainingJobOut | None
    consumed_seconds: float
    created_at: float
    ended_at: float | None
    owner: str | None
    warm_start: dict[str, Any] | None = None
    strategy_state: dict[str, Any] | None = None  # Strategy.describe() after its last ask
    definition: dict[str, Any]


class Report(BaseModel):
    """The comparison report's data (see ``tuner.reports.data``)."""

    generated_at: float
    objective: Objective
    not_ended: list[str] = []  # the tuning jobs that were still running (or stopping)
    hyperparameter_ranges: dict[str, dict[str, Any]]
    arms: list[dict[str, Any]]
    curves: dict[str, list[list[dict[str, Any]]]]
    reach: dict[str, dict[str, dict[str, Any]]]
    top: list[dict[str, Any]]
    points: list[dict[str, Any]]
    importance: list[dict[str, Any]] = []  # per arm, when asked (?importance=true)
    failed_jobs: list[dict[str, Any]] = []
    warm_starts: list[dict[str, Any]] = []
    training_job_count: int = 0
    training_jobs: list[dict[str, Any]]
