"""Hyperparameter tuning: strategies, launchers, metrics from logs, SQL persistence."""

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
