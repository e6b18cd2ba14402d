"""``tuner compare`` and ``tuner report``: arms x seeds as ordinary tuning jobs, and the report."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

from tests.conftest import fake_command
from tuner import TunerError, ValidationError
from tuner.comparison import ComparisonSpec, run_comparison
from tuner.errors import NotFoundError
from tuner.records import TrainingStatus, TuningStatus
from tuner.reports import build, report
from tuner.storage import Store


def spec_data(tmp_path: Path, **overrides) -> dict:
    data = {
        "name": "cmp",
        "seeds": [1, 2],
        "arms": [
            {"name": "random", "strategy": "Random", "max_jobs": 6, "max_parallel_jobs": 3},
            {
                "name": "bayes",
                "strategy": "Bayesian",
                "max_jobs": 4,
                "max_parallel_jobs": 2,
                "strategy_options": {"n_initial_points": 2},
            },
        ],
        "objective_metric_name": "accuracy",
        "metric_definitions": [{"Name": "accuracy", "Regex": r"accuracy=([0-9.]+)"}],
        "hyperparameter_ranges": {
            "x": {
                "type": "continuous",
                "min_value": 0.01,
                "max_value": 1.0,
                "scaling_type": "Logarithmic",
            },
            "y": {"type": "continuous", "min_value": 0.0, "max_value": 1.0},
        },
        "job_definition": {"command": fake_command(), "output_path": str(tmp_path / "runs")},
    }
    data.update(overrides)
    return data


def test_every_arm_and_seed_is_a_tagged_tuning_job(tmp_path, sqlite_url):
    spec = ComparisonSpec.parse(spec_data(tmp_path))
    names = run_comparison(spec, storage=sqlite_url)
    assert names == ["cmp-random-s1", "cmp-random-s2", "cmp-bayes-s1", "cmp-bayes-s2"]
    store = Store(sqlite_url)
    for name in names:
        record = store.get_tuning_job(name)
        assert record.status.value == "Completed"
        assert record.definition["tags"]["comparison"] == "cmp"
    assert store.count_training_jobs("cmp-random-s1") == 6
    assert store.count_training_jobs("cmp-bayes-s2") == 4
    # a second run reuses what has ended
    assert run_comparison(spec, storage=sqlite_url) == names
    assert store.count_training_jobs("cmp-random-s1") == 6

    data = build(store, names)
    arms = {a["arm"]: a for a in data["arms"]}
    assert set(arms) == {"random", "bayes"}
    assert len(arms["random"]["best_per_run"]) == 2
    assert arms["random"]["completed"] == 12 and arms["random"]["failed"] == 0
    assert arms["random"]["compute_unit"] == "CPU-hours" and arms["random"]["compute_hours"] > 0
    assert data["reach"]["random"]["bayes"]["runs"] == 2
    assert data["top"][0]["objective"] == max(a["best_overall"] for a in arms.values())
    curve = data["curves"]["random"][0]
    assert [p["jobs"] for p in curve] == list(range(1, 7))
    bests = [p["best"] for p in curve]
    assert bests == sorted(bests)  # best so far never gets worse


def test_reach_counts_the_jobs_until_another_arms_best(tmp_path, sqlite_url):
    store = Store(sqlite_url)
    from tuner.records import TrainingStatus

    for name, arm, values in (("a", "fast", [0.5, 0.9, 0.95]), ("b", "slow", [0.1, 0.2, 0.9])):
        store.create_tuning_job(
            name,
            {
                "objective_metric_name": "m",
                "hyperparameter_ranges": {},
                "tags": {"arm": arm},
                "objective_type": "Maximize",
            },
        )
        for i, v in enumerate(values, start=1):
            job = store.create_training_job(name, i, {})
            store.finish_training_job(job.name, TrainingStatus.COMPLETED, v)
    data = build(store, ["a", "b"])
    assert data["reach"]["fast"]["slow"]["jobs_median"] == 2  # 0.9 reached at job 2
    assert data["reach"]["slow"]["fast"]["jobs_median"] is None  # never reached 0.95


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"arms": []}, "arms: List should have at least 1 item"),
        (
            {"arms": [{"name": "a", "strategy": "Random", "max_jobs": 2}] * 2},
            "arm names must be unique, got 'a' twice",
        ),
        (
            {"arms": [{"name": "a", "strategy": "Magic", "max_jobs": 2}]},
            "arm 'a', seed 1: invalid tuning job definition:\n  strategy: strategy must be one of",
        ),
        (
            {"arms": [{"name": "a", "strategy": "Random", "max_jobs": 2, "max_parallel_jobs": 4}]},
            "max_parallel_jobs <= max_jobs must hold",
        ),
        ({"seeds": [1, 1]}, "seeds must be distinct"),
        (
            {"arms": [{"name": "a", "strategy": "Random"}]},
            "arm 'a', seed 1: invalid tuning job definition:\n  max_jobs: required, missing",
        ),
        # numbers are numbers, as in a tuning job definition: true and "4" were read as 1 and 4
        ({"seeds": ["7"]}, "seeds.0: Input should be a valid integer (a whole number), got '7'"),
        (
            {"max_failed_jobs": True},
            "max_failed_jobs: Input should be a valid integer (a whole number), got True",
        ),
        ({"target_objective_value": "0.99"}, "target_objective_value: Input should be a valid"),
        (
            {"arms": [{"name": "a", "strategy": "Random", "max_jobs": True}]},
            "arms.0.max_jobs: Input should be a valid integer (a whole number), got True",
        ),
        ({"target_objective_value": float("nan")}, "target_objective_value: Input should be"),
        ({"name": "x" * 41}, "name: String should have at most 40 characters"),
        (  # the rules allowed it, then the run name was refused as a pattern mismatch
            {"name": "x" * 40, "arms": [{"name": "a" * 20, "strategy": "Random", "max_jobs": 1}]},
            f"its tuning job name '{'x' * 40}-{'a' * 20}-s1' has 64 characters, at most 63",
        ),
    ],
)
def test_bad_specs_name_the_rule(tmp_path, overrides, message):
    with pytest.raises(ValidationError) as info:
        ComparisonSpec.parse(spec_data(tmp_path, **overrides))
    assert message in str(info.value)


def test_a_grid_arm_without_max_jobs_runs_its_whole_grid(tmp_path):
    """As a tuning job definition does (and SageMaker): it was refused as required."""
    grid = {"name": "grid", "strategy": "Grid", "strategy_options": {"points_per_continuous": 3}}
    spec = ComparisonSpec.parse(spec_data(tmp_path, arms=[grid]))
    assert [d.max_jobs for d in spec.definitions()] == [9, 9]


def test_cli_compare_then_report(tmp_path):
    spec = tmp_path / "cmp.yaml"
    spec.write_text(yaml.safe_dump(spec_data(tmp_path, seeds=[3])))
    env = {**os.environ, "TUNER_DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite'}"}
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "tuner",
            "compare",
            str(spec),
            "--report-dir",
            str(tmp_path / "report"),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    assert "comparison cmp: 2 arms x 1 seed = 2 tuning jobs, at most 10 training jobs" in (
        run.stderr  # "1 seeds"
    )
    assert "random    Random" in run.stdout and "bayes  Bayesian" in run.stdout
    assert f"report: {tmp_path / 'report' / 'report.html'}" in run.stdout
    folder = tmp_path / "report"
    for name in (
        "report.html",
        "report.md",
        "report.json",
        "training_jobs.csv",
        "best_by_jobs.png",
        "best_by_time.png",
        "best_by_compute.png",
        "objective_vs_hyperparameters.png",
    ):
        assert (folder / name).stat().st_size > 0, name
    assert json.loads((folder / "report.json").read_text())["objective"]["metric"] == "accuracy"
    csv = pd.read_csv(folder / "training_jobs.csv")
    assert len(csv) == 10 and set(csv["Arm"]) == {"random", "bayes"}
    # one CSV shape: the report's columns are `tuner export`'s, after the run's name, arm, seed
    exported = subprocess.run(
        [sys.executable, "-m", "tuner", "export", "cmp-bayes-s3", "--csv", "export.csv"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    assert exported.returncode == 0, exported.stderr
    export = pd.read_csv(tmp_path / "export.csv")
    assert list(csv.columns) == ["TuningJobName", "Arm", "Seed", *export.columns]
    assert {"x", "y"} <= set(export.columns) and "hyperparameters" not in csv.columns
    mine = csv[csv["TuningJobName"] == "cmp-bayes-s3"].reset_index(drop=True)
    pd.testing.assert_frame_equal(mine[list(export.columns)], export)
    iso = r"20\d\d-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z"  # ISO 8601, not pandas' own form
    assert export["TrainingEndTime"].str.fullmatch(iso).all()
    assert csv["TrainingStartTime"].str.fullmatch(iso).all()
    markdown = (folder / "report.md").read_text()
    assert "| arm | strategy |" in markdown and "![best_by_jobs.png](best_by_jobs.png)" in markdown
    html = (folder / "report.html").read_text()
    assert html.count("data:image/png;base64,") == 4 and "http" not in html.replace(
        "http-equiv", ""
    )

    again = subprocess.run(
        [
            sys.executable,
            "-m",
            "tuner",
            "report",
            "cmp-random-s3",
            "cmp-bayes-s3",
            "--out",
            str(tmp_path / "again"),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    assert again.returncode == 0, again.stderr
    assert (tmp_path / "again" / "report.html").exists()
    bad = subprocess.run(
        [sys.executable, "-m", "tuner", "report", "ghost"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    assert bad.returncode == 2 and "no tuning job named 'ghost'" in bad.stderr


def test_compare_writes_the_report_when_every_job_failed(tmp_path):
    """Issue 12: two arms, a log-scaled range and no successful job crashed the plots; the
    report must still be written, say that nothing succeeded and list each job's reason."""
    data = spec_data(tmp_path, seeds=[1])
    data["arms"] = [
        {"name": "random", "strategy": "Random", "max_jobs": 2, "max_parallel_jobs": 2},
        {"name": "bayes", "strategy": "Bayesian", "max_jobs": 2, "max_parallel_jobs": 1},
    ]
    data["job_definition"]["command"] = [sys.executable, str(tmp_path / "trian.py")]
    spec = tmp_path / "cmp.yaml"
    spec.write_text(yaml.safe_dump(data))
    env = {**os.environ, "TUNER_DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite'}"}
    run = subprocess.run(
        [sys.executable, "-m", "tuner", "compare", str(spec), "--report-dir", "report"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
    )
    assert "Traceback" not in run.stderr, run.stderr
    assert run.returncode == 1  # a tuning job Failed: as `tuner run` says it
    assert "cmp-random-s1: Failed (no training job succeeded (2 of 2 failed)" in run.stdout
    folder = tmp_path / "report"
    for name in ("report.html", "report.md", "best_by_jobs.png", "best_by_time.png"):
        assert (folder / name).stat().st_size > 0, name
    assert (folder / "objective_vs_hyperparameters.png").stat().st_size > 0
    markdown = (folder / "report.md").read_text()
    assert "No training job succeeded: 4 failed, of 4." in markdown
    for arm in ("random", "bayes"):  # reasons grouped per arm, with counts
        assert f"| {arm} | 2 | exited with code 2; last log line: " in markdown
    for job in ("cmp-random-s1-001", "cmp-random-s1-002", "cmp-bayes-s1-001", "cmp-bayes-s1-002"):
        line = next(row for row in markdown.splitlines() if f"| {job} |" in row)
        assert "trian.py" in line and "Failed" in line
    html = (folder / "report.html").read_text()
    assert "No training job succeeded: 4 failed, of 4." in html


def test_the_report_shows_compute_and_what_early_stopping_saved(tmp_path, sqlite_url):
    curve = Path(__file__).parents[1] / "jobs" / "curve_train.py"
    arm = {"strategy": "Random", "max_jobs": 8, "max_parallel_jobs": 2}
    data = spec_data(
        tmp_path,
        seeds=[4],
        arms=[
            {"name": "full", **arm},
            {"name": "auto", **arm, "early_stopping_type": "Auto"},
            {
                "name": "hyperband",
                **arm,
                "strategy": "Hyperband",
                "strategy_config": {"min_resource": 1, "max_resource": 9},
            },
        ],
        metric_definitions=[{"Name": "accuracy", "Regex": r"accuracy=([0-9.]+)"}],
        hyperparameter_ranges={"x": {"type": "continuous", "min_value": 0, "max_value": 1}},
        job_definition={
            "command": [sys.executable, str(curve)],
            "static_hyperparameters": {"epochs": 9, "step_sleep": 0.1},
            "output_path": str(tmp_path / "runs"),
        },
    )
    names = run_comparison(ComparisonSpec.parse(data), storage=sqlite_url)
    report = build(Store(sqlite_url), names)
    arms = {a["arm"]: a for a in report["arms"]}
    assert arms["full"]["stopped_early"] == 0 and arms["full"]["compute_saved"] is None
    for name in ("auto", "hyperband"):
        assert arms[name]["early_stopping"] and arms[name]["compute_reference"] == "full"
        assert arms[name]["stopped_early"] >= 1
        per_job = "compute_seconds_per_job_median"
        saved = 1 - arms[name][per_job] / arms["full"][per_job]
        assert arms[name]["compute_saved"] == pytest.approx(saved) and saved > 0
    for runs in report["curves"].values():
        used = [p["compute_seconds"] for p in runs[0]]
        assert used == sorted(used) and used[-1] > 0


def _ended_run(store: Store, name: str, ranges: dict, static: dict, jobs: list[tuple]) -> None:
    """A tuning job recorded straight in the store: ``jobs`` are (hyperparameters, objective)."""
    store.create_tuning_job(
        name,
        {
            "objective_metric_name": "acc",
            "objective_type": "Maximize",
            "hyperparameter_ranges": ranges,
            "job_definition": {"static_hyperparameters": static},
        },
    )
    for number, (config, objective) in enumerate(jobs, 1):
        job = store.create_training_job(name, number, config)
        store.finish_training_job(job.name, TrainingStatus.COMPLETED, objective)


def test_a_report_of_runs_with_different_ranges_merges_them(tmp_path, sqlite_url):
    """A parent and a TransferLearning child that retyped ``y`` (numbers, then categories) and
    added ``z`` (static in the parent): one report, every range, a parent's static value shown
    where the child tunes it, and the plot drawn (it raised ValueError on '0.37' before)."""
    store = Store(sqlite_url)
    numeric = {"type": "continuous", "min_value": 0, "max_value": 1, "scaling_type": "Linear"}
    _ended_run(
        store,
        "parent",
        {"x": numeric, "y": numeric, "w": {"type": "categorical", "values": ["a", "b"]}},
        {"z": 4},
        [({"x": 0.2, "y": 0.37, "w": "a"}, 0.8), ({"x": 0.9, "y": 0.6, "w": "b"}, 0.7)],
    )
    _ended_run(
        store,
        "child",
        {
            "x": {**numeric, "min_value": -1, "scaling_type": "Logarithmic"},
            "y": {"type": "categorical", "values": ["0.5", "0.6"]},
            "z": {"type": "integer", "min_value": 1, "max_value": 8},
            "w": {"type": "categorical", "values": ["b", "c"]},
        },
        {},
        [({"x": 0.3, "y": "0.5", "z": 2, "w": "c"}, 0.9)],
    )
    data = build(store, ["child", "parent"])
    assert data["hyperparameter_ranges"] == {
        "x": {"type": "continuous", "min_value": -1, "max_value": 1, "scaling_type": "Linear"},
        "y": {"type": "continuous", "min_value": 0.37, "max_value": 0.6, "scaling_type": "Linear"},
        "z": {"type": "integer", "min_value": 1, "max_value": 8, "scaling_type": "Linear"},
        "w": {"type": "categorical", "values": ["b", "c", "a"]},
    }
    assert {t["training_job"]: t["hyperparameters"]["z"] for t in data["top"]} == {
        "child-001": 2,
        "parent-001": 4,  # the parent's static value
        "parent-002": 4,
    }
    report(store, ["parent", "child"], tmp_path / "report", "parent and child")
    assert (tmp_path / "report" / "objective_vs_hyperparameters.png").stat().st_size > 0
    top = (tmp_path / "report" / "report.md").read_text().split("## Top configurations")[1]
    assert "| # | arm | training job | acc | x | y | w | z |" in top  # the parent's order first


def test_a_report_plots_only_the_values_a_range_can_place(tmp_path, sqlite_url):
    """Categories no merged range lists get ticks of their own; a text on a numeric range and a
    job without the hyperparameter are left out of its plot, never raised on."""
    store = Store(sqlite_url)
    _ended_run(
        store,
        "a",
        {"k": {"type": "categorical", "values": ["x"]}},
        {},
        [({"k": "x"}, 0.5), ({"k": "not listed"}, 0.6)],
    )
    _ended_run(
        store,
        "b",
        {"n": {"type": "continuous", "min_value": 0, "max_value": 1}},
        {},
        [({"n": "text"}, 0.4), ({}, 0.3), ({"n": 0.5}, 0.2)],
    )
    report(store, ["a", "b"], tmp_path / "report", "odd values")
    assert (tmp_path / "report" / "objective_vs_hyperparameters.png").stat().st_size > 0


def arms_of_jobs(
    url: str, arms: list[tuple[str, str, list[tuple[TrainingStatus, float | None, float]]]]
) -> Store:
    """A store holding one tuning job per arm (name, early_stopping_type, and its jobs' status,
    objective and seconds)."""
    store = Store(url)
    for arm, early, ends in arms:
        store.create_tuning_job(
            arm,
            {
                "objective_metric_name": "acc",
                "hyperparameter_ranges": {},
                "early_stopping_type": early,
                "tags": {"arm": arm},
            },
        )
        for number, (status, objective, seconds) in enumerate(ends, 1):
            job = store.create_training_job(arm, number, {})
            reason = "early stopping at step 3" if status is TrainingStatus.STOPPED else None
            store.finish_training_job(
                job.name, status, objective, reason, began_at=1000.0, ended_at=1000.0 + seconds
            )
    return store


def test_compute_saved_is_per_job_so_arms_of_other_budgets_compare(sqlite_url):
    """An early-stopping arm given twice the jobs read "0% saved" though each of its jobs
    used half the compute of a full-budget job."""
    store = arms_of_jobs(
        sqlite_url,
        [
            ("full", "Off", [(TrainingStatus.COMPLETED, 0.7, 10.0)] * 2),
            (
                "auto",
                "Auto",
                [(TrainingStatus.STOPPED, 0.5, 5.0)] * 3 + [(TrainingStatus.COMPLETED, 0.8, 5.0)],
            ),
        ],
    )
    arms = {a["arm"]: a for a in build(store, ["full", "auto"])["arms"]}
    assert arms["auto"]["compute_seconds_median"] == arms["full"]["compute_seconds_median"] == 20
    assert arms["auto"]["compute_saved"] == pytest.approx(0.5)
    from tuner.summary import NOT_STARTED

    for number in range(5, 11):  # starts the engine did not take: no job, no compute
        job = store.create_training_job("auto", number, {})
        store.finish_training_job(job.name, TrainingStatus.STOPPED, None, f"{NOT_STARTED}away")
    arms = {a["arm"]: a for a in build(store, ["full", "auto"])["arms"]}
    assert arms["auto"]["compute_saved"] == pytest.approx(0.5)  # was 0.8: ten "jobs" counted
    from tuner.summary import STOPPED_BY_SIGNAL

    # a Ctrl-C stopped an attempt of the reference arm after 6 s; its configuration ran again:
    # its compute was used (the arm's total), but says nothing of the arm per job (a QA
    # helper: "56% saved" after a resume against 47% uninterrupted)
    job = store.create_training_job("full", 3, {})
    store.finish_training_job(
        job.name, TrainingStatus.STOPPED, None, STOPPED_BY_SIGNAL, began_at=1000.0, ended_at=1006.0
    )
    arms = {a["arm"]: a for a in build(store, ["full", "auto"])["arms"]}
    assert arms["full"]["compute_seconds_median"] == 26
    assert arms["full"]["compute_seconds_per_job_median"] == 10
    assert arms["auto"]["compute_saved"] == pytest.approx(0.5)


def test_compute_saved_is_measured_against_a_full_budget_arm_with_a_result(sqlite_url):
    """An arm whose every job failed trained nothing to the end: the stopping arm's saving is
    against the next full-budget arm (it read -32% against the failed arm before)."""
    store = arms_of_jobs(
        sqlite_url,
        [
            ("broken", "Off", [(TrainingStatus.FAILED, None, 2.0)] * 2),
            ("full", "Off", [(TrainingStatus.COMPLETED, 0.7, 10.0)] * 2),
            (
                "auto",
                "Auto",
                [(TrainingStatus.COMPLETED, 0.8, 10.0), (TrainingStatus.STOPPED, 0.5, 5.0)],
            ),
        ],
    )
    arms = {a["arm"]: a for a in build(store, ["broken", "full", "auto"])["arms"]}
    assert arms["broken"]["best_median"] is None
    assert arms["auto"]["compute_reference"] == "full"
    assert arms["auto"]["compute_saved"] == pytest.approx(1 - 15 / 20)
    only_broken = {a["arm"]: a for a in build(store, ["broken", "auto"])["arms"]}
    assert only_broken["auto"]["compute_reference"] is None
    assert only_broken["auto"]["compute_saved"] is None


def test_names_with_dollars_and_a_huge_categorical_range_are_plotted(tmp_path, sqlite_url):
    """Two '$' in a name are text, not matplotlib's maths (a ParseSyntaxException and a 500 on
    the HTML report before); of 20,000 categories only the ones jobs used are placed."""
    store = Store(sqlite_url)
    categories = [f"v{i}" for i in range(20_000)]
    _ended_run(
        store,
        "dollars",
        {
            "price_$_usd_$": {"type": "continuous", "min_value": 0, "max_value": 1},
            "c": {"type": "categorical", "values": categories},
        },
        {},
        [({"price_$_usd_$": 0.5, "c": "v7"}, 0.5), ({"price_$_usd_$": 0.2, "c": "v19999"}, 0.6)],
    )
    report(store, ["dollars"], tmp_path / "report", "cost $\\frac{1$")
    assert (tmp_path / "report" / "objective_vs_hyperparameters.png").stat().st_size > 0
    assert "price_$_usd_$" in (tmp_path / "report" / "report.html").read_text()


def test_a_report_of_odd_names_and_values_is_written_whole_and_strict(tmp_path, sqlite_url):
    """A hyperparameter named Seed crashed the CSV (`cannot insert Seed`); an infinite objective
    made report.json invalid JSON (bare Infinity); Markdown passed HTML and '|' in headers and
    newlines in cells through."""
    store = Store(sqlite_url)
    seed = {"type": "integer", "min_value": 1, "max_value": 5}
    _ended_run(
        store,
        "odd",
        {"Seed": seed, "a|b": {"type": "categorical", "values": ["<script>x</script>", "l1\nl2"]}},
        {},
        [
            ({"Seed": 3, "a|b": "<script>x</script>"}, float("inf")),
            ({"Seed": 4, "a|b": "l1\nl2"}, 0.5),
        ],
    )
    report(store, ["odd"], tmp_path / "report", "odd <b>names</b>")
    folder = tmp_path / "report"

    def refuse(constant: str) -> None:
        raise AssertionError(f"{constant} is not JSON")

    data = json.loads((folder / "report.json").read_text(), parse_constant=refuse)
    assert sorted(p["objective"] for p in data["points"] if p["objective"] is not None) == [0.5]
    csv = pd.read_csv(folder / "training_jobs.csv")
    assert list(csv.columns[:3]) == ["TuningJobName", "Arm", "Seed"]
    assert list(csv["Seed (hyperparameter)"]) == [3, 4]
    markdown = (folder / "report.md").read_text()
    assert "<script>" not in markdown and "<b>" not in markdown
    assert "&lt;script&gt;x&lt;/script&gt;" in markdown and "l1 l2" in markdown
    table = [line for line in markdown.splitlines() if line.startswith("| ") and "a\\|b" in line]
    assert table  # the header's '|' is escaped: every row keeps its column count
    for line in markdown.splitlines():
        if line.startswith("|") and "a\\|b" in line:
            columns = len(line.replace("\\|", "").split("|"))
            following = markdown.split(line, 1)[1].splitlines()[1]
            assert len(following.replace("\\|", "").split("|")) == columns


def test_the_headline_says_what_jobs_without_an_objective_are(sqlite_url):
    """A report of a running tuning job said in red 'No training job succeeded: 0 of 2 failed'."""
    from tuner.reports.render import headline

    store = Store(sqlite_url)
    _ended_run(store, "busy", {}, {}, [])
    for number in (1, 2):
        store.create_training_job("busy", number, {})
    store.mark_started("busy-001", "local:0:0:busy-001", "/tmp")
    assert headline(build(store, ["busy"])) == (
        "No training job has an objective yet: 1 pending, 1 running, of 2.",
        False,
    )
    store.finish_training_job("busy-001", TrainingStatus.STOPPED)
    store.finish_training_job("busy-002", TrainingStatus.FAILED, failure_reason="boom")
    assert headline(build(store, ["busy"])) == (
        "No training job succeeded: 1 stopped, 1 failed, of 2.",
        True,
    )


def test_analytics_keeps_a_hyperparameter_named_as_a_fixed_column(tmp_path, sqlite_url):
    """Hyperparameters named TrainingJobName and FinalObjectiveValue overwrote those columns."""
    from tuner.analytics import TuningJobAnalytics

    store = Store(sqlite_url)
    _ended_run(
        store, "clash", {}, {}, [({"TrainingJobName": 3, "FinalObjectiveValue": 5.8}, 0.954)]
    )
    frame = TuningJobAnalytics(
        ["TrainingJobName", "FinalObjectiveValue"],
        "acc",
        lambda: store.list_training_jobs("clash"),
    ).dataframe()
    assert frame.columns.is_unique
    row = frame.iloc[0]
    assert row["TrainingJobName"] == "clash-001" and row["FinalObjectiveValue"] == 0.954
    assert row["TrainingJobName (hyperparameter)"] == 3
    assert row["FinalObjectiveValue (hyperparameter)"] == 5.8


def test_analytics_keeps_a_hyperparameter_named_as_another_ones_column(tmp_path, sqlite_url):
    """QA: with hyperparameters ``Seed`` and ``Seed (hyperparameter)`` both columns were named
    the second and held its values: ``Seed``'s values were lost from export and reports."""
    from tuner.analytics import TuningJobAnalytics, parameter_columns

    names = ["Seed", "Seed (hyperparameter)", "x"]
    assert parameter_columns(names) == [
        "Seed (hyperparameter) (hyperparameter)",
        "Seed (hyperparameter)",
        "x",
    ]
    store = Store(sqlite_url)
    _ended_run(store, "two", {}, {}, [({"Seed": 195, "Seed (hyperparameter)": 314, "x": 1}, 0.9)])
    frame = TuningJobAnalytics(names, "acc", lambda: store.list_training_jobs("two")).dataframe()
    assert frame.columns.is_unique
    row = frame.iloc[0]
    assert row["Seed (hyperparameter) (hyperparameter)"] == 195
    assert row["Seed (hyperparameter)"] == 314


def test_a_report_of_a_tuning_job_still_running_says_so(sqlite_url):
    """QA: a report of a running tuning job read like a finished one."""
    from tuner.records import TuningStatus
    from tuner.reports.render import headline, render_html

    store = Store(sqlite_url)
    _ended_run(store, "running", {}, {}, [({}, 0.5)])
    _ended_run(store, "done", {}, {}, [({}, 0.6)])
    store.set_tuning_status("done", TuningStatus.COMPLETED)
    data = build(store, ["running", "done"])
    note = "Not ended yet: running; the figures below may still change."
    assert headline(data) == (note, False) and note in render_html(data, "t", {})
    store.set_tuning_status("running", TuningStatus.COMPLETED)
    assert headline(build(store, ["running", "done"])) is None


def test_an_arm_without_a_result_saved_no_compute():
    """An early-stopping arm whose every job failed was credited '69% saved'."""
    from tuner.reports.data import _compute_saved

    rows = [
        {
            "arm": "good",
            "early_stopping": False,
            "compute_seconds_per_job_median": 100.0,
            "best_median": 0.9,
            "compute_unit": "CPU-hours",
        },
        {
            "arm": "bad-auto",
            "early_stopping": True,
            "compute_seconds_per_job_median": 31.0,
            "best_median": None,
            "compute_unit": "CPU-hours",
        },
        {
            "arm": "auto",
            "early_stopping": True,
            "compute_seconds_per_job_median": 40.0,
            "best_median": 0.8,
            "compute_unit": "CPU-hours",
        },
    ]
    _compute_saved(rows)
    assert [r["compute_saved"] for r in rows] == [None, None, pytest.approx(0.6)]


def test_a_report_folder_that_cannot_be_written_is_one_clear_error(sqlite_url):
    """A traceback (FileNotFoundError) and exit 1, which says a tuning job failed."""
    store = Store(sqlite_url)
    _ended_run(store, "nowhere", {}, {}, [({}, 0.5)])
    with pytest.raises(TunerError, match=r"cannot write the report to /proc/nope: "):
        report(store, ["nowhere"], "/proc/nope", "t")


def test_a_report_folder_that_cannot_be_made_is_refused_before_any_arm_runs(
    tmp_path, sqlite_url, capsys
):
    """Every arm ran (hours on a GPU) before ``tuner compare`` found that its report folder,
    under a file, could not be made ("Not a directory")."""
    from tuner.cli import main

    (tmp_path / "afile").write_text("")
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump(spec_data(tmp_path)))
    out = tmp_path / "afile" / "sub"
    code = main(["--storage", sqlite_url, "compare", str(spec), "--report-dir", str(out)])
    assert code == 2
    assert capsys.readouterr().err.endswith(
        f"tuner: error: cannot write the report to {out}: {tmp_path / 'afile'} is a file, "
        "not a folder\n"
    )
    assert Store(sqlite_url).list_tuning_jobs() == []  # nothing ran


