"""Launcher factories for the contract suite: local processes, and containers on a real Docker
engine (``TUNER_TEST_DOCKER_HOST``, started by ``.ci/docker.sh``)."""

from __future__ import annotations

import contextlib
import getpass
import os
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.conftest import skip_or_fail
from tests.launchers.docker_image import build_image
from tuner.launchers import Launcher, LocalLauncher
from tuner.launchers.host_leases import LEASE_DIR_ENV, HostLeases

IMAGE = "tuner-test-python:latest"


@pytest.fixture(scope="session")
def docker_host() -> str:
    host = os.environ.get("TUNER_TEST_DOCKER_HOST")
    if not host:
        skip_or_fail("TUNER_TEST_DOCKER_HOST is not set (start an engine with .ci/docker.sh)")
    return str(host)


@pytest.fixture(scope="session")
def docker_image(docker_host: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    import docker

    client = docker.DockerClient(base_url=docker_host)
    try:
        return build_image(client, IMAGE, tmp_path_factory.mktemp("image"))
    finally:
        client.close()


@pytest.fixture(scope="session")
def slurm_conf() -> Iterator[str]:
    """A Slurm cluster's config (``TUNER_TEST_SLURM_CONF``, started by ``.ci/slurm.sh``)."""
    conf = os.environ.get("TUNER_TEST_SLURM_CONF")
    if not conf:
        skip_or_fail("TUNER_TEST_SLURM_CONF is not set (start a cluster with .ci/slurm.sh)")
    previous = os.environ.get("SLURM_CONF")
    os.environ["SLURM_CONF"] = str(conf)
    yield str(conf)
    if previous is None:
        del os.environ["SLURM_CONF"]
    else:
        os.environ["SLURM_CONF"] = previous


def cancel_all_slurm_jobs() -> None:
    """Leave the test cluster empty for the next test."""
    subprocess.run(["scancel", "--user", getpass.getuser()], check=False)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        queue = subprocess.run(["squeue", "-h"], capture_output=True, text=True, check=False)
        if not queue.stdout.strip():
            return
        time.sleep(0.2)


@pytest.fixture
def slurm(slurm_conf: str) -> Iterator[str]:
    """The test cluster, emptied of jobs after the test."""
    yield slurm_conf
    cancel_all_slurm_jobs()


@pytest.fixture(params=["local", "docker", "slurm"])
def make(request: pytest.FixtureRequest) -> Iterator[Callable[..., Launcher]]:
    if request.param == "local":
        yield LocalLauncher
        return
    if request.param == "slurm":
        from tuner.launchers.slurm import SlurmLauncher

        request.getfixturevalue("slurm")

        def slurm_factory(**kw: object) -> Launcher:
            return SlurmLauncher(poll_interval=0.2, **kw)  # type: ignore[arg-type]

        yield slurm_factory
        return
    from tuner.launchers.docker import DockerLauncher

    host = request.getfixturevalue("docker_host")
    image = request.getfixturevalue("docker_image")
    made: list[DockerLauncher] = []

    def factory(**kw: object) -> Launcher:
        launcher = DockerLauncher(image, docker_host=host, network="none", **kw)  # type: ignore[arg-type]
        made.append(launcher)
        return launcher

    yield factory
    import docker

    for launcher in made:
        for container in launcher.client.containers.list(
            all=True, filters={"label": "tuner.training-job"}
        ):
            with contextlib.suppress(docker.errors.NotFound):  # removed meanwhile
                container.remove(force=True)
        launcher.close()


def kind(make: Callable[..., Launcher]) -> str:
    if make is LocalLauncher:
        return "local"
    return "slurm" if make.__name__ == "slurm_factory" else "docker"


__all__ = ["Path", "kind"]


@pytest.fixture
def leases(tmp_path, monkeypatch) -> HostLeases:
    """A lease directory of the test's own (launchers read it from the environment)."""
    root = tmp_path / "leases"
    monkeypatch.setenv(LEASE_DIR_ENV, str(root))
    return HostLeases(root)
