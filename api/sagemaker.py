"""SageMaker's ``CreateHyperParameterTuningJob`` request shape, turned into our definition.

The parts that apply are read: ``HyperParameterTuningJobConfig`` (``Strategy``,
``HyperParameterTuningJobObjective``, ``ResourceLimits`` (``MaxRuntimeInSeconds`` is
``max_tuning_runtime``), ``ParameterRanges``, ``RandomSeed``,
``TuningJobCompletionCriteria``, ``TrainingJobEarlyStoppingType``, ``StrategyConfig`` with
``HyperbandStrategyConfig``'s ``MinResource``/``MaxResource``) and ``TrainingJobDefinition``
(``AlgorithmSpecification`` with ``TrainingImage`` or ``ContainerEntrypoint``/
``ContainerArguments``, and ``MetricDefinitions``; ``StaticHyperParameters``;
``StoppingCondition.MaxRuntimeInSeconds``), and ``WarmStartConfig``
(``ParentHyperParameterTuningJobs[].HyperParameterTuningJobName``, ``WarmStartType``).
SageMaker sends range bounds as strings; they are read as numbers. Anything else in the request
(roles, VPC, S3 channels) is ignored. A missing or malformed part raises ``ValidationError``
naming it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from tuner.errors import ValidationError

SCALING = {"Auto", "Linear", "Logarithmic", "ReverseLogarithmic"}
# Static hyperparameters SageMaker reads Hyperband's resource from, in its order.
RESOURCE_KEYS = ("epochs", "numepochs", "n-epochs", "n_epochs", "num_epochs")


def is_sagemaker_request(body: Mapping[str, Any]) -> bool:
    return "HyperParameterTuningJobConfig" in body or "TrainingJobDefinition" in body


def _get(data: Any, path: str) -> Any:
    """The value at a dotted path of the request, or a ValidationError naming the path."""
    node = data
    for part in path.split("."):
        if not isinstance(node, Mapping) or part not in node:
            raise ValidationError(f"{path} is required in a SageMaker tuning job request")
        node = node[part]
    return node


def _number(value: Any, where: str, kind: type = float) -> Any:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValidationError(f"{where} must be a number, got {value!r}") from None
    except OverflowError:  # an integer beyond a float's range
        raise ValidationError(f"{where} must be a finite number, got {value!r:.80}") from None
    if kind is int and math.isfinite(number) and not number.is_integer():
        raise ValidationError(f"{where} must be an integer, got {value!r}")
    try:
        return int(number) if kind is int and number.is_integer() else kind(value)
    except (TypeError, ValueError):
        raise ValidationError(f"{where} must be a number, got {value!r}") from None
    except OverflowError:  # beyond a float's range (about 1.8e308), or inf as an integer
        raise ValidationError(f"{where} must be a finite number, got {value!r:.80}") from None


def _ranges(ranges: Any) -> dict[str, dict[str, Any]]:
    if not isinstance(ranges, Mapping):
        raise ValidationError(f"ParameterRanges must be an object, got {ranges!r}")
    out: dict[str, dict[str, Any]] = {}
    kinds = (
        ("ContinuousParameterRanges", "continuous", float),
        ("IntegerParameterRanges", "integer", int),
    )
    for key, kind, cast in kinds:
        items = ranges.get(key) or []
        if not isinstance(items, list):
            raise ValidationError(f"ParameterRanges.{key} must be a list, got {items!r:.100}")
        for i, item in enumerate(items):
            where = f"ParameterRanges.{key}[{i}]"
            name = _get(item, "Name") if isinstance(item, Mapping) else None
            if not isinstance(name, str):
                raise ValidationError(f"{where}.Name must be a string, got {name!r}")
            if not isinstance(item.get("ScalingType", "Auto"), str):
                raise ValidationError(f"{where}.ScalingType must be a string")
            _unique(out, name, where)
            out[name] = {
                "type": kind,
                "min_value": _number(_get(item, "MinValue"), f"{where}.MinValue", cast),
                "max_value": _number(_get(item, "MaxValue"), f"{where}.MaxValue", cast),
                "scaling_type": item.get("ScalingType", "Auto"),
            }
    categorical = ranges.get("CategoricalParameterRanges") or []
    if not isinstance(categorical, list):
        raise ValidationError(
            f"ParameterRanges.CategoricalParameterRanges must be a list, got {categorical!r:.100}"
        )
    for i, item in enumerate(categorical):
        where = f"ParameterRanges.CategoricalParameterRanges[{i}]"
        name = _get(item, "Name") if isinstance(item, Mapping) else None
        if not isinstance(name, str):
            raise ValidationError(f"{where}.Name must be a string, got {name!r}")
        _unique(out, name, where)
        out[name] = {"type": "categorical", "values": _get(item, "Values")}
    return out


def _unique(ranges: dict[str, dict[str, Any]], name: str, where: str) -> None:
    """Refuse a second range of one name (the last one silently won)."""
    if name in ranges:
        raise ValidationError(
            f"{where}.Name: each hyperparameter has one range, got a second range for {name!r}"
        )


def _object(data: Any, path: str, required: bool = True) -> Mapping[str, Any]:
    """The object at a dotted path ({} when optional and absent), or a ValidationError."""
    try:
        value = _get(data, path)
    except ValidationError:
        if required:
            raise
        return {}
    if value is None and not required:
        return {}
    if not isinstance(value, Mapping):
        raise ValidationError(f"{path} must be an object, got {value!r:.100}")
    return value


def from_sagemaker(body: Mapping[str, Any]) -> dict[str, Any]:
    """Our tuning job definition (a mapping, not yet validated) for a SageMaker request."""
    config = _object(body, "HyperParameterTuningJobConfig")
    limits = _object(body, "HyperParameterTuningJobConfig.ResourceLimits")
    objective = _object(body, "HyperParameterTuningJobConfig.HyperParameterTuningJobObjective")
    ranges = _object(body, "HyperParameterTuningJobConfig.ParameterRanges")
    criteria = _object(body, "HyperParameterTuningJobConfig.TuningJobCompletionCriteria", False)
    training = _object(body, "TrainingJobDefinition")
    algorithm = _object(body, "TrainingJobDefinition.AlgorithmSpecification")
    stopping = _object(body, "TrainingJobDefinition.StoppingCondition", False)
    not_improving = _object(criteria, "BestObjectiveNotImproving", False)

    job: dict[str, Any] = {"static_hyperparameters": training.get("StaticHyperParameters") or {}}
    entrypoint = algorithm.get("ContainerEntrypoint")
    if entrypoint:
        if not isinstance(entrypoint, list):
            raise ValidationError(f"ContainerEntrypoint must be a list, got {entrypoint!r:.100}")
        arguments = algorithm.get("ContainerArguments") or []
        if not isinstance(arguments, list):
            raise ValidationError(f"ContainerArguments must be a list, got {arguments!r:.100}")
        job["command"] = entrypoint + arguments
    else:
        job["image"] = _get(body, "TrainingJobDefinition.AlgorithmSpecification.TrainingImage")
    if stopping.get("MaxRuntimeInSeconds") is not None:
        job["max_runtime"] = stopping["MaxRuntimeInSeconds"]
    definition: dict[str, Any] = {
        "name": body.get("HyperParameterTuningJobName"),
        "strategy": config.get("Strategy", "Bayesian"),
        "objective_type": objective.get("Type"),
        "objective_metric_name": objective.get("MetricName"),
        "metric_definitions": algorithm.get("MetricDefinitions") or [],
        "hyperparameter_ranges": _ranges(ranges),
        "max_jobs": limits.get("MaxNumberOfTrainingJobs"),
        "max_parallel_jobs": limits.get("MaxParallelTrainingJobs", 1),
        "job_definition": job,
    }
    if "TrainingJobEarlyStoppingType" in config:
        definition["early_stopping_type"] = config["TrainingJobEarlyStoppingType"]
    hyperband = _object(config, "StrategyConfig.HyperbandStrategyConfig", False)
    if hyperband:
        definition["strategy_config"] = _hyperband(hyperband, job["static_hyperparameters"])
    if limits.get("MaxRuntimeInSeconds") is not None:
        definition["max_tuning_runtime"] = limits["MaxRuntimeInSeconds"]
    if "RandomSeed" in config:
        definition["random_seed"] = config["RandomSeed"]
    if "TargetObjectiveMetricValue" in criteria:
        definition["target_objective_value"] = criteria["TargetObjectiveMetricValue"]
    warm = _object(body, "WarmStartConfig", False)
    if warm:
        definition["warm_start_config"] = _warm_start(warm)
    if not_improving.get("MaxNumberOfTrainingJobsNotImproving") is not None:
        definition["max_jobs_without_improvement"] = not_improving[
            "MaxNumberOfTrainingJobsNotImproving"
        ]
    return definition


def _hyperband(config: Mapping[str, Any], static: Any) -> dict[str, Any]:
    """Our Hyperband ``strategy_config``: the resource is the first of ``RESOURCE_KEYS`` among
    the static hyperparameters (``epochs`` when none is)."""
    where = "StrategyConfig.HyperbandStrategyConfig"
    keys = [k for k in RESOURCE_KEYS if isinstance(static, Mapping) and k in static]
    out: dict[str, Any] = {"resource": keys[0] if keys else "epochs"}
    if config.get("MinResource") is not None:
        out["min_resource"] = _number(config["MinResource"], f"{where}.MinResource", int)
    if config.get("MaxResource") is not None:
        out["max_resource"] = _number(config["MaxResource"], f"{where}.MaxResource", int)
    return out


def _warm_start(config: Mapping[str, Any]) -> dict[str, Any]:
    """Our ``warm_start_config`` (checked with the rest of the definition)."""
    parents = config.get("ParentHyperParameterTuningJobs")
    if not isinstance(parents, list):
        raise ValidationError(
            "WarmStartConfig.ParentHyperParameterTuningJobs must be a list of "
            f"{{HyperParameterTuningJobName: ...}}, got {parents!r:.100}"
        )
    names = []
    for i, parent in enumerate(parents):
        if not isinstance(parent, Mapping):
            raise ValidationError(
                f"WarmStartConfig.ParentHyperParameterTuningJobs[{i}] must be an object "
                f'{{"HyperParameterTuningJobName": ...}}, got {parent!r:.100}'
            )
        name = parent.get("HyperParameterTuningJobName")
        if not isinstance(name, str):
            raise ValidationError(
                f"WarmStartConfig.ParentHyperParameterTuningJobs[{i}].HyperParameterTuningJobName "
                f"must be a string, got {parent!r:.100}"
            )
        names.append(name)
    return {"parents": names, "type": config.get("WarmStartType")}