def test_a_run_made_from_another_spec_is_refused_before_anything_runs(tmp_path, sqlite_url):
    """A changed spec silently reused the old runs (another max_jobs, another strategy); a
    changed objective ran new jobs and then failed the report for good; comparison 'col' arm
    'x-r' reused comparison 'col-x' arm 'r' (both 'col-x-r-s1')."""
    one_arm = {"arms": [{"name": "r", "strategy": "Random", "max_jobs": 2, "max_parallel_jobs": 2}]}
    first = ComparisonSpec.parse(spec_data(tmp_path, seeds=[1], **one_arm))
    run_comparison(first, storage=sqlite_url)
    store = Store(sqlite_url)
    assert run_comparison(first, storage=sqlite_url) == ["cmp-r-s1"]  # unchanged: reused
    arms = [{"name": "r", "strategy": "Random", "max_jobs": 3, "max_parallel_jobs": 2}]
    changed = [
        (spec_data(tmp_path, seeds=[1, 2], arms=arms), "max_jobs differ"),
        (spec_data(tmp_path, seeds=[2, 1], objective_type="Minimize", **one_arm), "objective_type"),
    ]
    for data, words in changed:
        with pytest.raises(
            ValidationError, match=f"cmp-r-s1 was run from another version.*{words}"
        ):
            run_comparison(ComparisonSpec.parse(data), storage=sqlite_url)
    assert "cmp-r-s2" not in [t.name for t in store.list_tuning_jobs()]  # nothing ran
    run_comparison(_renamed(first, "col-x", "r"), storage=sqlite_url)  # col-x-r-s1
    with pytest.raises(ValidationError, match="belongs to comparison 'col-x', arm 'r', seed '1'"):
        run_comparison(_renamed(first, "col", "x-r"), storage=sqlite_url)  # col-x-r-s1 too


