"""MLflow tracking against a real ``mlflow server``: what a user reads back with MlflowClient,
while the tuning job runs and after, also when the server goes away mid-run."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import MlflowServer, fake_command, skip_or_fail
from tuner import HyperparameterTuner, TrainingStatus, ValidationError
from tuner.definition import TuningJobDefinition
from tuner.tracking.mlflow_tracker import mlflow_key

METRICS = [{"Name": "accuracy", "Regex": r"validation: loss=\S+ accuracy=([0-9.]+)"}]

# seconds a tracker's close waits for MLflow in tests that read it back: a loaded machine's
# server took over the default 30 s
SLOW_SERVER_CLOSE = 240


def definition(tmp_path: Path, uri: str, name: str, **kw: Any) -> dict[str, Any]:
    return {
        "name": name,
        "job_definition": {
            "command": fake_command(),
            "static_hyperparameters": {"epochs": 3, **kw.pop("static", {})},
            "output_path": str(tmp_path / "runs"),
            "grace_period": 1.0,
        },
        "objective_metric_name": "accuracy",
        "hyperparameter_ranges": kw.pop(
            "ranges",
            {
                "x": {"type": "categorical", "values": [0.1, 0.5]},
                "exit_code": {"type": "categorical", "values": [0, 3]},
            },
        ),
        "metric_definitions": METRICS,
        "strategy": "Grid",
        "random_seed": 1,  # the grid's order: the same jobs run first on every run
        "max_jobs": 4,
        "max_parallel_jobs": 2,
        "tags": {"arm": "grid", "comparison": name},
        "tracking_uri": uri,
        **kw,
    }


def client(server: MlflowServer) -> Any:
    from mlflow.tracking import MlflowClient

    return MlflowClient(tracking_uri=server.url)


def runs_of(server: MlflowServer, experiment: str) -> tuple[Any, list[Any]]:
    """The parent run of the experiment and its nested runs (by name)."""
    c = client(server)
    exp = c.get_experiment_by_name(experiment)
    if exp is None:
        return None, []
    runs = c.search_runs([exp.experiment_id], max_results=1000)
    parents = [r for r in runs if "mlflow.parentRunId" not in r.data.tags]
    children = sorted(
        (r for r in runs if "mlflow.parentRunId" in r.data.tags), key=lambda r: r.info.run_name
    )
    return (parents[0] if parents else None), children


def wait_for(condition: Callable[[], Any], timeout: float = 90) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"not within {timeout}s")


def assert_mirrors_the_store(server: MlflowServer, tuner: HyperparameterTuner) -> None:
    """Every training job of the store is a nested run holding its params, metric history with
    steps, tags and artifacts; the parent holds the tuning job's end."""
    c = client(server)
    record = tuner.describe()
    parent, children = runs_of(server, tuner.name or "")
    assert parent is not None and parent.info.run_name == tuner.name
    assert parent.data.tags["status"] == record["status"]
    assert parent.data.tags["strategy"] == "Grid" and parent.data.tags["arm"] == "grid"
    assert parent.data.params["objective_metric_name"] == "accuracy"
    assert parent.info.status == "FINISHED"
    best = tuner.best_training_job()
    assert best is not None and parent.data.tags["best_training_job"] == best.name
    jobs = tuner.training_jobs()
    assert [r.info.run_name for r in children] == [j.name for j in jobs]
    for job, run in zip(jobs, children, strict=True):
        assert run.data.tags["mlflow.parentRunId"] == parent.info.run_id
        static = tuner.definition.job_definition.static_hyperparameters
        assert run.data.params == {k: str(v) for k, v in {**static, **job.hyperparameters}.items()}
        assert run.data.tags["status"] == job.status.value
        assert run.data.tags["failure_reason"] == (job.failure_reason or "")
        assert run.data.tags["strategy"] == "Grid" and run.data.tags["arm"] == "grid"
        stored = tuner.store.metric_points(job.name, "accuracy")
        history = sorted(c.get_metric_history(run.info.run_id, "accuracy"), key=lambda m: m.step)
        assert [(m.step, m.value) for m in history] == [
            (k, p.value) for k, p in enumerate(stored, start=1)
        ]
        artifacts = {a.path for a in c.list_artifacts(run.info.run_id)}
        assert {"log.txt", "output"} <= artifacts
        outputs = {a.path for a in c.list_artifacts(run.info.run_id, "output")}
        assert "output/argv.json" in outputs
        if job.status is TrainingStatus.COMPLETED:
            assert float(run.data.tags["objective"]) == job.objective
            assert run.info.status == "FINISHED"
        else:
            assert job.status is TrainingStatus.FAILED and run.info.status == "FAILED"
            assert "exited with code 3" in run.data.tags["failure_reason"]


