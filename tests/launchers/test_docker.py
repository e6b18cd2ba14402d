"""What only the Docker launcher does: limits, privileges, GPU device requests, clean-up, and a
whole tuning job run in containers."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.conftest import FAKE_TRAIN, skip_or_fail, wait_until_running
from tests.launchers.conftest import IMAGE
from tests.launchers.docker_image import PYTHON, build_image
from tuner import ContinuousParameter, HyperparameterTuner, ValidationError
from tuner.launchers import LaunchSpec
from tuner.launchers.docker import LABEL


@pytest.fixture
def launcher(docker_host, docker_image):
    from tuner.launchers.docker import DockerLauncher

    made = DockerLauncher(
        docker_image,
        docker_host=docker_host,
        network="none",
        cpus=0.5,
        memory="256m",
        gpus=["0", "1", "2"],
        jobs_per_gpu=1,
    )
    yield made
    made.close()


def test_limits_and_no_privileges(launcher, tmp_path):
    spec = LaunchSpec("limits", [PYTHON, "-c", "import time; time.sleep(30)"], tmp_path / "j")
    handle = launcher.start(spec)
    container = launcher.client.containers.get(handle.split(":")[1])
    host = container.attrs["HostConfig"]
    assert host["NanoCpus"] == 500_000_000 and host["Memory"] == 256 * 1024 * 1024
    assert host["Privileged"] is False and host["CapDrop"] == ["ALL"]
    assert "no-new-privileges" in host["SecurityOpt"] and host["Init"] is True
    assert host["NetworkMode"] == "none"
    assert container.attrs["Config"]["Labels"]["tuner.training-job"] == "limits"
    assert launcher.recover(spec) == handle
    launcher.stop(handle)
    deadline = time.monotonic() + 30
    while launcher.poll(handle).running:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert launcher.client.containers.list(all=True, filters={"id": container.id}) == []


def test_gpu_slots_become_device_requests(launcher):
    assert launcher.free_slots(1) == 3 and launcher.free_slots(2) == 1
    taken = launcher.slots.take("a", 2)
    assert taken == ["0", "1"] and launcher.free_slots(1) == 1
    (request,) = launcher.device_requests(taken)
    assert request["DeviceIDs"] == ["0", "1"] and request["Capabilities"] == [["gpu"]]
    launcher.slots.release("a")
    assert launcher.free_slots(1) == 3


def test_bad_settings(docker_host, docker_image):
    from tuner.launchers.docker import DockerLauncher

    with pytest.raises(ValidationError, match="cpus must be > 0, got 0"):
        DockerLauncher(docker_image, docker_host=docker_host, cpus=0)
    with pytest.raises(ValidationError, match="needs an image"):
        DockerLauncher("", docker_host=docker_host)


def test_a_tuning_job_in_containers(tmp_path, docker_host, docker_image):
    tuner = containers_tuner(tmp_path, docker_host, docker_image, max_jobs=3, parallel=2)
    tuner.fit()
    jobs = tuner.training_jobs()
    assert [j.status.value for j in jobs] == ["Completed"] * 3, jobs[0].failure_reason
    assert all(j.handle.startswith("docker:") for j in jobs)
    best = tuner.best_training_job()
    assert best.objective == pytest.approx(
        1 - (best.hyperparameters["x"] - 0.3) ** 2 - 0.01, abs=1e-5
    )


def test_a_quarter_of_a_gpu_per_container(tmp_path, docker_host, docker_image):
    """gpus_per_job=0.25: four containers per GPU id, each asking the engine for that GPU."""
    from tuner.launchers.docker import DockerLauncher
    from tuner.launchers.slots import jobs_per_gpu_for

    launcher = DockerLauncher(
        docker_image, docker_host=docker_host, gpus=["0", "1"], jobs_per_gpu=jobs_per_gpu_for(0.25)
    )
    try:
        assert launcher.free_slots(0.25) == 8
        taken = [launcher.slots.take(f"j{i}", 0.25) for i in range(8)]
        assert sorted(g for (g,) in taken) == ["0"] * 4 + ["1"] * 4
        assert launcher.free_slots(0.25) == 0
        (request,) = launcher.device_requests(taken[0])
        assert request["DeviceIDs"] == taken[0]
    finally:
        launcher.close()


def test_a_container_gets_its_thread_share_and_the_shared_folder(launcher, tmp_path):
    shared = tmp_path / "tuning" / "shared"
    code = (
        "import os, pathlib; print(os.environ['OMP_NUM_THREADS'], os.environ['MKL_NUM_THREADS']);"
        f"pathlib.Path({str(shared)!r}, 'cache.bin').write_text('compiled')"
    )
    spec = LaunchSpec("share", [PYTHON, "-c", code], tmp_path / "tuning" / "j", shared_dir=shared)
    handle = launcher.start(spec)
    deadline = time.monotonic() + 60
    while (status := launcher.poll(handle)).running:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    log = launcher.read_logs(handle).decode()
    assert status.exit_code == 0, log
    assert log.split() == ["1", "1"]  # cpus=0.5: one thread
    assert (shared / "cache.bin").read_text() == "compiled"


def test_early_stopping_stops_containers(tmp_path, docker_host, docker_image):
    import docker

    from tests.test_early_stopping import CURVE, check_median_outcome

    tuner = HyperparameterTuner(
        job_definition={
            "launcher": "docker",
            "image": docker_image,
            "docker_host": docker_host,
            "network": "none",
            "command": [PYTHON, str(CURVE)],
            "static_hyperparameters": {"epochs": 12, "step_sleep": 0.3},
            "working_directory": str(CURVE.parent),
            "output_path": str(tmp_path / "runs"),
            "grace_period": 2.0,
        },
        objective_metric_name="accuracy",
        hyperparameter_ranges={"x": ContinuousParameter(0.0, 1.0)},
        metric_definitions=[{"Name": "accuracy", "Regex": r"validation: accuracy=([0-9.]+)"}],
        strategy="Random",
        max_jobs=7,
        random_seed=0,
        early_stopping_type="Auto",
        storage=f"sqlite:///{tmp_path / 'db.sqlite'}",
    )
    tuner.fit()
    jobs = tuner.training_jobs()
    stopped = check_median_outcome(jobs, epochs=12)
    client = docker.DockerClient(base_url=docker_host)
    try:
        for j in jobs:
            left = client.containers.list(all=True, filters={"label": f"{LABEL}={j.name}"})
            assert left == [], f"{j.name} left a container behind"
            if j.name in stopped:
                assert (Path(j.workdir) / "output" / "terminated").exists()  # got SIGTERM
    finally:
        client.close()


def _until_ended(launcher, handle: str, timeout: float = 30):
    deadline = time.monotonic() + timeout
    while (status := launcher.poll(handle)).running:
        assert time.monotonic() < deadline, f"{handle} did not end"
        time.sleep(0.05)
    return status


def _exited(launcher, handle: str) -> None:
    container = launcher.client.containers.get(handle.split(":")[1])
    deadline = time.monotonic() + 30
    while container.status != "exited":
        assert time.monotonic() < deadline
        time.sleep(0.05)
        container.reload()


def test_a_container_removed_behind_the_tuners_back_fails_saying_so(launcher, tmp_path):
    """It was reported as 'could not be read after the tuner re-attached', with no re-attach."""
    spec = LaunchSpec("removed", [PYTHON, "-c", "import time; time.sleep(30)"], tmp_path / "r")
    handle = launcher.start(spec)
    launcher.client.containers.get(handle.split(":")[1]).remove(force=True)
    status = _until_ended(launcher, handle)
    assert status.exit_code is None
    assert status.note == "its container was removed (not by the tuner) before its end was read"


def test_an_ended_container_stays_until_its_log_is_copied(launcher, tmp_path, monkeypatch):
    """A 1.5 GB log outlasted a 10 s wait: the container was removed with the log's last
    77 MB, the objective among them, and the job that had succeeded was recorded Failed."""
    import threading

    from tuner.launchers import docker as docker_launcher

    spec = LaunchSpec("drain", [PYTHON, "-c", "print('accuracy=0.5')"], tmp_path / "d")
    handle = launcher.start(spec)
    copied, stalled = threading.Event(), threading.Event()
    launcher._jobs[handle].follower = threading.Thread(target=copied.wait, daemon=True)
    launcher._jobs[handle].follower.start()  # a copy of the log that has not finished yet
    _exited(launcher, handle)
    for _ in range(3):
        assert launcher.poll(handle).running  # and the poll returns at once
        assert launcher.client.containers.list(all=True, filters={"label": f"{LABEL}=drain"})
    copied.set()
    assert _until_ended(launcher, handle).exit_code == 0
    assert not launcher.client.containers.list(all=True, filters={"label": f"{LABEL}=drain"})

    monkeypatch.setattr(docker_launcher, "LOG_DRAIN_STALL", 0.3)
    stuck = launcher.start(LaunchSpec("stuck", [PYTHON, "-c", "pass"], tmp_path / "s"))
    launcher._jobs[stuck].follower = threading.Thread(target=stalled.wait, daemon=True)
    launcher._jobs[stuck].follower.start()  # a copy that never ends: given up on
    _exited(launcher, stuck)
    assert launcher.poll(stuck).running
    time.sleep(0.4)
    assert _until_ended(launcher, stuck, timeout=5).exit_code == 0
    stalled.set()


def test_an_engine_that_stops_answering_ends_its_jobs_saying_so(launcher, tmp_path, monkeypatch):
    """A stopped engine raised requests' ConnectionError out of poll (not a DockerException):
    a traceback, and the tuning job left InProgress."""
    import requests

    from tuner.launchers import docker as docker_launcher

    monkeypatch.setattr(docker_launcher, "ENGINE_PATIENCE", 0.5)
    spec = LaunchSpec("cut", [PYTHON, "-c", "import time; time.sleep(30)"], tmp_path / "c")
    handle = launcher.start(spec)
    job = launcher._jobs[handle]
    container = job.container

    def unreachable(*args, **kwargs):
        raise requests.exceptions.ConnectionError("connection refused (engine stopped)")

    monkeypatch.setattr(container, "reload", unreachable)
    monkeypatch.setattr(container, "kill", unreachable)
    launcher.stop(handle)  # does not raise either
    assert launcher.poll(handle).running  # a blip is waited out ...
    time.sleep(0.6)
    status = launcher.poll(handle)  # ... an outage is not
    assert not status.running and status.exit_code is None
    assert status.note is not None and "did not answer for 0.5s" in status.note
    assert "connection refused (engine stopped)" in status.note
    launcher.client.containers.get(container.id).remove(force=True)


def test_an_engine_away_at_a_start_launches_nothing_until_it_answers(
    launcher, tmp_path, docker_image
):
    """A start while the engine restarted raised requests' ConnectionError through the tuner
    (the tuning job Failed), and the container the engine had created stayed behind. Now the
    start is LauncherUnavailable, no slot is offered until a ping answers, and what was left
    is removed then."""
    import docker

    from tuner.errors import LauncherUnavailable

    engine = launcher.client
    free = launcher.free_slots(1)
    gone = f"unix://{tmp_path}/no-engine.sock"
    launcher.client = docker.DockerClient(base_url=gone, version=engine.api.api_version)
    spec = LaunchSpec("away", [PYTHON, "-c", "print(1)"], tmp_path / "away")
    with pytest.raises(LauncherUnavailable, match="the Docker engine did not answer"):
        launcher.start(spec)
    assert launcher.free_slots(1) == 0
    left = engine.containers.create(docker_image, [PYTHON, "-c", "0"], labels={LABEL: "away"})
    launcher.client = engine  # it answers again
    assert launcher.free_slots(1) == free
    assert not engine.containers.list(all=True, filters={"id": left.id})


def test_a_re_attached_container_keeps_its_gpu_slot(launcher, tmp_path, monkeypatch, docker_host):
    """Recovered after a crash between its start and its record, a container was adopted
    without its GPU: the slot looked free and a fifth quarter-GPU job could start on it."""
    from tuner.launchers.docker import DockerLauncher

    monkeypatch.setattr(launcher, "device_requests", lambda gpus: [])  # no NVIDIA runtime here
    spec = LaunchSpec(
        "gpu", [PYTHON, "-c", "import time; time.sleep(30)"], tmp_path / "g", gpus_per_job=1
    )
    handle = launcher.start(spec)
    assert launcher.free_slots(1) == 2
    again = DockerLauncher(launcher.image, docker_host=docker_host, gpus=["0", "1", "2"])
    try:
        assert again.recover(spec) == handle and again.adopt(handle, spec, None)
        assert again.free_slots(1) == 2 and again.poll(handle).gpus == "0"
    finally:
        again.stop(handle)
        again.close()
    launcher.client.containers.get(handle.split(":", 1)[1]).remove(force=True)


def test_a_containers_gpu_lease_outlives_the_tuner_that_started_it(
    tmp_path, monkeypatch, docker_host, docker_image
):
    """A tuner killed while its container ran let go of the container's GPU lease: another
    tuning job could start on that GPU beside it. The lease keeper holds it until the
    container's first process ends; a tuner adopting the container counts it once. (GPU "7":
    other tests' keepers may hold GPU 0 for up to half a second after their containers.)"""
    from tuner.launchers.docker import DockerLauncher

    mine = DockerLauncher(docker_image, docker_host=docker_host, gpus=["7"])
    monkeypatch.setattr(mine, "device_requests", lambda gpus: [])  # no NVIDIA runtime here
    sleep = [PYTHON, "-c", "import time; time.sleep(60)"]
    spec = LaunchSpec("kept", sleep, tmp_path / "kept", gpus_per_job=1)
    handle = mine.start(spec)
    mine.close()  # the tuner's own copies of its leases: gone as if it were killed
    other = DockerLauncher(docker_image, docker_host=docker_host, gpus=["7"])
    try:
        assert other.free_slots(1) == 0  # GPU 7 is still the container's
        assert other.adopt(handle, spec, "7") and other.free_slots(1) == 0  # counted once
        other.client.containers.get(handle.split(":", 1)[1]).kill()
        deadline = time.monotonic() + 30
        while other.poll(handle).running:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        deadline = time.monotonic() + 5  # the first tuner's keeper sees the end within 0.5 s
        while other.free_slots(1) != 1:
            assert time.monotonic() < deadline, "the lease outlived the container"
            time.sleep(0.05)
    finally:
        other.close()