def _renamed(spec: ComparisonSpec, name: str, arm: str) -> ComparisonSpec:
    """``spec`` as comparison ``name`` with its one arm named ``arm`` (run names may collide)."""
    spec = spec.model_copy(deep=True)
    spec.name, spec.arms[0].name = name, arm
    return spec


def test_sigterm_stops_a_comparison_cleanly_and_running_it_again_resumes_the_arm(tmp_path):
    """SIGTERM killed `tuner compare` outright (exit 143) and left its jobs running unwatched;
    after Ctrl-C the interrupted arm was reused as ended, with fewer results than max_jobs."""
    data = spec_data(
        tmp_path,
        seeds=[1],
        arms=[{"name": "r", "strategy": "Random", "max_jobs": 3, "max_parallel_jobs": 1}],
    )
    data["job_definition"]["static_hyperparameters"] = {"sleep": 1.5, "epochs": 2}
    spec = tmp_path / "cmp.yaml"
    spec.write_text(yaml.safe_dump(data))
    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    env = {**os.environ, "TUNER_DATABASE_URL": url}
    command = [sys.executable, "-m", "tuner", "compare", str(spec), "--no-progress"]
    compare = subprocess.Popen(command, env=env, cwd=tmp_path, stderr=subprocess.PIPE, text=True)
    store = Store(url)
    deadline = time.monotonic() + 60
    while not any(j.status is TrainingStatus.IN_PROGRESS for j in _jobs(store, "cmp-r-s1")):
        assert time.monotonic() < deadline and compare.poll() is None
        time.sleep(0.1)
    compare.send_signal(signal.SIGTERM)
    _, stderr = compare.communicate(timeout=60)
    assert compare.returncode == 130, stderr
    assert "run `tuner compare" in stderr and "again to resume" in stderr
    record = store.get_tuning_job("cmp-r-s1")
    assert (record.status.value, record.status_reason) == ("Stopped", "interrupted")
    stopped = [j for j in _jobs(store, "cmp-r-s1") if j.status is TrainingStatus.STOPPED]
    assert stopped and all(j.failure_reason == "stopped by the tuner" for j in stopped)

    again = subprocess.run(command, env=env, cwd=tmp_path, capture_output=True, timeout=120)
    assert again.returncode == 0, again.stderr
    assert store.get_tuning_job("cmp-r-s1").status.value == "Completed"
    jobs = _jobs(store, "cmp-r-s1")
    assert sum(j.status is TrainingStatus.COMPLETED for j in jobs) == 3  # max_jobs results
    assert len(jobs) == 3 + len(stopped)  # the stopped ones did not use up max_jobs