def test_a_tuning_job_is_a_parent_run_and_each_training_job_a_nested_run(
    tmp_path, sqlite_url, mlflow_server, monkeypatch
):
    # A slow (loaded) server is not a down one: give the queue time to drain at the end.
    monkeypatch.setenv("TUNER_TRACKING_CLOSE_TIMEOUT", str(SLOW_SERVER_CLOSE))
    data = definition(tmp_path, mlflow_server.url, "tracked", static={"sleep": 1.5})
    tuner = HyperparameterTuner.from_definition(data, storage=sqlite_url)
    tuner.fit(wait=False)

    def running_child_with_points() -> bool:
        _, children = runs_of(mlflow_server, "tracked")
        return any(r.info.status == "RUNNING" and "accuracy" in r.data.metrics for r in children)

    wait_for(running_child_with_points)  # written as it progresses, not only at the end
    assert tuner.wait(timeout=120)["status"] == "Completed"
    assert [j.status for j in tuner.training_jobs()].count(TrainingStatus.FAILED) == 2
    assert_mirrors_the_store(mlflow_server, tuner)
    downloaded = client(mlflow_server).download_artifacts(
        runs_of(mlflow_server, "tracked")[1][0].info.run_id, "log.txt", str(tmp_path)
    )
    assert "validation: loss=" in Path(downloaded).read_text()


def test_a_server_that_goes_away_mid_run_costs_the_tuning_job_nothing_and_is_caught_up(
    tmp_path, sqlite_url, mlflow_server, monkeypatch, caplog
):
    # MLflow's own HTTP retries would hide the outage inside one call for minutes.
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "5")
    monkeypatch.setenv("TUNER_TRACKING_CLOSE_TIMEOUT", str(SLOW_SERVER_CLOSE))
    caplog.set_level(logging.WARNING, logger="tuner.tracking")
    data = definition(tmp_path, mlflow_server.url, "outage", static={"sleep": 1.0})
    data["max_parallel_jobs"] = 1
    tuner = HyperparameterTuner.from_definition(data, storage=sqlite_url)
    tuner.fit(wait=False)
    wait_for(lambda: runs_of(mlflow_server, "outage")[1])
    mlflow_server.stop()
    try:
        wait_for(  # the training jobs go on and end while the server is away
            lambda: sum(j.status.terminal for j in tuner.store.list_training_jobs("outage")) == 4,
            timeout=120,
        )
        assert any("failed, retrying" in r.getMessage() for r in caplog.records)
    finally:
        mlflow_server.start()
    assert tuner.wait(timeout=300)["status"] == "Completed"
    assert len(tuner.training_jobs()) == 4
    assert_mirrors_the_store(mlflow_server, tuner)
    assert any("works again" in r.getMessage() for r in caplog.records)


def test_an_unreachable_server_is_reported_and_the_tuning_job_completes(
    tmp_path, sqlite_url, monkeypatch, caplog
):
    try:
        import mlflow  # noqa: F401
    except ImportError:
        skip_or_fail("mlflow is not installed (pip install -e '.[dev]')")
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    monkeypatch.setenv("TUNER_TRACKING_CLOSE_TIMEOUT", "2")
    caplog.set_level(logging.WARNING, logger="tuner.tracking")
    ranges = {"x": {"type": "categorical", "values": [0.1, 0.5]}}  # both succeed
    data = definition(tmp_path, "http://127.0.0.1:9", "nowhere", max_jobs=2, ranges=ranges)
    tuner = HyperparameterTuner.from_definition(data, storage=sqlite_url)
    started = time.monotonic()
    tuner.fit()
    assert time.monotonic() - started < 60
    assert tuner.describe()["status"] == "Completed"
    assert all(tuner.store.metric_points(j.name) for j in tuner.training_jobs())
    gave_up = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert len(gave_up) == 1
    assert "gave up" in gave_up[0] and "http://127.0.0.1:9" in gave_up[0]
    assert gave_up[0].count("the tuning job's end") == 1  # it was named twice
    assert "end of the tuning job" not in gave_up[0] and "last error: None" not in gave_up[0]