def test_the_lease_keeper_watches_only_a_process_of_the_container(
    tmp_path, monkeypatch, docker_host, docker_image
):
    """The engine reports its host's pid; a tuner in a container of its own sees another
    process, or none, under that number, and a keeper watching it would hold the GPU for that
    process's life. The pid is watched only where its cgroup names the container."""
    from tuner.launchers.docker import DockerLauncher, in_container

    launcher = DockerLauncher(docker_image, docker_host=docker_host, gpus=["6"])
    monkeypatch.setattr(launcher, "device_requests", lambda gpus: [])  # no NVIDIA runtime here
    sleep = [PYTHON, "-c", "import time; time.sleep(60)"]
    handle = launcher.start(LaunchSpec("watched", sleep, tmp_path / "w", gpus_per_job=1))
    try:
        container = launcher._jobs[handle].container
        pid = int(container.attrs["State"]["Pid"])
        assert in_container(pid, container.id) and launcher._jobs[handle].keeper is not None
        assert not in_container(os.getpid(), container.id)
        assert not in_container(pid, "0" * 64) and not in_container(2**22 + 1, container.id)

        # as the engine answers a tuner whose pid namespace is not the host's
        elsewhere = SimpleNamespace(
            id=container.id, attrs={"State": {"Pid": os.getpid()}}, reload=lambda: None
        )
        assert launcher._keep_leases("watched", elsewhere) is None
    finally:
        launcher.stop(handle)
        launcher.close()


