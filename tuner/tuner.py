"""``HyperparameterTuner``: the Python front door, shaped like SageMaker's, running in-process.

    tuner = HyperparameterTuner(
        job_definition={"command": ["python", "train.py"]},
        objective_metric_name="validation-accuracy",
        hyperparameter_ranges={"learning_rate": ContinuousParameter(1e-3, 0.5, "Logarithmic")},
        metric_definitions=[{"Name": "validation-accuracy", "Regex": "accuracy=([0-9.]+)"}],
        max_jobs=20, max_parallel_jobs=2,
    )
    tuner.fit()
    tuner.best_training_job()

Everything is validated in the constructor (``ValidationError`` names the field, the rule and
the value); ``fit`` records the tuning job in the store before anything is launched.
"""

from __future__ import annotations

import os
import secrets
import socket
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tuner.analytics import TuningJobAnalytics
from tuner.definition import JobDefinition, TuningJobDefinition
from tuner.errors import TunerError, ValidationError
from tuner.metrics import MetricDefinition
from tuner.parameters import Parameter
from tuner.records import ObjectiveStatus, TrainingJob, TrainingStatus, TuningJob, TuningStatus
from tuner.scheduler import EventHandler, Scheduler
from tuner.storage import Store

LEASE_SECONDS = 30.0


def default_name(prefix: str = "tuning") -> str:
    return f"{prefix}-{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(2)}"


