"""Launcher factories for the contract suite: local processes, and containers on a real Docker
engine (``TUNER_TEST_DOCKER_HOST``, started by ``.ci/docker.sh``)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.conftest import skip_or_fail
from tests.launchers.docker_image import build_image
from tuner.launchers import Launcher, LocalLauncher

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


@pytest.fixture(params=["local", "docker"])
def make(request: pytest.FixtureRequest) -> Iterator[Callable[..., Launcher]]:
    if request.param == "local":
        yield LocalLauncher
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
    for launcher in made:
        for container in launcher.client.containers.list(
            all=True, filters={"label": "tuner.training-job"}
        ):
            container.remove(force=True)
        launcher.close()


def kind(make: Callable[..., Launcher]) -> str:
    return "local" if make is LocalLauncher else "docker"


__all__ = ["Path", "kind"]
