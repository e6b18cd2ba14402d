"""The REST API against a real uvicorn server on 127.0.0.1, with a real HTTP client."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from api.sagemaker import from_sagemaker
from tests.api.conftest import client, definition, wait_status
from tests.conftest import FAKE_TRAIN
from tuner import ContinuousParameter, HyperparameterTuner
from tuner.definition import TuningJobDefinition
from tuner.errors import NotFoundError, TunerError, ValidationError
from tuner.records import TrainingStatus
from tuner.storage import Store

ENDPOINTS = [
    ("GET", "/tuning-jobs"),
    ("POST", "/tuning-jobs"),
    ("GET", "/tuning-jobs/x"),
    ("GET", "/tuning-jobs/x/training-jobs"),
    ("POST", "/tuning-jobs/x/stop"),
    ("GET", "/tuning-jobs/x/fidelity"),
    ("GET", "/tuning-jobs/x/report"),
    ("GET", "/reports/compare?names=x"),
    ("GET", "/training-jobs/x-001"),
    ("GET", "/training-jobs/x-001/logs"),
]


@pytest.mark.parametrize(("method", "path"), ENDPOINTS)
def test_every_endpoint_but_healthz_needs_the_token(server, method, path):
    assert httpx.get(f"{server.url}/healthz").json() == {"status": "ok"}
    assert httpx.head(f"{server.url}/healthz").status_code == 200  # as uptime checkers ask
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "Basic abc"}):
        response = httpx.request(method, server.url + path, headers=headers, json={})
        assert response.status_code == 401
        assert response.headers["www-authenticate"] == "Bearer"


def test_the_api_description_is_public_and_holds_no_data(server):
    """/openapi.json and /docs describe the API (no tuning job, no token) and need no token."""
    schema = httpx.get(f"{server.url}/openapi.json")
    assert schema.status_code == 200 and "/tuning-jobs" in schema.json()["paths"]
    assert httpx.get(f"{server.url}/docs").status_code == 200


def test_create_watch_and_inspect_a_tuning_job(http):
    created = http.post("/tuning-jobs", json=definition())
    assert created.status_code == 201, created.text
    assert created.json()["name"] == "api-job" and created.json()["status"] == "InProgress"
    done = wait_status(http, "api-job", {"Completed"})
    assert done["training_job_status_counters"]["Completed"] == 4
    assert done["objective_status_counters"]["Succeeded"] == 4
    assert done["consumed_seconds"] > 0
    best = done["best_training_job"]

    jobs = http.get("/tuning-jobs/api-job/training-jobs").json()
    assert [j["number"] for j in jobs] == [1, 2, 3, 4]
    assert best["objective"] == max(j["objective"] for j in jobs)
    one = http.get(f"/training-jobs/{jobs[0]['name']}").json()
    assert one["hyperparameters"] == jobs[0]["hyperparameters"]

    log = http.get(f"/training-jobs/{jobs[0]['name']}/logs").text
    assert "[Epoch 0]" in log and "[Epoch 1]" in log and "done" in log
    tail = http.get(f"/training-jobs/{jobs[0]['name']}/logs", params={"tail": 1}).text
    assert tail.strip() == "done"

    report = http.get("/tuning-jobs/api-job/report").json()
    assert len(report["training_jobs"]) == 4
    assert report["curves"]["api-job"][0][-1]["best"] == best["objective"]
    assert report["arms"][0]["best_overall"] == best["objective"]
    assert report["not_ended"] == []  # a running one is named there (tests/reports)
    assert report["importance"] == []  # only where asked: fANOVA takes seconds an arm
    asked = http.get("/tuning-jobs/api-job/report", params={"importance": "true"}).json()
    assert asked["importance"] == [
        {
            "arm": "api-job",
            "jobs": 4,
            "of": 4,
            "importance": None,
            "why": "4 completed jobs, fewer than the 10 it needs",
        }
    ]
    refused = http.get("/tuning-jobs/api-job/report", params={"importance": "perhaps"})
    assert refused.status_code == 422 and "importance" in refused.text and "perhaps" in refused.text
    page = http.get("/tuning-jobs/api-job/report", params={"format": "html"})
    assert page.headers["content-type"].startswith("text/html")
    assert page.text.count("data:image/png;base64,") == 4


def _peak_rss_kib(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmHWM")))


def test_a_large_log_is_sent_in_pieces_not_held_in_memory(server, http):
    """One GET of a 400 MiB log took the server from 0.7 to 1.9 GB (read whole, decoded,
    encoded again); it is streamed now, invalid UTF-8 still replaced, also where a character
    is cut by a piece's end, and so are tails and what a follower gets."""
    body = definition("big-log", max_jobs=1, max_parallel_jobs=1)
    assert http.post("/tuning-jobs", json=body).status_code == 201
    wait_status(http, "big-log", {"Completed"})
    job = http.get("/training-jobs/big-log-001").json()
    path = Path(job["workdir"]) / "log.txt"
    head = path.read_bytes()
    assert server.process is not None
    # A tail of one 30 MiB line: its last 16 MiB (the limit), no copy of it held (a tail of it
    # held about 33 MiB per request), the same with follow.
    path.write_bytes(head + b"\xff\n" + b"z" * (30 << 20))
    before = _peak_rss_kib(server.process.pid)
    for follow in (False, True):
        params = {"tail": 2, "follow": follow}
        with http.stream("GET", "/training-jobs/big-log-001/logs", params=params) as response:
            assert b"".join(response.iter_bytes()) == b"z" * (16 << 20), follow
    grew_mib = (_peak_rss_kib(server.process.pid) - before) / 1024
    assert grew_mib < 24, f"the server's peak memory grew by {grew_mib:.0f} MiB"

    cut = b"x" * ((1 << 20) - len(head) - 1) + "é".encode()  # é straddles the 1 MiB mark
    bulk = (b"y" * 1023 + b"\n") * (96 << 10)  # 96 MiB
    path.write_bytes(head + cut + b"\xff\n" + bulk)
    before = _peak_rss_kib(server.process.pid)
    with http.stream("GET", "/training-jobs/big-log-001/logs") as response:
        received = b"".join(response.iter_bytes())
    grew_mib = (_peak_rss_kib(server.process.pid) - before) / 1024
    assert received == (head + cut + b"\xff\n" + bulk).decode("utf-8", "replace").encode()
    assert grew_mib < 48, f"the server's peak memory grew by {grew_mib:.0f} MiB"
    # A follower gets the same text: invalid UTF-8 replaced (it got the raw bytes under
    # charset=utf-8), a character cut by a piece's end whole.
    with http.stream("GET", "/training-jobs/big-log-001/logs", params={"follow": True}) as r:
        assert b"".join(r.iter_bytes()) == received
    lines = {"tail": 2, "follow": True}
    with http.stream("GET", "/training-jobs/big-log-001/logs", params=lines) as r:
        assert b"".join(r.iter_bytes()) == bulk[-2048:]


