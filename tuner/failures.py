"""Why training jobs failed, grouped, and when a tuning job with no success has failed.

The status rule (SageMaker's, which reports "No training job succeeded after 5 attempts"):
- a tuning job whose first ``NO_SUCCESS_ATTEMPTS`` training jobs all failed ends Failed at
  once, rather than spending the rest of ``max_jobs`` on a command or regex that cannot work;
- a tuning job that ends by using its budget (or exhausting its search space) without a
  single successful training job ends Failed, not Completed.
Both reasons name the most common failure, so ``tuner list``, ``describe`` and the REST status
say why without opening a training job.

``failure_groups`` is what ``describe`` (Python API, CLI, REST) shows beside the counters: one
entry per distinct reason with its count, most frequent first. Reasons are grouped with the
job's own name written as ``<job>`` and without their ``; last log line: ...`` tail, which can
differ from job to job; a group whose jobs all share one last line keeps it in its reason. One
full reason of the group is its example.
"""

from __future__ import annotations

import re
import signal
from typing import Any

from tuner.records import TrainingJob, TrainingStatus

NO_SUCCESS_ATTEMPTS = 5
LAST_LINE = "; last log line:"
CONTAINER_ID = re.compile(r"\b[0-9a-f]{64}\b")


def exit_reason(code: int) -> str:
    """Why a job whose program ended with ``code`` (non-zero; negative for a signal, as
    ``subprocess`` reports it) failed: ``"exited with code 3"``, ``"killed by signal 9
    (SIGKILL; the kernel's out-of-memory killer sends this one)"``."""
    if code > 0:
        return f"exited with code {code}"
    try:
        name = signal.Signals(-code).name
    except ValueError:
        return f"killed by signal {-code}"
    hint = "; the kernel's out-of-memory killer sends this one" if -code == signal.SIGKILL else ""
    return f"killed by signal {-code} ({name}{hint})"


def _general(job: TrainingJob) -> str:
    return (job.failure_reason or "no reason recorded").replace(job.name, "<job>")


def _group_key(reason: str) -> str:
    """The reason without its last log line, and with container ids (64 hex digits) as <id>:
    the same start failure of two containers is one reason."""
    return CONTAINER_ID.sub("<id>", reason.split(LAST_LINE, 1)[0])


def failure_groups(jobs: list[TrainingJob]) -> list[dict[str, Any]]:
    """Failed jobs grouped by reason: ``{"reason", "count", "example", "training_jobs"}``
    (names of up to five of its jobs), the most frequent reason first."""
    groups: dict[str, dict[str, Any]] = {}
    for job in jobs:
        if job.status is not TrainingStatus.FAILED:
            continue
        full = _general(job)
        key = _group_key(full)
        group = groups.setdefault(
            key,
            {
                "reason": full,
                "count": 0,
                "example": job.failure_reason or full,
                "training_jobs": [],
            },
        )
        if group["reason"] != full:  # last log lines differ: the common part only
            group["reason"] = key
        group["count"] += 1
        if len(group["training_jobs"]) < 5:
            group["training_jobs"].append(job.name)
    return sorted(groups.values(), key=lambda g: -g["count"])


def describe_groups(groups: list[dict[str, Any]], limit: int = 3) -> str:
    """``"2x exited with code 1; 1x ..."``: the ``limit`` most frequent reasons, one line."""
    shown = "; ".join(f"{g['count']}x {g['reason']}" for g in groups[:limit])
    more = len(groups) - limit
    return shown + (f"; and {more} other reason{'s' if more > 1 else ''}" if more > 0 else "")


def no_success_reason(jobs: list[TrainingJob], early: bool) -> str:
    """The Failed reason of a tuning job none of whose training jobs succeeded."""
    failed = sum(j.status is TrainingStatus.FAILED for j in jobs)
    ended = sum(j.status.terminal for j in jobs)
    counts = f"({failed} of {ended} failed)"  # with jobs in parallel, more than 5 may end
    head = (
        f"no training job succeeded after {NO_SUCCESS_ATTEMPTS} attempts {counts}"
        if early
        else f"no training job succeeded {counts}"
    )
    groups = failure_groups(jobs)
    return f"{head}: {describe_groups(groups)}" if groups else head
