"""Tabular views of a tuning job: one row per training job, as a pandas DataFrame or CSV."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from tuner.storage import Store


class TuningJobAnalytics:
    """Rows: name, number, status, objective status, each hyperparameter, the final objective,
    failure reason, and start/end times (UTC) with the training time in seconds."""

    def __init__(self, store: Store, tuning_job_name: str) -> None:
        self.store = store
        self.name = tuning_job_name

    def dataframe(self) -> pd.DataFrame:
        tuning = self.store.get_tuning_job(self.name)
        params = list(tuning.definition["hyperparameter_ranges"])
        objective = tuning.definition["objective_metric_name"]
        rows = []
        for job in self.store.list_training_jobs(self.name):
            row: dict[str, object] = {
                "TrainingJobName": job.name,
                "TrainingJobNumber": job.number,
                "TrainingJobStatus": job.status.value,
                "ObjectiveStatus": job.objective_status.value,
            }
            row.update({p: job.hyperparameters.get(p) for p in params})
            row["FinalObjectiveValue"] = job.objective
            row["ObjectiveMetricName"] = objective
            row["FailureReason"] = job.failure_reason
            row["TrainingStartTime"] = _time(job.started_at)
            row["TrainingEndTime"] = _time(job.ended_at)
            row["TrainingElapsedTimeSeconds"] = job.duration
            rows.append(row)
        columns = [
            "TrainingJobName",
            "TrainingJobNumber",
            "TrainingJobStatus",
            "ObjectiveStatus",
            *params,
            "FinalObjectiveValue",
            "ObjectiveMetricName",
            "FailureReason",
            "TrainingStartTime",
            "TrainingEndTime",
            "TrainingElapsedTimeSeconds",
        ]
        return pd.DataFrame(rows, columns=columns)

    def export_csv(self, path: str | Path) -> Path:
        """Write the dataframe to ``path`` (parent folders created) and return the path."""
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        self.dataframe().to_csv(target, index=False)
        return target


def _time(seconds: float | None) -> pd.Timestamp | None:
    return None if seconds is None else pd.Timestamp(seconds, unit="s", tz="UTC")
