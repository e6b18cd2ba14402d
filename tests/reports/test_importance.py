"""Hyperparameter importance (fANOVA through Optuna) per arm of a report."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys

import numpy as np

from tuner.records import TrainingStatus
from tuner.reports import build, report
from tuner.reports.importance import MAX_JOBS, MIN_JOBS, arm_importance, cap_for
from tuner.storage import Store

LOG_LR = {"type": "continuous", "min_value": 1e-5, "max_value": 1.0, "scaling_type": "Logarithmic"}
MOMENTUM = {"type": "continuous", "min_value": 0.0, "max_value": 0.99, "scaling_type": "Linear"}
OPTIMIZER = {"type": "categorical", "values": ["sgd", "adam", "rmsprop"]}
RANGES = {"learning_rate": LOG_LR, "momentum": MOMENTUM, "optimizer": OPTIMIZER}


def jobs(n: int, seed: int = 0) -> list[tuple[dict, float]]:
    """Configurations sampled as the tuner samples them (the learning rate on its log scale):
    accuracy is a bump in log10(learning_rate) at -2, plus 0.1 for adam; momentum does
    nothing."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        config = {
            "learning_rate": float(10 ** rng.uniform(-5, 0)),
            "momentum": float(rng.uniform(0, 0.99)),
            "optimizer": str(rng.choice(OPTIMIZER["values"])),
        }
        accuracy = 0.9 - 0.02 * (math.log10(config["learning_rate"]) + 2) ** 2
        accuracy += 0.1 * (config["optimizer"] == "adam")
        out.append((config, accuracy))
    return out


def points(pairs: list[tuple[dict, float]]) -> list[dict]:
    return [{"objective": value, "hyperparameters": config} for config, value in pairs]


def test_the_hyperparameters_that_drive_the_objective_get_the_importance():
    row = arm_importance(RANGES, points(jobs(60)), maximize=True)
    shares = row["importance"]
    assert row["jobs"] == row["of"] == 60 and row["why"] is None
    assert set(shares) == set(RANGES)
    assert math.isclose(sum(shares.values()), 1.0, abs_tol=1e-9)
    assert shares["learning_rate"] > 0.3 and shares["optimizer"] > 0.2
    assert shares["momentum"] < 0.03
    assert arm_importance(RANGES, points(jobs(60)), maximize=True) == row  # seeded: the same


def test_a_categorical_hyperparameter_that_decides_alone_gets_nearly_all_of_it():
    pairs = [
        ({**c, "learning_rate": 0.01}, 1.0 if c["optimizer"] == "adam" else 0.0)
        for c, _ in jobs(40)
    ]
    shares = arm_importance(RANGES, points(pairs), maximize=True)["importance"]
    assert shares["optimizer"] > 0.9


def test_too_few_jobs_or_an_objective_that_never_varies_give_the_reason_not_figures():
    few = arm_importance(RANGES, points(jobs(MIN_JOBS - 1)), maximize=True)
    assert few["importance"] is None
    assert few["why"] == f"{MIN_JOBS - 1} completed jobs, fewer than the {MIN_JOBS} it needs"
    flat = arm_importance(RANGES, points([(c, 0.5) for c, _ in jobs(20)]), maximize=False)
    assert flat["importance"] is None and flat["why"] == "the objective had one value in every job"


def test_values_outside_the_range_and_objectives_that_are_not_finite_are_left_out():
    pairs = jobs(MIN_JOBS)
    odd = [
        ({**pairs[0][0], "learning_rate": 5.0}, 0.1),  # outside the range (a static value)
        ({**pairs[0][0], "optimizer": "lamb"}, 0.1),  # not a choice
        (pairs[1][0], math.nan),
        (pairs[2][0], math.inf),
        ({k: v for k, v in pairs[3][0].items() if k != "momentum"}, 0.2),  # not given
    ]
    row = arm_importance(RANGES, points(pairs + odd), maximize=True)
    assert row["jobs"] == row["of"] == MIN_JOBS and row["importance"] is not None


def test_an_arm_with_more_jobs_than_the_cap_is_judged_on_a_seeded_sample():
    many = points(jobs(MAX_JOBS + 40, seed=1))
    row = arm_importance({"learning_rate": LOG_LR, "momentum": MOMENTUM}, many, maximize=True)
    assert (row["jobs"], row["of"]) == (MAX_JOBS, MAX_JOBS + 40)
    assert row["importance"]["learning_rate"] > 0.8
    again = arm_importance({"learning_rate": LOG_LR, "momentum": MOMENTUM}, many, maximize=True)
    assert again == row


