"""Hyperparameter tuning: strategies, launchers, metrics from logs, SQL persistence.

The names below are imported when first used (PEP 562), so that ``tuner`` itself imports
nothing heavy: the ``tuner`` command can answer a Ctrl-C during its imports (``tuner.entry``).
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tuner.analytics import TuningJobAnalytics
    from tuner.definition import JobDefinition, TuningJobDefinition
    from tuner.errors import (
        LaunchError,
        NotFoundError,
        StorageError,
        StoreUnavailable,
        TunerError,
        ValidationError,
    )
    from tuner.metrics import LogMetricParser, MetricDefinition, MetricPoint
    from tuner.parameters import (
        CategoricalParameter,
        ContinuousParameter,
        IntegerParameter,
        ScalingType,
    )
    from tuner.records import ObjectiveStatus, TrainingJob, TrainingStatus, TuningJob, TuningStatus
    from tuner.space import SearchSpace
    from tuner.tuner import HyperparameterTuner

_HOMES = {
    "CategoricalParameter": "tuner.parameters",
    "ContinuousParameter": "tuner.parameters",
    "HyperparameterTuner": "tuner.tuner",
    "IntegerParameter": "tuner.parameters",
    "JobDefinition": "tuner.definition",
    "LaunchError": "tuner.errors",
    "LogMetricParser": "tuner.metrics",
    "MetricDefinition": "tuner.metrics",
    "MetricPoint": "tuner.metrics",
    "NotFoundError": "tuner.errors",
    "ObjectiveStatus": "tuner.records",
    "ScalingType": "tuner.parameters",
    "SearchSpace": "tuner.space",
    "StorageError": "tuner.errors",
    "StoreUnavailable": "tuner.errors",
    "TrainingJob": "tuner.records",
    "TrainingStatus": "tuner.records",
    "TunerError": "tuner.errors",
    "TuningJob": "tuner.records",
    "TuningJobAnalytics": "tuner.analytics",
    "TuningJobDefinition": "tuner.definition",
    "TuningStatus": "tuner.records",
    "ValidationError": "tuner.errors",
}


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module 'tuner' has no attribute {name!r}")
    value = getattr(import_module(_HOMES[name]), name)
    globals()[name] = value
    return value


__all__ = [
    "CategoricalParameter",
    "ContinuousParameter",
    "HyperparameterTuner",
    "IntegerParameter",
    "JobDefinition",
    "LaunchError",
    "LogMetricParser",
    "MetricDefinition",
    "MetricPoint",
    "NotFoundError",
    "ObjectiveStatus",
    "ScalingType",
    "SearchSpace",
    "StorageError",
    "StoreUnavailable",
    "TrainingJob",
    "TrainingStatus",
    "TunerError",
    "TuningJob",
    "TuningJobAnalytics",
    "TuningJobDefinition",
    "TuningStatus",
    "ValidationError",
]
