"""A real service process (``tuner serve``, uvicorn) on 127.0.0.1, and a client for it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from bench.ports import free_port
from tests.conftest import FAKE_TRAIN

TOKEN = "test-token-0123456789"


@dataclass
class Server:
    """One ``tuner serve`` process; ``kill()`` and ``start()`` again keep its port and store."""

    database_url: str
    runs_dir: Path
    lease_seconds: float = 2.0
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None
    log: Path | None = None
    env: dict[str, str] = field(default_factory=dict)  # more of the service's environment

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> Server:
        env = {
            **os.environ,
            "TUNER_API_TOKEN": TOKEN,
            "TUNER_DATABASE_URL": self.database_url,
            "TUNER_ALLOWED_PROGRAMS": sys.executable,
            **self.env,
        }
        self.log = self.runs_dir.parent / f"server-{self.port}.log"
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tuner",
                "serve",
                "--port",
                str(self.port),
                "--runs-dir",
                str(self.runs_dir),
                "--lease-seconds",
                str(self.lease_seconds),
                "--log-level",
                "warning",
            ],
            env=env,
            stdout=open(self.log, "ab"),  # noqa: SIM115 - the server keeps it
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.kill()  # not left starting: it would slow every later test down
                raise RuntimeError(f"server did not start: {self.log.read_text()[-2000:]}")
            time.sleep(0.1)

    def kill(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(10)

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.kill()


def client(server: Server, token: str = TOKEN) -> httpx.Client:
    return httpx.Client(
        base_url=server.url, headers={"Authorization": f"Bearer {token}"}, timeout=30
    )


@pytest.fixture
def server(tmp_path: Path, sqlite_url: str) -> Iterator[Server]:
    s = Server(sqlite_url, tmp_path / "runs").start()
    yield s
    s.stop()


@pytest.fixture
def http(server: Server) -> Iterator[httpx.Client]:
    with client(server) as c:
        yield c


def definition(name: str = "api-job", sleep: float = 0.0, **kw: object) -> dict:
    d: dict = {
        "name": name,
        "strategy": "Random",
        "random_seed": 0,
        "objective_metric_name": "accuracy",
        "max_jobs": 4,
        "max_parallel_jobs": 2,
        "metric_definitions": [{"Name": "accuracy", "Regex": r"accuracy=([0-9.]+)"}],
        "hyperparameter_ranges": {
            "x": {"type": "continuous", "min_value": 0.0, "max_value": 1.0},
            "y": {"type": "continuous", "min_value": 0.0, "max_value": 1.0},
        },
        "job_definition": {
            "command": [sys.executable, str(FAKE_TRAIN)],
            "static_hyperparameters": {"sleep": sleep, "epochs": 2},
        },
    }
    d.update(kw)
    return d


def wait_status(http: httpx.Client, name: str, statuses: set[str], timeout: float = 60) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        body = http.get(f"/tuning-jobs/{name}").json()
        if body["status"] in statuses:
            return body
        assert time.monotonic() < deadline, f"{name} still {body['status']}"
        time.sleep(0.2)
