"""Experiment trackers the scheduler keeps informed of a tuning job (MLflow, by ``tracking_uri``).

``tracker_for`` gives the tracker a tuning job asks for, or the do-nothing ``Tracker``;
``catch_up`` writes an ended tuning job to MLflow again from the store;
``check_tracking_uri`` is the rule a ``tracking_uri`` must keep, checked when the tuning job
is defined.
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING

from tuner.errors import ValidationError
from tuner.extras import require
from tuner.tracking.base import Tracker

if TYPE_CHECKING:  # tuner.definition imports check_tracking_uri from here
    from tuner.definition import TuningJobDefinition
    from tuner.storage import Store

__all__ = ["Tracker", "catch_up", "check_tracking_uri", "tracker_for"]

# The schemes an MLflow tracking URI may have: a tracking server, Databricks, a local folder,
# or a database that MLflow writes to directly.
SCHEMES = ("http", "https", "file", "databricks", "databricks-uc", "sqlite", "postgresql",
           "mysql", "mssql")  # fmt: skip
_URI = re.compile(r"^(?P<scheme>[a-z][a-z0-9+.-]*)(?::|$)")


def check_tracking_uri(uri: str) -> str:
    """``uri`` when it is an MLflow tracking URI, else ``ValueError`` stating the rule."""
    match = _URI.match(uri)
    scheme = match.group("scheme").split("+")[0] if match else None
    if scheme not in SCHEMES or any(c.isspace() or c == "\x00" for c in uri):
        raise ValueError(
            "tracking_uri must be an MLflow tracking URI without spaces, with a scheme among "
            f"{', '.join(SCHEMES)} (e.g. http://127.0.0.1:5000), got {uri!r}"
        )
    return uri


def tracker_for(definition: TuningJobDefinition, name: str, store: Store) -> Tracker:
    """The tracker of tuning job ``name``: MLflow when it has a ``tracking_uri`` (raises
    ``MissingExtra`` without the ``mlflow`` extra), otherwise one that does nothing.

    ``TUNER_TRACKING_CLOSE_TIMEOUT`` (seconds, default 30) is how long the end of a tuning job
    waits for the tracker to deliver what it still holds."""
    if definition.tracking_uri is None:
        return Tracker()
    from tuner.tracking.mlflow_tracker import MlflowTracker

    require("mlflow", "mlflow", "tracking_uri (MLflow tracking)")
    from mlflow.exceptions import MlflowException

    uri = definition.tracking_uri
    timeout = float(os.environ.get("TUNER_TRACKING_CLOSE_TIMEOUT", "30"))
    try:  # MLflow 3 refuses its file store unless MLFLOW_ALLOW_FILE_STORE=true, at once
        tracker = MlflowTracker(uri, name, definition, store, close_timeout=timeout)
        if uri.startswith("file:"):  # local: a refusal is known now, not in the tracker
            tracker.client.search_experiments(max_results=1)
    except MlflowException as exc:
        reason = exc.message[:1000]
        raise ValidationError(f"tracking_uri {uri!r} cannot be used: {reason}") from None
    return tracker


def catch_up(definition: TuningJobDefinition, name: str, store: Store, uri: str | None) -> str:
    """Write ended tuning job ``name`` to MLflow at ``uri`` (default: its ``tracking_uri``) from
    the store, skipping what MLflow already holds; returns the URI. For a tuning job that ended
    while its tracking server was away (its process gave up after
    ``TUNER_TRACKING_CLOSE_TIMEOUT``). Raises ``ValidationError`` when it has not ended (its own
    process writes it; ``tuner resume`` catches up one whose process died) or has no URI, and
    MLflow's error when the server does not take it."""
    from tuner.errors import ValidationError

    record = store.get_tuning_job(name)
    if not record.status.terminal:
        raise ValidationError(
            f"tuner track needs a tuning job that has ended (its own process tracks it while it "
            f"runs; tuner resume catches up one whose process died), got {name} with status "
            f"{record.status.value}"
        )
    target = uri or definition.tracking_uri
    if target is None:
        raise ValidationError(
            f"tuner track needs a tracking URI: tuning job {name} has no tracking_uri, and no "
            "--tracking-uri was given"
        )
    try:
        check_tracking_uri(target)
    except ValueError as exc:
        raise ValidationError(str(exc)) from None
    from tuner.tracking.mlflow_tracker import MlflowTracker

    MlflowTracker(target, name, definition, store).catch_up()
    return target