def test_a_tuning_job_that_ended_while_the_server_was_away_is_written_by_tuner_track(
    tmp_path, sqlite_url, mlflow_server, monkeypatch, caplog, capsys
):
    from tuner.cli import main

    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "5")
    monkeypatch.setenv("TUNER_TRACKING_CLOSE_TIMEOUT", "2")
    caplog.set_level(logging.WARNING, logger="tuner.tracking")
    tuner = HyperparameterTuner.from_definition(
        definition(tmp_path, mlflow_server.url, "away"), storage=sqlite_url
    )
    mlflow_server.stop()
    try:
        tuner.fit()  # every job starts and ends while the server is away
        assert tuner.describe()["status"] == "Completed"
        gave_up = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
        assert len(gave_up) == 1 and "`tuner track away`" in gave_up[0]
        track = ["--storage", sqlite_url, "track", "away"]
        assert main(track) == 1  # still away: said so, nothing lost
        assert f"MLflow at {mlflow_server.url} did not take away" in capsys.readouterr().err
    finally:
        mlflow_server.start()
    assert main(track) == 0
    assert f"away: written to MLflow at {mlflow_server.url}" in capsys.readouterr().out
    assert_mirrors_the_store(mlflow_server, tuner)
    assert main(track) == 0  # again: what MLflow holds is skipped, nothing doubled
    assert_mirrors_the_store(mlflow_server, tuner)
    assert len(runs_of(mlflow_server, "away")[1]) == 4


def test_tuner_track_refuses_a_tuning_job_that_has_not_ended_or_has_no_uri(
    tmp_path, sqlite_url, capsys
):
    from tuner.cli import main
    from tuner.records import TuningStatus
    from tuner.storage import Store

    store = Store(sqlite_url)
    running = TuningJobDefinition.parse(definition(tmp_path, "http://127.0.0.1:9", "running"))
    store.create_tuning_job("running", running.to_json(), None, 30)
    assert main(["--storage", sqlite_url, "track", "running"]) == 2
    err = capsys.readouterr().err
    assert "tuner track needs a tuning job that has ended" in err and "InProgress" in err
    untracked = definition(tmp_path, "http://127.0.0.1:9", "untracked")
    del untracked["tracking_uri"]
    store.create_tuning_job("untracked", TuningJobDefinition.parse(untracked).to_json(), None, 30)
    store.set_tuning_status("untracked", TuningStatus.COMPLETED, "done")
    assert main(["--storage", sqlite_url, "track", "untracked"]) == 2
    assert "tuner track needs a tracking URI" in capsys.readouterr().err
    assert main(["--storage", sqlite_url, "track", "untracked", "--tracking-uri", "x y"]) == 2
    assert "tracking_uri must be an MLflow tracking URI" in capsys.readouterr().err


@pytest.mark.parametrize("uri", ["127.0.0.1:5000", "ftp://host/x", "http://host/a b", "", "mlflow"])
def test_a_tracking_uri_without_a_known_scheme_is_refused_when_the_job_is_defined(tmp_path, uri):
    with pytest.raises(ValidationError) as info:
        TuningJobDefinition.parse(definition(tmp_path, uri, "bad"))
    assert "tracking_uri must be an MLflow tracking URI" in str(info.value)
    assert repr(uri) in str(info.value)


def test_the_python_door_takes_a_tracking_uri(tmp_path):
    from tuner import CategoricalParameter

    tuner = HyperparameterTuner(
        {"command": fake_command()},
        "accuracy",
        {"x": CategoricalParameter([0.1])},
        METRICS,
        max_jobs=1,
        tracking_uri="databricks",
        storage=f"sqlite:///{tmp_path / 'db'}",
    )
    assert tuner.definition.tracking_uri == "databricks"
    with pytest.raises(ValidationError, match="tracking_uri must be"):
        HyperparameterTuner(
            {"command": fake_command()},
            "accuracy",
            {"x": CategoricalParameter([0.1])},
            METRICS,
            tracking_uri="localhost:5000",
        )


