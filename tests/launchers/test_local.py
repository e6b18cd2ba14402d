"""What only the local launcher promises: recovering a job whose tuner died between starting
its process and writing its handle (simulated here by removing the handle file)."""

from __future__ import annotations

import dataclasses
import sys
import time
from pathlib import Path

import pytest

from tuner.errors import LaunchError
from tuner.launchers import LaunchSpec, LocalLauncher
from tuner.launchers.tracked import HANDLE_FILE, LOG_FILE


def spec(tmp_path: Path, code: str) -> LaunchSpec:
    return LaunchSpec(name="job-1", argv=[sys.executable, "-c", code], workdir=tmp_path / "job-1")


def test_recover_finds_the_running_process_by_its_launch_marker(tmp_path):
    job = spec(tmp_path, "import time; print('up', flush=True); time.sleep(60)")
    first = LocalLauncher(grace_period=1)
    handle = first.start(job)
    (job.workdir / HANDLE_FILE).unlink()
    deadline = time.monotonic() + 30
    while b"up" not in first.read_logs(handle):  # running, as when a new tuner recovers it
        assert time.monotonic() < deadline  # (once, under CI's load, /proc had no match yet)
        time.sleep(0.02)

    second = LocalLauncher(grace_period=1)
    assert second.recover(job) == handle
    assert (job.workdir / HANDLE_FILE).read_text() == handle
    assert second.adopt(handle, job)
    assert second.poll(handle).running
    second.stop(handle)
    deadline = time.monotonic() + 30
    while second.poll(handle).running:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    first.poll(handle)  # reap the child in the first launcher


def test_recover_takes_a_job_that_ran_and_ended_meanwhile_as_ended(tmp_path):
    job = spec(tmp_path, "print('accuracy=0.9')")
    first = LocalLauncher()
    handle = first.start(job)
    while first.poll(handle).running:
        time.sleep(0.02)
    (job.workdir / HANDLE_FILE).unlink()

    second = LocalLauncher()
    recovered = second.recover(job)
    assert recovered is not None and second.adopt(recovered, job)
    status = second.poll(recovered)
    assert not status.running and status.exit_code == 0  # kept in the job's folder
    assert second.read_logs(recovered) == b"accuracy=0.9\n"


def test_a_reattached_job_that_fails_keeps_its_exit_code(tmp_path):
    """The tuner that started the job is gone; the job then exits with code 3 or is killed by a
    signal (SIGABRT; SIGKILL, as the kernel's out-of-memory killer sends it)."""
    for code, expected in (
        ("raise SystemExit(3)", 3),
        ("import os; os.abort()", -6),
        ("import os, signal; os.kill(os.getpid(), signal.SIGKILL)", -9),
    ):
        job = spec(tmp_path / str(expected), f"import time; time.sleep(0.5); {code}")
        first = LocalLauncher()
        handle = first.start(job)
        second = LocalLauncher()  # as after a restart: the job is not this process's child
        assert second.adopt(handle, job)
        deadline = time.monotonic() + 30
        while (status := second.poll(handle)).running:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert status.exit_code == expected
        assert first.poll(handle).exit_code == expected  # the wrapper ends as the job did


def test_nothing_to_recover_for_a_job_never_started(tmp_path):
    assert LocalLauncher().recover(spec(tmp_path, "pass")) is None


def test_a_tuner_that_died_between_opening_the_log_and_starting_the_job_starts_it_again(tmp_path):
    """An empty log, no status, no process: nothing ran (seen in CI: the service was killed
    just then and the job was recorded Failed with an unknown exit status). A log with output
    and no status is a job that ran and whose wrapper was killed with it (a reboot, a kill of
    every process): not adopted, so the scheduler records it interrupted and runs it again;
    with its wrapper's status it is adopted as ended."""
    job = spec(tmp_path, "pass")
    job.workdir.mkdir(parents=True)
    (job.workdir / LOG_FILE).write_bytes(b"")
    assert LocalLauncher().recover(job) is None
    (job.workdir / LOG_FILE).write_bytes(b"epoch 1\n")
    launcher = LocalLauncher()
    handle = launcher.recover(job)
    assert handle == f"local:0:0:{job.name}" and not launcher.adopt(handle, job)
    (job.workdir / "exit_code").write_text("3")
    assert launcher.adopt(handle, job)
    status = launcher.poll(handle)
    assert not status.running and status.exit_code == 3


