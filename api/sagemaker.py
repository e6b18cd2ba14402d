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
SageMaker sends range bounds as strings; they are read as numbers. ``TrainingJobDefinition``'s
``Environment`` becomes the jobs' environment and ``Tags`` the tuning job's tags. The rest of
SageMaker's fields (roles, VPC, S3 channels, instance types) are accepted and ignored; a field
SageMaker does not have (a misspelt key) is refused naming it and the fields SageMaker has
there, and so are the features it has that we do not (``AlgorithmName``, ``AutoParameters``,
``TrainingJobDefinitions``, ``Autotune``, ``CompleteOnConvergence: Enabled``), so that no
setting is silently dropped. A missing or malformed part raises ``ValidationError`` naming it;
``in_sagemaker_terms`` renames our fields in a refusal of the translated definition.
``BestObjectiveNotImproving`` counts, as SageMaker does, jobs that did not improve the best by
1% or more (``min_relative_improvement: 0.01``).
"""

from __future__ import annotations

import difflib
import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from tuner.choices import canonical
from tuner.errors import ValidationError
from tuner.parameters import ScalingType
from tuner.strategies import STRATEGIES

SCALING = [s.value for s in ScalingType]  # SageMaker's ScalingType values, as written
# Static hyperparameters SageMaker reads Hyperband's resource from, in its order.
RESOURCE_KEYS = ("epochs", "numepochs", "n-epochs", "n_epochs", "num_epochs")


# The fields SageMaker's CreateHyperParameterTuningJob request has, per object (API reference).
FIELDS = {
    "": {
        "HyperParameterTuningJobName", "HyperParameterTuningJobConfig", "TrainingJobDefinition",
        "TrainingJobDefinitions", "WarmStartConfig", "Tags", "Autotune",
    },
    "HyperParameterTuningJobConfig": {
        "Strategy", "StrategyConfig", "HyperParameterTuningJobObjective", "ResourceLimits",
        "ParameterRanges", "TrainingJobEarlyStoppingType", "TuningJobCompletionCriteria",
        "RandomSeed",
    },
    "ResourceLimits": {"MaxNumberOfTrainingJobs", "MaxParallelTrainingJobs", "MaxRuntimeInSeconds"},
    "HyperParameterTuningJobObjective": {"Type", "MetricName"},
    "ParameterRanges": {
        "IntegerParameterRanges", "ContinuousParameterRanges", "CategoricalParameterRanges",
        "AutoParameters",
    },
    "range": {"Name", "MinValue", "MaxValue", "ScalingType"},
    "categorical range": {"Name", "Values"},
    "TuningJobCompletionCriteria": {
        "TargetObjectiveMetricValue", "BestObjectiveNotImproving", "ConvergenceDetected",
    },
    "BestObjectiveNotImproving": {"MaxNumberOfTrainingJobsNotImproving"},
    "ConvergenceDetected": {"CompleteOnConvergence"},
    "StrategyConfig": {"HyperbandStrategyConfig"},
    "HyperbandStrategyConfig": {"MinResource", "MaxResource"},
    "WarmStartConfig": {"ParentHyperParameterTuningJobs", "WarmStartType"},
    "TrainingJobDefinition": {
        "DefinitionName", "TuningObjective", "HyperParameterRanges", "StaticHyperParameters",
        "AlgorithmSpecification", "RoleArn", "InputDataConfig", "VpcConfig", "OutputDataConfig",
        "ResourceConfig", "HyperParameterTuningResourceConfig", "StoppingCondition",
        "EnableNetworkIsolation", "EnableInterContainerTrafficEncryption",
        "EnableManagedSpotTraining", "CheckpointConfig", "RetryStrategy", "Environment",
    },
    # ContainerEntrypoint / ContainerArguments: ours (CreateTrainingJob's names), to run a command
    "AlgorithmSpecification": {
        "TrainingImage", "TrainingInputMode", "AlgorithmName", "MetricDefinitions",
        "ContainerEntrypoint", "ContainerArguments",
    },
    "StoppingCondition": {"MaxRuntimeInSeconds", "MaxWaitTimeInSeconds", "MaxPendingTimeInSeconds"},
}  # fmt: skip
# The objects within each object of FIELDS that are checked too: field -> its kind in FIELDS
# (a list's items each of that kind).
NESTED = {
    "": {
        "HyperParameterTuningJobConfig": "HyperParameterTuningJobConfig",
        "TrainingJobDefinition": "TrainingJobDefinition",
        "WarmStartConfig": "WarmStartConfig",
    },
    "HyperParameterTuningJobConfig": {
        key: key
        for key in (
            "ResourceLimits", "HyperParameterTuningJobObjective", "ParameterRanges",
            "StrategyConfig", "TuningJobCompletionCriteria",
        )
    },
    "ParameterRanges": {
        "IntegerParameterRanges": "range",
        "ContinuousParameterRanges": "range",
        "CategoricalParameterRanges": "categorical range",
    },
    "StrategyConfig": {"HyperbandStrategyConfig": "HyperbandStrategyConfig"},
    "TuningJobCompletionCriteria": {
        "BestObjectiveNotImproving": "BestObjectiveNotImproving",
        "ConvergenceDetected": "ConvergenceDetected",
    },
    "TrainingJobDefinition": {
        "AlgorithmSpecification": "AlgorithmSpecification",
        "StoppingCondition": "StoppingCondition",
    },
}  # fmt: skip
# SageMaker features this service does not have: refused rather than ignored.
UNSUPPORTED = {
    "TrainingJobDefinitions": "several training job definitions in one tuning job are not "
    "supported: give one TrainingJobDefinition",
    "Autotune": "Autotune is not supported: give HyperParameterTuningJobConfig",
    "TrainingJobDefinition.TuningObjective": "give the objective in "
    "HyperParameterTuningJobConfig.HyperParameterTuningJobObjective",
    "TrainingJobDefinition.HyperParameterRanges": "give the ranges in "
    "HyperParameterTuningJobConfig.ParameterRanges",
    "TrainingJobDefinition.AlgorithmSpecification.AlgorithmName": "SageMaker's algorithms are "
    "not available here: give TrainingImage or ContainerEntrypoint",
    "HyperParameterTuningJobConfig.ParameterRanges.AutoParameters": "automatic ranges are not "
    "supported: give each range",
}


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
                "scaling_type": _exact(
                    item.get("ScalingType", "Auto"), SCALING, f"{where}.ScalingType"
                ),
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


def _exact(value: Any, allowed: Iterable[str], where: str) -> Any:
    """``value``, refused when it is one of ``allowed`` in another case: SageMaker's values are
    case-sensitive (our own definition's are not), so a request that works here works on
    SageMaker too. Anything else is left for the definition's check to name."""
    allowed = sorted(allowed)
    if value not in allowed and canonical(value, allowed) in allowed:
        raise ValidationError(
            f"{where} must be one of {allowed} as written (SageMaker's values are "
            f"case-sensitive), got {value!r}"
        )
    return value


def from_sagemaker(body: Mapping[str, Any]) -> dict[str, Any]:
    """Our tuning job definition (a mapping, not yet validated) for a SageMaker request."""
    _check_fields(body)
    config = _object(body, "HyperParameterTuningJobConfig")
    limits = _object(body, "HyperParameterTuningJobConfig.ResourceLimits")
    objective = _object(body, "HyperParameterTuningJobConfig.HyperParameterTuningJobObjective")
    ranges = _object(body, "HyperParameterTuningJobConfig.ParameterRanges")
    criteria = _object(body, "HyperParameterTuningJobConfig.TuningJobCompletionCriteria", False)
    training = _object(body, "TrainingJobDefinition")
    algorithm = _object(body, "TrainingJobDefinition.AlgorithmSpecification")
    stopping = _object(body, "TrainingJobDefinition.StoppingCondition", False)
    not_improving = _object(criteria, "BestObjectiveNotImproving", False)
    _convergence(_object(criteria, "ConvergenceDetected", False))

    job: dict[str, Any] = {"static_hyperparameters": training.get("StaticHyperParameters") or {}}
    if training.get("Environment"):
        job["environment"] = training["Environment"]
    entrypoint = algorithm.get("ContainerEntrypoint")
    if entrypoint:
        if not isinstance(entrypoint, list):
            raise ValidationError(f"ContainerEntrypoint must be a list, got {entrypoint!r:.100}")
        arguments = algorithm.get("ContainerArguments") or []
        if not isinstance(arguments, list):
            raise ValidationError(f"ContainerArguments must be a list, got {arguments!r:.100}")
        job["command"] = entrypoint + arguments
    else:  # SageMaker runs the image: so does Docker
        job["image"] = _get(body, "TrainingJobDefinition.AlgorithmSpecification.TrainingImage")
        job["launcher"] = "docker"
    if stopping.get("MaxRuntimeInSeconds") is not None:
        job["max_runtime"] = stopping["MaxRuntimeInSeconds"]
    definition: dict[str, Any] = {
        "name": body.get("HyperParameterTuningJobName"),
        "strategy": _exact(config.get("Strategy", "Bayesian"), STRATEGIES, f"{_CONFIG}.Strategy"),
        "objective_type": _exact(
            objective.get("Type"),
            ("Maximize", "Minimize"),
            f"{_CONFIG}.HyperParameterTuningJobObjective.Type",
        ),
        "objective_metric_name": objective.get("MetricName"),
        "metric_definitions": algorithm.get("MetricDefinitions") or [],
        "hyperparameter_ranges": _ranges(ranges),
        "max_parallel_jobs": limits.get("MaxParallelTrainingJobs", 1),
        "job_definition": job,
    }
    if limits.get("MaxNumberOfTrainingJobs") is not None:  # a Grid may leave it out
        definition["max_jobs"] = limits["MaxNumberOfTrainingJobs"]
    if "TrainingJobEarlyStoppingType" in config:
        definition["early_stopping_type"] = _exact(
            config["TrainingJobEarlyStoppingType"],
            ("Off", "Auto"),
            f"{_CONFIG}.TrainingJobEarlyStoppingType",
        )
    hyperband = _object(config, "StrategyConfig.HyperbandStrategyConfig", False)
    strategy = definition["strategy"]
    if hyperband or (isinstance(strategy, str) and strategy.lower() == "hyperband"):
        definition["strategy_config"] = _hyperband(hyperband, job["static_hyperparameters"])
    if limits.get("MaxRuntimeInSeconds") is not None:
        definition["max_tuning_runtime"] = limits["MaxRuntimeInSeconds"]
    if "RandomSeed" in config:
        definition["random_seed"] = config["RandomSeed"]
    if "TargetObjectiveMetricValue" in criteria:
        definition["target_objective_value"] = criteria["TargetObjectiveMetricValue"]
    if body.get("WarmStartConfig") is not None:
        definition["warm_start_config"] = _warm_start(_object(body, "WarmStartConfig"))
    if body.get("Tags"):
        definition["tags"] = _tags(body["Tags"])
    if not_improving.get("MaxNumberOfTrainingJobsNotImproving") is not None:
        definition["max_jobs_without_improvement"] = not_improving[
            "MaxNumberOfTrainingJobsNotImproving"
        ]
        definition["min_relative_improvement"] = NOT_IMPROVING_FRACTION
    return definition


NOT_IMPROVING_FRACTION = 0.01  # BestObjectiveNotImproving: "improve ... by 1% or greater"


def _check_fields(node: Any, path: str = "", kind: str = "") -> None:
    """Every object of the request (``node``, at ``path``, of ``FIELDS[kind]``) and those
    ``NESTED`` in it has only SageMaker's fields: one SageMaker does not have (a misspelling,
    say) is refused naming the closest, and so are the features in ``UNSUPPORTED``."""
    if isinstance(node, list):
        for i, item in enumerate(node):
            _check_fields(item, f"{path}[{i}]", kind)
        return
    if not isinstance(node, Mapping):
        return  # not an object: the reading of the request says what it must be
    allowed = FIELDS[kind]
    for key in node:
        where = f"{path}.{key}" if path else str(key)
        if key not in allowed:
            close = difflib.get_close_matches(str(key), sorted(allowed), n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise ValidationError(
                f"{where}: SageMaker has no such field; {hint}the fields there are "
                f"{', '.join(sorted(allowed))}"
            )
        unsupported = UNSUPPORTED.get(re.sub(r"\[\d+\]", "", where))
        if unsupported and node[key] not in (None, [], {}):
            raise ValidationError(f"{where}: {unsupported}")
    for key, child in NESTED.get(kind, {}).items():
        _check_fields(node.get(key), f"{path}.{key}" if path else key, child)


def _convergence(config: Mapping[str, Any]) -> None:
    """``ConvergenceDetected``: SageMaker's own convergence rule is not ours to copy; Disabled
    is accepted, Enabled refused (``BestObjectiveNotImproving`` is the rule to use)."""
    value = config.get("CompleteOnConvergence")
    if value is None or value == "Disabled":
        return
    where = "TuningJobCompletionCriteria.ConvergenceDetected.CompleteOnConvergence"
    if value == "Enabled":
        raise ValidationError(
            f"{where}: SageMaker's automatic convergence detection is not supported, got "
            "'Enabled': use BestObjectiveNotImproving.MaxNumberOfTrainingJobsNotImproving"
        )
    raise ValidationError(f"{where} must be 'Disabled' or 'Enabled', got {value!r:.100}")


def _tags(tags: Any) -> dict[str, Any]:
    """SageMaker's ``[{"Key": k, "Value": v}]`` as our ``tags`` mapping."""
    if not isinstance(tags, list) or not all(
        isinstance(tag, Mapping) and set(tag) == {"Key", "Value"} for tag in tags
    ):
        raise ValidationError(
            f'Tags must be a list of {{"Key": ..., "Value": ...}}, got {tags!r:.100}'
        )
    keys = [tag["Key"] for tag in tags]
    if not all(isinstance(k, str) for k in keys):
        raise ValidationError(f"Tags' keys must be strings, got {keys!r:.100}")
    twice = sorted(k for k, n in Counter(keys).items() if n > 1)
    if twice:  # one value would be dropped without a word
        raise ValidationError(f"Tags must have distinct keys, got {twice!r:.100} more than once")
    return {tag["Key"]: tag["Value"] for tag in tags}


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
    kinds = ("IdenticalDataAndAlgorithm", "TransferLearning")
    return {"parents": names, "type": _exact(config.get("WarmStartType"), kinds, "WarmStartType")}


# Our definition's field names -> the SageMaker request's, for refusals of a request sent in
# SageMaker's shape (the definition is checked after translation, in our names).
_CONFIG = "HyperParameterTuningJobConfig"
_TRAINING = "TrainingJobDefinition"
SAGEMAKER_NAMES = {
    "job_definition.max_runtime": f"{_TRAINING}.StoppingCondition.MaxRuntimeInSeconds",
    "job_definition.environment": f"{_TRAINING}.Environment",
    "job_definition.static_hyperparameters": f"{_TRAINING}.StaticHyperParameters",
    "job_definition.command": f"{_TRAINING}.AlgorithmSpecification.ContainerEntrypoint",
    "job_definition.image": f"{_TRAINING}.AlgorithmSpecification.TrainingImage",
    "job_definition": _TRAINING,
    "static_hyperparameters": f"{_TRAINING}.StaticHyperParameters",
    "metric_definitions": f"{_TRAINING}.AlgorithmSpecification.MetricDefinitions",
    "max_jobs_without_improvement": f"{_CONFIG}.TuningJobCompletionCriteria."
    "BestObjectiveNotImproving.MaxNumberOfTrainingJobsNotImproving",
    "target_objective_value": f"{_CONFIG}.TuningJobCompletionCriteria.TargetObjectiveMetricValue",
    "max_parallel_jobs": f"{_CONFIG}.ResourceLimits.MaxParallelTrainingJobs",
    "max_jobs": f"{_CONFIG}.ResourceLimits.MaxNumberOfTrainingJobs",
    "max_tuning_runtime": f"{_CONFIG}.ResourceLimits.MaxRuntimeInSeconds",
    "objective_type": f"{_CONFIG}.HyperParameterTuningJobObjective.Type",
    "objective_metric_name": f"{_CONFIG}.HyperParameterTuningJobObjective.MetricName",
    "hyperparameter_ranges": f"{_CONFIG}.ParameterRanges",
    "early_stopping_type": f"{_CONFIG}.TrainingJobEarlyStoppingType",
    "random_seed": f"{_CONFIG}.RandomSeed",
    "strategy_config.min_resource": f"{_CONFIG}.StrategyConfig.HyperbandStrategyConfig.MinResource",
    "strategy_config.max_resource": f"{_CONFIG}.StrategyConfig.HyperbandStrategyConfig.MaxResource",
    "strategy_config": f"{_CONFIG}.StrategyConfig.HyperbandStrategyConfig",
    "warm_start_config.parents": "WarmStartConfig.ParentHyperParameterTuningJobs",
    "warm_start_config.type": "WarmStartConfig.WarmStartType",
    "warm_start_config": "WarmStartConfig",
    "min_resource": "MinResource",
    "max_resource": "MaxResource",
    "min_value": "MinValue",
    "max_value": "MaxValue",
    "scaling_type": "ScalingType",
}
# Names without an underscore are prose words too: renamed only where they open a line.
SAGEMAKER_LINE_NAMES = {
    "name": "HyperParameterTuningJobName",
    "strategy": f"{_CONFIG}.Strategy",
    "tags": "Tags",
}
# A name of ours stands alone: not inside a user's key such as "my-random_seed".
_OUR_NAME = re.compile(
    r"(?<![\w.-])(" + "|".join(re.escape(k) for k in SAGEMAKER_NAMES) + r")(?![\w-])"
)
# A quote opens only after a non-word character: the apostrophe of "service's" opens nothing.
# A value cut short (``{value!r:.100}``) loses its closing quote: it runs to the line's end.
_QUOTED = re.compile(r"""((?<!\w)'(?:[^'\\]|\\.)*(?:'|$)|(?<!\w)"(?:[^"\\]|\\.)*(?:"|$))""")
_LOCATION = re.compile(r"^(\s*)([\w.\[\]-]+): ")


def in_sagemaker_terms(message: str) -> str:
    """A refusal of a definition read from a SageMaker request, in that request's field names:
    ours (``SAGEMAKER_NAMES``; ``SAGEMAKER_LINE_NAMES`` where they open a line) become SageMaker's
    paths, in full where they open a line. Quoted text (values, names) and the range name
    after ``hyperparameter_ranges: `` are kept, so a hyperparameter ``max_value`` keeps its name."""
    return "\n".join(_line_in_sagemaker_terms(line) for line in message.split("\n"))


def _line_in_sagemaker_terms(line: str) -> str:
    head, rest = "", line
    location = _LOCATION.match(line)
    opening = _OUR_NAME.match(line)
    if opening and not location:  # "max_parallel_jobs must be ...": the subject in full
        head, rest = _renamed(opening.group(1), full=True), line[opening.end() :]
    elif location:
        indent, where = location.groups()
        rest = line[location.end() :]
        first, dot, below = where.partition(".")
        where = SAGEMAKER_LINE_NAMES.get(first, first) + dot + below
        head = f"{indent}{_renamed(where, full=True)}: "
        if location.group(2) == "hyperparameter_ranges" and ": " in rest:
            range_name, rest = rest.split(": ", 1)
            head += f"{range_name}: "
            if rest.startswith("values "):  # a categorical range's own list
                head, rest = head + "Values", rest.removeprefix("values")
    return head + _renamed(rest, full=False)


def _renamed(text: str, full: bool) -> str:
    """``text`` with our field names outside quotes renamed: to their whole path where ``full``
    (a line's location), else without the request's top-level object (within a sentence)."""

    def name(match: re.Match[str]) -> str:
        path = SAGEMAKER_NAMES[match.group(1)]
        return path if full else re.sub(rf"^(?:{_CONFIG}|{_TRAINING})\.", "", path)

    parts = _QUOTED.split(text)  # odd items are the quoted ones
    return "".join(part if i % 2 else _OUR_NAME.sub(name, part) for i, part in enumerate(parts))
