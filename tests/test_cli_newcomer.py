"""What a newcomer meets first, through the ``tuner`` command as a user runs it: failures shown
where they happen, the help text, a pipe closed early, and the core install without extras."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import JOBS
from tests.test_cli import definition, tuner, write

WITHOUT_EXTRAS = JOBS / "without_extras.py"


@pytest.mark.parametrize(
    ("command", "static", "reason"),
    [
        (["python", "trian.py"], {}, "exited with code 2; last log line: \"python: can't open"),
        (None, {"no_metric": "true"}, "objective metric 'accuracy' was never reported in the log"),
        (["/no/such/trainer"], {}, "cannot start '/no/such/trainer'"),
    ],
    ids=["misspelt-script", "regex-never-matches", "missing-program"],
)
def test_a_run_where_every_job_failed_exits_1_and_says_why(tmp_path, command, static, reason):
    data = definition(tmp_path, max_jobs=2)
    if command:
        data["job_definition"]["command"] = command
    data["job_definition"]["static_hyperparameters"] = static
    result = tuner(tmp_path, "run", str(write(tmp_path, data)), "--name", "bad", "--no-progress")
    assert result.returncode == 1, result.stdout + result.stderr
    head = result.stdout.splitlines()[0]
    assert head.startswith("Tuning job bad: Failed (no training job succeeded (2 of 2 failed): 2x")
    assert reason in head
    assert "training jobs: Failed 2" in result.stdout
    assert "failure reasons:\n    2x " in result.stdout and reason in result.stdout

    described = tuner(tmp_path, "describe", "bad")
    assert described.returncode == 0 and "failure reasons:\n    2x " in described.stdout
    as_json = json.loads(tuner(tmp_path, "describe", "bad", "--json").stdout)
    assert as_json["status"] == "Failed"
    [group] = as_json["failure_reasons"]
    assert group["count"] == 2 and reason in group["example"]
    assert group["training_jobs"] == ["bad-001", "bad-002"]
    assert "Failed" in tuner(tmp_path, "list").stdout


def test_five_failures_without_a_success_end_the_tuning_job_early(tmp_path):
    data = definition(tmp_path, max_jobs=40, max_parallel_jobs=1)
    data["job_definition"]["static_hyperparameters"] = {"exit_code": 3}
    result = tuner(tmp_path, "run", str(write(tmp_path, data)), "--name", "early", "--no-progress")
    assert result.returncode == 1
    assert (
        "Failed (no training job succeeded after 5 attempts (5 of 5 failed): 5x exited with code 3"
        in (result.stdout)
    )
    as_json = json.loads(tuner(tmp_path, "describe", "early", "--json").stdout)
    assert as_json["training_job_status_counters"]["Failed"] == 5  # not 40


def test_some_failures_among_successes_complete_and_are_listed(tmp_path):
    data = definition(tmp_path, max_jobs=4, max_parallel_jobs=1, strategy="Grid")
    data["hyperparameter_ranges"] = {
        "exit_code": {"type": "categorical", "values": [0, 4]},
        "x": {"type": "categorical", "values": [0.1, 0.2]},
    }
    result = tuner(tmp_path, "run", str(write(tmp_path, data)), "--name", "mixed", "--no-progress")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Tuning job mixed: Completed" in result.stdout
    assert "training jobs: Completed 2, Failed 2" in result.stdout
    assert "failure reasons:\n    2x exited with code 4" in result.stdout


def test_help_lists_every_verb_in_plain_words(tmp_path):
    result = tuner(tmp_path, "--help")
    assert result.returncode == 0
    verbs = ("run", "resume", "compare", "report", "list", "describe", "stop", "export", "track")
    for verb in verbs:
        assert verb in result.stdout
    assert "check-metrics" in result.stdout and "serve" in result.stdout
    assert "``" not in result.stdout and "Exit codes: 0 success, 1 a tuning job failed" in (
        result.stdout
    )


def test_output_cut_short_by_its_reader_ends_without_a_traceback(tmp_path):
    data = definition(tmp_path, max_jobs=2)
    assert tuner(tmp_path, "run", str(write(tmp_path, data)), "--name", "p", "--no-progress")
    env = {**os.environ, "TUNER_DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite'}"}
    reader, writer = os.pipe()
    os.close(reader)  # like `| head` that has already left
    process = subprocess.run(
        [sys.executable, "-m", "tuner", "describe", "p", "--json"],
        stdout=writer,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=60,
    )
    os.close(writer)
    assert "Traceback" not in process.stderr and "BrokenPipeError" not in process.stderr
    assert process.returncode == 141  # 128 + SIGPIPE; 1 said a tuning job had failed


def without_extras(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TUNER_DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite'}"}
    return subprocess.run(
        [sys.executable, str(WITHOUT_EXTRAS), *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )


def test_the_cli_imports_no_heavy_library_until_a_verb_needs_it(tmp_path):
    result = without_extras(tmp_path, "--imported")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == []


def test_the_core_install_runs_tuning_jobs_and_names_the_extra_a_feature_needs(tmp_path):
    ok = write(tmp_path, definition(tmp_path, strategy="Bayesian", max_jobs=3))
    result = without_extras(tmp_path, "run", str(ok), "--name", "light", "--no-progress")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Tuning job light: Completed" in result.stdout
    report = without_extras(tmp_path, "report", "light", "--out", "report")
    assert report.returncode == 0 and (tmp_path / "report" / "report.html").exists()

    served = without_extras(tmp_path, "serve")
    assert served.returncode == 2
    assert "tuner serve needs the 'service' extra" in served.stderr
    assert "pip install 'tuner[service]'" in served.stderr

    data = definition(tmp_path)
    data["job_definition"].update({"launcher": "docker", "image": "python:3.11"})
    docker = without_extras(tmp_path, "run", str(write(tmp_path, data, "d.yaml")))
    assert docker.returncode == 2 and "pip install 'tuner[docker]'" in docker.stderr

    data = definition(tmp_path)
    data["job_definition"]["output_s3_uri"] = "s3://bucket/runs"
    s3 = without_extras(tmp_path, "run", str(write(tmp_path, data, "s.yaml")))
    assert s3.returncode == 2 and "pip install 'tuner[s3]'" in s3.stderr

    pg = without_extras(tmp_path, "--storage", "postgresql+psycopg://u@127.0.0.1:1/db", "list")
    assert pg.returncode == 2 and "pip install 'tuner[postgres]'" in pg.stderr

    tracked = write(tmp_path, definition(tmp_path), "t.yaml")
    mlflow = without_extras(tmp_path, "run", str(tracked), "--tracking-uri", "http://127.0.0.1:9")
    assert mlflow.returncode == 2
    assert "tracking_uri (MLflow tracking) needs the 'mlflow' extra" in mlflow.stderr
    assert "pip install 'tuner[mlflow]'" in mlflow.stderr
    for result in (served, docker, s3, pg, mlflow):
        assert "Traceback" not in result.stderr
    listed = without_extras(tmp_path, "list").stdout
    assert "light" in listed and "InProgress" not in listed  # nothing half-recorded


def _closed_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_storage_that_cannot_be_used_is_one_line_naming_it(tmp_path):
    """No server at the URL, or a file that is not a database: exit 2 with the URL (password
    hidden) and the driver's reason, not a traceback; nothing is written to the file."""
    garbage = tmp_path / "notes.db"
    garbage.write_text("these are my notes, not a database\n" * 10)
    for url, reason in (
        (f"postgresql://me:secret@127.0.0.1:{_closed_port()}/tuner", "Connection refused"),
        (f"sqlite:///{garbage}", "file is not a database"),
    ):
        result = tuner(tmp_path, "--storage", url, "list")
        assert result.returncode == 2, result.stderr
        shown = url.replace("secret", "***")
        assert result.stderr.startswith(f"tuner: error: storage {shown} cannot be used: ")
        assert reason in result.stderr and "Traceback" not in result.stderr
        assert "secret" not in result.stderr
    in_the_way = f"sqlite:///{garbage}/tuner.db"  # a file where its folder would be
    job = write(tmp_path, definition(tmp_path, max_jobs=1, max_parallel_jobs=1))
    result = tuner(tmp_path, "--storage", in_the_way, "run", str(job))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert f"cannot be used: its folder {garbage} cannot be created" in result.stderr
    missing = tuner(tmp_path, "--storage", f"sqlite:///{tmp_path}/typo/x.db", "list")
    assert missing.returncode == 2 and "holds no tuning job" in missing.stderr
    assert not (tmp_path / "typo").exists()  # reading a mistyped path leaves nothing behind
    assert garbage.read_text() == "these are my notes, not a database\n" * 10