def test_describe_shows_the_strategys_state(http):
    """README promises ``restarts`` in describe; the REST schema dropped the field."""
    body = definition("bayes-state", strategy="Bayesian", max_jobs=3, max_parallel_jobs=1)
    assert http.post("/tuning-jobs", json=body).status_code == 201
    done = wait_status(http, "bayes-state", {"Completed"})
    assert done["strategy_state"]["engine"] == "native"
    assert done["strategy_state"]["restarts"] == 0
    assert done["strategy_state"]["avoided_basins"] == 0


def test_logs_follow_streams_until_the_job_ends(http):
    http.post("/tuning-jobs", json=definition("follow", sleep=2.0, max_jobs=1, max_parallel_jobs=1))
    deadline = time.monotonic() + 30
    while not http.get("/tuning-jobs/follow/training-jobs").json():
        assert time.monotonic() < deadline
        time.sleep(0.1)
    began = time.monotonic()
    with http.stream("GET", "/training-jobs/follow-001/logs", params={"follow": True}) as r:
        text = "".join(r.iter_text())
    assert "[Epoch 1]" in text and text.rstrip().endswith("done")
    assert time.monotonic() - began > 0.5  # it waited for the job to write


def test_many_log_followers_leave_the_service_answering(server, http):
    """Each follower used to wait in one of the service's 40 worker threads until the job
    printed: with 50 of them the rest, and every other request, waited for its first line
    (a minute here). Now they wait on the event loop: all answer before the job prints."""
    silent = definition("crowd", sleep=120.0, max_jobs=1, max_parallel_jobs=1)  # 60 s silent
    http.post("/tuning-jobs", json=silent)
    deadline = time.monotonic() + 30
    while not http.get("/tuning-jobs/crowd/training-jobs", params={"status": "InProgress"}).json():
        assert time.monotonic() < deadline
        time.sleep(0.1)
    opened = threading.Semaphore(0)

    def follow() -> None:
        with (
            client(server) as own,
            own.stream("GET", "/training-jobs/crowd-001/logs", params={"follow": True}) as r,
        ):
            opened.release()
            for _ in r.iter_bytes():
                pass

    readers = [threading.Thread(target=follow, daemon=True) for _ in range(50)]
    for reader in readers:
        reader.start()
    try:
        for _ in readers:
            assert opened.acquire(timeout=30), "a follower got no answer while the job was silent"
        answered = http.get("/tuning-jobs/crowd").json()  # while all 50 follow
        assert answered["training_job_status_counters"]["InProgress"] == 1
        (job,) = http.get("/tuning-jobs/crowd/training-jobs").json()
        assert "[Epoch 0]" not in (Path(job["workdir"]) / "log.txt").read_text()  # still silent
    finally:
        http.post("/tuning-jobs/crowd/stop")  # the service would keep its job for a restart
    for reader in readers:
        reader.join(60)
        assert not reader.is_alive()