def _jobs(store: Store, name: str):
    try:
        return store.list_training_jobs(name)
    except NotFoundError:
        return []


def test_objectives_are_shown_to_six_significant_digits(tmp_path, sqlite_url):
    """0.999998 was printed as 1 (four digits), and two close bests as a tie."""
    store = Store(sqlite_url)
    numeric = {"type": "continuous", "min_value": 0, "max_value": 1, "scaling_type": "Linear"}
    _ended_run(store, "close", {"x": numeric}, {}, [({"x": 0.25}, 0.999998), ({"x": 0.5}, 0.99997)])
    report(store, ["close"], tmp_path / "report", "close")
    markdown = (tmp_path / "report" / "report.md").read_text()
    assert "| 0.999998 |" in markdown and "| 0.99997 |" in markdown


def test_a_report_of_two_comparisons_keeps_their_same_named_arms_apart(sqlite_url):
    """Runs of two comparisons that both have a "random" arm were merged into one arm, its
    budget taken from whichever came first; now each is "comparison/arm"."""
    store = Store(sqlite_url)
    numeric = {"type": "continuous", "min_value": 0, "max_value": 1, "scaling_type": "Linear"}
    for comparison, max_jobs, objective in (("small", 2, 0.5), ("large", 8, 0.9)):
        name = f"{comparison}-random-s1"
        store.create_tuning_job(
            name,
            {
                "objective_metric_name": "acc",
                "objective_type": "Maximize",
                "hyperparameter_ranges": {"x": numeric},
                "max_jobs": max_jobs,
                "tags": {"comparison": comparison, "arm": "random", "seed": "1"},
            },
        )
        job = store.create_training_job(name, 1, {"x": 0.5})
        store.finish_training_job(job.name, TrainingStatus.COMPLETED, objective)
    arms = {a["arm"]: a for a in build(store, ["small-random-s1", "large-random-s1"])["arms"]}
    assert sorted(arms) == ["large/random", "small/random"]
    assert (arms["small/random"]["max_jobs"], arms["small/random"]["best_median"]) == (2, 0.5)
    assert (arms["large/random"]["max_jobs"], arms["large/random"]["best_median"]) == (8, 0.9)
    one = build(store, ["small-random-s1"])["arms"]  # one comparison: the plain arm name
    assert [a["arm"] for a in one] == ["random"]