def test_tuner_run_takes_a_tracking_uri_flag_checked_by_the_same_rule(tmp_path, capsys):
    import yaml

    from tuner.cli import main

    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(definition(tmp_path, "http://127.0.0.1:9", "flagged")))
    code = main(
        ["--storage", f"sqlite:///{tmp_path / 'db'}", "run", str(path), "--tracking-uri", "x y"]
    )
    assert code == 2
    assert "tracking_uri must be an MLflow tracking URI" in capsys.readouterr().err


def test_work_dropped_from_a_full_queue_is_written_again_from_the_store(
    tmp_path, sqlite_url, mlflow_server
):
    from tuner.metrics import MetricPoint
    from tuner.records import TuningStatus
    from tuner.storage import Store
    from tuner.tracking.mlflow_tracker import MlflowTracker

    parsed = TuningJobDefinition.parse(definition(tmp_path, mlflow_server.url, "full"))
    store = Store(sqlite_url)
    store.create_tuning_job("full", parsed.to_json(), None, 30)
    job = store.create_training_job("full", 1, {"x": 0.1, "exit_code": 0})
    job = store.mark_started(job.name, "handle", str(tmp_path / "nowhere"))
    tracker = MlflowTracker(
        mlflow_server.url, "full", parsed, store, queue_size=1, close_timeout=SLOW_SERVER_CLOSE
    )
    tracker.start()
    tracker.job_started(job)
    points = [MetricPoint("accuracy", i / 1000, i, 1_700_000_000 + i) for i in range(300)]
    for i in range(0, 300, 3):  # as the scheduler does: stored first, then told
        store.add_metric_points(job.name, points[i : i + 3])
        tracker.points(job, points[i : i + 3])
    ended = store.finish_training_job(job.name, TrainingStatus.COMPLETED, 0.299)
    tracker.job_ended(ended)
    tracker.close(store.set_tuning_status("full", TuningStatus.COMPLETED, "done"))
    assert tracker.dropped["metrics"] > 0
    parent, children = runs_of(mlflow_server, "full")
    assert parent.data.tags["status"] == "Completed" and parent.info.status == "FINISHED"
    [run] = children
    history = client(mlflow_server).get_metric_history(run.info.run_id, "accuracy")
    assert sorted((m.step, m.value) for m in history) == [(i + 1, i / 1000) for i in range(300)]
    assert run.data.tags["status"] == "Completed" and run.info.status == "FINISHED"


def test_a_resumed_tuning_job_catches_up_what_its_first_process_never_sent(
    tmp_path, sqlite_url, mlflow_server, monkeypatch
):
    import threading

    from tuner.records import TrainingStatus as S
    from tuner.scheduler import Scheduler
    from tuner.storage import Store
    from tuner.tracking import Tracker

    parsed = TuningJobDefinition.parse(
        definition(tmp_path, mlflow_server.url, "resumed", static={"sleep": 1.5})
    )
    store = Store(sqlite_url)
    store.create_tuning_job("resumed", parsed.to_json(), owner="first", ttl=30)
    monkeypatch.setenv("TUNER_TRACKING_CLOSE_TIMEOUT", str(SLOW_SERVER_CLOSE))
    detach = threading.Event()
    first = Scheduler(parsed, "resumed", store, owner="first", detach_event=detach)
    first.tracker = Tracker()  # as if the first process died before it sent anything
    thread = threading.Thread(target=first.run)
    thread.start()
    wait_for(lambda: [j.status for j in store.list_training_jobs("resumed")] == [S.IN_PROGRESS] * 2)
    wait_for(lambda: store.metric_points(store.list_training_jobs("resumed")[0].name))
    detach.set()
    thread.join(10)
    assert runs_of(mlflow_server, "resumed") == (None, [])
    assert store.claim_tuning_job("resumed", "second", ttl=30)
    Scheduler(parsed, "resumed", Store(sqlite_url), owner="second").run()
    assert_mirrors_the_store(mlflow_server, HyperparameterTuner.attach("resumed", sqlite_url))