def test_logs_follow_waits_for_a_job_that_has_not_started(server, http, sqlite_url, tmp_path):
    store = Store(sqlite_url)  # a tuning job held by another process, its job still Pending
    store.create_tuning_job("elsewhere", definition("elsewhere"), "other-host:1", ttl=3600)
    store.create_training_job("elsewhere", 1, {"x": 0.5, "y": 0.5})
    received: list[str] = []

    def follow() -> None:
        with http.stream("GET", "/training-jobs/elsewhere-001/logs", params={"follow": True}) as r:
            received.extend(r.iter_text())

    reader = threading.Thread(target=follow)
    reader.start()
    time.sleep(1.0)
    workdir = tmp_path / "elsewhere-001"
    workdir.mkdir()
    (workdir / "log.txt").write_text("[Epoch 0] validation: accuracy=0.5\n")
    store.mark_started("elsewhere-001", "local:0:0:elsewhere-001", str(workdir))
    time.sleep(0.5)
    with open(workdir / "log.txt", "a") as f:
        f.write("done\n")
    store.finish_training_job("elsewhere-001", TrainingStatus.COMPLETED, 0.5)
    reader.join(30)
    assert not reader.is_alive()
    assert "".join(received) == "[Epoch 0] validation: accuracy=0.5\ndone\n"


def test_fidelity_says_from_which_step_jobs_rank_as_they_end(http):
    curve = Path(__file__).parents[1] / "jobs" / "curve_train.py"
    body = definition(
        "fidelity-job",
        max_jobs=8,
        max_parallel_jobs=4,
        hyperparameter_ranges={"x": {"type": "continuous", "min_value": 0.0, "max_value": 1.0}},
        job_definition={
            "command": [sys.executable, str(curve)],
            "static_hyperparameters": {"epochs": 9, "step_sleep": 0.01, "cross_at": 3},
        },
    )
    assert http.post("/tuning-jobs", json=body).status_code == 201
    wait_status(http, "fidelity-job", {"Completed"})
    found = http.get("/tuning-jobs/fidelity-job/fidelity").json()
    assert found["completed_jobs"] == 8 and found["eta"] == 3
    assert [r["step"] for r in found["steps"]] == list(range(1, 10))
    assert found["steps"][0]["spearman"] == pytest.approx(-1.0)
    assert found["steps"][2]["spearman"] == pytest.approx(1.0)
    assert found["suggested_min_resource"] == 3
    assert http.get("/tuning-jobs/fidelity-job/fidelity?eta=2").json()["eta"] == 2
    refused = http.get("/tuning-jobs/fidelity-job/fidelity?eta=1")
    assert refused.status_code == 422 and "eta" in refused.text
    assert http.get("/tuning-jobs/no-such-job/fidelity").status_code == 404


def test_list_filters_and_pages(http):
    for i in range(3):
        http.post("/tuning-jobs", json=definition(f"page-{i}", max_jobs=1, max_parallel_jobs=1))
    for i in range(3):
        wait_status(http, f"page-{i}", {"Completed"})
    first = http.get("/tuning-jobs", params={"limit": 2}).json()
    assert [j["name"] for j in first["items"]] == ["page-2", "page-1"]
    assert first["next_offset"] == 2
    rest = http.get("/tuning-jobs", params={"limit": 2, "offset": 2}).json()
    assert [j["name"] for j in rest["items"]] == ["page-0"] and rest["next_offset"] is None
    assert len(http.get("/tuning-jobs", params={"status": "Completed"}).json()["items"]) == 3
    assert http.get("/tuning-jobs", params={"status": "Failed"}).json()["items"] == []
    compare = http.get("/reports/compare", params={"names": ["page-0", "page-1"]}).json()
    assert [a["arm"] for a in compare["arms"]] == ["page-0", "page-1"]
    params = {"names": ["page-0", "page-1"], "importance": "true", "format": "html"}
    page = http.get("/reports/compare", params=params)
    assert page.status_code == 200 and "Hyperparameter importance (fANOVA)" in page.text


def test_training_jobs_sorted_filtered_and_paged(http):
    http.post("/tuning-jobs", json=definition("sorted", max_jobs=5))
    wait_status(http, "sorted", {"Completed"})

    def listed(**params):
        response = http.get("/tuning-jobs/sorted/training-jobs", params=params)
        assert response.status_code == 200, response.text
        return response.json()

    everything = listed()
    assert [j["number"] for j in everything] == [1, 2, 3, 4, 5]
    by_objective = sorted(everything, key=lambda j: (-j["objective"], j["number"]))
    best_first = listed(sort_by="objective")  # Maximize: best first unless told otherwise
    assert [j["name"] for j in best_first] == [j["name"] for j in by_objective]
    assert [j["name"] for j in listed(sort_by="objective", limit=2)] == [
        j["name"] for j in by_objective[:2]
    ]
    worst_first = listed(sort_by="objective", sort_order="Ascending", limit=3, offset=1)
    assert [j["name"] for j in worst_first] == [j["name"] for j in by_objective[::-1][1:4]]
    assert [j["number"] for j in listed(sort_by="name", sort_order="Descending")] == [5, 4, 3, 2, 1]
    assert len(listed(status="Completed")) == 5 and listed(status="Failed") == []
    assert listed(offset=5) == []

    for params, value in [
        ({"sort_by": "speed"}, "speed"),
        ({"sort_order": "down"}, "down"),
        ({"status": "Done"}, "Done"),
        ({"limit": 0}, "0"),
        ({"offset": -1}, "-1"),
    ]:
        bad = http.get("/tuning-jobs/sorted/training-jobs", params=params)
        assert bad.status_code == 422, bad.text
        assert value in bad.text and next(iter(params)) in bad.text
    assert (
        http.get("/tuning-jobs/nope/training-jobs", params={"sort_by": "objective"}).status_code
        == 404
    )
    assert len(listed()) == 5  # nothing lost