def test_a_sigterm_from_outside_is_an_interruption_and_the_tuners_own_is_not(launcher, tmp_path):
    """An engine shutting down stops its containers with SIGTERM; they were Failed "killed by
    signal 15" (and used up max_failed_jobs). SIGTERM the tuner did not send is reported
    ``interrupted``; the tuner's own stop, a SIGKILL and a crash are not."""
    sleep = [PYTHON, "-c", "import time; print('up', flush=True); time.sleep(30)"]
    outside = launcher.start(LaunchSpec("outside", sleep, tmp_path / "o"))
    own = launcher.start(LaunchSpec("own", sleep, tmp_path / "own"))
    killed = launcher.start(LaunchSpec("killed", sleep, tmp_path / "k"))
    crash = launcher.start(LaunchSpec("crash", [PYTHON, "-c", "raise SystemExit(3)"], tmp_path))
    for handle in (outside, own, killed):
        log = launcher._jobs[handle].spec.workdir / "log.txt"
        while b"up" not in log.read_bytes():
            time.sleep(0.05)
    launcher.client.containers.get(outside.split(":")[1]).stop(timeout=5)  # as the engine does
    launcher.client.containers.get(killed.split(":")[1]).kill()
    launcher.stop(own)
    ended = _until_ended(launcher, outside)
    assert (ended.exit_code, ended.interrupted, ended.stopped) == (-15, True, False)
    assert ended.note == (
        "its container got SIGTERM from outside the tuner (the Docker engine stopping its "
        "containers as it shuts down, or a docker stop)"
    )
    ended = _until_ended(launcher, own)
    assert (ended.exit_code, ended.interrupted, ended.stopped) == (-15, False, True)
    ended = _until_ended(launcher, killed)
    assert not ended.interrupted and ended.exit_code not in (0, -15), ended
    ended = _until_ended(launcher, crash)
    assert (ended.exit_code, ended.interrupted) == (3, False)