def test_a_comparison_passes_its_tracking_uri_to_every_arm_and_seed():
    import yaml

    from tuner.comparison import ComparisonSpec

    data = yaml.safe_load(
        (Path(__file__).parent.parent / "examples" / "quickstart.yaml").read_text()
    )
    spec = ComparisonSpec.parse({**data, "tracking_uri": "http://127.0.0.1:5000"})
    definitions = spec.definitions()
    assert {d.tracking_uri for d in definitions} == {"http://127.0.0.1:5000"}
    assert {d.tags["arm"] for d in definitions} == {a.name for a in spec.arms}
    with pytest.raises(ValidationError, match="tracking_uri must be"):
        ComparisonSpec.parse({**data, "tracking_uri": "127.0.0.1:5000"})


def test_names_mlflow_refuses_are_renamed_and_nothing_else_is_lost(
    tmp_path, sqlite_url, mlflow_server, monkeypatch
):
    """One hyperparameter named ``lr@group`` (or a metric ``weird (%)``) made MLflow refuse the
    whole batch: no params, metrics, tags or artifacts for any job, runs RUNNING forever."""
    monkeypatch.setenv("TUNER_TRACKING_CLOSE_TIMEOUT", str(SLOW_SERVER_CLOSE))
    data = definition(
        tmp_path,
        mlflow_server.url,
        "renamed",
        ranges={"lr@group": {"type": "categorical", "values": [0.1, 0.2]}},
        metric_definitions=[*METRICS, {"Name": "weird (%)", "Regex": r"loss=([0-9.]+)"}],
        max_jobs=2,
        tags={"arm": "grid", "comparison": "renamed", "team@x": "ml"},  # a run's own tag too
    )
    tuner = HyperparameterTuner.from_definition(data, storage=sqlite_url)
    assert tuner.fit(wait=True) is not None
    c = client(mlflow_server)
    parent, children = runs_of(mlflow_server, "renamed")
    assert parent.info.status == "FINISHED" and len(children) == 2
    team = mlflow_key("team@x")
    assert parent.data.tags[team] == "ml" and children[0].data.tags[team] == "ml"
    assert parent.info.start_time <= min(r.info.start_time for r in children)  # was after them
    for run, job in zip(children, tuner.training_jobs(), strict=True):
        assert run.info.status == "FINISHED" and run.data.tags["status"] == "Completed"
        assert run.data.params["lr_group_d27fe6"] == str(job.hyperparameters["lr@group"])
        assert len(c.get_metric_history(run.info.run_id, "weird ____9893fe")) == 3
        assert len(c.get_metric_history(run.info.run_id, "accuracy")) == 3
        assert "log.txt" in {a.path for a in c.list_artifacts(run.info.run_id)}


def test_mlflow_keys():
    assert mlflow_key("lr@group") == "lr_group_d27fe6"  # _ and its SHA-1's first six digits
    assert mlflow_key("weird (%)") == "weird ____9893fe"
    assert mlflow_key("a/b.c-d e_f") == "a/b.c-d e_f"  # what MLflow takes stays
    assert mlflow_key("a//b") == "a__b_586cec" and mlflow_key("/a") == "_a_2256c6"
    assert mlflow_key("..") == "_.._9d891e" and mlflow_key("") == "_da39a3"
    assert mlflow_key("x" * 300) == "x" * 243 + "_02fd68"
    # A resumed tuner met m@x before m_x and gave it the key the first tuner had given m_x:
    # the two metrics' histories were swapped. Keys depend on the name alone now.
    assert mlflow_key("m_x") == "m_x" and mlflow_key("m@x") == "m_x_8dc2aa"


def test_artifacts_a_server_keeps_failing_are_left_out_not_blocking(
    tmp_path, sqlite_url, mlflow_server, monkeypatch
):
    """A server answering 500 to artifact uploads held every later job's tracking behind the
    first job's end, retried forever: jobs 3-6 never appeared, runs stayed RUNNING."""
    from mlflow.exceptions import MlflowException
    from mlflow.tracking import MlflowClient

    def broken(*args: Any, **kwargs: Any) -> None:
        raise MlflowException("artifact store down", error_code="INTERNAL_ERROR")

    monkeypatch.setattr(MlflowClient, "log_artifact", broken)
    monkeypatch.setenv("TUNER_TRACKING_CLOSE_TIMEOUT", str(SLOW_SERVER_CLOSE))
    data = definition(tmp_path, mlflow_server.url, "noartifacts")
    tuner = HyperparameterTuner.from_definition(data, storage=sqlite_url)
    tuner.fit(wait=True)
    parent, children = runs_of(mlflow_server, "noartifacts")
    assert parent.info.status == "FINISHED" and len(children) == 4
    assert all(r.info.status in ("FINISHED", "FAILED") for r in children)
    assert all("status" in r.data.tags for r in children)


