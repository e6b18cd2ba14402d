"""One contract, run on every launcher (see tuner/launchers/base.py)."""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

import pytest

from tests.launchers.conftest import kind
from tests.launchers.docker_image import PYTHON as PY
from tuner import LaunchError, ValidationError
from tuner.launchers import JobStatus, Launcher, LaunchSpec


def spec(tmp_path: Path, code: str, *args: str, name: str = "job-1", **kw) -> LaunchSpec:
    return LaunchSpec(name=name, argv=[PY, "-c", code, *args], workdir=tmp_path / name, **kw)


def wait(launcher: Launcher, handle: str, timeout: float = 30) -> tuple[JobStatus, bytes]:
    log = b""
    deadline = time.monotonic() + timeout
    while True:
        status = launcher.poll(handle)
        log += launcher.read_logs(handle)
        if not status.running:
            while chunk := launcher.read_logs(handle):
                log += chunk
            return status, log
        assert time.monotonic() < deadline, "job did not end in time"
        time.sleep(0.02)


def test_exit_code_and_both_streams_in_the_log(make, tmp_path):
    launcher = make()
    h = launcher.start(
        spec(tmp_path, "import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)")
    )
    status, log = wait(launcher, h)
    assert status.exit_code == 3
    assert b"out" in log and b"err" in log


def test_argv_is_passed_literally_never_through_a_shell(make, tmp_path):
    launcher = make()
    nasty = ["a b", "; touch pwned", "$HOME", "`id`", "'\"", "--x=1|cat", ""]
    h = launcher.start(spec(tmp_path, "import json, sys; print(json.dumps(sys.argv[1:]))", *nasty))
    status, log = wait(launcher, h)
    assert status.exit_code == 0
    assert json.loads(log.decode().strip()) == nasty
    assert not (tmp_path / "job-1" / "pwned").exists()


def test_environment_and_working_directory(make, tmp_path):
    launcher = make()
    cwd = tmp_path / "code"
    cwd.mkdir()
    code = "import os; print(os.environ['TUNER_TRIAL_NAME'], os.getcwd())"
    h = launcher.start(spec(tmp_path, code, env={"TUNER_TRIAL_NAME": "t-007"}, cwd=cwd))
    _, log = wait(launcher, h)
    assert log.decode().split() == ["t-007", str(cwd)]


def test_logs_stream_while_the_job_runs(make, tmp_path):
    launcher = make()
    h = launcher.start(spec(tmp_path, "import time\nprint('first', flush=True)\ntime.sleep(30)"))
    deadline = time.monotonic() + 10
    seen = b""
    while b"first" not in seen and time.monotonic() < deadline:
        seen += launcher.read_logs(h)
        time.sleep(0.02)
    assert b"first" in seen
    assert launcher.poll(h).running
    launcher.stop(h)
    status, _ = wait(launcher, h)
    assert status.stopped and not status.running


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split()[2] != "Z"


def test_stop_kills_the_whole_process_group(make, tmp_path):
    """Local: the job's process group; docker: the container (its processes have their own
    pid namespace, so the child's pid is checked only for local jobs)."""
    launcher = make(grace_period=5)
    code = (
        "import subprocess, sys, time\n"
        "c = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        "print(c.pid, flush=True)\ntime.sleep(60)"
    )
    h = launcher.start(spec(tmp_path, code))
    out = b""
    while not out.strip():
        out += launcher.read_logs(h)
        time.sleep(0.02)
    child = int(out.split()[0])
    launcher.stop(h)
    status, _ = wait(launcher, h)
    assert status.exit_code == -15
    if kind(make) == "slurm":  # Slurm ends every process of a job that ends
        assert _gone_soon(child)
        return
    if kind(make) == "docker":
        assert not launcher.client.containers.list(all=True, filters={"id": h.split(":")[1]})
        return
    assert _gone_soon(child)


def _gone_soon(pid: int, timeout: float = 10) -> bool:
    deadline = time.monotonic() + timeout
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not _alive(pid)


def test_sigterm_ignored_means_sigkill_after_the_grace_period(make, tmp_path):
    launcher = make(grace_period=0.5)
    code = (
        "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "print('ready', flush=True)\ntime.sleep(60)"
    )
    h = launcher.start(spec(tmp_path, code))
    while b"ready" not in launcher.read_logs(h):
        time.sleep(0.02)
    began = time.monotonic()
    launcher.stop(h)
    status, _ = wait(launcher, h)
    assert status.exit_code == -9
    # Slurm's plain scancel left the kill to KillWait (5 s on the test cluster, 30 s by default)
    assert 0.4 < time.monotonic() - began < 4


def test_max_runtime_stops_the_job(make, tmp_path):
    launcher = make(grace_period=1)
    h = launcher.start(spec(tmp_path, "import time; time.sleep(60)", max_runtime=0.3))
    status, _ = wait(launcher, h)
    assert status.timed_out and status.exit_code is not None and status.exit_code < 0