def test_the_rest_api_sorts_by_what_the_store_sorts_by():
    from typing import get_args

    from api.app import SortKey
    from tuner.storage.store import TRAINING_SORT_KEYS

    assert set(get_args(SortKey)) == set(TRAINING_SORT_KEYS)


def test_stop_over_http(http):
    http.post("/tuning-jobs", json=definition("stop-me", sleep=60))
    deadline = time.monotonic() + 30
    while len(http.get("/tuning-jobs/stop-me/training-jobs").json()) < 2:
        assert time.monotonic() < deadline
        time.sleep(0.1)
    assert http.post("/tuning-jobs/stop-me/stop").json()["status"] == "Stopping"
    done = wait_status(http, "stop-me", {"Stopped"}, timeout=30)
    assert done["training_job_status_counters"]["Stopped"] == 2


def test_a_sagemaker_request_runs(http):
    request = {
        "HyperParameterTuningJobName": "from-sagemaker",
        "HyperParameterTuningJobConfig": {
            "Strategy": "Random",
            "RandomSeed": 3,
            "HyperParameterTuningJobObjective": {"Type": "Maximize", "MetricName": "accuracy"},
            "ResourceLimits": {
                "MaxNumberOfTrainingJobs": 3,
                "MaxParallelTrainingJobs": 1,
                "MaxRuntimeInSeconds": 3600,
            },
            "ParameterRanges": {
                "ContinuousParameterRanges": [
                    {"Name": "x", "MinValue": "0.1", "MaxValue": "0.9", "ScalingType": "Linear"}
                ],
                "IntegerParameterRanges": [{"Name": "epochs", "MinValue": "1", "MaxValue": "3"}],
                "CategoricalParameterRanges": [{"Name": "opt", "Values": ["sgd", "adam"]}],
            },
        },
        "TrainingJobDefinition": {
            "AlgorithmSpecification": {
                "TrainingImage": "ignored-when-an-entrypoint-is-given",
                "ContainerEntrypoint": [sys.executable, str(FAKE_TRAIN)],
                "MetricDefinitions": [{"Name": "accuracy", "Regex": "accuracy=([0-9\\.]+)"}],
                "TrainingInputMode": "File",
            },
            "StaticHyperParameters": {"y": "0.6"},
            "StoppingCondition": {"MaxRuntimeInSeconds": 600},
            "RoleArn": "arn:aws:iam::123456789012:role/ignored",
        },
    }
    assert http.post("/tuning-jobs", json=request).status_code == 201
    done = wait_status(http, "from-sagemaker", {"Completed"})
    d = done["definition"]
    assert d["hyperparameter_ranges"]["x"] == {
        "type": "continuous",
        "min_value": 0.1,
        "max_value": 0.9,
        "scaling_type": "Linear",
    }
    assert d["hyperparameter_ranges"]["epochs"]["type"] == "integer"
    assert d["job_definition"]["max_runtime"] == 600
    assert d["max_tuning_runtime"] == 3600
    jobs = http.get("/tuning-jobs/from-sagemaker/training-jobs").json()
    assert len(jobs) == 3 and all(j["status"] == "Completed" for j in jobs)
    assert all(j["hyperparameters"]["opt"] in ("sgd", "adam") for j in jobs)


def sagemaker_hyperband(min_resource: str, max_resource: str) -> dict:
    curve = FAKE_TRAIN.parent / "curve_train.py"
    return {
        "HyperParameterTuningJobName": "sagemaker-hyperband",
        "HyperParameterTuningJobConfig": {
            "Strategy": "Hyperband",
            "StrategyConfig": {
                "HyperbandStrategyConfig": {
                    "MinResource": min_resource,
                    "MaxResource": max_resource,
                }
            },
            "TrainingJobEarlyStoppingType": "Off",
            "RandomSeed": 1,
            "HyperParameterTuningJobObjective": {"Type": "Maximize", "MetricName": "accuracy"},
            "ResourceLimits": {"MaxNumberOfTrainingJobs": 6, "MaxParallelTrainingJobs": 2},
            "ParameterRanges": {
                "ContinuousParameterRanges": [{"Name": "x", "MinValue": "0", "MaxValue": "1"}]
            },
        },
        "TrainingJobDefinition": {
            "AlgorithmSpecification": {
                "ContainerEntrypoint": [sys.executable, str(curve)],
                "MetricDefinitions": [{"Name": "accuracy", "Regex": "accuracy=([0-9\\.]+)"}],
            },
            "StaticHyperParameters": {"epochs": "9", "step_sleep": "0.05"},
        },
    }


def test_a_sagemaker_hyperband_request_stops_jobs_at_rungs(http):
    response = http.post("/tuning-jobs", json=sagemaker_hyperband("1", "9"))
    assert response.status_code == 201, response.text
    done = wait_status(http, "sagemaker-hyperband", {"Completed"})
    assert done["strategy"] == "Hyperband" and done["early_stopping_type"] == "Off"
    assert done["definition"]["strategy_config"] == {
        "resource": "epochs",
        "min_resource": 1,
        "max_resource": 9,
    }
    jobs = http.get("/tuning-jobs/sagemaker-hyperband/training-jobs").json()
    early = [j for j in jobs if (j["failure_reason"] or "").startswith("early stopping at step")]
    assert done["stopped_early"] == len(early)
    assert all(j["status"] == "Stopped" and j["failure_reason"][-1] in "13" for j in early)
    assert len(jobs) == 6 and done["training_job_status_counters"]["Failed"] == 0