RULE = "must be a whole number from 1 to 1,000,000"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["serve", "--port", "-5"], "a port is a whole number 0-65535; got '-5'"),
        (["serve", "--port", "70000"], "a port is a whole number 0-65535; got '70000'"),
        (["serve", "--lease-seconds", "-1"], "must be a number of seconds > 0; got '-1'"),
        (["serve", "--lease-seconds", "nan"], "must be a number of seconds > 0; got 'nan'"),
        (["serve", "--log-level", "loud"], "invalid choice: 'loud'"),
        (["serve", "--workers", "fork"], "invalid choice: 'fork'"),
        (["serve", "--max-running-tuning-jobs", "0"], RULE + "; got '0'"),
        (["serve", "--max-parallel-jobs", "x"], RULE + "; got 'x'"),
        (["serve", "--max-parallel-jobs", "\u00b2"], RULE + "; got '\u00b2'"),
        (["serve", "--max-local-jobs", "0"], RULE + "; got '0'"),
        (["serve", "--max-local-jobs", "1" + "0" * 309], "1 to 1,000,000; got '1000000000"),
        (["serve", "--port", "\u0663"], "a port is a whole number 0-65535; got '\u0663'"),
        (
            ["--storage", "sqlite://", "serve", "--port", "0"],
            "not an in-memory SQLite database; got 'sqlite://'",
        ),
    ],
)
def test_bad_command_line_values_are_refused_before_anything_starts(tmp_path, args, message):
    """A negative lease or port used to start a server that failed with a traceback or handed
    its tuning jobs to any other service at once."""
    result = tuner(tmp_path, *args)
    assert result.returncode == 2, result.stderr
    assert message in result.stderr and "Traceback" not in result.stderr
    assert "Uvicorn running" not in result.stderr


