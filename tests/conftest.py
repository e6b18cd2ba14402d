"""Shared fixtures: stores on SQLite and PostgreSQL, the fake training job, CI-strict skips."""

from __future__ import annotations

import os
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from tuner.storage import Store

JOBS = Path(__file__).parent / "jobs"
FAKE_TRAIN = JOBS / "fake_train.py"
IN_CI = os.environ.get("CI", "").lower() == "true"

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


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'tuner.db'}"


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A fresh, empty database on the PostgreSQL server named by TUNER_TEST_POSTGRES_URL."""
    base = os.environ.get("TUNER_TEST_POSTGRES_URL")
    if not base:
        skip_or_fail("TUNER_TEST_POSTGRES_URL is not set (start one with .ci/postgres.sh)")
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    url = make_url(base)
    name = f"tuner_test_{uuid.uuid4().hex[:12]}"
    admin = create_engine(url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield url.set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


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
