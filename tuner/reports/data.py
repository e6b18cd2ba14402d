"""The numbers of a comparison report, from tuning jobs in the store (plain, JSON-able).

Tuning jobs are grouped into arms by their ``arm`` tag (a comparison's runs; named
``comparison/arm`` when the runs come from several comparisons), otherwise each tuning job is an
arm of its own. Per run, training jobs are counted in the order they ended (not an attempt
whose configuration ran again, e.g. one a Ctrl-C stopped: it used no job of the budget);
"best so far" after k jobs is the best objective of the first k jobs to end; seconds are the
run's own (``TuningJob.active_seconds``: not the time it stood interrupted before a resume).
Per arm: the median of its runs' best values (a run without one counted as the worst:
``median_best``), jobs and seconds until the run first reached its own best, compute used
(GPU-hours when jobs had GPUs, else CPU-hours, one CPU per job), and failed and stopped
jobs; how many jobs each arm needed to reach every other arm's median best; the top
configurations; every completed job's objective against each hyperparameter (the runs' ranges
merged: ``merged_ranges``; a run's static value shown for a hyperparameter another run tunes);
and why jobs failed: reasons grouped per arm, and every failed job with its reason.

Compute is training-seconds actually used (a job's duration times its GPUs, a fraction of a GPU
counted by its share; one CPU per job without GPUs), so the curves also give best so far
against compute, and an arm that stops jobs early (``early_stopping_type="Auto"`` or
Hyperband) shows ``compute_saved``: one minus its median compute per training job over that of
the first full-budget arm with a result in the same unit (``compute_reference``: GPU-seconds
and CPU-seconds do not compare); per job counted towards ``max_jobs``, from those jobs'
compute alone, so that arms of other ``max_jobs`` compare and an interruption does not move it
(an attempt that ran again, after a Ctrl-C or a run ended from outside, says nothing of the
arm; the curves and ``compute_hours`` count its compute: it was used).
``importance`` (when asked) gives each arm's hyperparameter importance
(``tuner.reports.importance``).
``warm_starts`` lists the runs that started from earlier tuning jobs: their parents and what was
taken from each (``tuner.warm_start``).
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Any

from tuner.errors import ValidationError
from tuner.failures import failure_groups
from tuner.launchers.slots import jobs_per_gpu_for
from tuner.records import TrainingJob, TrainingStatus, TuningJob
from tuner.reports.importance import arm_importance, cap_for
from tuner.storage import Store
from tuner.summary import ran_again, stopped_early, training_job_dict
from tuner.warm_start import summary as warm_start_summary


@dataclass
class Run:
    record: TuningJob
    jobs: list[TrainingJob]
    qualified: bool = False  # runs of several comparisons: arms are named "comparison/arm"

    @property
    def arm(self) -> str:
        tags = self.record.definition.get("tags", {})
        if not tags.get("arm"):
            return self.record.name
        if self.qualified and tags.get("comparison"):
            return f"{tags['comparison']}/{tags['arm']}"
        return str(tags["arm"])

    def ended(self) -> list[TrainingJob]:
        return sorted((j for j in self.jobs if j.ended_at), key=lambda j: j.ended_at or 0.0)


def merged_ranges(runs: list[Run]) -> dict[str, dict[str, Any]]:
    """Every hyperparameter any run tunes, in order of first appearance, as one range: of one
    kind in every run, categorical values united (by their text, as plotted) and numeric bounds
    widened (a scaling the runs do not share becomes Linear); categorical in one run and numeric
    in another (a TransferLearning child may retype a range), a Linear range over the values
    its jobs used when all are numbers, else those values as categories."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for run in runs:
        for name, spec in run.record.definition["hyperparameter_ranges"].items():
            groups.setdefault(name, []).append(spec)
    return {name: _merged(name, specs, runs) for name, specs in groups.items()}