def test_a_working_directory_that_does_not_exist_is_named(tmp_path):
    job = dataclasses.replace(spec(tmp_path, "pass"), cwd=tmp_path / "no" / "such", gpus_per_job=1)
    launcher = LocalLauncher(gpus=["0"])
    with pytest.raises(LaunchError, match=r"working_directory '.*/no/such' is not a directory"):
        launcher.start(job)
    assert launcher.free_slots(1) == 1  # the GPU it had taken is free again


COUNT_TERMS = """
import signal, sys, time
count = 0
def on_term(signum, frame):
    global count
    count += 1
signal.signal(signal.SIGTERM, on_term)
print("up", flush=True)
while count == 0:
    time.sleep(0.01)
time.sleep(1.0)  # a checkpoint; a second SIGTERM would arrive meanwhile
print(f"terms={count}", flush=True)
"""


def test_a_stop_delivers_one_sigterm_to_the_program(tmp_path):
    """The group-wide SIGTERM reached the program twice (directly, and forwarded by the
    wrapper): a job that quits hard on a second SIGTERM lost its checkpoint."""
    script = tmp_path / "count_terms.py"
    script.write_text(COUNT_TERMS)
    job = LaunchSpec(name="job-1", argv=[sys.executable, str(script)], workdir=tmp_path / "job-1")
    launcher = LocalLauncher(grace_period=10)
    handle = launcher.start(job)
    deadline = time.monotonic() + 30
    while b"up" not in (job.workdir / LOG_FILE).read_bytes():
        assert time.monotonic() < deadline
        time.sleep(0.02)
    launcher.stop(handle)
    while (status := launcher.poll(handle)).running:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert "terms=1" in (job.workdir / LOG_FILE).read_text()
    assert status.exit_code == 0  # it ended by itself within the grace period


DAEMONIZE = """
import os, sys, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:  # a daemon: out of the job's process group and session
        with open(sys.argv[1], "w") as f:
            f.write(str(os.getpid()))
        time.sleep(300)
    os._exit(0)
while not os.path.exists(sys.argv[1]):
    time.sleep(0.01)
print("accuracy=0.5", flush=True)
"""


def test_processes_a_job_left_outside_its_group_end_with_it(tmp_path):
    """A double-forked daemon (setsid) outlived its job, the tuning job and the tuner."""
    pid_file = tmp_path / "daemon.pid"
    workdir = tmp_path / "job-1"
    job = LaunchSpec(
        name="job-1",
        argv=[sys.executable, "-c", DAEMONIZE, str(pid_file)],
        workdir=workdir,
        env={"TUNER_OUTPUT_DIR": str(workdir / "output")},
    )
    launcher = LocalLauncher()
    handle = launcher.start(job)
    deadline = time.monotonic() + 30
    while launcher.poll(handle).running:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    daemon = int(pid_file.read_text())
    while Path(f"/proc/{daemon}").exists() and "Z" not in _state(daemon):
        assert time.monotonic() < deadline, "the daemon still runs"
        time.sleep(0.05)


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"


def test_the_log_kept_open_for_reading_is_closed_once_an_ended_job_is_read(tmp_path):
    """The launcher keeps each job's log open from its start (so a job that deletes log.txt is
    still read); 50 jobs must not leave 50 descriptors behind."""
    import os

    launcher = LocalLauncher()
    before = len(os.listdir("/proc/self/fd"))
    for i in range(50):
        job = dataclasses.replace(
            spec(tmp_path, "print('accuracy=0.9')"), name=f"j{i}", workdir=tmp_path / f"j{i}"
        )
        handle = launcher.start(job)
        while launcher.poll(handle).running:
            time.sleep(0.01)
        assert b"accuracy=0.9" in launcher.read_logs(handle)
        assert launcher.read_logs(handle) == b""
    assert len(os.listdir("/proc/self/fd")) <= before + 2


def test_close_lets_go_of_the_logs_of_jobs_left_running(tmp_path):
    """A scheduler that leaves its jobs (detach, a lost lease, an outage) closes its launcher:
    the logs it held open for each running job stayed open."""
    import os

    before = len(os.listdir("/proc/self/fd"))
    handles = []
    for i in range(5):
        launcher = LocalLauncher()
        job = dataclasses.replace(
            spec(tmp_path, "import time; time.sleep(30)"), name=f"j{i}", workdir=tmp_path / f"j{i}"
        )
        handles.append((launcher, launcher.start(job)))
        launcher.close()
    assert len(os.listdir("/proc/self/fd")) <= before + 1
    for launcher, handle in handles:
        launcher.stop(handle)
        while launcher.poll(handle).running:
            time.sleep(0.05)