def runs_of_jobs(url: str, runs: list[tuple[str, str, dict, list[tuple]]]) -> Store:
    """A store holding tuning jobs (name, arm, job_definition and definition fields, and its
    jobs' status, objective, seconds and failure reason), minimising ``loss``."""
    store = Store(url)
    for name, arm, fields, ends in runs:
        definition = {
            "objective_metric_name": "loss",
            "objective_type": "Minimize",
            "hyperparameter_ranges": {},
            "tags": {"arm": arm},
            **fields,
        }
        store.create_tuning_job(name, definition)
        for number, (status, objective, seconds, reason) in enumerate(ends, 1):
            job = store.create_training_job(name, number, {})
            store.finish_training_job(
                job.name, status, objective, reason, began_at=1000.0, ended_at=1000.0 + seconds
            )
    return store


DONE, FAILED = TrainingStatus.COMPLETED, TrainingStatus.FAILED


def test_a_run_without_a_result_counts_as_the_worst_in_its_arms_median(tmp_path, sqlite_url):
    """An arm that lost a seed (every job failed) showed the median of the others, 0.583 of
    0.333 and 0.833, and so ranked above an arm whose same seeds all ran."""

    def ended(*values):
        return [(DONE, v, 1.0, None) if v is not None else (FAILED, None, 1.0, "x") for v in values]

    store = runs_of_jobs(
        sqlite_url,
        [
            ("steady-1", "steady", {}, ended(0.5, 1 / 3)),
            ("steady-2", "steady", {}, ended(4 / 3)),
            ("steady-3", "steady", {}, ended(5 / 6)),
            ("flaky-1", "flaky", {}, ended(1 / 3)),
            ("flaky-2", "flaky", {}, ended(None, None)),
            ("flaky-3", "flaky", {}, ended(5 / 6)),
        ],
    )
    names = ["steady-1", "steady-2", "steady-3", "flaky-1", "flaky-2", "flaky-3"]
    data = build(store, names)
    arms = {a["arm"]: a for a in data["arms"]}
    assert arms["steady"]["best_median"] == arms["flaky"]["best_median"] == pytest.approx(5 / 6)
    assert arms["flaky"]["best_per_run"] == [1 / 3, None, 5 / 6]
    assert arms["flaky"]["runs_without_result"] == 1
    from tuner.reports.render import arm_table, best_band

    head, rows = arm_table(data)
    runs = {row[0]: row[head.index("runs")] for row in rows}
    assert runs == {"steady": "3", "flaky": "3 (1 without a result)"}
    median, _, _ = best_band([[p["best"] for p in c] for c in data["curves"]["flaky"]], False)
    assert list(median) == pytest.approx([5 / 6, 5 / 6])  # the plotted median line, likewise


