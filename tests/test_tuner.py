"""The Python front door: HyperparameterTuner, analytics, attach, and bad input."""

from __future__ import annotations

import math
import os
import sys

import pandas as pd
import pytest

from tests.conftest import FAKE_TRAIN, fake_command
from tuner import (
    CategoricalParameter,
    ContinuousParameter,
    HyperparameterTuner,
    IntegerParameter,
    NotFoundError,
    TunerError,
    ValidationError,
)

METRICS = [{"Name": "accuracy", "Regex": r"accuracy=([0-9.]+)"}]


def tuner_args(tmp_path, **overrides):
    args = {
        "job_definition": {"command": fake_command(), "output_path": str(tmp_path / "runs")},
        "objective_metric_name": "accuracy",
        "hyperparameter_ranges": {
            "x": ContinuousParameter(0.0, 1.0),
            "y": ContinuousParameter(0.0, 1.0),
            "layers": IntegerParameter(1, 4),
            "opt": CategoricalParameter(["sgd", 2, True]),
        },
        "metric_definitions": METRICS,
        "strategy": "Random",
        "max_jobs": 6,
        "max_parallel_jobs": 2,
        "random_seed": 3,
        "storage": f"sqlite:///{tmp_path / 'db.sqlite'}",
    }
    args.update(overrides)
    return args


def test_a_command_of_paths_and_tuples_runs_as_subprocess_would_take_it(tmp_path):
    """``(sys.executable, HERE / "train.py")`` was refused: "Input should be a valid list" and
    "Input should be a valid string, got PosixPath(...)"."""
    job = {"command": (sys.executable, FAKE_TRAIN), "working_directory": tmp_path}
    args = tuner_args(tmp_path, job_definition=job, metric_definitions=tuple(METRICS), max_jobs=2)
    tuner = HyperparameterTuner(**args)
    assert tuner.definition.job_definition.command == [sys.executable, str(FAKE_TRAIN)]
    tuner.fit(progress=False)
    assert [j.status.value for j in tuner.training_jobs()] == ["Completed", "Completed"]


def test_max_jobs_left_out_is_ten_or_a_grids_whole_grid(tmp_path):
    grid = {"layers": IntegerParameter(1, 3), "opt": CategoricalParameter(["sgd", "adam"])}
    args = tuner_args(tmp_path, strategy="Grid", hyperparameter_ranges=grid)
    del args["max_jobs"]
    tuner = HyperparameterTuner(**args)
    assert tuner.definition.max_jobs == 6
    tuner.fit()
    assert len(tuner.training_jobs()) == 6  # it stopped at 10 jobs: a larger grid lost points
    args = tuner_args(tmp_path)
    del args["max_jobs"]
    assert HyperparameterTuner(**args).definition.max_jobs == 10


def test_a_small_whole_grid_runs_with_a_larger_max_parallel_jobs(tmp_path):
    """Refused: "max_parallel_jobs <= max_jobs must hold, got max_parallel_jobs=4, max_jobs=2",
    a max_jobs the user never gave (a QA helper; also a comparison's Grid arm beside a Random
    one with the same max_parallel_jobs). All of it runs at once; a max_jobs given is checked."""
    grid = {"x": CategoricalParameter([0.1, 0.2])}
    args = tuner_args(tmp_path, strategy="Grid", hyperparameter_ranges=grid, max_parallel_jobs=4)
    del args["max_jobs"]
    tuner = HyperparameterTuner(**args)
    assert (tuner.definition.max_jobs, tuner.definition.max_parallel_jobs) == (2, 2)
    tuner.fit(progress=False)
    assert sorted(j.hyperparameters["x"] for j in tuner.training_jobs()) == [0.1, 0.2]
    with pytest.raises(ValidationError, match="got max_parallel_jobs=4, max_jobs=2"):
        HyperparameterTuner(**{**args, "max_jobs": 2})