@pytest.mark.parametrize("token", ["abc ", " abc", "a b", "   ", "t\u00f6ken"])
def test_a_token_no_client_could_send_is_refused_without_showing_it(tmp_path, token):
    """QA: TUNER_API_TOKEN='abc ' started a service that answered every request 401 (HTTP
    strips the trailing space, and so did the dashboard's login)."""
    result = tuner(tmp_path, "serve", "--port", "0", env={"TUNER_API_TOKEN": token})
    assert result.returncode == 2, result.stderr
    assert "TUNER_API_TOKEN must be visible ASCII characters without spaces" in result.stderr
    assert f"got a value of {len(token)} characters" in result.stderr
    assert "Uvicorn running" not in result.stderr and repr(token) not in result.stderr
    assert not token.strip() or token.strip() not in result.stderr


def test_a_bad_local_job_limit_in_the_environment_is_refused_before_the_service_starts(tmp_path):
    result = tuner(tmp_path, "serve", "--port", "0", env={"TUNER_MAX_LOCAL_JOBS": "all"})
    assert result.returncode == 2, result.stderr
    assert "TUNER_MAX_LOCAL_JOBS must be a whole number from 1 to 1,000,000; got 'all'" in (
        result.stderr
    )
    assert "Uvicorn running" not in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize("value", ["abc", "0", "-2", "inf"])
def test_a_bad_lease_in_the_environment_is_named_and_nothing_is_stored(tmp_path, value):
    job = write(tmp_path, definition(tmp_path, max_jobs=1, max_parallel_jobs=1))
    lease = {"TUNER_LEASE_SECONDS": value}
    result = tuner(tmp_path, "run", str(job), env=lease)
    assert result.returncode == 2, result.stderr
    assert f"TUNER_LEASE_SECONDS must be a number of seconds > 0; got {value!r}" in result.stderr
    assert "Traceback" not in result.stderr
    listed = tuner(tmp_path, "list")  # nothing stored: no store, or only the header
    assert "holds no tuning job" in listed.stderr or listed.stdout.count("\n") == 1
    serve = tuner(tmp_path, "serve", "--port", "0", env=lease)
    assert serve.returncode == 2 and "TUNER_LEASE_SECONDS must be" in serve.stderr
    assert "Traceback" not in serve.stderr


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        ("TUNER_WORKERS", "fork", "TUNER_WORKERS must be 'process' or 'thread'; got 'fork'"),
        ("TUNER_MAX_RUNNING_TUNING_JOBS", "0", "TUNER_MAX_RUNNING_TUNING_JOBS must be a whole"),
        ("TUNER_MAX_PARALLEL_JOBS", "lots", "from 1 to 1,000,000; got 'lots'"),
        ("TUNER_MAX_PARALLEL_JOBS", "9" * 5000, "from 1 to 1,000,000; got '9999"),
    ],
)
def test_a_bad_service_setting_in_the_environment_is_named(tmp_path, variable, value, message):
    serve = tuner(tmp_path, "serve", "--port", "0", env={variable: value})
    assert serve.returncode == 2, serve.stderr
    assert message in serve.stderr
    assert "Traceback" not in serve.stderr and "Uvicorn running" not in serve.stderr
