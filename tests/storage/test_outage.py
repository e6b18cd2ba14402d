"""A database that stops answering for a few seconds, on a private PostgreSQL server
(``.ci/postgres.sh``) stopped and started again under a running tuning job and a REST service.

Before, any store error took the internal-error path: the tuner stopped every running training
job (SIGTERM), then failed on its next write, leaving the tuning job InProgress with jobs that a
resume recorded as Failed and counted towards ``max_jobs``.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from bench.ports import free_port
from tests.api.conftest import Server, client, definition
from tests.conftest import skip_or_fail, wait_until_running
from tests.test_scheduler import make_tuner
from tuner import StoreUnavailable, TrainingStatus
from tuner.storage import Store

SCRIPT = Path(__file__).resolve().parents[2] / ".ci" / "postgres.sh"


@dataclass
class Postgres:
    folder: Path
    port: int
    url: str = ""

    def start(self) -> Postgres:
        done = subprocess.run(
            ["bash", str(SCRIPT), "start", str(self.folder), str(self.port)],
            capture_output=True,
            text=True,
            check=True,
        )
        self.url = done.stdout.strip()
        return self

    def stop(self) -> None:
        subprocess.run(["bash", str(SCRIPT), "stop", str(self.folder)], capture_output=True)


@pytest.fixture
def postgres() -> Iterator[Postgres]:
    """A PostgreSQL server of this test's own (the shared one must not go down under others)."""
    if not list(Path("/usr/lib/postgresql").glob("*/bin/initdb")):
        skip_or_fail("PostgreSQL is not installed (apt-get install postgresql)")
    folder = Path(tempfile.mkdtemp(prefix="tuner-test-pg."))  # the postgres user must reach it
    server = Postgres(folder, free_port()).start()
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(folder, ignore_errors=True)


def test_a_running_tuning_job_waits_out_a_database_restart(tmp_path, postgres):
    tuner = make_tuner(
        tmp_path, postgres.url, {"sleep": 8, "epochs": 4}, max_jobs=2, max_parallel_jobs=2
    )
    tuner.fit(wait=False)
    wait_until_running(tuner, 2)
    postgres.stop()
    time.sleep(3)  # 2 s was enough to end every job before
    postgres.start()
    assert tuner.wait(timeout=60)["status"] == "Completed"
    jobs = tuner.training_jobs()
    assert [j.status for j in jobs] == [TrainingStatus.COMPLETED] * 2
    assert all(len(tuner.store.metric_points(j.name)) == 4 for j in jobs)  # none lost


def test_a_store_gives_up_after_its_patience_naming_the_outage(postgres):
    store = Store(postgres.url, patience=1.0)
    store.list_tuning_jobs()
    postgres.stop()
    began = time.monotonic()
    with pytest.raises(StoreUnavailable, match=r"did not answer for 1s: .*") as info:
        store.list_tuning_jobs()
    assert time.monotonic() - began < 5
    assert "postgresql+psycopg://postgres@127.0.0.1" in str(info.value)
    store.close()


def test_the_rest_service_answers_503_while_its_database_is_down(tmp_path, postgres):
    """It answered a bare 500 'Internal Server Error' to every request; later, a create or a
    stop waited for the database as long as the service's runs do (up to 120 s), so a client
    that timed out saw its create land afterwards."""
    server = Server(postgres.url, tmp_path / "runs").start()
    try:
        with client(server) as http:
            assert http.get("/tuning-jobs").status_code == 200
            postgres.stop()
            began = time.monotonic()
            for method, path, body in (
                ("GET", "/tuning-jobs", None),
                ("GET", "/tuning-jobs/some-job", None),
                ("POST", "/tuning-jobs", definition(name="during", max_jobs=2)),
                ("POST", "/tuning-jobs/some-job/stop", None),
            ):
                response = http.request(method, path, json=body)
                assert response.status_code == 503, (method, path, response.text)
                detail = response.json()["detail"]
                assert detail == (
                    "the service's store did not answer (its database is down or unreachable); "
                    "retry later"
                )  # the driver's reason names the database's host and port: not the client's
            assert time.monotonic() - began < 20  # at once, not after the service's patience
            postgres.start()
            posted = http.post("/tuning-jobs", json=definition(name="after", max_jobs=2))
            assert posted.status_code == 201, posted.text
    finally:
        server.stop()