def process_owner() -> str:
    """A name for this process as the holder of tuning-job leases."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(3)}"


class HyperparameterTuner:
    """Tunes a training command's hyperparameters against a metric read from its log.

    Args:
        job_definition: a ``JobDefinition`` or mapping: ``command`` (argv list),
            ``static_hyperparameters``, ``gpus``/``gpus_per_job``/``jobs_per_gpu``,
            ``max_runtime`` seconds, ``environment``, ``output_path``.
        objective_metric_name: the metric (one of ``metric_definitions``) to optimise.
        hyperparameter_ranges: name -> ContinuousParameter/IntegerParameter/CategoricalParameter.
        metric_definitions: ``[{"Name": ..., "Regex": ...}]``, one capture group each.
        strategy: ``"Bayesian"`` (default), ``"Random"``, ``"TPE"`` or ``"Grid"``.
        objective_type: ``"Maximize"`` or ``"Minimize"``.
        max_jobs / max_parallel_jobs: total and concurrent training jobs.
        random_seed: makes the suggestions repeatable.
        max_failed_jobs: the tuning job fails once this many training jobs failed.
        target_objective_value: stop as soon as a job reaches it.
        max_jobs_without_improvement: stop after this many completed jobs without a new best.
        objective_aggregation: ``"Last"`` reported value (default) or ``"Best"``.
        strategy_options: keyword arguments of the strategy (e.g. ``n_initial_points``).
        storage: SQLAlchemy URL of the store (default ``$TUNER_DATABASE_URL``, else
            ``sqlite:///tuner-runs/tuner.db``).
        name: the tuning job's name (default: generated, unique).
    """

    def __init__(
        self,
        job_definition: JobDefinition | Mapping[str, Any],
        objective_metric_name: str,
        hyperparameter_ranges: Mapping[str, Parameter],
        metric_definitions: Sequence[MetricDefinition | Mapping[str, str]],
        strategy: str = "Bayesian",
        objective_type: str = "Maximize",
        max_jobs: int = 10,
        max_parallel_jobs: int = 1,
        random_seed: int | None = None,
        max_failed_jobs: int | None = None,
        target_objective_value: float | None = None,
        max_jobs_without_improvement: int | None = None,
        objective_aggregation: str = "Last",
        strategy_options: Mapping[str, Any] | None = None,
        storage: str | None = None,
        name: str | None = None,
    ) -> None:
        ranges: dict[str, Any] = {}
        for key, rng in dict(hyperparameter_ranges).items():
            if not hasattr(rng, "to_dict"):
                raise ValidationError(
                    f"hyperparameter_ranges[{key!r}] must be a ContinuousParameter, "
                    f"IntegerParameter or CategoricalParameter, got {rng!r}"
                )
            ranges[key] = rng.to_dict()
        jd = (
            job_definition.model_dump()
            if isinstance(job_definition, JobDefinition)
            else dict(job_definition)
        )
        definition = TuningJobDefinition.parse(
            {
                "name": name,
                "job_definition": jd,
                "objective_metric_name": objective_metric_name,
                "objective_type": objective_type,
                "objective_aggregation": objective_aggregation,
                "hyperparameter_ranges": ranges,
                "metric_definitions": [
                    m.to_dict() if isinstance(m, MetricDefinition) else dict(m)
                    for m in metric_definitions
                ],
                "strategy": strategy,
                "strategy_options": dict(strategy_options or {}),
                "max_jobs": max_jobs,
                "max_parallel_jobs": max_parallel_jobs,
                "max_failed_jobs": max_failed_jobs,
                "random_seed": random_seed,
                "target_objective_value": target_objective_value,
                "max_jobs_without_improvement": max_jobs_without_improvement,
            }
        )
        self._init(definition, Store(storage))

    def _init(self, definition: TuningJobDefinition, store: Store) -> None:
        self.definition = definition
        self.store = store
        self.name: str | None = definition.name
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._error: BaseException | None = None

    @classmethod
    def from_definition(
        cls,
        definition: TuningJobDefinition | Mapping[str, Any],
        storage: str | None = None,
    ) -> HyperparameterTuner:
        """A tuner for a definition document (a parsed YAML file, say)."""
        tuner = cls.__new__(cls)
        tuner._init(
            TuningJobDefinition.parse(
                dict(definition) if isinstance(definition, Mapping) else definition
            ),
            Store(storage),
        )
        return tuner

    @classmethod
    def attach(cls, name: str, storage: str | None = None) -> HyperparameterTuner:
        """The tuner of an existing tuning job in the store (raises ``NotFoundError``)."""
        store = Store(storage)
        record = store.get_tuning_job(name)
        tuner = cls.__new__(cls)
        tuner._init(TuningJobDefinition.parse(record.definition), store)
        tuner.name = name
        return tuner

    # Running

    def fit(self, wait: bool = True, on_event: EventHandler | None = None) -> HyperparameterTuner:
        """Record the tuning job and run it (in a background thread when ``wait=False``)."""
        if self.name is not None and self._exists(self.name):
            raise ValidationError(
                f"tuning job {self.name!r} already exists; attach to it or choose another name"
            )
        self.name = self.name or default_name()
        jd = self.definition.job_definition
        definition = self.definition.model_copy(
            update={
                "name": self.name,
                "job_definition": jd.model_copy(
                    update={
                        "working_directory": str(Path(jd.working_directory or ".").resolve()),
                        "output_path": str(Path(jd.output_path).resolve()),
                    }
                ),
            }
        )
        owner = process_owner()
        self.store.create_tuning_job(self.name, definition.to_json(), owner, LEASE_SECONDS)
        scheduler = Scheduler(
            definition,
            self.name,
            self.store,
            on_event=on_event,
            stop_event=self._stop,
            owner=owner,
            lease_seconds=LEASE_SECONDS,
        )
        if wait:
            scheduler.run()
            return self
        self._thread = threading.Thread(
            target=self._run_in_background,
            args=(scheduler,),
            name=f"tuner-{self.name}",
            daemon=True,
        )
        self._thread.start()
        return self

    def _exists(self, name: str) -> bool:
        try:
            self.store.get_tuning_job(name)
        except TunerError:
            return False
        return True

    def _run_in_background(self, scheduler: Scheduler) -> None:
        try:
            scheduler.run()
        except BaseException as exc:  # reported by wait()
            self._error = exc

    def wait(self, timeout: float | None = None, poll_interval: float = 0.5) -> TuningJob:
        """Block until the tuning job has ended (also one run by another process)."""
        name = self._require_name()
        deadline = None if timeout is None else time.monotonic() + timeout
        if self._thread is not None:
            self._thread.join(timeout)
            if self._error is not None:
                raise self._error
        while True:
            record = self.store.get_tuning_job(name)
            if record.status.terminal:
                return record
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(f"tuning job {name} still {record.status} after {timeout}s")
            time.sleep(poll_interval)

    def stop(self) -> TuningJob:
        """Stop the tuning job: running training jobs are stopped, none is started."""
        name = self._require_name()
        self._stop.set()
        return self.store.request_stop(name)

    # Looking

    def _require_name(self) -> str:
        if self.name is None:
            raise TunerError("this tuner has not been fitted yet: call fit() first")
        return self.name

    def describe(self) -> dict[str, Any]:
        """Status, reason, counters of training-job and objective states, best training job."""
        name = self._require_name()
        record = self.store.get_tuning_job(name)
        jobs = self.store.list_training_jobs(name)
        best = self.best_training_job()
        return {
            "name": name,
            "status": record.status.value,
            "status_reason": record.status_reason,
            "failure_reason": record.status_reason
            if record.status is TuningStatus.FAILED
            else None,
            "strategy": self.definition.strategy,
            "objective": {
                "metric": self.definition.objective_metric_name,
                "type": self.definition.objective_type,
            },
            "limits": {
                "max_jobs": self.definition.max_jobs,
                "max_parallel_jobs": self.definition.max_parallel_jobs,
            },
            "training_job_status_counters": {
                s.value: sum(j.status is s for j in jobs) for s in TrainingStatus
            },
            "objective_status_counters": {
                s.value: sum(j.objective_status is s for j in jobs) for s in ObjectiveStatus
            },
            "best_training_job": _job_summary(best) if best else None,
            "created_at": record.created_at,
            "ended_at": record.ended_at,
        }

    def best_training_job(self) -> TrainingJob | None:
        """The completed training job with the best objective (earliest on ties), or None."""
        name = self._require_name()
        done = [
            j
            for j in self.store.list_training_jobs(name)
            if j.objective_status is ObjectiveStatus.SUCCEEDED and j.objective is not None
        ]
        if not done:
            return None
        sign = 1.0 if self.definition.maximize else -1.0
        return max(done, key=lambda j: (sign * (j.objective or 0.0), -j.number))

    def training_jobs(self) -> list[TrainingJob]:
        return self.store.list_training_jobs(self._require_name())

    def analytics(self) -> TuningJobAnalytics:
        return TuningJobAnalytics(self.store, self._require_name())


def _job_summary(job: TrainingJob) -> dict[str, Any]:
    return {
        "name": job.name,
        "hyperparameters": job.hyperparameters,
        "objective": job.objective,
        "status": job.status.value,
        "duration": job.duration,
    }