def test_a_sagemaker_grid_without_a_job_limit_runs_its_whole_grid(http):
    """SageMaker works out a Grid's job count; Environment, Tags and the completion criteria
    are read, not dropped (BestObjectiveNotImproving counts gains under 1% as none)."""
    request = {
        "HyperParameterTuningJobName": "sagemaker-grid",
        "HyperParameterTuningJobConfig": {
            "Strategy": "Grid",
            "HyperParameterTuningJobObjective": {"Type": "Maximize", "MetricName": "accuracy"},
            "ResourceLimits": {"MaxParallelTrainingJobs": 2},
            "ParameterRanges": {
                "IntegerParameterRanges": [{"Name": "epochs", "MinValue": "1", "MaxValue": "2"}],
                "CategoricalParameterRanges": [{"Name": "x", "Values": ["0.1", "0.5", "0.9"]}],
            },
            "TuningJobCompletionCriteria": {
                "BestObjectiveNotImproving": {"MaxNumberOfTrainingJobsNotImproving": 10},
                "ConvergenceDetected": {"CompleteOnConvergence": "Disabled"},
            },
        },
        "TrainingJobDefinition": {
            "AlgorithmSpecification": {
                "ContainerEntrypoint": [sys.executable, str(FAKE_TRAIN)],
                "MetricDefinitions": [{"Name": "accuracy", "Regex": "accuracy=([0-9\\.]+)"}],
                "TrainingInputMode": "File",
            },
            "Environment": {"TUNER_TEST_GREETING": "hello"},
            "RoleArn": "arn:aws:iam::123456789012:role/ignored",
            "ResourceConfig": {"InstanceType": "ml.g5.xlarge", "InstanceCount": 1},
        },
        "Tags": [{"Key": "team", "Value": "vision"}],
    }
    response = http.post("/tuning-jobs", json=request)
    assert response.status_code == 201, response.text
    done = wait_status(http, "sagemaker-grid", {"Completed"})
    d = done["definition"]
    assert d["max_jobs"] == 6 and d["max_jobs_without_improvement"] == 10
    assert d["min_relative_improvement"] == 0.01
    assert d["job_definition"]["environment"] == {"TUNER_TEST_GREETING": "hello"}
    assert d["tags"] == {"team": "vision"}
    jobs = http.get("/tuning-jobs/sagemaker-grid/training-jobs").json()
    assert sorted((j["hyperparameters"]["epochs"], j["hyperparameters"]["x"]) for j in jobs) == [
        (e, x) for e in (1, 2) for x in ("0.1", "0.5", "0.9")
    ]


@pytest.mark.parametrize("strategy_config", [None, {}, {"HyperbandStrategyConfig": {}}])
def test_a_sagemaker_hyperband_request_finds_its_resource_without_a_strategy_config(
    strategy_config,
):
    request = sagemaker_hyperband("1", "9")
    config = request["HyperParameterTuningJobConfig"]
    del config["StrategyConfig"]
    if strategy_config is not None:
        config["StrategyConfig"] = strategy_config
    request["TrainingJobDefinition"]["StaticHyperParameters"] = {"num_epochs": "9"}
    data = from_sagemaker(request)
    assert data["strategy_config"] == {"resource": "num_epochs"}
    parsed = TuningJobDefinition.parse(data)
    assert parsed.hyperband().resource == "num_epochs" and parsed.hyperband().max_resource == 9


def test_a_sagemaker_median_rule_request_is_read(http):
    request = sagemaker_hyperband("1", "9")
    config = request["HyperParameterTuningJobConfig"]
    config.update(Strategy="Random", TrainingJobEarlyStoppingType="Auto")
    del config["StrategyConfig"]
    request["HyperParameterTuningJobName"] = "sagemaker-auto"
    assert http.post("/tuning-jobs", json=request).status_code == 201
    done = wait_status(http, "sagemaker-auto", {"Completed"})
    assert done["early_stopping_type"] == "Auto"


BAD = [
    (definition(max_jobs=0), 400, "max_jobs: Input should be greater than or equal to 1, got 0"),
    (definition(max_jobs=2, max_parallel_jobs=3), 400, "max_parallel_jobs <= max_jobs"),
    (definition(objective_metric_name="loss"), 400, "objective_metric_name must be one of"),
    (definition(name="../../etc"), 400, "name: String should match pattern"),
    (definition(strategy="Evolution"), 400, "strategy must be one of"),
    (
        {**definition(), "job_definition": {"command": ["/bin/sh", "-c", "id"]}},
        400,
        "the program each job runs must be one of the programs this service allows",
    ),
    (
        {"HyperParameterTuningJobConfig": {}},
        400,
        "HyperParameterTuningJobConfig.ResourceLimits is required",
    ),
    ({}, 400, "job_definition: required, missing"),
    (sagemaker_hyperband("9", "9"), 400, "MinResource < MaxResource, got MinResource=9"),
    (sagemaker_hyperband("1", "27"), 400, "MaxResource must equal the static epochs"),
]