def test_choice_fields_are_matched_without_regard_to_case_as_strategy_is(tmp_path):
    """``strategy: random`` was accepted and ``objective_type: maximize`` refused."""
    tuner = HyperparameterTuner(
        **tuner_args(
            tmp_path,
            strategy="random",
            objective_type="minimize",
            objective_aggregation="BEST",
            early_stopping_type="auto",
        )
    )
    d = tuner.definition
    assert (d.strategy, d.objective_type, d.objective_aggregation, d.early_stopping_type) == (
        "Random",
        "Minimize",
        "Best",
        "Auto",
    )
    with pytest.raises(ValidationError, match="objective_type: Input should be 'Maximize' or"):
        HyperparameterTuner(**tuner_args(tmp_path, objective_type="Maximise"))
    # QA: these two were refused in another case
    hyperband = HyperparameterTuner(
        **tuner_args(
            tmp_path,
            strategy="hyperband",
            strategy_config={"sampler": "bayesian", "max_resource": 9},
            job_definition={
                "command": fake_command(),
                "output_path": str(tmp_path / "runs"),
                "static_hyperparameters": {"epochs": 9},
            },
        )
    )
    assert hyperband.definition.hyperband().sampler == "Bayesian"
    parent = HyperparameterTuner(**tuner_args(tmp_path, max_jobs=2, name="parent")).fit()
    child = HyperparameterTuner(
        **tuner_args(
            tmp_path,
            strategy="Bayesian",
            warm_start_config={"parents": [parent.name], "type": "transferlearning"},
        )
    )
    assert child.definition.warm_start_config is not None
    assert child.definition.warm_start_config.type == "TransferLearning"


@pytest.mark.parametrize("key", ["strategy_options", "strategy_config", "early_stopping_options"])
@pytest.mark.parametrize("value", [0, "", [], False])
def test_options_that_are_no_mapping_are_refused_even_when_empty(tmp_path, key, value):
    """QA: the Python API took strategy_options=0 (or "", []) as none given; YAML refused it."""
    with pytest.raises(ValidationError, match=f"{key}: Input should be a valid dictionary"):
        HyperparameterTuner(**tuner_args(tmp_path, **{key: value}))


def test_a_failed_jobs_last_value_is_no_final_objective_in_the_dataframe(tmp_path):
    """Sorting FinalObjectiveValue picked a Failed job as the best (SageMaker leaves it empty)."""
    args = tuner_args(tmp_path, max_jobs=2, max_parallel_jobs=1)
    args["job_definition"]["static_hyperparameters"] = {"exit_code": 3}
    tuner = HyperparameterTuner(**args)
    tuner.fit()
    jobs = tuner.training_jobs()
    assert all(j.status.value == "Failed" and j.objective is not None for j in jobs)
    frame = tuner.analytics().dataframe()
    assert list(frame["ObjectiveStatus"]) == ["Failed", "Failed"]
    assert frame["FinalObjectiveValue"].isna().all()


def test_fit_describe_best_and_analytics(tmp_path):
    tuner = HyperparameterTuner(**tuner_args(tmp_path), name="api-test")
    tuner.fit()
    d = tuner.describe()
    assert d["name"] == "api-test" and d["status"] == "Completed"
    assert d["training_job_status_counters"]["Completed"] == 6
    assert d["objective_status_counters"] == {"Pending": 0, "Succeeded": 6, "Failed": 0}
    best = tuner.best_training_job()
    objectives = [j.objective for j in tuner.training_jobs()]
    assert best is not None and best.objective == max(objectives)
    assert d["best_training_job"]["name"] == best.name
    # the fake job scores 1 - (x-0.3)^2 - (y-0.6)^2, minus 0.01 for the epoch before the last
    hp = best.hyperparameters
    expected = 1 - (hp["x"] - 0.3) ** 2 - (hp["y"] - 0.6) ** 2
    assert best.objective == pytest.approx(expected, abs=1e-5)

    frame = tuner.analytics().dataframe()
    assert len(frame) == 6
    assert {"TrainingJobName", "x", "y", "layers", "opt", "FinalObjectiveValue"} <= set(frame)
    assert {"TrainingStartTime", "TrainingEndTime", "TrainingElapsedTimeSeconds"} <= set(frame)
    assert frame["FinalObjectiveValue"].max() == best.objective
    assert all(type(v) in (str, int, bool) for v in frame["opt"])  # categorical types kept

    path = tuner.analytics().export_csv(tmp_path / "out" / "jobs.csv")
    again = pd.read_csv(path)
    assert list(again["TrainingJobName"]) == list(frame["TrainingJobName"])


