"""Each training job's log and outputs uploaded to S3 (moto's S3 server on 127.0.0.1)."""

from __future__ import annotations

import json
import logging
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest

from tests.conftest import fake_command
from tuner import TrainingStatus, TuningJobDefinition
from tuner.artifacts import ArtifactUploader, split_s3_uri
from tuner.errors import NotFoundError, TunerError, ValidationError
from tuner.reports import build
from tuner.reports.render import top_table
from tuner.scheduler import Scheduler
from tuner.storage import Store
from tuner.summary import training_job_dict


def definition(tmp_path, **job) -> TuningJobDefinition:
    return TuningJobDefinition.parse(
        {
            "name": "art",
            "strategy": "Random",
            "random_seed": 0,
            "max_jobs": 3,
            "max_parallel_jobs": 2,
            "objective_metric_name": "accuracy",
            "metric_definitions": [{"Name": "accuracy", "Regex": r"accuracy=([0-9.]+)"}],
            "hyperparameter_ranges": {"x": {"type": "continuous", "min_value": 0, "max_value": 1}},
            "job_definition": {
                "command": fake_command(),
                "output_path": str(tmp_path / "runs"),
                **job,
            },
        }
    )


def run(tmp_path, store: Store, **job) -> list:
    d = definition(tmp_path, **job)
    store.create_tuning_job("art", d.to_json())
    Scheduler(d, "art", store).run()
    return store.list_training_jobs("art")


def keys(bucket: str) -> set[str]:
    listed = boto3.client("s3").list_objects_v2(Bucket=bucket)
    return {o["Key"] for o in listed.get("Contents", [])}


def test_outputs_of_every_job_are_uploaded_and_linked(tmp_path, sqlite_url, s3):
    boto3.client("s3").create_bucket(Bucket="tuning")
    store = Store(sqlite_url)
    jobs = run(tmp_path, store, output_s3_uri="s3://tuning/team-a/")
    assert [j.status for j in jobs] == [TrainingStatus.COMPLETED] * 3
    stored = keys("tuning")
    for job in jobs:
        assert job.artifacts_uri == f"s3://tuning/team-a/art/{job.name}/"
        for name in ("log.txt", "output/argv.json", "output/times.json", "output/runs.txt"):
            assert f"team-a/art/{job.name}/{name}" in stored
        assert training_job_dict(job)["artifacts_uri"] == job.artifacts_uri  # what the API shows
    body = boto3.client("s3").get_object(Bucket="tuning", Key=f"team-a/art/{jobs[0].name}/log.txt")
    assert b"accuracy=" in body["Body"].read()
    data = build(store, ["art"])
    head, rows = top_table(data)
    assert head[-1] == "artifacts"
    assert all(r[-1].startswith("s3://tuning/team-a/art/") for r in rows)


def test_the_endpoint_can_be_given_in_the_definition(tmp_path, sqlite_url, s3, monkeypatch):
    monkeypatch.delenv("AWS_ENDPOINT_URL")  # only the definition knows where the store is
    boto3.client("s3", endpoint_url=s3).create_bucket(Bucket="other")
    jobs = run(tmp_path, Store(sqlite_url), output_s3_uri="s3://other", s3_endpoint_url=s3)
    assert all(j.artifacts_uri == f"s3://other/art/{j.name}/" for j in jobs)
    listed = boto3.client("s3", endpoint_url=s3).list_objects_v2(Bucket="other")
    local = {  # every file of every job folder that is uploaded: the log and output/
        f"art/{j.name}/{p.relative_to(j.workdir).as_posix()}"
        for j in jobs
        for p in Path(j.workdir).rglob("*")
        if p.is_file() and p.relative_to(j.workdir).parts[0] in ("log.txt", "output")
    }
    assert {o["Key"] for o in listed["Contents"]} == local


def test_a_failed_upload_loses_nothing_and_says_why(tmp_path, sqlite_url, s3, caplog):
    caplog.set_level(logging.WARNING, logger="tuner.scheduler")
    jobs = run(tmp_path, Store(sqlite_url), output_s3_uri="s3://no-such-bucket/x")
    assert [j.status for j in jobs] == [TrainingStatus.COMPLETED] * 3  # the results stay
    assert all(j.artifacts_uri is None for j in jobs)
    assert "were not uploaded" in caplog.text and "no-such-bucket" in caplog.text


def test_an_endpoint_boto3_cannot_read_loses_nothing(tmp_path, sqlite_url, monkeypatch, caplog):
    """boto3's ValueError (an endpoint without a scheme) escaped the shutdown: a traceback, and
    the tuning job left InProgress."""
    caplog.set_level(logging.WARNING, logger="tuner.scheduler")
    monkeypatch.setenv("AWS_ENDPOINT_URL", "localhost:5519")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "x")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "x")
    store = Store(sqlite_url)
    jobs = run(tmp_path, store, output_s3_uri="s3://tuning/x")
    assert store.get_tuning_job("art").status.value == "Completed"
    assert [j.status for j in jobs] == [TrainingStatus.COMPLETED] * 3
    assert all(j.artifacts_uri is None for j in jobs)
    assert "were not uploaded: ValueError: Invalid endpoint: localhost:5519" in caplog.text
    with pytest.raises(ValidationError, match="s3_endpoint_url must be an http:// or https://"):
        definition(tmp_path, output_s3_uri="s3://tuning/x", s3_endpoint_url="not a url")