def containers_tuner(
    tmp_path: Path, host: str, image: str, max_jobs: int = 2, parallel: int = 1, **static: object
) -> HyperparameterTuner:
    """A Random tuning job of fake_train containers."""
    return HyperparameterTuner(
        job_definition={
            "launcher": "docker",
            "image": image,
            "docker_host": host,
            "network": "none",
            "command": [PYTHON, str(FAKE_TRAIN)],
            "working_directory": str(FAKE_TRAIN.parent),
            "static_hyperparameters": static,
            "output_path": str(tmp_path / "runs"),
        },
        objective_metric_name="accuracy",
        hyperparameter_ranges={"x": ContinuousParameter(0.0, 1.0)},
        metric_definitions=[{"Name": "accuracy", "Regex": r"accuracy=([0-9.]+)"}],
        strategy="Random",
        max_jobs=max_jobs,
        max_parallel_jobs=parallel,
        random_seed=0,
        storage=f"sqlite:///{tmp_path / 'db.sqlite'}",
    )


ENGINE_SCRIPT = Path(__file__).resolve().parents[2] / ".ci" / "docker.sh"


@pytest.fixture
def own_engine() -> Iterator[tuple[Path, str]]:
    """A Docker engine of this test's own (``.ci/docker.sh``), to shut down and start again."""
    if shutil.which("dockerd") is None or os.geteuid() != 0:
        skip_or_fail("starting a Docker engine needs dockerd (apt-get install docker.io) and root")
    folder = Path(tempfile.mkdtemp(prefix="tuner-engine-"))  # short: a socket path's limit
    try:
        started = subprocess.run(
            [ENGINE_SCRIPT, "start", folder], capture_output=True, text=True, check=True
        )
        yield folder, started.stdout.strip()
    finally:
        subprocess.run([ENGINE_SCRIPT, "stop", folder], capture_output=True)
        shutil.rmtree(folder, ignore_errors=True)