def test_importance_names_the_hyperparameters_the_objective_depends_on(tmp_path):
    """``tuner.importance()`` (fANOVA on the completed jobs, as the report's table): the fake
    job's accuracy depends on x and y only."""
    tuner = HyperparameterTuner(**tuner_args(tmp_path, max_jobs=16, max_parallel_jobs=4))
    tuner.fit(progress=False)
    found = tuner.importance()
    shares = found["importance"]
    assert (found["jobs"], found["of"], found["why"]) == (16, 16, None)
    assert set(shares) == {"x", "y", "layers", "opt"}
    assert sum(shares.values()) == pytest.approx(1.0)
    assert shares["x"] + shares["y"] > 0.8, shares


def test_minimize_picks_the_lowest(tmp_path):
    metrics = [{"Name": "loss", "Regex": r"loss=([0-9.]+)"}]
    tuner = HyperparameterTuner(
        **tuner_args(
            tmp_path,
            objective_metric_name="loss",
            metric_definitions=metrics,
            objective_type="Minimize",
        )
    )
    tuner.fit()
    best = tuner.best_training_job()
    assert best is not None
    assert best.objective == min(j.objective for j in tuner.training_jobs())
    lowest_first = sorted(tuner.training_jobs(), key=lambda j: (j.objective, j.number))
    assert tuner.training_jobs(sort_by="objective") == lowest_first  # best first: Minimize
    assert (
        tuner.training_jobs(sort_by="objective", sort_order="Descending", limit=2)
        == (lowest_first[::-1][:2])
    )
    assert tuner.training_jobs(status="Completed", offset=1) == tuner.training_jobs()[1:]
    assert tuner.training_jobs(status="Failed") == []
    for bad, message in [
        ({"sort_by": "speed"}, "sort_by must be one of number, name, created, status, objective"),
        ({"sort_order": "down"}, "sort_order must be Ascending or Descending"),
        ({"status": "Done"}, "status must be one of Pending, InProgress, .*, got 'Done'"),
        ({"limit": 0}, r"limit must be an integer 1\.\.100000 \(or None\), got 0"),
    ]:
        with pytest.raises(ValidationError, match=message):
            tuner.training_jobs(**bad)


def test_attach_sees_the_same_tuning_job(tmp_path):
    args = tuner_args(tmp_path)
    tuner = HyperparameterTuner(**args, name="attach-me").fit()
    other = HyperparameterTuner.attach("attach-me", storage=args["storage"])
    assert other.describe()["best_training_job"] == tuner.describe()["best_training_job"]
    assert other.definition.max_jobs == 6
    assert other.wait(timeout=1)["status"] == "Completed"
    with pytest.raises(NotFoundError, match="no tuning job named 'nope'"):
        HyperparameterTuner.attach("nope", storage=args["storage"])


def test_a_taken_name_is_refused_and_the_first_job_is_kept(tmp_path):
    args = tuner_args(tmp_path, max_jobs=1, max_parallel_jobs=1)
    HyperparameterTuner(**args, name="once").fit()
    with pytest.raises(ValidationError, match="'once' already exists"):
        HyperparameterTuner(**args, name="once").fit()
    assert len(HyperparameterTuner.attach("once", storage=args["storage"]).training_jobs()) == 1