def test_a_report_of_many_arms_judges_fewer_jobs_in_each():
    """At most 1,000 jobs in all (a 20-arm report took 35 s with 200 each), never below the
    minimum an arm needs."""
    assert [cap_for(n) for n in (1, 5, 6, 20, 200)] == [MAX_JOBS, 200, 166, 50, MIN_JOBS]
    row = arm_importance(RANGES, points(jobs(80)), maximize=True, cap=50)
    assert (row["jobs"], row["of"]) == (50, 80) and row["importance"] is not None


def two_arms(store: Store) -> None:
    """``random`` (30 completed jobs) and ``bayes`` (4), maximizing ``acc``."""
    for name, arm, n in (("random-1", "random", 30), ("bayes-1", "bayes", 4)):
        definition = {
            "objective_metric_name": "acc",
            "objective_type": "Maximize",
            "hyperparameter_ranges": RANGES,
            "job_definition": {"static_hyperparameters": {"epochs": 3}},
            "tags": {"arm": arm},
        }
        store.create_tuning_job(name, definition)
        for number, (config, value) in enumerate(jobs(n), 1):
            job = store.create_training_job(name, number, config)
            store.finish_training_job(job.name, TrainingStatus.COMPLETED, value)


def test_a_report_shows_each_arms_importance_only_where_asked(tmp_path, sqlite_url):
    """Two arms in one store: the written report holds the table and the JSON figures; the
    cheap build (the dashboard's, the REST default) leaves them out."""
    store = Store(sqlite_url)
    two_arms(store)
    assert build(store, ["random-1", "bayes-1"])["importance"] == []
    data = build(store, ["random-1", "bayes-1"], importance=True)
    by_arm = {row["arm"]: row for row in data["importance"]}
    assert by_arm["random"]["importance"]["momentum"] < 0.1  # the one that does nothing
    assert by_arm["bayes"]["importance"] is None and by_arm["bayes"]["of"] == 4
    report(store, ["random-1", "bayes-1"], tmp_path / "report", "importance")
    text = (tmp_path / "report" / "report.md").read_text()
    table = text.split("## Hyperparameter importance (fANOVA)")[1].split("##")[0]
    header = "| arm | completed jobs used | learning_rate | momentum | optimizer | note |"
    assert header in table
    assert "| bayes | 4 | - | - | - | 4 completed jobs, fewer than the 10 it needs |" in table
    saved = json.loads((tmp_path / "report" / "report.json").read_text())
    assert [row["arm"] for row in saved["importance"]] == ["random", "bayes"]
    assert "Hyperparameter importance (fANOVA)" in (tmp_path / "report" / "report.html").read_text()


def test_ranges_that_cannot_be_read_give_the_reason_and_the_report_stands():
    """A record written outside the tuner's checks (a logarithmic range from -1)."""
    bad = {"x": {**LOG_LR, "min_value": -1}}
    row = arm_importance(bad, points(jobs(20)), maximize=True)
    assert row["importance"] is None and row["of"] == 20
    assert row["why"] == (
        "its ranges cannot be read: Logarithmic scaling needs min_value > 0, got min_value=-1"
    )


def test_a_hyperparameter_that_never_varied_explains_nothing():
    """fANOVA gave a lone one-choice categorical all of the importance."""
    only = {"type": "categorical", "values": ["a"]}
    pairs = [({**c, "only": "a"}, v) for c, v in jobs(20)]
    shares = arm_importance({**RANGES, "only": only}, points(pairs), maximize=True)["importance"]
    assert shares["only"] == 0.0 and math.isclose(sum(shares.values()), 1.0)
    alone = arm_importance({"only": only}, points(pairs), maximize=True)
    assert alone["importance"] is None
    assert alone["why"] == "every tuned hyperparameter had one value in every job"


def test_tuner_report_prints_each_arms_importance_ranked(tmp_path):
    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    two_arms(Store(url))
    argv = [sys.executable, "-m", "tuner", "--storage", url, "report", "random-1", "bayes-1"]
    done = subprocess.run(
        [*argv, "--out", str(tmp_path / "out")], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    line = next(x for x in done.stdout.splitlines() if x.startswith("importance (fANOVA)"))
    assert re.fullmatch(
        r"importance \(fANOVA\), random: learning_rate \d+%, optimizer \d+%, momentum \d+%", line
    ), line
    assert "bayes:" not in done.stdout  # too few jobs: the report's table says why
