"""Warm start: a new tuning job begins from the results of up to five earlier ones (parents).

``warm_start_config = {"parents": [names], "type": "IdenticalDataAndAlgorithm" |
"TransferLearning"}`` is checked with the rest of the definition (``WarmStartConfig``); the
parents are read from the same store when the tuning job is created (``resolve``), and what
was taken from them is stored with the child (``WarmStart.to_json``), so a resumed child sees
exactly the same observations and never reads its parents again.

Rules checked at creation (``ValidationError`` naming parent, field and values; nothing stored):
- every parent exists and has ended (Completed, Stopped or Failed): a parent still InProgress
  or Stopping would hand over results that keep changing;
- both types: the child's objective has the parents' metric name and direction;
- ``IdenticalDataAndAlgorithm``: also the same objective aggregation, static hyperparameters,
  command and image, and the same tuned hyperparameter names (their ranges may be narrowed,
  widened or retyped).

What the child takes (only parents' training jobs whose objective Succeeded):
- ``IdenticalDataAndAlgorithm``: every such job is an exact observation of the child's
  objective. A configuration outside the child's ranges is dropped, not clipped: its value
  was measured at another point, and telling it at the boundary would be a false observation.
  Strategies hear them before their first suggestion (``Strategy.warm_start``): Bayesian and
  TPE model them as their own results (the native Bayesian engine's first model-based
  suggestion then exploits near their best), Random and Grid never suggest them again.
- ``TransferLearning``: results are hints about another (related) problem. The parents'
  configurations are mapped into the child's space: removed parameters are dropped; an added
  parameter takes the parent's static value when it had one (clipped into range), otherwise
  the middle of its range in the scaled space (a categorical: the first value); numeric values
  outside the new range are clipped to it (integers rounded); a categorical value the child no
  longer offers drops the configuration. The best ``TRANSFER_FIRST`` distinct mapped
  configurations (by the parents' objective) are the child's first suggestions: the child
  measures them itself. Every mapped result is also a ``prior`` that a strategy may model
  apart from its own results (the native Bayesian engine: scaled on their own, left out once
  the child has enough results of its own), so nothing of the other problem is taken as
  exact; for a strategy that models no prior (``Strategy.models_prior``: Random, TPE, the
  other Bayesian engines) none is kept, and ``describe`` counts 0 prior observations.

Parents' jobs never count towards the child's ``max_jobs``, ``max_jobs_without_improvement``
or best training job; ``describe`` names the parents and how many observations came from each.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, field_validator

from tuner.choices import canonical
from tuner.errors import NotFoundError, ValidationError
from tuner.names import TUNING_JOB_NAME as NAME_PATTERN
from tuner.parameters import (
    CategoricalParameter,
    ContinuousParameter,
    IntegerParameter,
    Parameter,
    argv_word,
)
from tuner.records import ObjectiveStatus
from tuner.space import Config, SearchSpace
from tuner.strategies import strategy_class

if TYPE_CHECKING:
    from tuner.definition import TuningJobDefinition
    from tuner.storage import Store
    from tuner.strategies import Strategy

IDENTICAL = "IdenticalDataAndAlgorithm"
TRANSFER = "TransferLearning"
WARM_START_TYPES = (IDENTICAL, TRANSFER)
MAX_PARENTS = 5
TRANSFER_FIRST = 3  # parents' best mapped configurations a TransferLearning child runs first


class WarmStartConfig(BaseModel):
    """``parents``: 1 to 5 distinct names of tuning jobs in the same store; ``type``."""

    model_config = ConfigDict(extra="forbid")

    parents: list[str] = Field(..., min_length=1, max_length=MAX_PARENTS)
    type: Literal["IdenticalDataAndAlgorithm", "TransferLearning"]

    @field_validator("type", mode="before")
    @classmethod
    def _type_any_case(cls, value: Any) -> Any:
        """``transferlearning`` is ``TransferLearning``, as other choices of a definition are
        matched without regard to case (the SageMaker request shape keeps SageMaker's case)."""
        return canonical(value, get_args(cls.model_fields["type"].annotation))

    @field_validator("parents")
    @classmethod
    def _distinct_names(cls, value: list[str]) -> list[str]:
        import re

        for name in value:
            if not re.fullmatch(NAME_PATTERN, name):
                raise ValueError(f"parents must be tuning job names ({NAME_PATTERN}), got {name!r}")
        twice = sorted({n for n in value if value.count(n) > 1})
        if twice:
            raise ValueError(f"parents must be distinct, got {twice} more than once")
        return value


@dataclass
class ParentSummary:
    """What one parent gave: its jobs whose objective Succeeded, how many were used, dropped."""

    name: str
    succeeded: int
    used: int
    dropped: int
    best: float | None


@dataclass
class WarmStart:
    """What a child took from its parents, stored with it (JSON) when it is created."""

    type: str
    parents: list[ParentSummary]
    # IdenticalDataAndAlgorithm: (configuration in the child's space, objective) per job.
    observations: list[tuple[Config, float]] = field(default_factory=list)
    # TransferLearning: configurations the child runs first, best first.
    first: list[Config] = field(default_factory=list)
    # TransferLearning: every mapped (configuration, objective), a prior for model-based search.
    prior: list[tuple[Config, float]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "parents": [vars(p) for p in self.parents],
            "observations": [{"hyperparameters": c, "objective": v} for c, v in self.observations],
            "first": self.first,
            "prior": [{"hyperparameters": c, "objective": v} for c, v in self.prior],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> WarmStart:
        return cls(
            type=data["type"],
            parents=[ParentSummary(**p) for p in data["parents"]],
            observations=[(o["hyperparameters"], o["objective"]) for o in data["observations"]],
            first=list(data["first"]),
            prior=[(o["hyperparameters"], o["objective"]) for o in data.get("prior", [])],
        )


def summary(data: dict[str, Any] | None) -> dict[str, Any] | None:
    """The part of a stored warm start that ``describe`` shows: type, parents with their
    counts, and the total of observations (or first suggestions) taken from them."""
    if not data:
        return None
    warm = WarmStart.from_json(data)
    return {
        "type": warm.type,
        "parents": [vars(p) for p in warm.parents],
        "observations": len(warm.observations),
        "first_suggestions": len(warm.first),
        "prior_observations": len(warm.prior),
    }


def prime(strategy: Strategy, data: dict[str, Any] | None) -> None:
    """Hand a stored warm start to a freshly built strategy, before anything else is told."""
    if data:
        warm = WarmStart.from_json(data)
        strategy.warm_start(warm.observations, warm.first, warm.prior)


def resolve(store: Store, definition: TuningJobDefinition) -> WarmStart | None:
    """Read and check the parents of ``definition`` in ``store`` (see the module rules);
    None without ``warm_start_config``. Raises ``ValidationError`` (``NotFoundError`` is
    turned into one: a missing parent is a mistake in the definition)."""
    config = definition.warm_start_config
    if config is None:
        return None
    results: list[ParentResults] = []
    for name in config.parents:
        try:
            record = store.get_tuning_job(name)
        except NotFoundError:
            raise ValidationError(
                f"warm_start_config.parents: every parent must be a tuning job in this store, "
                f"got {name!r}, which is not in {store.shown_url}"
            ) from None
        if not record.status.terminal:
            raise ValidationError(
                f"warm_start_config.parents: a parent must have ended (Completed, Stopped or "
                f"Failed), got {name!r} with status {record.status.value}"
            )
        _check_same(definition, record.definition, name, config.type)
        done = [
            (j.hyperparameters, j.objective)
            for j in store.list_training_jobs(name)
            if j.objective_status is ObjectiveStatus.SUCCEEDED
            and j.objective is not None
            and math.isfinite(j.objective)
        ]
        results.append(ParentResults(name, record.definition, done))
    if not any(r.results for r in results):
        raise ValidationError(
            "warm_start_config.parents: at least one parent needs a training job whose "
            f"objective succeeded, got none in {config.parents}"
        )
    warm = take(config.type, definition.space(), definition.maximize, results)
    if not strategy_class(definition.strategy).models_prior(definition.strategy_arguments()):
        warm.prior = []  # nothing would read it: kept, describe would count it as used
    return warm


@dataclass
class ParentResults:
    """One parent: its name, stored definition, and (configuration, objective) of each of its
    training jobs whose objective succeeded."""

    name: str
    definition: dict[str, Any]
    results: list[tuple[Config, float]]


def take(kind: str, space: SearchSpace, maximize: bool, parents: list[ParentResults]) -> WarmStart:
    """What a child of type ``kind`` over ``space`` takes from checked parents (the module
    docstring says what each type takes); pure, so benchmarks use exactly this."""
    summaries: list[ParentSummary] = []
    observations: list[tuple[Config, float]] = []
    candidates: list[tuple[float, Config]] = []
    sign = -1.0 if maximize else 1.0  # sorts the best first
    for parent in parents:
        used = 0
        for config, value in parent.results:
            if kind == IDENTICAL:
                mapped = _as_child(space, config)
                if mapped is not None:
                    observations.append((mapped, value))
            else:
                mapped = map_configuration(space, config, parent.definition)
                if mapped is not None:
                    candidates.append((sign * value, mapped))
            used += mapped is not None
        values = [v for _, v in parent.results]
        best = (max(values) if maximize else min(values)) if values else None
        summaries.append(ParentSummary(parent.name, len(values), used, len(values) - used, best))
    first: list[Config] = []
    seen: set[tuple[Any, ...]] = set()
    for _, mapped in sorted(candidates, key=lambda c: c[0]):
        if space.key(mapped) not in seen and len(first) < TRANSFER_FIRST:
            seen.add(space.key(mapped))
            first.append(mapped)
    prior = [(c, sign * v) for v, c in candidates]  # sign * sign = 1: the objective again
    return WarmStart(kind, summaries, observations, first, prior)


def _as_child(space: SearchSpace, config: Config) -> Config | None:
    """A parent's configuration as the child's ranges hold it, or None when one of them cannot:
    a range retyped between integer and continuous keeps its values (2 and 2.0 are one
    configuration; 2.5 is no integer configuration)."""
    mapped: Config = {}
    for name, rng in space:
        if name not in config:
            return None
        value = config[name]
        if isinstance(rng, IntegerParameter) and isinstance(value, float) and value.is_integer():
            value = int(value)
        elif isinstance(rng, ContinuousParameter) and type(value) is int:
            value = float(value)
        if not rng.contains(value):
            return None
        mapped[name] = value
    return mapped


def _check_same(child: TuningJobDefinition, parent: dict[str, Any], name: str, kind: str) -> None:
    """Refuse a parent whose definition differs where ``kind`` needs it to be the same."""
    jd = child.job_definition
    parent_jd = parent.get("job_definition") or {}
    parent_static = parent_jd.get("static_hyperparameters") or {}
    checks: list[tuple[str, Any, Any]] = [
        ("objective_metric_name", child.objective_metric_name, parent.get("objective_metric_name")),
        ("objective_type", child.objective_type, parent.get("objective_type", "Maximize")),
    ]
    if kind == IDENTICAL:
        checks += [
            (
                "objective_aggregation",
                child.objective_aggregation,
                parent.get("objective_aggregation", "Last"),
            ),
            (  # as the training command receives them: SageMaker's "5" is YAML's 5
                "job_definition.static_hyperparameters",
                {k: argv_word(v) for k, v in jd.static_hyperparameters.items()},
                {k: argv_word(v) for k, v in parent_static.items()},
            ),
            ("job_definition.command", jd.command, parent_jd.get("command")),
            ("job_definition.image", jd.image, parent_jd.get("image")),
            (
                "tuned hyperparameters",
                sorted(child.hyperparameter_ranges),
                sorted(parent.get("hyperparameter_ranges") or {}),
            ),
        ]
    for what, mine, theirs in checks:
        if mine != theirs:
            objective = what in ("objective_metric_name", "objective_type")
            hint = "" if objective else " (TransferLearning allows that)"
            raise ValidationError(
                f"warm_start_config: {kind} needs the same {what} as parent {name!r}{hint}, "
                f"got {mine!r:.200} here and {theirs!r:.200} in {name!r}"
            )


def map_configuration(space: SearchSpace, config: Config, parent: dict[str, Any]) -> Config | None:
    """A parent's configuration in the child's space for TransferLearning (see the module
    docstring), or None when a categorical value has no counterpart."""
    static = (parent.get("job_definition") or {}).get("static_hyperparameters") or {}
    out: Config = {}
    for name, rng in space:
        if name in config:
            value = _fit(rng, config[name])
        elif name in static:
            value = _fit(rng, static[name])
            if value is None:
                value = _default(rng)
        else:
            value = _default(rng)
        if value is None:
            return None
        out[name] = value
    return out


def _default(rng: Parameter) -> Any:
    """The value an added parameter takes: the middle of its scaled range, or the first
    categorical value."""
    if isinstance(rng, CategoricalParameter):
        return rng.values[0]
    return rng.from_unit(0.5)


def _fit(rng: Parameter, value: Any) -> Any:
    """``value`` in ``rng``: numbers clipped (integers rounded), categoricals as they are;
    None when it cannot be expressed there."""
    if isinstance(rng, CategoricalParameter):
        return value if rng.contains(value) else None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    if isinstance(value, bool) or not math.isfinite(number):
        return None
    if isinstance(rng, IntegerParameter):
        return int(min(rng.max_value, max(rng.min_value, round(number))))
    assert isinstance(rng, ContinuousParameter)
    return min(rng.max_value, max(rng.min_value, number))


__all__ = [
    "IDENTICAL",
    "MAX_PARENTS",
    "TRANSFER",
    "TRANSFER_FIRST",
    "WARM_START_TYPES",
    "ParentResults",
    "ParentSummary",
    "WarmStart",
    "WarmStartConfig",
    "map_configuration",
    "prime",
    "resolve",
    "summary",
    "take",
]