def test_fit_again_without_a_name_is_a_new_tuning_job(tmp_path):
    """As SageMaker's SDK: each fit() of an unnamed tuner is a new tuning job with a new name;
    a named or attached one is refused, and so is a fit() while the last one still runs."""
    args = tuner_args(tmp_path, max_jobs=1, max_parallel_jobs=1)
    tuner = HyperparameterTuner(**args)
    first = tuner.fit().name
    second = tuner.fit().name
    assert first != second
    for name in (first, second):
        attached = HyperparameterTuner.attach(name or "", storage=args["storage"])
        assert attached.describe()["status"] == "Completed"
        assert len(attached.training_jobs()) == 1
        with pytest.raises(ValidationError, match=f"'{name}' already exists"):
            attached.fit()
    job = {
        "command": fake_command(),
        "output_path": str(tmp_path / "runs"),
        "static_hyperparameters": {"sleep": 2.0},
    }
    slow = HyperparameterTuner(
        **tuner_args(tmp_path, job_definition=job, max_jobs=1, max_parallel_jobs=1)
    )
    slow.fit(wait=False)
    with pytest.raises(ValidationError, match="is still running in this tuner"):
        slow.fit()
    assert slow.wait(timeout=120)["status"] == "Completed"
    assert slow.fit().describe()["status"] == "Completed"  # once it has ended, it fits anew


def test_stop_right_after_a_background_fit_ends_it_stopped(tmp_path):
    """stop() wakes the scheduler before it writes the request; whichever lands first, the
    tuning job ends Stopped (it once stayed Stopping: the request overwrote the end)."""
    job = {
        "command": fake_command(),
        "output_path": str(tmp_path / "runs"),
        "static_hyperparameters": {"sleep": 30.0},
    }
    for _ in range(3):
        tuner = HyperparameterTuner(
            **tuner_args(tmp_path, job_definition=job, max_jobs=2, max_parallel_jobs=1)
        )
        tuner.fit(wait=False)
        tuner.stop()
        ended = tuner.wait(timeout=60)
        assert ended["status"] == "Stopped", ended


def test_background_fit_and_wait(tmp_path):
    tuner = HyperparameterTuner(**tuner_args(tmp_path))
    tuner.fit(wait=False)
    assert tuner.wait(timeout=60)["status"] == "Completed"


def test_describe_before_fit_is_a_clear_error(tmp_path):
    with pytest.raises(TunerError, match="call fit\\(\\) first"):
        HyperparameterTuner(**tuner_args(tmp_path)).describe()