@pytest.mark.parametrize(
    ("bests", "median"),
    [
        ([0.2, None, 0.4], 0.4),
        ([0.2, None, None], None),
        ([0.2, 0.4, 0.6, None], 0.5),
        ([0.2, 0.4, None, None], None),
        ([0.25, 0.75], 0.5),
        ([], None),
    ],
)
def test_median_best_ranks_a_missing_result_last(bests, median):
    from tuner.reports.data import median_best

    assert median_best(bests, maximize=False) == median
    flipped = [None if b is None else -b for b in bests]
    assert median_best(flipped, maximize=True) == (None if median is None else -median)


def test_attempts_that_ran_again_are_no_jobs_on_the_jobs_axis(sqlite_url):
    """Two attempts a Ctrl-C stopped (their configurations ran again) were counted: an arm
    whose best came with its first job of the budget showed "jobs to best 3"."""
    from tuner.summary import INTERRUPTED

    store = runs_of_jobs(
        sqlite_url,
        [
            (
                "a",
                "a",
                {},
                [
                    (TrainingStatus.STOPPED, None, 2.0, INTERRUPTED),
                    (TrainingStatus.STOPPED, None, 3.0, INTERRUPTED),
                    (DONE, 0.1, 4.0, None),
                    (DONE, 0.2, 5.0, None),
                ],
            )
        ],
    )
    data = build(store, ["a"])
    (curve,) = data["curves"]["a"]
    assert [(p["jobs"], p["best"]) for p in curve] == [(1, 0.1), (2, 0.1)]
    assert curve[0]["compute_seconds"] == pytest.approx(2.0 + 3.0 + 4.0)  # their compute counts
    assert data["arms"][0]["jobs_to_best_median"] == 1


