"""bench/early_stopping.py runs (tiny) so it cannot rot: real digits training, every arm."""

from __future__ import annotations

import math

from bench.early_stopping import (
    ARMS,
    Curves,
    Settings,
    boosting_best_problem,
    boosting_problem,
    digits_loss_problem,
    digits_problem,
    fidelity,
    proposals,
    run_problem,
)

CONFIG = {"learning_rate": 0.05, "momentum": 0.9, "wd": 1e-4}


def test_digits_and_digits_loss_read_one_training_of_each_configuration():
    accuracy, loss = digits_problem(), digits_loss_problem()
    assert accuracy.curves is loss.curves and accuracy.maximize and not loss.maximize
    before = accuracy.curves.trained_steps
    first, third = accuracy.value(CONFIG, 1), accuracy.value(CONFIG, 3)
    assert 0.5 < first <= third <= 1.0  # a sound configuration learns
    assert 0.0 < loss.value(CONFIG, 3) < loss.value(CONFIG, 1) < math.log(10)
    assert accuracy.curves.trained_steps - before <= 3  # the loss came with the accuracy


def test_boosting_best_is_the_running_minimum_of_boostings_rmse():
    last, best = boosting_problem(), boosting_best_problem()
    config = {"learning_rate": 0.8, "max_depth": 6, "subsample": 1.0, "min_samples_leaf": 1}
    rmse = [last.value(config, k) for k in range(1, 10)]
    assert [best.value(config, k) for k in range(1, 10)] == [min(rmse[:k]) for k in range(1, 10)]
    assert rmse[-1] > min(rmse)  # this configuration overfits: its last value turns up


def test_cached_curves_extend_with_the_same_values(tmp_path):
    trained = digits_problem().curves
    curve = [trained.value(CONFIG, k) for k in (1, 2)]
    trained.save(str(tmp_path / "digits.pickle"))
    make, step = trained._make, trained._step
    reloaded = Curves(make, step)
    reloaded.load(str(tmp_path / "digits.pickle"))
    assert [reloaded.value(CONFIG, k) for k in (1, 2)] == curve
    assert reloaded.trained_steps == 0  # read from the file
    longer = reloaded.value(CONFIG, 4)  # retrained from the start, deterministic
    assert reloaded.trained_steps == 4 and [reloaded.value(CONFIG, k) for k in (1, 2)] == curve
    assert longer == trained.value(CONFIG, 4)


def test_every_arm_runs_with_its_settings_and_reports(capsys):
    settings = Settings(max_resource=9, min_resource=1, eta=3)
    result = run_problem("digits-loss", [0], 2, 2, 1.0, settings, list(ARMS))
    assert [r["arm"] for r in result["rows"]] == list(ARMS)
    assert result["budget"] == 18 and 0 < result["target"] < math.log(10)
    random = next(r for r in result["rows"] if r["arm"] == "random")
    assert random["reached"] == 1 and random["to_target"] <= 18
    for row in result["rows"]:
        assert row["by_third"] <= row["reached"] <= 1 and row["wins"] in (0, 1)
    fidelity("digits", 6, Settings(max_resource=9, min_resource=3))
    out = capsys.readouterr().out
    assert "6 random configurations trained to R = 9" in out
    rungs = [line.split()[0] for line in out.splitlines()[-1:]]
    assert rungs == ["3"]  # rungs from min_resource: 3 (9 is R itself)


def test_rung_based_arms_run_once_per_min_resource_against_optuna_on_the_same_rungs():
    settings = [Settings(max_resource=9, min_resource=1), Settings(max_resource=9, min_resource=3)]
    result = run_problem(
        "boosting-best", [0], 2, 2, 1.0, settings, ["hyperband", "optuna-tpe+hyperband"]
    )
    rows = {r["arm"]: r for r in result["rows"]}
    assert list(rows) == [
        "random",
        "hyperband r=1",
        "hyperband r=3",
        "optuna-tpe+hyperband r=1",
        "optuna-tpe+hyperband r=3",
    ]
    # Each Optuna arm is its own reference: at least as good as itself in the one seed.
    assert rows["optuna-tpe+hyperband r=1"]["wins"] == rows["optuna-tpe+hyperband r=3"]["wins"] == 1


def test_proposals_report_each_samplers_final_values_and_the_comparison(capsys):
    proposals("boosting-best", [0], 2, 2, Settings(max_resource=9, min_resource=1), 10)
    out = capsys.readouterr().out
    assert "random reference (10)" in out and "optuna start-up" in out
    assert "hyperband-bayes random" in out
    assert "Optuna TPE + HyperbandPruner in" in out and "/1 seeds" in out
