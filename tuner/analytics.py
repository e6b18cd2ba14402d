"""Tabular views of a tuning job: one row per training job, as a pandas DataFrame or CSV."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from tuner.errors import TunerError
from tuner.out_folders import make_folder, why
from tuner.records import TrainingJob, TrainingStatus
from tuner.summary import stopped_early

if TYPE_CHECKING:  # pandas is imported when a frame is made, not with the package
    import pandas as pd


FIXED_COLUMNS = (
    "TrainingJobName", "TrainingJobNumber", "TrainingJobStatus", "ObjectiveStatus",
    "FinalObjectiveValue", "ObjectiveMetricName", "FailureReason", "TrainingStartTime",
    "TrainingEndTime", "TrainingElapsedTimeSeconds", "QueuedSeconds", "ArtifactsUri", "StepsRun",
)  # fmt: skip
REPORT_COLUMNS = ("TuningJobName", "Arm", "Seed")  # put before them in reports' CSV


def parameter_columns(names: list[str]) -> list[str]:
    """The hyperparameters' columns, one per name and all distinct: a name, or ``NAME
    (hyperparameter)`` where that name is a fixed column's (a hyperparameter called ``Seed`` or
    ``TrainingJobName``), the suffix repeated while the column is still another's (a job tuning
    both ``Seed`` and ``Seed (hyperparameter)``)."""
    taken = {*FIXED_COLUMNS, *REPORT_COLUMNS, *names}
    columns = []
    for name in names:
        column = name
        if name in FIXED_COLUMNS or name in REPORT_COLUMNS:
            column = f"{name} (hyperparameter)"
            while column in taken:
                column += " (hyperparameter)"
            taken.add(column)
        columns.append(column)
    return columns


class TuningJobAnalytics:
    """Rows: name, number, status, objective status, each hyperparameter, the final objective
    (empty but for completed jobs and jobs stopped early: a failed job's last value is none),
    failure reason, start/end times (UTC) with the training time in seconds, and ``StepsRun``:
    how many values of the objective metric the job reported (fewer than its budget when it
    was stopped early; empty when unknown). A hyperparameter named as one of these columns (or
    reports' ``TuningJobName``, ``Arm``, ``Seed``) is ``NAME (hyperparameter)``."""

    def __init__(
        self,
        parameters: list[str],
        objective_metric_name: str,
        training_jobs: Callable[[], list[TrainingJob]],
        steps: Callable[[], dict[str, int]] | None = None,
    ) -> None:
        self._steps = steps
        self.parameters = parameters
        self.objective_metric_name = objective_metric_name
        self._training_jobs = training_jobs

    def dataframe(self) -> pd.DataFrame:
        import pandas as pd

        rows = []
        hyper = parameter_columns(self.parameters)
        steps = self._steps() if self._steps is not None else None
        for job in self._training_jobs():
            row: dict[str, object] = {
                "TrainingJobName": job.name,
                "TrainingJobNumber": job.number,
                "TrainingJobStatus": job.status.value,
                "ObjectiveStatus": job.objective_status.value,
            }
            row.update(
                {c: job.hyperparameters.get(p) for p, c in zip(self.parameters, hyper, strict=True)}
            )
            # SageMaker's FinalObjectiveValue: only an objective that counts, a completed job's
            # or one stopped early (its value at the step it was stopped at); a failed or
            # interrupted job's last value stays in the store and the REST records, not here
            counts = job.status is TrainingStatus.COMPLETED or stopped_early(job)
            row["FinalObjectiveValue"] = job.objective if counts else None
            row["ObjectiveMetricName"] = self.objective_metric_name
            row["FailureReason"] = job.failure_reason
            row["TrainingStartTime"] = _time(job.running_at or job.started_at)
            row["TrainingEndTime"] = _time(job.ended_at)
            row["TrainingElapsedTimeSeconds"] = job.duration
            row["QueuedSeconds"] = job.queued_seconds
            row["ArtifactsUri"] = job.artifacts_uri
            row["StepsRun"] = None if steps is None else steps.get(job.name, 0)
            rows.append(row)
        columns = [*FIXED_COLUMNS[:4], *hyper, *FIXED_COLUMNS[4:]]
        return pd.DataFrame(rows, columns=columns)

    def csv_text(self) -> str:
        """The dataframe as CSV text (as ``export_csv`` writes it)."""
        text: str = self.dataframe().to_csv(index=False, date_format=CSV_TIME_FORMAT)
        return text

    def export_csv(self, path: str | Path) -> Path:
        """Write the dataframe to ``path`` (parent folders created) and return the path;
        ``TunerError`` naming the path when it cannot be written (a folder, no permission)."""
        target = Path(path)
        make_folder(target.parent, f"CSV {target.name}")
        try:
            self.dataframe().to_csv(target, index=False, date_format=CSV_TIME_FORMAT)
        except OSError as exc:
            raise TunerError(f"cannot write CSV {target}: {why(target, exc)}") from None
        return target


CSV_TIME_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"  # ISO 8601 in UTC, to the microsecond


def _time(seconds: float | None) -> pd.Timestamp | None:
    import pandas as pd

    return None if seconds is None else pd.Timestamp(seconds, unit="s", tz="UTC")
