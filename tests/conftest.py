"""Shared fixtures: stores on SQLite and PostgreSQL, the fake training job, an MLflow server,
CI-strict skips."""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from tuner.launchers.host_leases import LEASE_DIR_ENV
from tuner.launchers.local_limit import LIMIT_ENV
from tuner.storage import Store

JOBS = Path(__file__).parent / "jobs"
FAKE_TRAIN = JOBS / "fake_train.py"
IN_CI = os.environ.get("CI", "").lower() == "true"

# Leases are host-wide (tuner.launchers.host_leases): this run's fake GPU ids and local jobs
# must not be counted against another run of the suite, or a developer's tuner, on the same
# machine; nor may a developer's machine-wide bound on local jobs hold the suite's jobs back.
os.environ[LEASE_DIR_ENV] = tempfile.mkdtemp(prefix="tuner-test-leases-")
atexit.register(shutil.rmtree, os.environ[LEASE_DIR_ENV], ignore_errors=True)
os.environ.pop(LIMIT_ENV, None)

# Property tests: random examples on a developer's machine (to find bugs), the same examples
# on every CI run (a CI that fails one run in twenty blocks landings at random), and never a
# replay of an old failure from a local example database under CI.
settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
if IN_CI:
    settings.load_profile("ci")


def skip_or_fail(reason: str) -> None:
    """Skip on a developer's machine; under CI a missing service is a failure."""
    if IN_CI:
        pytest.fail(f"{reason} (CI=true: this test must run, not skip)")
    pytest.skip(reason)


def fake_command() -> list[str]:
    return [sys.executable, str(FAKE_TRAIN)]


def wait_until_running(tuner: Any, count: int, timeout: float = 30.0) -> None:
    """Wait until ``count`` of ``tuner``'s training jobs are InProgress (fails after
    ``timeout`` seconds)."""
    deadline = time.monotonic() + timeout
    while sum(j.status.value == "InProgress" for j in tuner.training_jobs()) < count:
        assert time.monotonic() < deadline, f"{count} jobs were not running after {timeout} s"
        time.sleep(0.05)


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'tuner.db'}"


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A fresh, empty database on the PostgreSQL server named by TUNER_TEST_POSTGRES_URL."""
    base = os.environ.get("TUNER_TEST_POSTGRES_URL")
    if not base:
        skip_or_fail("TUNER_TEST_POSTGRES_URL is not set (start one with .ci/postgres.sh)")
    from bench.scratch_database import scratch_database

    with scratch_database(base, "tuner_test") as url:
        yield url


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest) -> str:
    if request.param == "sqlite":
        return str(request.getfixturevalue("sqlite_url"))
    return str(request.getfixturevalue("postgres_url"))


@pytest.fixture
def store(database_url: str) -> Iterator[Store]:
    s = Store(database_url)
    yield s
    s.close()


@pytest.fixture
def s3(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A moto S3 server on 127.0.0.1; the environment points boto3 at it. Yields its URL."""
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0)
    server.start()
    host, port = server.get_host_and_port()
    url = f"http://{host}:{port}"
    for key, value in {
        "AWS_ENDPOINT_URL": url,
        "AWS_ACCESS_KEY_ID": "test",
        "AWS_SECRET_ACCESS_KEY": "test",
        "AWS_DEFAULT_REGION": "us-east-1",
    }.items():
        monkeypatch.setenv(key, value)
    yield url
    server.stop()


class MlflowServer:
    """``mlflow server`` on 127.0.0.1 with a SQLite backend store and artifacts it serves from
    a local folder; ``stop`` and ``start`` again keep its port, store and artifacts."""

    def __init__(self, folder: Path) -> None:
        from bench.ports import free_port

        self.folder = folder
        self.port = free_port()  # kept across a stop: outside the range connections draw from
        self.url = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 180) -> None:
        import httpx

        argv = [
            str(Path(sys.executable).parent / "mlflow"),
            "server",
            "--host", "127.0.0.1",
            "--port", str(self.port),
            "--workers", "1",
            "--backend-store-uri", f"sqlite:///{self.folder / 'mlflow.db'}",
            "--artifacts-destination", str(self.folder / "artifacts"),
        ]  # fmt: skip
        log = open(self.folder / "server.log", "ab")  # noqa: SIM115 (the server's, closed by it)
        self.process = subprocess.Popen(argv, stdout=log, stderr=log, start_new_session=True)
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                tail = (self.folder / "server.log").read_text(errors="replace")[-2000:]
                raise RuntimeError(f"mlflow server exited with {self.process.returncode}: {tail}")
            try:
                if httpx.get(f"{self.url}/health", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.3)
        self.stop()
        raise RuntimeError(f"mlflow server did not answer on {self.url} within {timeout}s")

    def stop(self) -> None:
        """End the server and every process it started (its workers)."""
        if self.process is None:
            return
        try:
            os.killpg(self.process.pid, signal.SIGTERM)
            self.process.wait(20)
        except ProcessLookupError:
            pass
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        self.process = None


@pytest.fixture(scope="module")
def mlflow_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MlflowServer]:
    """A running ``mlflow server`` (see MlflowServer), one per test module."""
    try:
        import mlflow  # noqa: F401
    except ImportError:
        skip_or_fail("mlflow is not installed (pip install -e '.[dev]')")
    server = MlflowServer(tmp_path_factory.mktemp("mlflow"))
    server.start()
    yield server
    server.stop()