def test_jobs_an_engine_shutdown_ended_run_again(own_engine, tmp_path):
    """Restarting the engine (an upgrade, a reboot) SIGTERMs its containers: the job was
    Failed "killed by signal 15". It is now Stopped as interrupted from outside and its
    configuration runs again; it does not use up max_jobs."""
    import docker

    folder, host = own_engine
    client = docker.DockerClient(base_url=host)
    (tmp_path / "image").mkdir()
    image = build_image(client, IMAGE, tmp_path / "image")
    client.close()
    tuner = containers_tuner(tmp_path, host, image, sleep=4.0, epochs=2)
    tuner.fit(wait=False)
    wait_until_running(tuner, 1)
    engine = int((folder / "docker.pid").read_text())
    os.kill(engine, signal.SIGTERM)  # as systemctl stop docker does
    deadline = time.monotonic() + 60
    while Path(f"/proc/{engine}").exists():
        assert time.monotonic() < deadline, "the engine did not stop"
        time.sleep(0.1)
    subprocess.run([ENGINE_SCRIPT, "start", folder], capture_output=True, check=True)
    assert tuner.wait(timeout=120)["status"] == "Completed"
    first, *others = tuner.training_jobs()
    assert first.status.value == "Stopped"
    assert first.failure_reason == (
        "interrupted from outside: its container got SIGTERM from outside the tuner (the "
        "Docker engine stopping its containers as it shuts down, or a docker stop)"
    )
    # A start while the engine was still away is "not started" and tried again later.
    assert all((j.failure_reason or "").startswith("not started: ") for j in others[:-2])
    assert [j.status.value for j in others[-2:]] == ["Completed", "Completed"]
    assert others[-2].hyperparameters == first.hyperparameters  # run again


def test_a_program_that_sigterms_itself_fails_at_its_third_run(tmp_path, docker_host, docker_image):
    """Taken for an interruption from outside, it would run again for ever."""
    tuner = containers_tuner(tmp_path, docker_host, docker_image, 1, kill_signal=15, epochs=1)
    tuner.fit()
    jobs = tuner.training_jobs()
    assert [j.status.value for j in jobs] == ["Stopped", "Stopped", "Failed"]
    assert all(j.failure_reason.startswith("interrupted from outside: ") for j in jobs[:2])
    assert jobs[2].failure_reason.startswith("killed by signal 15 (SIGTERM)")
    assert len({j.hyperparameters["x"] for j in jobs}) == 1


