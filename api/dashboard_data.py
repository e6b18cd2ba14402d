"""The dashboard's data: the tuning-job overview, one tuning job's trials as columns, log chunks.

Everything here reads the store and returns plain JSON-able values; the figures come from the
same functions as ``describe`` and the comparison report (``tuner.summary``,
``tuner.reports.data``), so the pages and the reports never disagree.

- ``overview``: one page of tuning jobs (newest first, optionally of one status and with a name
  containing a string) with their progress (ended, running, total training jobs) and best
  objective, counted in SQL in one query whatever the number of training jobs.
- ``trials``: one tuning job's counters (``describe``), its best-so-far curve
  (``best_so_far``) and its training jobs as columns (one list per field, times in seconds
  since the tuning job was created), so 5,000 training jobs travel as one compact document.
- ``log_chunk``: a training job's log from a byte offset, cut at a character boundary.
"""

from __future__ import annotations

import codecs
import time
from pathlib import Path
from typing import Any

from sqlalchemy import case, func, select
from sqlalchemy.orm import Session

from tuner.records import ObjectiveStatus, TrainingStatus, TuningStatus
from tuner.reports.data import Run, best_so_far
from tuner.storage import Store
from tuner.storage.models import TrainingJobRow, TuningJobRow
from tuner.summary import describe

LOG_FILE = "log.txt"
ENDED = [s.value for s in TrainingStatus if s.terminal]


def _best(definition: dict[str, Any], high: float | None, low: float | None) -> float | None:
    return high if definition.get("objective_type", "Maximize") == "Maximize" else low


def overview(
    store: Store,
    status: TuningStatus | None = None,
    name: str | None = None,
    limit: int = 50,
    offset: int = 0,
) -> dict[str, Any]:
    """One page of tuning jobs with progress and best objective; ``next_offset`` pages on."""
    succeeded = TrainingJobRow.objective_status == ObjectiveStatus.SUCCEEDED.value
    objective = case((succeeded, TrainingJobRow.objective))
    counts = (
        select(
            TrainingJobRow.tuning_job_id.label("id"),
            func.count().label("total"),
            func.sum(case((TrainingJobRow.status.in_(ENDED), 1), else_=0)).label("ended"),
            func.sum(
                case((TrainingJobRow.status == TrainingStatus.IN_PROGRESS.value, 1), else_=0)
            ).label("running"),
            func.max(objective).label("high"),
            func.min(objective).label("low"),
        )
        .group_by(TrainingJobRow.tuning_job_id)
        .subquery()
    )
    query = (
        select(TuningJobRow, counts.c.total, counts.c.ended, counts.c.running)
        .add_columns(counts.c.high, counts.c.low)
        .outerjoin(counts, counts.c.id == TuningJobRow.id)
        .order_by(TuningJobRow.created_at.desc(), TuningJobRow.id.desc())
    )
    if status is not None:
        query = query.where(TuningJobRow.status == TuningStatus(status).value)
    if name:
        query = query.where(TuningJobRow.name.contains(name, autoescape=True))
    with Session(store.engine) as session:
        rows = session.execute(query.offset(offset).limit(limit + 1)).all()
    items = []
    for row, total, ended, running, high, low in rows[:limit]:
        d = row.definition
        items.append(
            {
                "name": row.name,
                "status": row.status,
                "status_reason": row.status_reason,
                "strategy": d.get("strategy"),
                "objective": {
                    "metric": d.get("objective_metric_name"),
                    "type": d.get("objective_type", "Maximize"),
                },
                "progress": {
                    "ended": int(ended or 0),
                    "running": int(running or 0),
                    "total": int(total or 0),
                    "max_jobs": d.get("max_jobs"),
                },
                "best_objective": _best(d, high, low),
                "created_at": row.created_at,
                "ended_at": row.ended_at,
            }
        )
    return {
        "items": items,
        "limit": limit,
        "offset": offset,
        "next_offset": offset + limit if len(rows) > limit else None,
    }


def _rel(t: float | None, origin: float) -> float | None:
    return None if t is None else round(t - origin, 3)