@pytest.mark.parametrize(("body", "status", "message"), BAD, ids=[m[:30] for *_, m in BAD])
def test_bad_definitions_get_a_4xx_that_names_the_rule(http, body, status, message):
    response = http.post("/tuning-jobs", json=body)
    assert response.status_code == status, response.text
    assert message in response.json()["detail"]


@pytest.mark.parametrize(
    "body", [b"NaN", b"Infinity", b"1e999999", b"[1e400]", b'[{"x": -Infinity}]']
)
def test_a_body_that_is_no_object_and_holds_no_json_number_gets_422(http, body):
    """The 422 echoes the input, which such a number cannot be in: it was a 500."""
    response = http.post("/tuning-jobs", content=body, headers={"content-type": "application/json"})
    assert response.status_code == 422, response.text
    assert response.json()["detail"][0]["type"] == "dict_type"


def test_a_name_filter_with_a_nul_is_refused(http):
    """PostgreSQL answered 500 (text cannot hold NUL); SQLite cut the filter at it."""
    response = http.get("/dashboard/tuning-jobs", params={"name": "a\x00b"})
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"] == ["query", "name"]


def test_a_query_parameter_given_twice_is_refused_but_names(http):
    """``?status=Failed&status=Completed`` listed the Completed ones only, silently."""
    twice = http.get("/tuning-jobs", params=[("status", "Failed"), ("status", "Completed")])
    assert twice.status_code == 400
    assert twice.json()["detail"] == (
        "query parameter 'status' is given 2 times; give it once (only names may repeat)"
    )
    paged = http.get("/dashboard/tuning-jobs", params=[("limit", "1"), ("limit", "2")])
    assert paged.status_code == 400 and "'limit' is given 2 times" in paged.json()["detail"]
    compared = http.get("/reports/compare", params=[("names", "nope1"), ("names", "nope2")])
    assert compared.status_code == 404  # a list: read, and the first missing one named
    assert http.get("/healthz", params=[("a", "1"), ("a", "2")]).status_code == 200  # liveness
    unauthorized = httpx.get(f"{http.base_url}/tuning-jobs", params=[("limit", 1), ("limit", 2)])
    assert unauthorized.status_code == 401  # the token first


def test_other_client_mistakes(http, server):
    assert http.get("/tuning-jobs/nope").status_code == 404
    missing = http.get("/tuning-jobs/nope").json()["detail"]
    assert missing == "no tuning job named 'nope' in the service's store"  # not its path
    assert http.get("/training-jobs/nope-001/logs").status_code == 404
    assert http.get("/tuning-jobs/..%2F..%2Fetc").status_code in (404, 422)
    assert http.get("/tuning-jobs/a.b").status_code == 422
    assert http.get("/tuning-jobs", params={"limit": 0}).status_code == 422
    assert http.get("/tuning-jobs", params={"status": "Sleeping"}).status_code == 422
    bad_json = http.post(
        "/tuning-jobs", content=b"{not json", headers={"content-type": "application/json"}
    )
    assert bad_json.status_code == 422
    big = http.post(
        "/tuning-jobs",
        content=b"{" + b" " * (2 << 20) + b"}",
        headers={"content-type": "application/json"},
    )
    assert big.status_code == 413 and "limited to" in big.json()["detail"]

    def chunks():  # no Content-Length: sent with Transfer-Encoding: chunked
        yield b"{"
        for _ in range(40):
            yield b" " * 65536
        yield b"}"

    chunked = http.post(
        "/tuning-jobs", content=chunks(), headers={"content-type": "application/json"}
    )
    assert chunked.status_code == 413 and "limited to" in chunked.json()["detail"]
    assert http.get("/reports/compare", params={"names": "a.b"}).status_code == 400
    # nothing that was recorded is lost by bad requests
    assert http.get("/healthz").status_code == 200


def _service_tuner(server, **kw):
    return HyperparameterTuner(
        {"command": [sys.executable, str(FAKE_TRAIN)], **kw.pop("job", {})},
        "accuracy",
        {"x": ContinuousParameter(0.0, 1.0), "y": ContinuousParameter(0.0, 1.0)},
        [{"Name": "accuracy", "Regex": r"accuracy=([0-9.]+)"}],
        strategy="Random",
        max_parallel_jobs=1,
        random_seed=1,
        service_url=server.url,
        service_token="test-token-0123456789",
        **kw,
    )