def _merged(name: str, specs: list[dict[str, Any]], runs: list[Run]) -> dict[str, Any]:
    categorical = [s["type"] == "categorical" for s in specs]
    if all(categorical):
        return {"type": "categorical", "values": _distinct(v for s in specs for v in s["values"])}
    if not any(categorical):
        scalings = {s.get("scaling_type", "Linear") for s in specs}
        return {
            "type": "integer" if all(s["type"] == "integer" for s in specs) else "continuous",
            "min_value": min(s["min_value"] for s in specs),
            "max_value": max(s["max_value"] for s in specs),
            "scaling_type": scalings.pop() if len(scalings) == 1 else "Linear",
        }
    used = [v for run in runs for j in run.jobs if (v := shown_value(run, j, name)) is not None]
    numbers = [n for v in used if (n := number(v)) is not None]
    if used and len(numbers) == len(used):
        low, high = min(numbers), max(numbers)
        return {"type": "continuous", "min_value": low, "max_value": high, "scaling_type": "Linear"}
    return {"type": "categorical", "values": _distinct(used)}


def _distinct(values: Any) -> list[Any]:
    return list({str(v): v for v in values}.values())


def number(value: Any) -> float | None:
    """``value`` as a float when it is a number or a number's text, else None."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def shown_value(run: Run, job: TrainingJob, name: str) -> Any:
    """A job's value of ``name``: tuned, else its run's static value (None when neither)."""
    if name in job.hyperparameters:
        return job.hyperparameters[name]
    static = run.record.definition.get("job_definition", {}).get("static_hyperparameters") or {}
    return static.get(name)


def _with_static(run: Run, job: TrainingJob, names: list[str]) -> dict[str, Any]:
    """The job's hyperparameters, with its run's static values of ``names`` it did not tune."""
    values = {n: v for n in names if (v := shown_value(run, job, n)) is not None}
    return {**values, **job.hyperparameters}


def _better(a: float, b: float | None, maximize: bool) -> bool:
    return b is None or (a > b if maximize else a < b)


def best_so_far(run: Run, maximize: bool) -> list[dict[str, Any]]:
    """After each ended job: how many ended, seconds the run had run (``active_seconds``),
    compute used by the ended jobs (training-seconds, see the module docstring), best so far."""
    best: float | None = None
    curve: list[dict[str, Any]] = []
    compute = 0.0
    for job in run.ended():
        compute += (job.duration or 0.0) * _share(run)
        if ran_again(job):  # its configuration ran again: no job of the budget, compute used
            continue
        value = job.objective if job.status is TrainingStatus.COMPLETED else None
        if value is not None and _better(value, best, maximize):
            best = value
        curve.append(
            {
                "jobs": len(curve) + 1,
                "seconds": run.record.active_seconds(job.ended_at or 0.0),
                "compute_seconds": compute,
                "best": best,
            }
        )
    return curve


def _share(run: Run) -> float:
    """GPUs per job of a run, each counted by the share it holds: a job of ``gpus_per_job`` g
    takes one of the slots the launcher makes on a GPU (``jobs_per_gpu_for``: ``jobs_per_gpu:
    2`` or ``gpus_per_job: 0.5`` is half a GPU each), g slots when g >= 1; Slurm allocates GPUs
    itself (``jobs_per_gpu`` is not used there): g. One CPU (1) without GPUs."""
    job_definition = run.record.definition.get("job_definition", {})
    gpus = float(job_definition.get("gpus_per_job", 0) or 0)
    if not gpus:
        return 1.0
    if job_definition.get("launcher") == "slurm":
        return gpus
    slots = jobs_per_gpu_for(gpus, job_definition.get("jobs_per_gpu") or 1)
    return 1 / slots if gpus < 1 else gpus / slots


def stops_early(definition: dict[str, Any]) -> bool:
    """Whether a tuning job stops training jobs early (median rule or Hyperband)."""
    return (
        definition.get("early_stopping_type", "Off") == "Auto"
        or definition.get("strategy") == "Hyperband"
    )


def _compute_saved(arm_rows: list[dict[str, Any]]) -> None:
    """Add ``compute_saved`` (a fraction) and ``compute_reference`` (an arm) to arms that stop
    jobs early and have a result, against the first full-budget arm with a result and the same
    compute unit (an arm whose every job failed did not train to the end: it is no reference,
    and it saved nothing); None where there is none. Compute is compared per training job
    (see the module docstring)."""
    per_job = "compute_seconds_per_job_median"
    full = [
        r
        for r in arm_rows
        if not r["early_stopping"] and r[per_job] and r["best_median"] is not None
    ]
    for row in arm_rows:
        row["compute_saved"], row["compute_reference"] = None, None
        # GPU-seconds and CPU-seconds do not compare: the reference is in the row's unit
        reference = next((r for r in full if r["compute_unit"] == row["compute_unit"]), None)
        if reference is None or not row["early_stopping"] or row["best_median"] is None:
            continue
        used = row[per_job]
        row["compute_reference"] = reference["arm"]
        if used is not None:
            row["compute_saved"] = 1.0 - used / reference[per_job]


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def median_best(bests: list[float | None], maximize: bool) -> float | None:
    """The median of runs' best values, a run without one (no job succeeded) counted as worse
    than any: left out, it made an arm that lost a seed look better than one that did not.
    None when the median falls on such a run."""
    ranked = sorted(bests, key=lambda b: (b is None, 0.0 if b is None else (-b if maximize else b)))
    if not ranked:
        return None
    middle = ranked[(len(ranked) - 1) // 2 : len(ranked) // 2 + 1]
    if None in middle:
        return None
    return statistics.fmean(middle)  # type: ignore[arg-type]


def _reach(curve: list[dict[str, Any]], target: float, maximize: bool) -> int | None:
    for point in curve:
        b = point["best"]
        if b is not None and (b >= target if maximize else b <= target):
            return int(point["jobs"])
    return None


def build(store: Store, names: list[str], importance: bool = False) -> dict[str, Any]:
    """The report's data for these tuning jobs (they must share one objective, each named
    once: a repeated name would count its jobs twice). ``importance``: also each arm's
    hyperparameter importance (``tuner.reports.importance``: up to a few seconds an arm, so
    only where asked; otherwise ``importance`` is an empty list)."""
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ValidationError(
            f"a report names each tuning job once, got {', '.join(map(repr, repeated))} twice"
        )
    runs = [Run(store.get_tuning_job(n), store.list_training_jobs(n)) for n in names]
    comparisons = {r.record.definition.get("tags", {}).get("comparison") for r in runs}
    if len(comparisons - {None}) > 1:  # two comparisons' "random" arms are not one arm
        for run in runs:
            run.qualified = True
    first = runs[0].record.definition
    metric, kind = first["objective_metric_name"], first.get("objective_type", "Maximize")
    for run in runs[1:]:
        d = run.record.definition
        if (d["objective_metric_name"], d.get("objective_type", "Maximize")) != (metric, kind):
            raise ValidationError(
                f"a report compares tuning jobs with one objective: {runs[0].record.name} "
                f"{kind} {metric}, {run.record.name} {d.get('objective_type')} "
                f"{d['objective_metric_name']}"
            )
    maximize = kind == "Maximize"
    arms: dict[str, list[Run]] = {}
    for run in runs:
        arms.setdefault(run.arm, []).append(run)

    arm_rows: list[dict[str, Any]] = []
    curves: dict[str, list[list[dict[str, Any]]]] = {}
    for arm, members in arms.items():
        curves[arm] = [best_so_far(r, maximize) for r in members]
        bests: list[float | None] = []
        jobs_to_best, seconds_to_best, wall, compute = [], [], [], 0.0
        queued = 0.0
        for run, curve in zip(members, curves[arm], strict=True):
            final = curve[-1]["best"] if curve else None
            bests.append(final)
            if final is not None:
                first_hit = next(p for p in curve if p["best"] == final)
                jobs_to_best.append(first_hit["jobs"])
                seconds_to_best.append(first_hit["seconds"])
            end = run.record.ended_at or max((j.ended_at or 0.0 for j in run.jobs), default=0.0)
            wall.append(max(0.0, run.record.active_seconds(end)))
            compute += sum(j.duration or 0.0 for j in run.jobs) * _share(run) / 3600
            queued += sum(j.queued_seconds or 0.0 for j in run.jobs) / 3600
        found = [b for b in bests if b is not None]
        d = members[0].record.definition
        uses_gpus = (d.get("job_definition", {}).get("gpus_per_job") or 0) > 0
        arm_rows.append(
            {
                "arm": arm,
                "strategy": d.get("strategy"),
                "max_jobs": d.get("max_jobs"),
                "max_parallel_jobs": d.get("max_parallel_jobs"),
                "runs": [r.record.name for r in members],
                "best_median": median_best(bests, maximize),
                "best_overall": (max(found) if maximize else min(found)) if found else None,
                "best_per_run": bests,
                "runs_without_result": len(bests) - len(found),
                "jobs_to_best_median": _median(jobs_to_best),
                "seconds_to_best_median": _median(seconds_to_best),
                "wall_seconds_median": _median(wall),
                "compute_hours": compute,
                "compute_unit": "GPU-hours" if uses_gpus else "CPU-hours",
                "queued_hours": queued,
                "completed": sum(
                    j.status is TrainingStatus.COMPLETED for r in members for j in r.jobs
                ),
                "failed": sum(j.status is TrainingStatus.FAILED for r in members for j in r.jobs),
                "stopped": sum(j.status is TrainingStatus.STOPPED for r in members for j in r.jobs),
                "failure_reasons": failure_groups([j for r in members for j in r.jobs]),
                "stopped_early": sum(stopped_early(j) for r in members for j in r.jobs),
                "early_stopping": stops_early(d),
                "compute_seconds_median": _median(
                    [c[-1]["compute_seconds"] for c in curves[arm] if c]
                ),
                "compute_seconds_per_job_median": _median(
                    [
                        sum((j.duration or 0.0) * _share(run) for j in counted) / len(counted)
                        for run in members
                        if (counted := [j for j in run.ended() if not ran_again(j)])
                    ]
                ),
            }
        )
    _compute_saved(arm_rows)

    reach: dict[str, dict[str, dict[str, Any]]] = {}
    for row in arm_rows:
        reach[row["arm"]] = {}
        for other in arm_rows:
            target = other["best_median"]
            if other is row or target is None:
                continue
            hits = [_reach(c, target, maximize) for c in curves[row["arm"]]]
            reached = [h for h in hits if h is not None]
            reach[row["arm"]][other["arm"]] = {
                "target": target,
                "jobs_median": _median([float(h) for h in reached]),
                "runs_reaching": len(reached),
                "runs": len(hits),
            }

    completed = [
        (run, j)
        for run in runs
        for j in run.jobs
        if j.status is TrainingStatus.COMPLETED and j.objective is not None
    ]
    completed.sort(key=lambda rj: rj[1].objective or 0.0, reverse=maximize)
    ranges = merged_ranges(runs)
    names = list(ranges)
    steps = {r.record.name: store.metric_counts(r.record.name, metric) for r in runs}
    points = [
        {"arm": run.arm, "objective": j.objective, "hyperparameters": _with_static(run, j, names)}
        for run, j in completed
    ]
    return {
        "generated_at": time.time(),
        "objective": {"metric": metric, "type": kind},
        "not_ended": [r.record.name for r in runs if not r.record.status.terminal],
        "hyperparameter_ranges": ranges,
        "arms": arm_rows,
        "curves": curves,
        "reach": reach,
        "top": [
            {
                "arm": run.arm,
                "tuning_job": run.record.name,
                "training_job": j.name,
                "objective": j.objective,
                "hyperparameters": _with_static(run, j, names),
                "artifacts_uri": j.artifacts_uri,
            }
            for run, j in completed[:10]
        ],
        "points": points,
        "importance": [
            {
                "arm": arm,
                **arm_importance(
                    merged_ranges(members),
                    [p for p in points if p["arm"] == arm],
                    maximize,
                    cap_for(len(arms)),
                ),
            }
            for arm, members in arms.items()
        ]
        if importance
        else [],
        "failed_jobs": [
            {
                "arm": run.arm,
                "training_job": j.name,
                "status": j.status.value,
                "reason": j.failure_reason,
            }
            for run in runs
            for j in run.jobs
            if j.status is TrainingStatus.FAILED
        ],
        "warm_starts": [
            {
                "run": run.record.name,
                "arm": run.arm,
                **(warm_start_summary(run.record.warm_start) or {}),
            }
            for run in runs
            if run.record.warm_start
        ],
        "training_job_count": sum(len(run.jobs) for run in runs),
        "training_jobs": [
            {
                **training_job_dict(j),
                "queued_seconds": j.queued_seconds,
                "arm": run.arm,
                "seed": run.record.definition.get("tags", {}).get("seed"),
                "steps": steps[run.record.name].get(j.name, 0),
            }
            for run in runs
            for j in run.jobs
        ],
    }