def trials(store: Store, name: str) -> dict[str, Any]:
    """A tuning job's counters, best-so-far curve and training jobs as columns (see the
    module docstring); raises ``NotFoundError`` for an unknown name."""
    record = store.get_tuning_job(name)
    jobs = store.list_training_jobs(name)
    summary = describe(record, jobs)
    definition = record.definition
    maximize = summary["objective"]["type"] == "Maximize"
    steps = store.metric_counts(name, summary["objective"]["metric"])
    curve = best_so_far(Run(record, jobs), maximize)
    origin = record.created_at
    ranges: dict[str, Any] = definition.get("hyperparameter_ranges", {})
    gpus = definition.get("job_definition", {}).get("gpus_per_job") or 0
    best = summary["best_training_job"]
    return {
        "name": record.name,
        "status": summary["status"],
        "status_reason": summary["status_reason"],
        "strategy": summary["strategy"],
        "objective": summary["objective"],
        "limits": summary["limits"],
        "created_at": record.created_at,
        "ended_at": record.ended_at,
        "now": time.time(),
        "training_job_status_counters": summary["training_job_status_counters"],
        "stopped_early": summary["stopped_early"],
        "failure_reasons": summary["failure_reasons"],
        "best_training_job": None
        if best is None
        else {k: best[k] for k in ("name", "number", "objective", "hyperparameters")},
        "consumed_seconds": summary["consumed_seconds"],
        "compute_unit": "GPU" if gpus else "CPU",
        "hyperparameter_ranges": ranges,
        "curve": {
            key: [p[key] for p in curve] for key in ("jobs", "seconds", "compute_seconds", "best")
        },
        "columns": {
            "number": [j.number for j in jobs],
            "name": [j.name for j in jobs],
            "status": [j.status.value for j in jobs],
            "objective": [j.objective for j in jobs],
            "failure_reason": [j.failure_reason for j in jobs],
            "created": [_rel(j.created_at, origin) for j in jobs],
            "ended": [_rel(j.ended_at, origin) for j in jobs],
            "duration": [None if j.duration is None else round(j.duration, 3) for j in jobs],
            "queued": [
                None if j.queued_seconds is None else round(j.queued_seconds, 3) for j in jobs
            ],
            "steps": [steps.get(j.name, 0) for j in jobs],
            "hyperparameters": {p: [j.hyperparameters.get(p) for j in jobs] for p in ranges},
        },
    }


CONTINUATION_BYTES = bytes(range(0x80, 0xC0))  # UTF-8's 10xxxxxx: never a character's first


def _first_character_length(data: bytes) -> int:
    """Bytes of the UTF-8 character ``data`` starts with, by its first byte (1 when invalid)."""
    if not data:
        return 0
    lead = data[0]
    return (
        2 if lead >> 5 == 0b110 else 3 if lead >> 4 == 0b1110 else 4 if lead >> 3 == 0b11110 else 1
    )


def log_chunk(store: Store, name: str, offset: int, limit: int) -> dict[str, Any]:
    """Up to ``limit`` bytes of a training job's log from byte ``offset`` (a negative one counts
    from the end and moves on to the next character's first byte), decoded as UTF-8 (invalid
    bytes replaced) and cut before a character split by the limit, but at least one character
    (up to 4 bytes) where the log has one; ``next_offset`` is where the next call starts,
    ``ended`` whether the job has ended (nothing more will be written once ``next_offset``
    reaches ``size``)."""
    job = store.get_training_job(name)
    path = Path(job.workdir) / LOG_FILE if job.workdir else None
    size = path.stat().st_size if path is not None and path.exists() else 0
    start = max(0, size + offset) if offset < 0 else min(offset, size)
    data = b""
    if path is not None and size > start:
        with open(path, "rb") as f:
            f.seek(start)
            data = f.read(max(limit, 4) + 3)  # room for a cut character and a whole one
        if offset < 0:  # counted from the end: skip the rest of a character cut in two
            cut = len(data) - len(data.lstrip(CONTINUATION_BYTES))
            skip = cut if 0 < cut <= 3 else 0
            start, data = start + skip, data[skip:]
        data = data[: max(limit, _first_character_length(data))]
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    at_end = start + len(data) >= size and job.status.terminal
    text = decoder.decode(data, final=at_end)
    pending = len(decoder.getstate()[0])
    return {
        "name": job.name,
        "status": job.status.value,
        "ended": job.status.terminal,
        "offset": start,
        "next_offset": start + len(data) - pending,
        "size": size,
        "text": text,
    }