def test_gpu_and_cpu_arms_keep_their_units_and_compute_saved_compares_like_with_like(
    sqlite_url,
):
    """The table's compute column took the first arm's unit for every arm, and a CPU arm's
    saving was measured in CPU-seconds against a GPU arm's GPU-seconds."""
    gpu = {"job_definition": {"gpus_per_job": 0.5}}
    auto = {"early_stopping_type": "Auto"}
    store = runs_of_jobs(
        sqlite_url,
        [
            ("gpu", "gpu", gpu, [(DONE, 0.5, 3600.0, None)] * 2),
            ("cpu-auto", "cpu-auto", auto, [(DONE, 0.4, 1800.0, None)] * 2),
        ],
    )
    data = build(store, ["gpu", "cpu-auto"])
    arms = {a["arm"]: a for a in data["arms"]}
    assert arms["cpu-auto"]["compute_saved"] is None  # no full-budget CPU arm to compare with
    from tuner.reports.render import arm_table

    head, rows = arm_table(data)
    cells = {row[0]: row[head.index("compute")] for row in rows}
    assert cells == {"gpu": "1 GPU-hours", "cpu-auto": "1 CPU-hours"}
    store = runs_of_jobs(sqlite_url, [("cpu", "cpu", {}, [(DONE, 0.5, 3600.0, None)] * 2)])
    arms = {a["arm"]: a for a in build(store, ["gpu", "cpu", "cpu-auto"])["arms"]}
    assert arms["cpu-auto"]["compute_reference"] == "cpu"
    assert arms["cpu-auto"]["compute_saved"] == pytest.approx(0.5)