def test_a_file_store_mlflow_refuses_is_one_clear_error_recording_nothing(
    tmp_path, capsys, monkeypatch
):
    """MLflow 3 refuses its file store unless MLFLOW_ALLOW_FILE_STORE=true: a raw traceback,
    exit 1, before."""
    pytest.importorskip("mlflow")
    import yaml

    from tuner.cli import main

    monkeypatch.delenv("MLFLOW_ALLOW_FILE_STORE", raising=False)
    config = tmp_path / "job.yaml"
    uri = f"file://{tmp_path / 'mlruns'}"
    config.write_text(yaml.safe_dump(definition(tmp_path, uri, "filestore")))
    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    assert main(["--storage", url, "run", str(config), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert f"tracking_uri {uri!r} cannot be used: " in err and "MLFLOW_ALLOW_FILE_STORE" in err
    from tuner.storage import Store

    assert Store(url).list_tuning_jobs() == []


def test_a_deleted_experiment_is_named_in_one_error_and_costs_nothing(
    tmp_path, sqlite_url, mlflow_server, monkeypatch, caplog
):
    """Its name stays taken in MLflow; the refusal read 'must be in the active state'."""
    monkeypatch.setenv("TUNER_TRACKING_CLOSE_TIMEOUT", "60")
    caplog.set_level(logging.WARNING, logger="tuner.tracking")
    c = client(mlflow_server)
    c.delete_experiment(c.create_experiment("deleted"))
    data = definition(tmp_path, mlflow_server.url, "deleted", max_jobs=2)
    tuner = HyperparameterTuner.from_definition(data, storage=sqlite_url)
    tuner.fit()
    assert tuner.describe()["status"] == "Completed"
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1, errors
    assert "experiment 'deleted' is deleted in MLflow and its name stays taken" in errors[0]
    assert "tuner track deleted" in errors[0]


def test_output_files_mlflow_would_mangle_are_logged_escaped(tmp_path, mlflow_server):
    """``ckpt#1.txt`` and ``ckpt#2.txt`` both became ``output/ckpt`` in MLflow (its HTTP
    artifact client cuts names at ``#``), the second overwriting the first, and nothing said."""
    from tuner.tracking.mlflow_tracker import log_outputs

    output = tmp_path / "job" / "output"
    (output / "sub").mkdir(parents=True)
    names = ["ckpt#1.txt", "ckpt#2.txt", "q?x.txt", "pct%20.txt", "sub/a#b", "plain.txt"]
    names.append("ckpt_232.txt")  # a file named as another's escaped name keeps its own
    for name in names:
        (output / name).write_text(f"content of {name}")
    c = client(mlflow_server)
    run_id = c.create_run(c.create_experiment("escaped")).info.run_id
    log_outputs(c, run_id, output)
    logged = {a.path for a in c.list_artifacts(run_id, "output")}
    logged |= {a.path for a in c.list_artifacts(run_id, "output/sub")}
    expected = ["ckpt_231.txt", "ckpt_232.txt_", "q_3fx.txt", "pct_2520.txt", "sub/a_23b"]
    expected += ["plain.txt", "ckpt_232.txt"]
    assert logged == {f"output/{e}" for e in expected} | {"output/sub"}
    folder = c.download_artifacts(run_id, "output", str(tmp_path / "back"))
    for name, escaped in zip(names, expected, strict=True):
        assert Path(folder, escaped).read_text() == f"content of {name}"
    assert sorted(p.name for p in (tmp_path / "job").iterdir()) == ["output"]  # staging removed


def test_twins_of_a_retried_run_creation_are_deleted(
    tmp_path, sqlite_url, mlflow_server, monkeypatch
):
    """MLflow's client retries a create_run whose answer a gateway lost (a 504) or that timed
    out, though the server had made the run: the experiment held two parent runs of the tuning
    job (and two of each training job), the empty twin RUNNING for ever."""
    from mlflow.tracking import MlflowClient

    create = MlflowClient.create_run

    def created_twice(self: MlflowClient, *args: Any, **kw: Any) -> Any:
        create(self, *args, **kw)  # the server made it; the answer was lost
        return create(self, *args, **kw)

    monkeypatch.setattr(MlflowClient, "create_run", created_twice)
    monkeypatch.setenv("TUNER_TRACKING_CLOSE_TIMEOUT", str(SLOW_SERVER_CLOSE))
    data = definition(tmp_path, mlflow_server.url, "twins", max_jobs=2)
    data["hyperparameter_ranges"] = {"x": {"type": "categorical", "values": [0.1, 0.5]}}
    tuner = HyperparameterTuner.from_definition(data, storage=sqlite_url)
    tuner.fit()
    c = client(mlflow_server)
    runs = c.search_runs([c.get_experiment_by_name("twins").experiment_id], max_results=100)
    assert len(runs) == 3 and all(r.info.status == "FINISHED" for r in runs)
    assert_mirrors_the_store(mlflow_server, tuner)


def test_a_tuning_job_stopped_before_it_ran_is_a_stopped_parent_run(
    tmp_path, sqlite_url, mlflow_server
):
    """A service ends a waiting tuning job asked to stop without a worker, and no worker wrote
    it to MLflow: it was missing there."""
    from tuner.service import NEVER_RAN, TuningService
    from tuner.storage import Store

    store = Store(sqlite_url)
    service = TuningService(store, tmp_path / "runs", 60, workers="thread", max_running=1)
    try:
        long = definition(tmp_path, mlflow_server.url, "busy", static={"sleep": 3})
        service.submit(TuningJobDefinition.parse(long))
        waiting = definition(tmp_path, mlflow_server.url, "never-ran")
        service.submit(TuningJobDefinition.parse(waiting))
        assert service.stop("never-ran").status_reason == NEVER_RAN
        parent, children = wait_for(
            lambda: (
                (found := runs_of(mlflow_server, "never-ran"))[0] is not None
                and found[0].info.status == "KILLED"
                and found
            )
        )
        assert parent.info.run_name == "never-ran" and children == []
        assert parent.data.tags["status"] == "Stopped"
        assert parent.data.tags["status_reason"] == NEVER_RAN
    finally:
        service.stop("busy")
        service.shutdown()


def test_params_a_lost_connection_kept_from_a_new_run_are_written_by_the_retry(
    tmp_path, sqlite_url, mlflow_server
):
    """CI: the server went away between a nested run's creation and its params; the retry
    found the run already known and skipped them, and the run stayed without params (the
    parent run's params the same way)."""
    from tuner.records import TuningStatus
    from tuner.storage import Store
    from tuner.tracking.mlflow_tracker import MlflowTracker

    parsed = TuningJobDefinition.parse(definition(tmp_path, mlflow_server.url, "lost-params"))
    store = Store(sqlite_url)
    store.create_tuning_job("lost-params", parsed.to_json(), None, 30)
    job = store.create_training_job("lost-params", 1, {"x": 0.1, "exit_code": 0})
    job = store.mark_started(job.name, "handle", str(tmp_path / "nowhere"))
    tracker = MlflowTracker(
        mlflow_server.url, "lost-params", parsed, store, close_timeout=SLOW_SERVER_CLOSE
    )
    log_batch = tracker.client.log_batch
    failed: list[str] = []

    def connection_lost_once(run_id: str, **kwargs: Any) -> None:
        if kwargs.get("params") and run_id not in failed:  # once for each run
            failed.append(run_id)
            raise ConnectionError("the server went away")  # not a refusal: retried
        log_batch(run_id, **kwargs)

    tracker.client.log_batch = connection_lost_once  # type: ignore[method-assign]
    tracker.start()
    tracker.job_started(job)
    ended = store.finish_training_job(job.name, TrainingStatus.COMPLETED, 0.1)
    tracker.job_ended(ended)
    tracker.close(store.set_tuning_status("lost-params", TuningStatus.COMPLETED, "done"))
    parent, [run] = runs_of(mlflow_server, "lost-params")
    assert failed == [parent.info.run_id, run.info.run_id]
    assert parent.data.params["objective_metric_name"] == "accuracy"
    assert run.data.params == {"epochs": "3", "x": "0.1", "exit_code": "0"}