BAD = [
    (
        {"metric_definitions": [{"Name": "accuracy", "Regex": "accuracy=(["}]},
        "metric_definitions: Regex of metric 'accuracy' must be valid RE2 syntax",
    ),
    (
        {"metric_definitions": [{"Name": "accuracy", "Regex": "accuracy=[0-9]+"}]},
        "exactly one capture group, got 0",
    ),
    (
        {"objective_metric_name": "loss"},
        "objective_metric_name must be one of the metric definitions ['accuracy'], got 'loss'",
    ),
    ({"hyperparameter_ranges": {}}, "at least one parameter"),
    (
        {"strategy": "Annealing"},
        "strategy must be one of ['Bayesian', 'Grid', 'Hyperband', 'Random', 'TPE'], "
        "got 'Annealing'",
    ),
    (
        {"max_parallel_jobs": 8, "max_jobs": 4},
        "max_parallel_jobs <= max_jobs must hold, got max_parallel_jobs=8, max_jobs=4",
    ),
    (
        {"max_jobs": 0, "max_parallel_jobs": 1},
        "max_jobs: Input should be greater than or equal to 1, got 0",
    ),
    ({"max_failed_jobs": 0}, "max_failed_jobs: Input should be greater than or equal to 1"),
    ({"max_jobs": 4.5}, "max_jobs: Input should be a valid integer (a whole number), got 4.5"),
    ({"max_tuning_runtime": 0}, "max_tuning_runtime: Input should be greater than 0, got 0"),
    ({"max_tuning_runtime": 1e8}, "max_tuning_runtime: Input should be less than or equal to"),
    (
        {"objective_type": "Maximise"},
        "objective_type: Input should be 'Maximize' or 'Minimize', got 'Maximise'",
    ),
    ({"name": "../etc"}, "name: String should match pattern"),
    ({"job_definition": {"command": "python train.py"}}, "command: Input should be a valid list"),
    ({"job_definition": {"command": []}}, "command must be a non-empty list"),
    ({"job_definition": {"image": "resnet:latest"}}, "needs launcher='docker'"),
    ({"job_definition": {"launcher": "docker"}}, "launcher='docker' needs an image"),
    (
        {"job_definition": {"command": ["x"], "gpus_per_job": 2, "gpus": ["0"]}},
        "gpus_per_job=2 needs at least 2 ids in gpus, got gpus=['0']",
    ),
    (
        {"job_definition": {"command": ["x"], "gpus_per_job": 0.3, "gpus": ["0"]}},
        "gpus_per_job below 1 must be 1/k of a GPU (0.5, 0.25, ...), got 0.3",
    ),
    (
        {"job_definition": {"command": ["x"], "gpus_per_job": 1.5, "gpus": ["0", "1"]}},
        "gpus_per_job above 1 must be a whole number, got 1.5",
    ),
    (
        {"job_definition": {"command": ["x"], "launcher": "slurm", "gpus_per_job": 0.25}},
        "gpus_per_job=0.25 on Slurm needs slurm_shards_per_gpu",
    ),
    (
        {
            "job_definition": {
                "command": ["x"],
                "launcher": "slurm",
                "gpus_per_job": 0.5,
                "slurm_shards_per_gpu": 3,
            }
        },  # stored, then an internal error at the first start
        "times slurm_shards_per_gpu=3 must be a whole number of shards, got 1.5",
    ),
    (
        {"job_definition": {"command": ["x"], "launcher": "slurm", "slurm_options": ["-p x"]}},
        "slurm_options must be like --qos=high, got '-p x'",
    ),
    (
        {"job_definition": {"command": ["x"], "output_s3_uri": "bucket/prefix"}},
        "an S3 location must look like s3://bucket/prefix, got 'bucket/prefix'",
    ),
    (
        {"job_definition": {"command": ["x"], "max_runtime": -1}},
        "max_runtime: Input should be greater than 0, got -1",
    ),
    (
        {"job_definition": {"command": ["x"], "comand": ["y"]}},
        "comand: Extra inputs are not permitted",
    ),
    (
        {"job_definition": {"command": ["x"], "static_hyperparameters": {"x": 1}}},
        "either static or tuned, not both; got ['x'] in both",
    ),
    ({"storage": "nonsense"}, "storage must be a SQLAlchemy URL"),
    (
        {"warm_start_config": {"parents": ["a", "a"], "type": "TransferLearning"}},
        "warm_start_config.parents: parents must be distinct, got ['a'] more than once",
    ),
    (
        {"warm_start_config": {"parents": ["a"], "type": "Transfer"}},
        "warm_start_config.type: Input should be 'IdenticalDataAndAlgorithm' or "
        "'TransferLearning', got 'Transfer'",
    ),
    (  # one line, not four (one per type a value may have)
        {"job_definition": {"command": ["x"], "static_hyperparameters": {"epochs": [1, 2]}}},
        "static hyperparameter values must be a string, a finite number or true/false, got "
        "'epochs': [1, 2]",
    ),
    (
        {"job_definition": {"command": ["x"], "static_hyperparameters": {"lr": math.nan}}},
        "static hyperparameter values must be a string, a finite number or true/false, got "
        "'lr': nan",
    ),
    # each of these was a bare ValueError from dict() ("dictionary update sequence element")
    ({"metric_definitions": "acc"}, "metric_definitions: Input should be a valid list, got 'acc'"),
    ({"metric_definitions": ["acc"]}, "metric_definitions.0: Input should be a valid dictionary"),
    ({"strategy_options": "x"}, "strategy_options: Input should be a valid dictionary, got 'x'"),
    ({"job_definition": "python x.py"}, "job_definition: Input should be a valid dictionary"),
    ({"hyperparameter_ranges": "x"}, "hyperparameter_ranges must be a mapping of names to"),
]


