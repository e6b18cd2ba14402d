"""Optional parts of the package and the extras that install them.

``pip install tuner`` (what ``make main`` installs) runs tuning jobs of local processes on
SQLite with every strategy and writes reports. The rest is one extra away:

| extra | brings | needed by |
| --- | --- | --- |
| ``service`` | fastapi, uvicorn | ``tuner serve`` (the REST API) |
| ``docker`` | docker | ``launcher: docker`` |
| ``postgres`` | psycopg | a ``postgresql+psycopg://`` store |
| ``s3`` | boto3 | ``output_s3_uri`` (uploading each job's outputs) |
| ``mlflow`` | mlflow-skinny (the client) | ``tracking_uri`` (each trial tracked in MLflow) |
| ``training`` | torch, torchvision, onnx | ``training_container`` (the ResNet trainer) |
| ``dev`` | all of these, and the test and lint tools | ``make test``, ``make lint`` |
"""

from __future__ import annotations

import importlib
from types import ModuleType

from tuner.errors import TunerError


class MissingExtra(TunerError):
    """A feature was used whose extra is not installed."""


def require(module: str, extra: str, feature: str) -> ModuleType:
    """Import ``module``, or raise ``MissingExtra`` naming the feature and the install line."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingExtra(
            f"{feature} needs the {extra!r} extra ({exc.name or module} is not installed): "
            f"pip install 'tuner[{extra}]'"
        ) from None