def test_uploader_rules(tmp_path, s3):
    with pytest.raises(ValidationError, match="must look like s3://bucket/prefix, got 's3://'"):
        split_s3_uri("s3://")
    assert split_s3_uri("s3://b/a/b/") == ("b", "a/b")
    uploader = ArtifactUploader("s3://missing/p")
    (tmp_path / "log.txt").write_text("hi")
    with pytest.raises(
        TunerError, match=r"cannot upload .*log\.txt to s3://missing/p/t/j/log\.txt"
    ):
        uploader.upload("t", "j", tmp_path)


@pytest.fixture
def unanswering_endpoint() -> Iterator[str]:
    """An S3 endpoint that accepts connections and never answers (the kernel's backlog)."""
    hole = socket.socket()
    hole.bind(("127.0.0.1", 0))
    hole.listen(64)
    yield f"http://127.0.0.1:{hole.getsockname()[1]}"
    hole.close()


def test_an_unanswering_endpoint_does_not_hold_up_a_stop(
    tmp_path, sqlite_url, unanswering_endpoint, monkeypatch, caplog
):
    """Ctrl-C or SIGTERM waited for boto3's retries against an endpoint that never answered
    (185 s: a supervisor's SIGKILL comes first), and the threads of a pool were joined at exit.
    """
    import _thread
    import threading

    from tuner import scheduler

    caplog.set_level(logging.WARNING, logger="tuner.scheduler")
    monkeypatch.setattr(scheduler, "UPLOAD_WAIT_SECONDS", 1.0)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "x")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "x")
    store = Store(sqlite_url)
    d = definition(
        tmp_path, output_s3_uri="s3://t/x", s3_endpoint_url=unanswering_endpoint,
        static_hyperparameters={"sleep": 1.0},
    )  # fmt: skip
    store.create_tuning_job("art", d.to_json())

    def interrupt_after_the_first_end() -> None:  # as Ctrl-C in `tuner run` does
        while not any(j.status.terminal for j in jobs_so_far(store)):
            time.sleep(0.05)
        _thread.interrupt_main()

    threading.Thread(target=interrupt_after_the_first_end, daemon=True).start()
    began = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        Scheduler(d, "art", store).run()
    assert time.monotonic() - began < 20
    assert store.get_tuning_job("art").status.value == "Stopped"
    assert "were not uploaded within 1 s; left (its files stay in its folder)" in caplog.text
    assert not [t for t in threading.enumerate() if t.name == "upload" and not t.daemon]


def test_a_resume_uploads_what_its_tuner_had_not(tmp_path, sqlite_url, s3, unanswering_endpoint):
    """Uploads still going when the tuner was killed were never made, and nothing said so."""
    boto3.client("s3").create_bucket(Bucket="tuning")
    d = definition(tmp_path, output_s3_uri="s3://tuning/x")
    spec = tmp_path / "art.yaml"
    spec.write_text(json.dumps(d.to_json()))
    store = Store(sqlite_url)
    base = {**os.environ, "TUNER_DATABASE_URL": sqlite_url, "TUNER_LEASE_SECONDS": "2"}
    command = [sys.executable, "-m", "tuner"]
    stalled = {**base, "AWS_ENDPOINT_URL": unanswering_endpoint}
    first = subprocess.Popen([*command, "run", str(spec), "--no-progress"], env=stalled)
    deadline = time.monotonic() + 60
    while sum(j.status is TrainingStatus.COMPLETED for j in jobs_so_far(store)) < 3:
        assert time.monotonic() < deadline and first.poll() is None
        time.sleep(0.1)
    first.kill()  # while it waits for the uploads
    first.wait()
    time.sleep(2.5)  # its lease runs out
    resumed = subprocess.run([*command, "resume", "art", "--no-progress"], env=base, timeout=120)
    assert resumed.returncode == 0
    jobs = store.list_training_jobs("art")
    assert [j.status for j in jobs] == [TrainingStatus.COMPLETED] * 3  # none ran again
    assert all(j.artifacts_uri == f"s3://tuning/x/art/{j.name}/" for j in jobs)
    assert {f"x/art/{j.name}/log.txt" for j in jobs} <= keys("tuning")


def jobs_so_far(store: Store) -> list:
    try:
        return store.list_training_jobs("art")
    except NotFoundError:  # not created yet
        return []


def test_upload_threads_end_once_closed(tmp_path, s3):
    """Each tuning job left two upload threads behind for ever (a service runs many)."""
    from tuner.artifacts import BackgroundUploads

    boto3.client("s3").create_bucket(Bucket="threads")
    (tmp_path / "job" / "output").mkdir(parents=True)
    (tmp_path / "job" / "log.txt").write_text("accuracy=0.5\n")
    uploads = BackgroundUploads(ArtifactUploader("s3://threads/p"))
    done = [uploads.submit("t", f"t-00{i}", tmp_path / "job") for i in range(3)]
    threads = list(uploads._threads)
    uploads.close()
    for thread in threads:
        thread.join(30)
        assert not thread.is_alive()
    assert [f.result() for f in done] == [f"s3://threads/p/t/t-00{i}/" for i in range(3)]