def test_metric_definitions_may_be_any_sequence_or_iterable(tmp_path):
    """A deque or a generator of definitions was taken before strings were refused by name."""
    from collections import deque

    args = tuner_args(tmp_path)
    for given in (deque(args["metric_definitions"]), (m for m in args["metric_definitions"])):
        tuner = HyperparameterTuner(**{**args, "metric_definitions": given})
        assert [m.name for m in tuner.definition.metrics()] == [
            m["Name"] for m in args["metric_definitions"]
        ]


@pytest.mark.parametrize(("overrides", "message"), BAD, ids=[m[:40] for _, m in BAD])
def test_bad_input_gets_a_clear_error(tmp_path, overrides, message):
    with pytest.raises(ValidationError) as info:
        HyperparameterTuner(**tuner_args(tmp_path, **overrides))
    assert message in str(info.value)


@pytest.mark.parametrize(
    ("ranges", "message"),
    [
        (
            lambda: {"lr": ContinuousParameter(0.0, 1.0, "Logarithmic")},
            "Logarithmic scaling needs min_value > 0, got min_value=0",
        ),
        (lambda: {"lr": ContinuousParameter(1.0, 1.0)}, "min_value < max_value must hold"),
        (lambda: {"lr": (0.0, 1.0)}, "must be a ContinuousParameter"),
    ],
)
def test_bad_ranges_are_refused_before_anything_is_recorded(tmp_path, ranges, message):
    with pytest.raises(ValidationError) as info:
        HyperparameterTuner(**tuner_args(tmp_path, hyperparameter_ranges=ranges()))
    assert message in str(info.value)
    assert not (tmp_path / "runs").exists()


def test_values_are_finite_in_the_store(tmp_path):
    tuner = HyperparameterTuner(**tuner_args(tmp_path, max_jobs=2))
    tuner.fit()
    assert all(math.isfinite(j.objective) for j in tuner.training_jobs())


def test_describe_shows_what_the_strategy_says_of_itself(tmp_path):
    """The Bayesian strategy's state (``restarts``, README) reaches ``describe``; a strategy
    with nothing to say shows an empty state."""
    bayes = HyperparameterTuner(**tuner_args(tmp_path, strategy="Bayesian"), name="bayes")
    bayes.fit()
    state = bayes.describe()["strategy_state"]
    assert state["engine"] == "native" and state["restarts"] == 0
    assert 1 <= state["observations"] < 6  # told before the last ask, not after it
    again = HyperparameterTuner.attach("bayes", storage=tuner_args(tmp_path)["storage"])
    assert again.describe()["strategy_state"] == state  # stored, not kept in the process
    random = HyperparameterTuner(**tuner_args(tmp_path), name="random")
    random.fit()
    assert random.describe()["strategy_state"] == {}


