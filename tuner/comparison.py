"""Strategy comparisons: one search space and objective, several arms, several seeds.

A comparison spec (YAML) holds everything a tuning job definition holds except the strategy and
its limits, plus ``arms`` (each a name, a strategy with its ``strategy_options`` and
``strategy_config``, ``early_stopping_type`` and its options, ``max_jobs`` and
``max_parallel_jobs``) and ``seeds``. Every arm and seed is an ordinary tuning job named
``<name>-<arm>-s<seed>``, tagged ``comparison``/``arm``/``seed``, run one after the other (so
their times compare). With ``tracking_uri`` they share one MLflow experiment named after the
comparison, each arm and seed a parent run tagged with its arm. Running a comparison again
reuses the arms that have ended and resumes those that were interrupted: by a crash (their
process died) or by Ctrl-C/SIGTERM (ended Stopped "interrupted"; the training jobs stopped then
run again without using up ``max_jobs``). A tuning job of the spec's name that was made from
another spec (another comparison, arm or seed; another strategy, limit, range, objective or
job) is refused before anything runs: reusing it would compare other runs than the spec names.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pydantic
from pydantic import BaseModel, ConfigDict, Field, field_validator

from tuner.definition import NAME_PATTERN, TuningJobDefinition, explain, read_yaml_file
from tuner.errors import NotFoundError, ValidationError
from tuner.names import TUNING_JOB_NAME_LENGTH
from tuner.records import TuningStatus
from tuner.scheduler import SIGNALLED, EventHandler
from tuner.storage import Store
from tuner.tuner import HyperparameterTuner

MAX_RUN_NAME = TUNING_JOB_NAME_LENGTH

SHARED_FIELDS = (
    "objective_metric_name",
    "objective_type",
    "objective_aggregation",
    "hyperparameter_ranges",
    "metric_definitions",
    "job_definition",
    "max_failed_jobs",
    "target_objective_value",
    "max_jobs_without_improvement",
    "min_relative_improvement",
    "tracking_uri",
)


class Arm(BaseModel):
    # strict: true or "4" is no number (it was read as 1 or 4), as in TuningJobDefinition
    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9-]{0,19}$")
    strategy: str
    max_jobs: int | None = Field(None, ge=1)  # left out: a Grid's whole grid (else required)
    max_parallel_jobs: int = Field(1, ge=1)
    strategy_options: dict[str, Any] = Field(default_factory=dict)
    strategy_config: dict[str, Any] = Field(default_factory=dict)
    early_stopping_type: str = "Off"
    early_stopping_options: dict[str, Any] = Field(default_factory=dict)


class ComparisonSpec(BaseModel):
    """See the module docstring; the shared fields are those of ``TuningJobDefinition``."""

    # strict: true or "4" is no number (it was read as 1 or 4), as in TuningJobDefinition
    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)

    name: str = Field(pattern=NAME_PATTERN, max_length=40)
    arms: list[Arm] = Field(min_length=1)
    seeds: list[int] = Field(default_factory=lambda: [0], min_length=1)
    report_dir: str | None = None
    objective_metric_name: str
    objective_type: str = "Maximize"
    objective_aggregation: str = "Last"
    hyperparameter_ranges: dict[str, dict[str, Any]]
    metric_definitions: list[dict[str, Any]]
    job_definition: dict[str, Any]
    max_failed_jobs: int | None = None
    target_objective_value: float | None = None
    max_jobs_without_improvement: int | None = None
    min_relative_improvement: float = 0.0
    tracking_uri: str | None = None

    @field_validator("arms")
    @classmethod
    def _unique_arms(cls, arms: list[Arm]) -> list[Arm]:
        names = [a.name for a in arms]
        for n in names:
            if names.count(n) > 1:
                raise ValueError(f"arm names must be unique, got {n!r} twice")
        return arms

    @field_validator("seeds")
    @classmethod
    def _unique_seeds(cls, seeds: list[int]) -> list[int]:
        if len(set(seeds)) != len(seeds):
            raise ValueError(f"seeds must be distinct, got {seeds}")
        return seeds

    @classmethod
    def parse(cls, data: Any) -> ComparisonSpec:
        if not isinstance(data, dict):
            raise ValidationError(f"a comparison spec must be a mapping, got {data!r:.80}")
        try:
            spec = cls.model_validate(data)
        except pydantic.ValidationError as exc:
            raise ValidationError(
                explain(exc).replace("tuning job definition", "comparison")
            ) from None
        spec.definitions()  # every arm must make a valid tuning job
        return spec

    @classmethod
    def load(cls, path: str | Path) -> ComparisonSpec:
        return cls.parse(read_yaml_file(path, "comparison spec"))

    def run_name(self, arm: str, seed: int) -> str:
        return f"{self.name}-{arm}-s{seed}"

    def definitions(self) -> list[TuningJobDefinition]:
        """One validated tuning job definition per arm and seed, arms first."""
        shared = {f: getattr(self, f) for f in SHARED_FIELDS}
        out = []
        for arm in self.arms:
            for seed in self.seeds:
                run = self.run_name(arm.name, seed)
                if len(run) > MAX_RUN_NAME:
                    raise ValidationError(
                        f"arm {arm.name!r}, seed {seed}: its tuning job name {run!r} has "
                        f"{len(run)} characters, at most {MAX_RUN_NAME} are allowed: shorten "
                        "the comparison's or the arm's name"
                    )
                try:
                    out.append(
                        TuningJobDefinition.parse(
                            {
                                **shared,
                                "name": self.run_name(arm.name, seed),
                                "strategy": arm.strategy,
                                "strategy_options": arm.strategy_options,
                                "strategy_config": arm.strategy_config,
                                "early_stopping_type": arm.early_stopping_type,
                                "early_stopping_options": arm.early_stopping_options,
                                **({} if arm.max_jobs is None else {"max_jobs": arm.max_jobs}),
                                "max_parallel_jobs": arm.max_parallel_jobs,
                                "random_seed": seed,
                                "tags": {
                                    "comparison": self.name,
                                    "arm": arm.name,
                                    "seed": str(seed),
                                },
                            }
                        )
                    )
                except ValidationError as exc:
                    raise ValidationError(f"arm {arm.name!r}, seed {seed}: {exc}") from None
        return out


def run_comparison(
    spec: ComparisonSpec, storage: str | None = None, on_event: EventHandler | None = None
) -> list[str]:
    """Run (or resume, or reuse) every arm and seed; returns the tuning job names."""
    store = Store(storage)
    definitions = spec.definitions()
    for definition in definitions:  # all checked before any job runs
        _check_existing(spec, definition, store)
    names = []
    for definition in definitions:
        name = definition.name or ""
        names.append(name)
        try:
            record = store.get_tuning_job(name)
        except NotFoundError:
            HyperparameterTuner.from_definition(definition, storage=store.url).fit(
                on_event=on_event
            )
            continue
        interrupted = record.status is TuningStatus.STOPPED and record.status_reason == SIGNALLED
        if interrupted or not record.status.terminal:  # resume() reopens an interrupted one
            HyperparameterTuner.attach(name, storage=store.url).resume(on_event=on_event)
    return names


def _check_existing(spec: ComparisonSpec, definition: TuningJobDefinition, store: Store) -> None:
    """Refuse a stored tuning job of ``definition``'s name that another spec made."""
    name = definition.name or ""
    try:
        stored = store.get_tuning_job(name).definition
    except NotFoundError:
        return
    tags = stored.get("tags") or {}
    if tags != (definition.tags or {}):
        raise ValidationError(
            f"comparison {spec.name!r}: tuning job {name} already exists and belongs to "
            f"comparison {tags.get('comparison')!r}, arm {tags.get('arm')!r}, seed "
            f"{tags.get('seed')!r}; give this comparison another name"
        )
    ours, theirs = _comparable(definition.to_json()), _comparable(stored)
    differ = sorted(k for k in ours.keys() | theirs.keys() if ours.get(k) != theirs.get(k))
    if differ:
        raise ValidationError(
            f"comparison {spec.name!r}: tuning job {name} was run from another version of this "
            f"spec ({', '.join(differ)} differ); its results would not be this spec's: restore "
            "the spec or give the comparison another name"
        )


def _comparable(document: dict[str, Any]) -> dict[str, Any]:
    """A stored or new definition as what makes its results: every field but the name and
    the folders (made absolute when it ran), with defaults filled in; job fields by name."""
    try:
        data = TuningJobDefinition.parse(document).to_json()
    except ValidationError:  # written by an older version that no longer parses
        data = dict(document)
    job = dict(data.pop("job_definition", None) or {})
    for volatile in ("working_directory", "output_path"):
        job.pop(volatile, None)
    data.pop("name", None)
    return {**data, **{f"job_definition.{k}": v for k, v in job.items()}}
