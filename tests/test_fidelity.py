"""Rank agreement of early steps with final objectives (``tuner.fidelity``), on scripted curves."""

from __future__ import annotations

import math
import random

import pytest

from tuner.definition import TuningJobDefinition
from tuner.errors import ValidationError
from tuner.fidelity import (
    Curve,
    completed_curves,
    listed_steps,
    step_agreement,
    suggest_min_resource,
)
from tuner.metrics import MetricPoint, ObjectiveAggregation, final_objective
from tuner.records import ObjectiveStatus, TrainingJob, TrainingStatus


def crossing(n: int, steps: int, cross_at: int) -> list[Curve]:
    """n jobs whose values rank in reverse before ``cross_at`` and as they end from it on."""
    curves = []
    for i in range(n):
        x = i / n
        curves.append(Curve([1 - x if s < cross_at else x for s in range(1, steps + 1)], x))
    return curves


def test_the_first_step_that_ranks_as_the_end_is_suggested():
    rows = step_agreement(crossing(10, 9, 3), maximize=True)
    assert [r.step for r in rows] == list(range(1, 10))
    assert rows[0].spearman == pytest.approx(-1.0) and rows[0].best_kept == 0.0
    assert rows[2].spearman == pytest.approx(1.0) and rows[2].best_kept == 1.0
    assert suggest_min_resource(rows) == 3


def test_minimized_objectives_rank_low_values_first():
    curves = [Curve([2 * i, 9 - i, i, i], i) for i in range(10)]
    rows = step_agreement(curves, maximize=False)
    assert rows[0].spearman == pytest.approx(1.0) and rows[1].spearman == pytest.approx(-1.0)
    assert rows[0].best_kept == 1.0  # the lowest final value is kept by a cut on low values
    assert suggest_min_resource(rows, eta=2) == 1


def test_no_suggestion_without_room_for_a_halving_or_enough_jobs():
    late = step_agreement(crossing(10, 9, 4), maximize=True)
    assert suggest_min_resource(late) is None  # 4 * 3 > 9
    assert suggest_min_resource(late, eta=2) == 4
    few = step_agreement(crossing(5, 9, 1), maximize=True)
    assert few[0].spearman == pytest.approx(1.0)
    assert suggest_min_resource(few) is None  # 5 jobs are too few to say


def test_a_constant_step_has_no_correlation_and_diverged_values_rank_last():
    curves = [Curve([0.5, x], x) for x in (0.1, 0.2, 0.3)]
    assert step_agreement(curves, maximize=True)[0].spearman is None
    curves = [Curve([math.nan if x < 0.25 else x], x) for x in (0.1, 0.2, 0.3, 0.4)]
    assert step_agreement(curves, maximize=True)[0].spearman == pytest.approx(
        0.9486832980505138  # the two NaNs tie at the bottom
    )
    for maximize in (True, False):  # a value printed as inf is diverged too, as NaN is
        expected = step_agreement(curves, maximize)[0].spearman
        for bad in (math.inf, -math.inf):
            diverged = [Curve([bad if x < 0.25 else x], x) for x in (0.1, 0.2, 0.3, 0.4)]
            assert step_agreement(diverged, maximize)[0].spearman == pytest.approx(expected)


def definition(aggregation: str = "Last", objective_type: str = "Maximize") -> TuningJobDefinition:
    return TuningJobDefinition.parse(
        {
            "objective_metric_name": "acc",
            "objective_type": objective_type,
            "objective_aggregation": aggregation,
            "max_jobs": 1,
            "metric_definitions": [{"Name": "acc", "Regex": "acc=([0-9.]+)"}],
            "hyperparameter_ranges": {"x": {"type": "continuous", "min_value": 0, "max_value": 1}},
            "job_definition": {"command": ["true"]},
        }
    )


def curve(values: list[float], aggregation: str, maximize: bool) -> list[float]:
    points = {"j": [MetricPoint("acc", v, seq, 0.0) for seq, v in enumerate(values)]}
    d = definition(aggregation, "Maximize" if maximize else "Minimize")
    [found] = completed_curves([job("j", TrainingStatus.COMPLETED, 0.0)], points, d)
    return found.values


def test_each_step_is_read_as_the_objective_is_so_best_so_far_skips_diverged_values():
    assert curve([0.5, math.nan, 0.4, 0.7], "Best", maximize=True) == [0.5, 0.5, 0.5, 0.7]
    assert curve([3.0, 1.0, 2.0], "Best", maximize=False) == [3.0, 1.0, 1.0]
    assert math.isnan(curve([math.nan, 1.0], "Best", maximize=False)[0])
    assert curve([3.0, 1.0], "Last", maximize=False) == [3.0, 1.0]


def test_each_step_equals_the_objective_read_from_its_prefix():
    rng = random.Random(0)
    for aggregation in ("Last", "Best"):
        for maximize in (True, False):
            for _ in range(50):
                values = [rng.choice([math.nan, rng.random()]) for _ in range(rng.randint(1, 9))]
                points = [MetricPoint("acc", v, 3 * seq, 0.0) for seq, v in enumerate(values)]
                want = [
                    final_objective(points[:k], "acc", ObjectiveAggregation(aggregation), maximize)
                    for k in range(1, len(points) + 1)
                ]
                got = curve(values, aggregation, maximize)
                assert [repr(v) for v in got] == [repr(v) for v in want]  # nan == nan here


def test_long_curves_list_about_a_dozen_steps_from_the_first_to_the_last():
    steps = listed_steps(81)
    assert steps[0] == 1 and steps[-1] == 81 and 8 <= len(steps) <= 12
    assert steps == sorted(set(steps))


def job(name: str, status: TrainingStatus, objective: float | None) -> TrainingJob:
    return TrainingJob(
        name, "t", 1, status, ObjectiveStatus.SUCCEEDED, {}, objective,
        None, 0, None, None, None, 0.0, 0.0, 1.0,
    )  # fmt: skip


def test_only_jobs_that_ran_to_the_end_count():
    jobs = [
        job("done", TrainingStatus.COMPLETED, 0.9),
        job("stopped", TrainingStatus.STOPPED, 0.5),
        job("failed", TrainingStatus.FAILED, None),
        job("silent", TrainingStatus.COMPLETED, 0.8),
    ]
    points = {
        name: [MetricPoint("acc", v, seq, 0.0) for seq, v in enumerate(values)]
        for name, values in {"done": [0.5, 0.9], "stopped": [0.5], "failed": [0.1]}.items()
    }
    assert completed_curves(jobs, points, definition()) == [Curve([0.5, 0.9], 0.9)]


def test_eta_below_two_is_refused_with_the_value():
    with pytest.raises(ValidationError, match=r"eta .* must be >= 2; got 1"):
        step_agreement(crossing(10, 3, 1), maximize=True, eta=1)