def test_jobs_sharing_a_gpu_count_their_share_of_it(sqlite_url):
    """``jobs_per_gpu: 2`` with ``gpus_per_job: 1`` counted each job as a whole GPU (twice the
    same sharing written ``gpus_per_job: 0.5``)."""
    shared = {"job_definition": {"gpus_per_job": 1, "jobs_per_gpu": 2}}
    half = {"job_definition": {"gpus_per_job": 0.5}}
    store = runs_of_jobs(
        sqlite_url,
        [
            ("shared", "shared", shared, [(DONE, 0.5, 3600.0, None)] * 2),
            ("half", "half", half, [(DONE, 0.5, 3600.0, None)] * 2),
        ],
    )
    data = build(store, ["shared", "half"])
    assert [a["compute_hours"] for a in data["arms"]] == [1.0, 1.0]
    assert [c[0][-1]["compute_seconds"] for c in data["curves"].values()] == [3600.0, 3600.0]


@pytest.mark.parametrize(
    ("job_definition", "share"),
    [
        ({"gpus_per_job": 0.5, "jobs_per_gpu": 2}, 0.5),  # one of two slots, not 0.25
        ({"gpus_per_job": 0.5, "jobs_per_gpu": 4}, 0.25),  # one of four slots
        ({"gpus_per_job": 2, "jobs_per_gpu": 2}, 1.0),
        ({"gpus_per_job": 1, "jobs_per_gpu": 2, "launcher": "slurm"}, 1.0),  # Slurm: no sharing
        ({}, 1.0),  # one CPU
    ],
)
def test_a_jobs_share_of_gpus_is_the_slots_the_launcher_gives_it(sqlite_url, job_definition, share):
    store = runs_of_jobs(
        sqlite_url, [("a", "a", {"job_definition": job_definition}, [(DONE, 0.5, 3600.0, None)])]
    )
    assert build(store, ["a"])["arms"][0]["compute_hours"] == share


def test_seconds_and_wall_time_leave_out_the_time_a_run_stood_interrupted(sqlite_url, monkeypatch):
    """A run interrupted (Ctrl-C) and resumed an hour later showed that hour in its wall time,
    its time to best and its best-by-time curve."""
    import tuner.storage.store as store_module

    clock = [1000.0]
    monkeypatch.setattr(store_module.time, "time", lambda: clock[0])
    store = Store(sqlite_url)
    store.create_tuning_job(
        "a",
        {
            "objective_metric_name": "loss",
            "objective_type": "Minimize",
            "hyperparameter_ranges": {},
            "tags": {"arm": "a"},
        },
    )
    first = store.create_training_job("a", 1, {})
    clock[0] = 1010.0
    store.finish_training_job(first.name, DONE, 0.5, None, began_at=1000.0, ended_at=1010.0)
    clock[0] = 1020.0
    store.set_tuning_status("a", TuningStatus.STOPPED, "interrupted")
    clock[0] = 4620.0  # an hour later
    assert store.reopen_tuning_job("a", "interrupted", "x", "y", owner="me", ttl=60)
    second = store.create_training_job("a", 2, {})
    clock[0] = 4630.0
    store.finish_training_job(second.name, DONE, 0.2, None, began_at=4620.0, ended_at=4630.0)
    store.set_tuning_status("a", TuningStatus.COMPLETED, "done")
    data = build(store, ["a"])
    assert [p["seconds"] for p in data["curves"]["a"][0]] == [10.0, 30.0]  # 3610 s before
    assert data["arms"][0]["wall_seconds_median"] == 30.0
    assert data["arms"][0]["seconds_to_best_median"] == 30.0