def test_a_script_that_ends_during_a_background_fit_says_what_it_left(tmp_path):
    """fit(wait=False), then the script ends: its tuning job was left InProgress and its jobs
    running unwatched, silently (exit 0). Now a line says so and how to go on; a script that
    waits says nothing."""
    import subprocess
    import sys

    from tuner import HyperparameterTuner

    url = f"sqlite:///{tmp_path / 't.db'}"
    script = (
        "import sys\n"
        "from tests.test_scheduler import make_tuner\n"
        "from pathlib import Path\n"
        f"tuner = make_tuner(Path({str(tmp_path)!r}), {url!r}, {{'sleep': SLEEP}}, "
        "max_jobs=1, max_parallel_jobs=1, name=NAME)\n"
        "tuner.fit(wait=False)\n"
        "WAIT\n"
    )
    env = {**os.environ, "TUNER_LEASE_SECONDS": "1"}

    def run(name: str, sleep: float, wait: bool) -> str:
        code = script.replace("NAME", repr(name)).replace("SLEEP", str(sleep))
        started = (  # its job runs: the line says it is left so
            "import time\n"
            "while not any(j.status.value == 'InProgress' for j in tuner.training_jobs()):\n"
            "    time.sleep(0.05)"
        )
        code = code.replace("WAIT", "tuner.wait()" if wait else started)
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env
        )
        assert done.returncode == 0, done.stderr
        return done.stderr

    left = run("left", 30, wait=False)
    assert "this process ends while tuning job left still runs in it" in left
    assert "its 1 running training job runs on unwatched" in left  # "its training jobs"
    assert "`tuner resume left` continues it" in left
    assert "still runs" not in run("waited", 0.1, wait=True)
    stopped = HyperparameterTuner.attach("left", storage=url)
    stopped.stop()
    assert stopped.wait(timeout=60)["status"] == "Stopped"  # its process is gone: taken over


def test_a_newer_field_at_its_default_is_left_out_of_the_stored_definition(tmp_path):
    """An older service (or older process on the same database) refuses fields it does not
    know: every create from an upgraded client failed on min_relative_improvement: 0.0."""
    plain = HyperparameterTuner(**tuner_args(tmp_path)).definition.to_json()
    assert "min_relative_improvement" not in plain
    asked = HyperparameterTuner(**tuner_args(tmp_path, min_relative_improvement=0.01))
    assert asked.definition.to_json()["min_relative_improvement"] == 0.01


@pytest.mark.parametrize("moment", ["_exists", "create_tuning_job"])
def test_a_signal_during_start_up_ends_the_tuning_job_interrupted_and_resumable(
    tmp_path, monkeypatch, moment
):
    """QA: a Ctrl-C after the tuning job was recorded but before its scheduler was kept ended
    it "stopped on request" (exit 0, not resumable), not "interrupted" (exit 130); review: one
    while fit() still read the store (before it forgot earlier stops) was lost altogether."""
    from tuner.scheduler import SIGNALLED

    tuner = HyperparameterTuner(**tuner_args(tmp_path, max_jobs=2, name="early"))
    owner = tuner if moment == "_exists" else tuner.store
    original = getattr(owner, moment)

    def then_signalled(*args, **kwargs):
        answer = original(*args, **kwargs)
        tuner.interrupt()  # the command's handler, as a Ctrl-C lands there
        return answer

    monkeypatch.setattr(owner, moment, then_signalled)
    tuner.fit()
    described = tuner.describe()
    assert (described["status"], described["status_reason"]) == ("Stopped", SIGNALLED)
    from tuner.cli import summary

    assert summary(tuner).endswith("\n  training jobs: none")  # it ended in ": " before
    again = HyperparameterTuner.attach("early", storage=tuner_args(tmp_path)["storage"])
    again.resume()
    assert again.describe()["status"] == "Completed"
    assert len(again.training_jobs()) == 2


def test_median_rule_options_given_while_it_is_off_are_refused(tmp_path):
    """QA: options given without early_stopping_type="Auto" were taken silently, and nothing
    was ever stopped; the defaults themselves, as a stored definition holds them, still pass."""
    with pytest.raises(ValidationError, match="on only with early_stopping_type='Auto'; got 'Off'"):
        HyperparameterTuner(**tuner_args(tmp_path, early_stopping_options={"min_jobs": 5}))
    HyperparameterTuner(**tuner_args(tmp_path, early_stopping_options={"min_jobs": 3}))
    on = HyperparameterTuner(
        **tuner_args(tmp_path, early_stopping_type="Auto", early_stopping_options={"min_jobs": 5})
    )
    assert on.definition.early_stopping_options.min_jobs == 5