def test_missing_program_is_a_launch_error(make, tmp_path):
    launcher = make()
    bad = LaunchSpec(name="j", argv=["/no/such/program"], workdir=tmp_path / "j")
    if kind(make) == "local":
        with pytest.raises(LaunchError, match=r"cannot start '/no/such/program' .*: no such file"):
            launcher.start(bad)
        script = tmp_path / "train.sh"  # it said "no such executable program" for these too
        script.write_text("#!/bin/sh\necho hi\n")
        orphan = tmp_path / "orphan.py"  # it said "No such file" of the script itself
        orphan.write_text("#!/no/such/python -u\nprint('hi')\n")
        orphan.chmod(0o755)
        for argv, why in (
            ([str(script)], "it is not executable (chmod +x, or run it with its interpreter"),
            ([str(tmp_path)], "it is a directory"),
            (["no-such-trainer-anywhere"], "no such executable program on PATH"),
            ([str(orphan)], "the interpreter its #! line names, '/no/such/python', does not"),
        ):
            with pytest.raises(LaunchError, match=re.escape(why)):
                launcher.start(LaunchSpec(name="j", argv=argv, workdir=tmp_path / "j"))
        return
    status, log = wait(launcher, launcher.start(bad))  # the container's init reports it
    assert status.exit_code == 127
    assert b"/no/such/program" in log


def test_gpu_slots_through_cuda_visible_devices(make, tmp_path):
    if kind(make) == "docker":
        pytest.skip("GPU containers need the NVIDIA runtime; see test_docker.py for docker")
    if kind(make) == "slurm":
        pytest.skip("Slurm assigns the GPUs itself; see test_slurm.py")
    launcher = make(gpus=["0", "1"], jobs_per_gpu=2)
    assert launcher.free_slots(1) == 4
    assert launcher.free_slots(2) == 2
    code = "import os, time; print(os.environ['CUDA_VISIBLE_DEVICES'], flush=True); time.sleep(30)"
    handles = [launcher.start(spec(tmp_path, code, name=f"j{i}", gpus_per_job=1)) for i in range(4)]
    assert launcher.free_slots(1) == 0
    with pytest.raises(LaunchError, match="needs 1 GPU slots, only 0 are free"):
        launcher.start(spec(tmp_path, code, name="j5", gpus_per_job=1))
    seen = []
    for h in handles:
        out = b""
        while not out.strip():
            out += launcher.read_logs(h)
            time.sleep(0.02)
        seen.append(out.decode().strip())
    assert sorted(seen) == ["0", "0", "1", "1"]
    for h in handles:
        launcher.stop(h)
    for h in handles:
        wait(launcher, h)
    assert launcher.free_slots(2) == 2


def test_bad_launcher_settings(make):
    if kind(make) == "slurm":
        pytest.skip("a Slurm launcher has no GPU list of its own; see test_slurm.py")
    with pytest.raises(ValidationError, match="jobs_per_gpu must be an integer >= 1, got 0"):
        make(jobs_per_gpu=0)
    with pytest.raises(ValidationError, match="gpus must be distinct"):
        make(gpus=["0", "0"])


def test_a_new_launcher_adopts_a_running_job(make, tmp_path):
    first = make()
    code = "import time\nprint('one', flush=True)\ntime.sleep(1)\nprint('two', flush=True)"
    job = spec(tmp_path, code)
    h = first.start(job)
    first.close()  # the first tuner ends
    second = make()  # as after a restart of the tuner
    assert second.adopt(h, job)
    assert second.poll(h).running
    status, log = wait(second, h)
    assert log.split() == [b"one", b"two"]
    assert status.exit_code is None or status.exit_code == 0


def test_stop_works_on_an_adopted_job(make, tmp_path):
    first = make(grace_period=1)
    job = spec(tmp_path, "import time; print('up', flush=True); time.sleep(60)")
    h = first.start(job)
    while b"up" not in first.read_logs(h):
        time.sleep(0.02)
    second = make(grace_period=1)
    assert second.adopt(h, job)
    second.stop(h)
    status, _ = wait(second, h)
    assert not status.running
    first.poll(h)  # reap the child in the first launcher


def test_a_job_that_ended_unwatched_reports_when_it_ended(make, tmp_path):
    """What the scheduler needs to hold max_runtime across a restart of the tuner."""
    first = make()
    job = spec(tmp_path, "import time; time.sleep(1)")
    h = first.start(job)
    first.close()
    second = make()
    assert second.adopt(h, job)
    time.sleep(5)  # the 1 s job ends while nobody looks
    looked = time.time()
    status, _ = wait(second, h)
    assert status.ended_at is not None and status.began_at is not None
    assert status.ended_at < looked  # when it ended, not when it was seen to have ended
    assert 0.5 <= status.ended_at - status.began_at <= 5
    if kind(make) == "local":
        first.poll(h)  # reap the child in the first launcher


def test_adopting_a_garbled_handle_fails_cleanly(make, tmp_path):
    assert not make().adopt("nonsense", spec(tmp_path, "pass"))


def test_recover_finds_a_job_whose_start_was_not_recorded(make, tmp_path):
    job = spec(tmp_path, "print('hi')")
    assert make().recover(job) is None
    h = make().start(job)
    assert make().recover(job) == h
