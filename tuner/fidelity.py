"""How well a tuning job's early steps rank its final objectives: where early stopping can cut.

Every rung-based rule (the median rule, Hyperband, ASHA) stops a job because its value at step
k ranks it low, so it saves compute only from the steps whose ranking agrees with the final one.
From jobs that ran to the end (status Completed, with an objective), this measures per step k:

- ``spearman``: Spearman's rank correlation between the objective at step k (read from the
  objective metric's first k values as the job's objective is: the last value or the best so
  far) and the final objective, over the jobs that reported step k;
- ``best_kept``: of the final best tenth (at least one job), the share a cut at step k that keeps
  the best ``1/eta`` would have kept (a cut at random keeps ``1/eta`` on average).

``suggest_min_resource`` is the first step where both reach the thresholds below, with at
least ``MIN_JOBS`` jobs and room for one halving (step * eta <= the last step); None when there
is none (then early stopping will mostly discard the eventual winners). The thresholds are the
levels at which, in ``bench/early_stopping.py --fidelity``, a first rung stopped hurting
Hyperband (docs/benchmarks/early_stopping.md).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from tuner.definition import TuningJobDefinition
from tuner.errors import ValidationError
from tuner.metrics import MetricPoint, final_objective
from tuner.records import TrainingJob, TrainingStatus
from tuner.storage import Store

SPEARMAN_AT_LEAST = 0.65
BEST_KEPT_AT_LEAST = 0.7
MIN_JOBS = 6
MAX_ROWS = 12  # steps listed: all of them up to this many, else a geometric selection


@dataclass(frozen=True)
class StepAgreement:
    """One step's agreement with the final objective (see the module docstring)."""

    step: int
    jobs: int
    spearman: float | None
    best_kept: float | None


@dataclass(frozen=True)
class Curve:
    """A completed job's objective values per step (already aggregated) and its final one."""

    values: list[float]
    final: float


def listed_steps(last: int) -> list[int]:
    """Every step up to ``MAX_ROWS`` of them, else about that many spread geometrically."""
    if last <= MAX_ROWS:
        return list(range(1, last + 1))
    grid = np.geomspace(1, last, MAX_ROWS)
    return sorted({int(np.rint(s)) for s in grid})


def _score(values: np.ndarray, maximize: bool) -> np.ndarray:
    """Higher is better; a missing or diverged (NaN or infinite) value is the worst."""
    signed = values if maximize else -values
    return np.where(np.isfinite(signed), signed, -np.inf)


def step_agreement(curves: Sequence[Curve], maximize: bool, eta: int = 3) -> list[StepAgreement]:
    """Agreement of each listed step with the final objective over ``curves``."""
    if eta < 2:
        raise ValidationError(f"eta (the cut's reduction factor) must be >= 2; got {eta}")
    last = max((len(c.values) for c in curves), default=0)
    rows = []
    for step in listed_steps(last):
        reached = [c for c in curves if len(c.values) >= step]
        now = _score(np.array([c.values[step - 1] for c in reached], dtype=float), maximize)
        final = _score(np.array([c.final for c in reached], dtype=float), maximize)
        rows.append(StepAgreement(step, len(reached), *_agreement(now, final, eta)))
    return rows


def _agreement(now: np.ndarray, final: np.ndarray, eta: int) -> tuple[float | None, float | None]:
    n = len(now)
    if n < 2:
        return None, None
    from scipy.stats import spearmanr  # scipy loads only when a verb needs it (CLI start-up)

    rho = None  # undefined where either side is constant
    if np.unique(now).size > 1 and np.unique(final).size > 1:
        rho = float(spearmanr(now, final).statistic)
    best = set(np.argsort(-final, kind="stable")[: max(1, n // 10)].tolist())
    kept = set(np.argsort(-now, kind="stable")[: math.ceil(n / eta)].tolist())
    return rho, len(best & kept) / len(best)


def suggest_min_resource(rows: Sequence[StepAgreement], eta: int = 3) -> int | None:
    """The first step that ranks as the end does (see the module docstring), or None."""
    last = max((r.step for r in rows), default=0)
    for r in rows:
        if r.step * eta > last or r.jobs < MIN_JOBS:
            continue
        if r.spearman is None or r.best_kept is None:
            continue
        if r.spearman >= SPEARMAN_AT_LEAST and r.best_kept >= BEST_KEPT_AT_LEAST:
            return r.step
    return None


def completed_curves(
    jobs: Sequence[TrainingJob],
    points: dict[str, list[MetricPoint]],
    definition: TuningJobDefinition,
) -> list[Curve]:
    """The curves of the jobs that ran to the end (Completed, an objective, some points of the
    objective metric): at step k, the objective ``final_objective`` reads from steps 1..k.

    Linear in the points: for both aggregations the objective of steps 1..k is the objective of
    step k's point together with one point holding the objective of steps 1..k-1 (the last
    value; the best finite value so far), so each step folds one point into the previous one."""
    metric, aggregation = definition.objective_metric_name, definition.aggregation
    curves = []
    for j in jobs:
        series = sorted(points.get(j.name, []), key=lambda p: p.seq)
        if j.status is not TrainingStatus.COMPLETED or j.objective is None or not series:
            continue
        values: list[float] = []
        for point in series:
            earlier = [MetricPoint(metric, values[-1], point.seq - 1, 0.0)] if values else []
            value = final_objective([*earlier, point], metric, aggregation, definition.maximize)
            values.append(math.nan if value is None else value)
        curves.append(Curve(values, float(j.objective)))
    return curves


def report(rows: Sequence[StepAgreement], eta: int, jobs: int) -> dict[str, Any]:
    """What ``tuner fidelity --json`` prints (and ``GET /tuning-jobs/{name}/fidelity``
    returns): the rows, the suggestion and its rule."""
    return {
        "completed_jobs": jobs,
        "eta": eta,
        "steps": [asdict(r) for r in rows],
        "suggested_min_resource": suggest_min_resource(rows, eta),
        "rule": (
            f"first step with Spearman >= {SPEARMAN_AT_LEAST} and best tenth kept by a 1/{eta} "
            f"cut >= {BEST_KEPT_AT_LEAST}, over >= {MIN_JOBS} jobs, with step * {eta} <= last"
        ),
    }


def tuning_job_report(store: Store, name: str, eta: int = 3) -> dict[str, Any]:
    """``report`` for a stored tuning job (raises ``NotFoundError`` for an unknown name)."""
    definition = TuningJobDefinition.from_store(store.get_tuning_job(name).definition, name)
    metric = definition.objective_metric_name
    jobs = store.list_training_jobs(name)
    points = store.tuning_metric_points(name, metric)
    curves = completed_curves(jobs, points, definition)
    return report(step_agreement(curves, definition.maximize, eta), eta, len(curves))


__all__ = [
    "Curve",
    "StepAgreement",
    "completed_curves",
    "report",
    "step_agreement",
    "suggest_min_resource",
    "tuning_job_report",
]
