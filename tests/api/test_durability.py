"""Killing the service mid-run loses nothing; two services on one database never share a job."""

from __future__ import annotations

import json
import time
from pathlib import Path

from tests.api.conftest import Server, client, definition, wait_status
from tests.test_scheduler import max_overlap
from tuner.records import TrainingStatus
from tuner.storage import Store


def check_ran_once_within_limits(store: Store, name: str, max_jobs: int, parallel: int) -> None:
    jobs = store.list_training_jobs(name)
    assert len(jobs) == max_jobs
    assert all(j.status.value == "Completed" for j in jobs), [j.failure_reason for j in jobs]
    spans = []
    for job in jobs:
        out = Path(job.workdir) / "output"
        assert len((out / "runs.txt").read_text().split()) == 1, f"{job.name} ran twice"
        times = json.loads((out / "times.json").read_text())
        spans.append((times["start"], times["end"]))
        assert [p.seq for p in store.metric_points(job.name)] == [0, 1, 2]
    assert max_overlap(spans) <= parallel


def test_sigkill_mid_run_then_restart_continues_the_tuning_job(tmp_path, sqlite_url):
    server = Server(sqlite_url, tmp_path / "runs", lease_seconds=2.0).start()
    store = Store(sqlite_url)
    try:
        with client(server) as http:
            body = definition("durable", sleep=1.5, max_jobs=6, max_parallel_jobs=2)
            body["job_definition"]["static_hyperparameters"]["epochs"] = 3
            assert http.post("/tuning-jobs", json=body).status_code == 201
            deadline = time.monotonic() + 60
            while True:  # mid-run: some jobs done, two running (for 1.5 s: killed in the
                # first 0.8 s, or a loaded machine could let them end before the kill lands)
                counts = http.get("/tuning-jobs/durable").json()["training_job_status_counters"]
                if counts["Completed"] >= 2 and counts["InProgress"] == 2:
                    jobs = store.list_training_jobs("durable")
                    started = [
                        j.started_at or 0.0 for j in jobs if j.status is TrainingStatus.IN_PROGRESS
                    ]
                    if len(started) == 2 and time.time() - min(started) < 0.8:
                        break
                assert time.monotonic() < deadline, counts
                time.sleep(0.1)
        server.kill()
        before = {j.name: j for j in store.list_training_jobs("durable")}
        running = [j for j in before.values() if j.status is TrainingStatus.IN_PROGRESS]
        assert len(running) == 2

        server.start()  # same port, same database, same runs folder
        with client(server) as http:
            done = wait_status(http, "durable", {"Completed", "Failed"}, timeout=90)
        assert done["status"] == "Completed", done["status_reason"]
        check_ran_once_within_limits(store, "durable", max_jobs=6, parallel=2)
        for job in running:  # re-attached, not re-run
            assert store.get_training_job(job.name).status.value == "Completed"
    finally:
        server.stop()


def test_two_services_on_one_postgresql_never_run_a_job_twice(tmp_path, postgres_url):
    runs = tmp_path / "runs"
    first = Server(postgres_url, runs, lease_seconds=2.0).start()
    second = Server(postgres_url, runs, lease_seconds=2.0).start()
    store = Store(postgres_url)
    try:
        with client(first) as a, client(second) as b:
            for i, http in enumerate((a, b, a)):
                body = definition(f"shared-{i}", sleep=1.0, max_jobs=4, max_parallel_jobs=2)
                body["job_definition"]["static_hyperparameters"]["epochs"] = 3
                assert http.post("/tuning-jobs", json=body).status_code == 201
            deadline = time.monotonic() + 60
            while store.count_training_jobs("shared-0") < 3:
                assert time.monotonic() < deadline
                time.sleep(0.1)
            first.kill()  # the second service takes over shared-0 and shared-2
            for i in range(3):
                done = wait_status(b, f"shared-{i}", {"Completed", "Failed"}, timeout=120)
                assert done["status"] == "Completed", done["status_reason"]
        for i in range(3):
            check_ran_once_within_limits(store, f"shared-{i}", max_jobs=4, parallel=2)
    finally:
        first.stop()
        second.stop()


def test_a_job_reattached_after_sigkill_that_exits_non_zero_is_failed(tmp_path, sqlite_url):
    """Killed service, restarted: the job it re-attaches to exits 3 and is recorded Failed (3)."""
    server = Server(sqlite_url, tmp_path / "runs", lease_seconds=2.0).start()
    store = Store(sqlite_url)
    try:
        with client(server) as http:
            body = definition("exit-three", sleep=1.0, max_jobs=1, max_parallel_jobs=1)
            body["job_definition"]["static_hyperparameters"].update(epochs=3, exit_code=3)
            assert http.post("/tuning-jobs", json=body).status_code == 201
            deadline = time.monotonic() + 60
            while not store.list_training_jobs("exit-three"):
                assert time.monotonic() < deadline
                time.sleep(0.05)
        server.kill()  # the job goes on, no longer anyone's child
        server.start()
        with client(server) as http:
            wait_status(http, "exit-three", {"Completed", "Failed"}, timeout=90)
        (job,) = store.list_training_jobs("exit-three")
        assert job.status.value == "Failed", job.failure_reason
        assert job.exit_code == 3 and "exited with code 3" in (job.failure_reason or "")
    finally:
        server.stop()


def test_the_service_takes_over_only_what_its_policy_allows(tmp_path, sqlite_url):
    """A `tuner run` of /bin/sh on the service's database, killed, was taken over and run by a
    service started with --allow-program python: the policy held at submit only."""
    import sys

    from tuner import TuningJobDefinition
    from tuner.launch_policy import LaunchPolicy
    from tuner.service import TuningService

    store = Store(sqlite_url)
    shell = definition(name="shell", max_jobs=1, max_parallel_jobs=1)
    shell["job_definition"] = {"command": ["/bin/sh", "-c", "echo accuracy=0.5", "x"]}
    for body in (shell, definition(name="python", max_jobs=1, max_parallel_jobs=1)):
        parsed = TuningJobDefinition.parse(body)  # recorded by a tuner whose process died
        store.create_tuning_job(body["name"], parsed.to_json())
    service = TuningService(
        store, tmp_path / "runs", policy=LaunchPolicy(programs=(sys.executable,))
    )
    assert service.scan() == ["python"]
    assert service.scan() == []  # asked again: still refused, and said once
    record = store.get_tuning_job("shell")
    assert record.owner is None and record.status.value == "InProgress"
    assert store.list_training_jobs("shell") == []
    service.shutdown()