def test_python_api_against_the_service(server):
    tuner = _service_tuner(server, max_jobs=3, name="py-client")
    tuner.fit()
    assert tuner.describe()["status"] == "Completed"
    assert tuner.best_training_job().objective == max(j.objective for j in tuner.training_jobs())
    frame = tuner.analytics().dataframe()
    assert len(frame) == 3
    local = Store(server.database_url).metric_counts("py-client", "accuracy")
    assert list(frame["StepsRun"]) == [local[n] for n in frame["TrainingJobName"]]  # was None
    assert set(local.values()) != {0}
    agreement = tuner.step_agreement(eta=3)  # through the service (it needed a store)
    assert tuner.importance() == {
        "jobs": 3,
        "of": 3,
        "importance": None,
        "why": "3 completed jobs, fewer than the 10 it needs",
    }
    assert agreement["completed_jobs"] == 3 and agreement["eta"] == 3
    best_first = tuner.training_jobs(sort_by="objective", limit=2)  # the service sorts
    assert best_first == sorted(tuner.training_jobs(), key=lambda j: -(j.objective or 0))[:2]
    assert tuner.training_jobs(status="Failed") == []
    with pytest.raises(ValidationError, match="speed"):
        tuner.training_jobs(sort_by="speed")
    with pytest.raises(ValidationError, match=r"^limit must be an integer 1..100000"):
        tuner.training_jobs(limit=-1)  # a sentence, not the repr of FastAPI's list
    for name in ("ghost/../py-client", "py-client?x=1", "..", "../healthz"):
        with pytest.raises(ValidationError, match="a tuning job name is 1-63 letters"):
            HyperparameterTuner.attach(
                name, service_url=server.url, service_token="test-token-0123456789"
            )  # it attached to (or stopped) another tuning job, or crashed on KeyError
    again = HyperparameterTuner.attach(
        "py-client", service_url=server.url, service_token="test-token-0123456789"
    )
    assert again.describe()["best_training_job"] == tuner.describe()["best_training_job"]
    with pytest.raises(NotFoundError):
        HyperparameterTuner.attach(
            "ghost", service_url=server.url, service_token="test-token-0123456789"
        )
    with pytest.raises(ValidationError, match="max_parallel_jobs <= max_jobs"):
        bad = HyperparameterTuner.attach(
            "py-client", service_url=server.url, service_token="test-token-0123456789"
        )
        bad.definition = bad.definition.model_copy(update={"max_parallel_jobs": 9, "name": "x9"})
        bad.client.create({**bad.definition.to_json()})


def test_the_python_api_on_a_service_behaves_as_in_process(server, tmp_path):
    """Found by comparing the two modes: each of these differed on a service."""
    slow = {"static_hyperparameters": {"sleep": 1.0}}
    tuner = _service_tuner(server, max_jobs=3, job=slow)
    tuner.fit(wait=False)
    first = tuner.name
    with pytest.raises(ValidationError, match="is still running on the service"):
        tuner.fit(wait=False)  # it started a second job and lost the first
    assert tuner.name == first
    # a service restarting while wait() polls: wait() gave up at the first refused poll
    restarted = threading.Thread(target=lambda: (server.stop(), time.sleep(2), server.start()))
    restarted.start()
    assert tuner.wait(timeout=90)["status"] == "Completed"
    restarted.join()
    child = tuner.identical_dataset_and_algorithm_tuner()  # SageMaker's helper: same service
    assert child.client is tuner.client and child._store is None and child.name is None
    child.fit()
    assert [p["name"] for p in child.describe()["warm_start"]["parents"]] == [first]
    # a stalled service: wait(timeout=1) waited 30 s for one request, then raised TunerError
    waiting = _service_tuner(server, max_jobs=1, job=slow)
    waiting.fit(wait=False)
    assert server.process is not None
    os.kill(server.process.pid, signal.SIGSTOP)
    began = time.monotonic()
    try:
        with pytest.raises(TimeoutError, match="did not answer within 1"):
            waiting.wait(timeout=1)
    finally:
        os.kill(server.process.pid, signal.SIGCONT)
    assert time.monotonic() - began < 10
    with pytest.raises(ValidationError, match=r"limit must be an integer 1\.\.100000"):
        tuner.training_jobs(limit=10**6)  # in-process took it, the service refused it
    with pytest.raises(TunerError, match="is no endpoint of a tuner service"):
        HyperparameterTuner.attach(
            first, service_url=server.url + "/api", service_token="test-token-0123456789"
        )  # it said NotFoundError "Not Found", as for a missing tuning job
    # a tracking_uri that cannot be used: refused as in-process, not stored and then Failed
    unusable = {"tracking_uri": f"file://{tmp_path}/mlruns"}
    os.environ.pop("MLFLOW_ALLOW_FILE_STORE", None)
    with pytest.raises(ValidationError, match="cannot be used") as local:
        HyperparameterTuner(
            {"command": [sys.executable, str(FAKE_TRAIN)]},
            "accuracy",
            {"x": ContinuousParameter(0.0, 1.0)},
            [{"Name": "accuracy", "Regex": r"accuracy=([0-9.]+)"}],
            max_jobs=1,
            storage=f"sqlite:///{tmp_path / 'local.db'}",
            **unusable,
        ).fit()
    assert "cannot be used" in str(local.value)
    before = len(Store(server.database_url).list_tuning_jobs())
    with pytest.raises(ValidationError, match="cannot be used"):
        _service_tuner(server, max_jobs=1, **unusable).fit()
    assert len(Store(server.database_url).list_tuning_jobs()) == before


