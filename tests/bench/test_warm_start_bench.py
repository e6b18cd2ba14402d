"""bench/warm_start.py runs (tiny) so it cannot rot: real digits training, both types."""

from __future__ import annotations

import math

from bench.warm_start import identical, transfer


def test_both_warm_start_figures_come_out():
    best, warm, cold, warm_near, cold_near = identical(0, parent_jobs=4, child_jobs=2)
    assert 0.5 < best <= 1.0
    assert warm in (1, 2, math.inf) and cold in (1, 2, math.inf)
    assert warm_near <= warm and cold_near <= cold  # within one image comes no later
    figures = transfer(0, parent_jobs=4, child_jobs=3)
    target, cold_jobs, child_jobs, child_best, cold_near, child_near, after_3 = figures
    assert after_3 in (-1.0, 0.0, 1.0)  # the child's best after 3 jobs against the cold job's
    assert cold_jobs in (1, 2, 3)  # the cold job reaches its own final best
    assert child_jobs in (1, 2, 3, math.inf) and 0.5 < child_best <= 1.0
    assert 0.5 < target <= 1.0
    assert cold_near <= cold_jobs and child_near <= child_jobs


def test_equal_jobs_figures_compare_bests_after_k_jobs():
    from bench.warm_start import transfer_figures

    config = {"learning_rate": 0.1, "momentum": 0.9, "wd": 1e-4}
    cold = [(config, v) for v in (0.90, 0.91, 0.92, 0.95, 0.95)]
    child = [(config, v) for v in (0.93, 0.93, 0.94, 0.94, 0.95)]
    figures = transfer_figures(cold, child, "accuracy")
    assert figures[:3] == (0.95, 4, 5)  # target, cold's and child's jobs to it
    assert figures[6:] == (1.0, 0.0)  # after 3 jobs 0.94 > 0.92; after 5 equal; 10, 20: none
    loss = transfer_figures(child, cold, "loss")  # minimized: lower is better
    assert loss[:3] == (0.93, 1, 1) and loss[6:] == (1.0, 1.0)  # 0.90 < 0.93 after 3 and 5


def test_parent_ranking_measure():
    from bench.warm_start import rank_parents

    (same, fewer) = rank_parents(9, seed=0, kinds=[(10, 1.0), (2, 0.5)])
    assert same == (1.0, 1.0, 1, 1)  # the child's own objective ranks itself perfectly
    rho, rho_good, found, of = fewer
    assert -1.0 <= rho <= 1.0 and -1.0 <= rho_good <= 1.0 and 0 <= found <= of == 1


def test_loss_objective_is_minimized_end_to_end():
    from bench.warm_start import jobs_to, measure, near

    target, cold_jobs, child_jobs, child_best, cold_near, child_near, _ = transfer(
        0, parent_jobs=4, child_jobs=3, objective="loss"
    )
    assert 0.0 < target < 2.3 and child_best > 0.0  # better than chance (ln 10)
    assert cold_jobs in (1, 2, 3) and child_jobs in (1, 2, 3, math.inf)
    assert cold_near <= cold_jobs and child_near <= child_jobs
    assert near(0.2, "loss") > 0.2 and near(0.9, "accuracy") < 0.9  # both one step easier
    config = {"learning_rate": 0.1, "momentum": 0.9, "wd": 1e-4}
    accuracy, loss = measure(config, 3)
    assert 0.5 < accuracy <= 1.0 and 0.0 < loss < 1.0
    assert jobs_to([(config, 0.3), (config, 0.19)], 0.2, "loss") == 2  # lower is better
    assert jobs_to([(config, 0.3), (config, 0.19)], 0.2) == 1  # accuracy: higher is better


def test_a_parent_without_wd_is_mapped_at_its_static_value():
    from bench.warm_start import DEFAULT_WD, best_of, evaluate, space, transfer_added, tune
    from tuner.warm_start import TRANSFER, ParentResults, take

    static = {"wd": DEFAULT_WD}
    parent = tune(space(with_wd=False), 10, 4, seed=0, static=static)
    assert all(set(config) == {"learning_rate", "momentum"} for config, _ in parent)
    definition = {"job_definition": {"static_hyperparameters": static}}
    warm = take(TRANSFER, space(1.0), True, [ParentResults("p", definition, parent)])
    first = warm.first[0]
    assert first["wd"] == DEFAULT_WD  # the added range takes the parent's static value
    assert first["learning_rate"] < 1.0  # seed 0's best is inside the child's range, unclipped
    assert evaluate(first, 10) == best_of(parent)  # same fidelity: the same result
    target, cold_jobs, child_jobs, child_best, cold_near, child_near, _ = transfer_added(
        0, parent_jobs=4, child_jobs=3
    )
    assert 0.5 < target <= 1.0 and cold_jobs in (1, 2, 3)
    assert child_jobs in (1, 2, 3, math.inf) and 0.5 < child_best <= 1.0
    assert cold_near <= cold_jobs and child_near <= child_jobs