def _ended(launcher, handle):
    deadline = time.monotonic() + 60
    while (status := launcher.poll(handle)).running:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    return status


def test_a_child_killed_for_memory_does_not_fail_a_program_that_ends_well(launcher, tmp_path):
    """Docker's ``OOMKilled`` says any process of the container was killed for memory (a
    DataLoader worker): a program that went on and exited 0 was recorded as killed by SIGKILL
    (a QA helper)."""
    code = (
        "import subprocess, sys\n"
        "child = subprocess.run([sys.executable, '-c', 'b = b\"x\" * (600 << 20)'])\n"
        "print('child', child.returncode, flush=True)\n"
    )
    handle = launcher.start(LaunchSpec("child-oom", [PYTHON, "-c", code], tmp_path / "j"))
    status = _ended(launcher, handle)
    assert status.exit_code == 0, status
    assert "child -9" in (tmp_path / "j" / "log.txt").read_text()  # it was killed, by memory
    main = "b = b'x' * (600 << 20)"  # the program itself: SIGKILL, as before
    handle = launcher.start(LaunchSpec("main-oom", [PYTHON, "-c", main], tmp_path / "k"))
    assert _ended(launcher, handle).exit_code == -signal.SIGKILL


def test_a_container_given_up_on_is_removed_once_the_engine_answers(launcher, tmp_path):
    """An engine that did not answer for ENGINE_PATIENCE: the job ended unknown and its
    container (exited 0 later, or still running) was never removed (a QA helper)."""
    spec = LaunchSpec("given-up", [PYTHON, "-c", "import time; time.sleep(60)"], tmp_path / "j")
    handle = launcher.start(spec)
    job = launcher._jobs[handle]
    job.unreachable_since = time.monotonic() - 10_000  # as if the engine had been away since
    status = launcher._unreachable(job, TimeoutError("read timed out"))
    assert not status.running and status.exit_code is None
    launcher._sweep()  # what the next free_slots does once the engine answers
    assert launcher.client.containers.list(all=True, filters={"label": f"{LABEL}=given-up"}) == []


def test_an_image_without_a_command_runs_as_built_in_its_workdir(
    docker_host, docker_image, tmp_path
):
    """SageMaker-style images (WORKDIR /opt/ml/code, ENTRYPOINT [python, train.py]; the repo's
    own trainer image) failed every job: the tuner's folder replaced the image's WORKDIR
    (a QA helper). Without ``command`` the image runs as built; its output folder is there."""
    import docker

    client = docker.DockerClient(base_url=docker_host)
    script = "import sys; print('validation: accuracy=0.75', sys.argv[1:])"
    maker = client.containers.run(
        docker_image,
        [
            PYTHON,
            "-c",
            f"import os; os.makedirs('/opt/app'); open('/opt/app/train.py', 'w').write({script!r})",
        ],
        network_mode="none",
        detach=True,
    )
    try:
        assert maker.wait(timeout=60)["StatusCode"] == 0
        maker.commit(
            "tuner-test-entrypoint",
            "1",
            changes=["WORKDIR /opt/app", f'ENTRYPOINT ["{PYTHON}", "train.py"]'],
        )
    finally:
        maker.remove(force=True)
    try:
        tuner = HyperparameterTuner(
            job_definition={
                "launcher": "docker",
                "image": "tuner-test-entrypoint:1",
                "docker_host": docker_host,
                "network": "none",
                "output_path": str(tmp_path / "runs"),
            },
            objective_metric_name="accuracy",
            hyperparameter_ranges={"x": ContinuousParameter(0.0, 1.0)},
            metric_definitions=[{"Name": "accuracy", "Regex": r"accuracy=([0-9.]+)"}],
            strategy="Random",
            max_jobs=1,
            storage=f"sqlite:///{tmp_path / 'db.sqlite'}",
        )
        tuner.fit(progress=False)
        (job,) = tuner.training_jobs()
        assert job.status.value == "Completed", job.failure_reason
        assert job.objective == 0.75
    finally:
        client.images.remove("tuner-test-entrypoint:1", force=True)
        client.close()