def test_ctrl_c_during_fit_on_a_service_stops_the_tuning_job(server, tmp_path):
    """In-process, Ctrl-C stops what fit() started; on a service the job ran on, unsaid."""
    script = tmp_path / "client.py"
    script.write_text(
        "import sys\n"
        "from tuner import ContinuousParameter, HyperparameterTuner\n"
        "HyperparameterTuner(\n"
        f"    {{'command': [sys.executable, {str(FAKE_TRAIN)!r}],\n"
        "     'static_hyperparameters': {'sleep': 30}},\n"
        "    'accuracy', {'x': ContinuousParameter(0.0, 1.0)},\n"
        "    [{'Name': 'accuracy', 'Regex': 'accuracy=([0-9.]+)'}], strategy='Random',\n"
        f"    max_jobs=2, name='ctrl-c', service_url={server.url!r},\n"
        "    service_token='test-token-0123456789').fit(progress=False)\n"
    )
    run = subprocess.Popen(
        [sys.executable, str(script)],
        cwd=Path(__file__).parent.parent.parent,
        stderr=subprocess.PIPE,
        text=True,
    )
    with client(server) as http:
        deadline = time.monotonic() + 30
        while (
            http.get("/tuning-jobs/ctrl-c").status_code != 200
            or not http.get("/tuning-jobs/ctrl-c/training-jobs").json()
        ):
            assert time.monotonic() < deadline and run.poll() is None
            time.sleep(0.2)
        run.send_signal(signal.SIGINT)
        _, err = run.communicate(timeout=30)
        assert "asking the service to stop tuning job ctrl-c" in err
        assert wait_status(http, "ctrl-c", {"Stopped"})["status"] == "Stopped"


def test_concurrent_clients(server):
    errors = []

    def hammer():
        with client(server) as c:
            for _ in range(20):
                r = c.get("/tuning-jobs")
                if r.status_code != 200:
                    errors.append(r.status_code)

    threads = [threading.Thread(target=hammer) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_a_method_the_path_lacks_gets_a_405_naming_every_method_it_has(http):
    """Starlette's ``Allow`` named only the first route's method (``POST`` for
    ``/tuning-jobs``, which answers GET too)."""
    response = http.request("DELETE", "/tuning-jobs")
    assert response.status_code == 405
    assert response.headers["allow"] == "GET, POST"
    assert response.json()["detail"] == "DELETE is not allowed here; allowed: GET, POST"
    assert http.put("/tuning-jobs/some-job/stop").headers["allow"] == "POST"
    static = http.post("/ui/static/common.js")  # in a mount: Starlette's own answer stands
    assert (static.status_code, static.headers["allow"]) == (405, "GET, HEAD")


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b'{"a": ' * 5000 + b"1" + b"}" * 5000, "nests JSON objects and lists deeper than the"),
        (b'{"name": "caf\xe9"}', "the body is not UTF-8 JSON: 'utf-8' codec can't decode byte"),
        (b'{"max_jobs": ' + b"9" * 5000 + b"}", "could not be read as JSON: Exceeds the limit"),
    ],
    ids=["nested-5000-deep", "latin-1", "a-5000-digit-number"],
)
def test_a_body_python_cannot_read_gets_a_400_saying_why(http, body, message):
    """Both got 400 "There was an error parsing the body"."""
    response = http.post("/tuning-jobs", content=body, headers={"content-type": "application/json"})
    assert response.status_code == 400, response.text
    assert message in response.json()["detail"]


@pytest.mark.parametrize(
    ("path", "value", "where"),
    [
        (["Strategy"], "random", "HyperParameterTuningJobConfig.Strategy"),
        (["Strategy"], "BAYESIAN", "HyperParameterTuningJobConfig.Strategy"),
        (["HyperParameterTuningJobObjective", "Type"], "maximize", "Objective.Type"),
        (["TrainingJobEarlyStoppingType"], "auto", "TrainingJobEarlyStoppingType"),
        (
            ["ParameterRanges", "ContinuousParameterRanges", 0, "ScalingType"],
            "linear",
            "ParameterRanges.ContinuousParameterRanges[0].ScalingType",
        ),
    ],
)
def test_a_sagemaker_request_is_held_to_sagemakers_case(path, value, where):
    """SageMaker refuses "random"; we took it, so a request tried here failed on SageMaker."""
    request = sagemaker_hyperband("1", "9")
    config = request["HyperParameterTuningJobConfig"]
    for key in path[:-1]:
        config = config[key]
    config[path[-1]] = value
    with pytest.raises(ValidationError, match="case-sensitive") as refused:
        from_sagemaker(request)
    assert where in str(refused.value) and repr(value) in str(refused.value)


def test_a_sagemaker_warm_start_type_is_held_to_sagemakers_case():
    request = sagemaker_hyperband("1", "9")
    request["WarmStartConfig"] = {
        "ParentHyperParameterTuningJobs": [{"HyperParameterTuningJobName": "parent"}],
        "WarmStartType": "transferlearning",
    }
    with pytest.raises(ValidationError, match=r"WarmStartType must be one of .* case-sensitive"):
        from_sagemaker(request)
    request["WarmStartConfig"]["WarmStartType"] = "TransferLearning"
    assert from_sagemaker(request)["warm_start_config"]["type"] == "TransferLearning"
    request["HyperParameterTuningJobConfig"]["Strategy"] = "TPE"  # ours, as we write it
    assert from_sagemaker(request)["strategy"] == "TPE"
