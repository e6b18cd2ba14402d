"""The machine-wide limit on local training jobs (``TUNER_MAX_LOCAL_JOBS``): launchers of
different tuner processes count each other's jobs, a job's place lives exactly as long as the job,
and a bad limit is refused before anything starts."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest

from tests.launchers.test_contract import spec, wait
from tests.launchers.test_host_leases import ROOT, SLEEP
from tests.launchers.test_threads import run_local
from tests.test_resume import wait_for
from tuner import LaunchError, ValidationError
from tuner.errors import LauncherFull
from tuner.launchers import LaunchSpec, LocalLauncher
from tuner.launchers.host_leases import LEASE_DIR_ENV
from tuner.launchers.local_limit import LIMIT_ENV, POOL, LocalJobLimit
from tuner.launchers.threads import THREAD_VARIABLES, local_cores


@pytest.fixture(autouse=True)
def two_places(monkeypatch) -> None:
    """At most two local jobs on the machine (the lease directory: the ``leases`` fixture)."""
    monkeypatch.setenv(LIMIT_ENV, "2")


def stop(launcher: LocalLauncher, handle: str) -> None:
    launcher.stop(handle)
    wait(launcher, handle)


def test_launchers_of_different_tuners_share_the_machines_places(leases, tmp_path):
    mine, theirs = LocalLauncher(parallel_jobs=4), LocalLauncher(parallel_jobs=4)
    assert mine.free_slots(0) == theirs.free_slots(0) == 2
    first = theirs.start(spec(tmp_path, SLEEP, name="theirs-1"))
    assert mine.free_slots(0) == 1
    mine_1 = mine.start(spec(tmp_path, SLEEP, name="mine-1"))
    assert mine.free_slots(0) == theirs.free_slots(0) == 0
    with pytest.raises(LauncherFull, match=f"job theirs-2: {LIMIT_ENV}=2 local jobs"):
        theirs.start(spec(tmp_path, SLEEP, name="theirs-2"))  # found full: try again later
    assert not (tmp_path / "theirs-2" / "log.txt").exists()  # nothing was started
    held = [json.loads(p.read_text()) for p in (leases.root / POOL).iterdir()]
    assert sorted((x["job"], x["share"]) for x in held) == [("mine-1", 0.5), ("theirs-1", 0.5)]
    stop(theirs, first)
    assert mine.free_slots(0) == 1  # it waited first (asked when full): first in line
    mine.stop_waiting()  # but starts nothing
    stop(mine, mine_1)
    assert theirs.free_slots(0) == 2
    assert list((leases.root / POOL).iterdir()) == []  # lease files go with their jobs


def test_gpu_jobs_take_a_place_too_and_the_tighter_limit_wins(leases, tmp_path):
    launcher = LocalLauncher(gpus=["0", "1", "2"], parallel_jobs=3)
    assert launcher.free_slots(1) == 2  # three GPUs, two places
    handles = [launcher.start(spec(tmp_path, SLEEP, name=f"g{i}", gpus_per_job=1)) for i in (0, 1)]
    assert launcher.free_slots(1) == 0  # a GPU is free, no place is
    probe = LocalLauncher(gpus=["9"])
    assert probe.free_slots(0.5) == 0
    probe.stop_waiting()
    for handle in handles:
        stop(launcher, handle)
    assert launcher.free_slots(1) == 2


def test_limits_that_differ_between_tuners_add_up_by_share(leases, tmp_path, monkeypatch):
    """Each job holds 1/limit of the machine by its own tuner's limit, as GPU shares do."""
    small = LocalLauncher()  # limit 2: each job half the machine
    monkeypatch.setenv(LIMIT_ENV, "4")
    large = LocalLauncher()  # limit 4: each job a quarter
    handles = [large.start(spec(tmp_path, SLEEP, name=f"q{i}")) for i in range(2)]
    assert small.free_slots(0) == 1 and large.free_slots(0) == 2
    h = small.start(spec(tmp_path, SLEEP, name="h"))
    assert small.free_slots(0) == 0 and large.free_slots(0) == 0
    for launcher, handle in [*((large, x) for x in handles), (small, h)]:
        stop(launcher, handle)


def test_a_place_lives_with_its_job_after_the_tuner_that_took_it_is_killed(leases, tmp_path):
    """A tuner starts a job and is SIGKILLed: the job's wrapper keeps the place, so no other
    tuner starts a job in it; a tuner adopting the job counts it once; its end frees it."""
    code = (
        "import sys, time; from tuner.launchers import LocalLauncher, LaunchSpec; "
        "from pathlib import Path; launcher = LocalLauncher(); "
        f"handle = launcher.start(LaunchSpec(name='job', argv=[sys.executable, '-c', {SLEEP!r}], "
        f"workdir=Path({str(tmp_path / 'job')!r}))); print(handle, flush=True); time.sleep(60)"
    )
    tuner = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, cwd=ROOT)
    assert tuner.stdout is not None
    handle = tuner.stdout.readline().decode().strip()
    tuner.kill()
    tuner.wait()
    other = LocalLauncher()
    assert other.free_slots(0) == 1  # one of two places is still the job's
    assert other.adopt(handle, spec(tmp_path, SLEEP, name="job"))
    assert other.free_slots(0) == 1  # adopted, counted once
    os.killpg(int(handle.split(":")[1]), signal.SIGTERM)
    wait(other, handle)
    assert other.free_slots(0) == 2


def test_an_adopted_job_whose_wrapper_lost_its_place_takes_it_again(leases, tmp_path, monkeypatch):
    """A job started before the limit was set (or with another lease directory) holds no place:
    adopted under the limit, it is counted from then on, even when that goes beyond it."""
    monkeypatch.delenv(LIMIT_ENV)
    unlimited = LocalLauncher()
    handles = [unlimited.start(spec(tmp_path, SLEEP, name=f"j{i}")) for i in range(3)]
    monkeypatch.setenv(LIMIT_ENV, "2")
    adopter = LocalLauncher()
    for i, handle in enumerate(handles):
        assert adopter.adopt(handle, spec(tmp_path, SLEEP, name=f"j{i}"))
    assert adopter.free_slots(0) == 0
    assert len(list((leases.root / POOL).iterdir())) == 3  # every running job is counted
    for handle in handles:
        os.killpg(int(handle.split(":")[1]), signal.SIGKILL)
        wait(adopter, handle)
    assert adopter.free_slots(0) == 2


def test_a_closed_launchers_job_keeps_its_place_until_it_ends(leases, tmp_path):
    launcher, other = LocalLauncher(), LocalLauncher()
    handles = [launcher.start(spec(tmp_path, SLEEP, name=f"j{i}")) for i in range(2)]
    launcher.close()
    assert other.free_slots(0) == 0
    os.killpg(int(handles[0].split(":")[1]), signal.SIGKILL)
    wait_for(lambda: other.free_slots(0) == 1, timeout=10)
    os.killpg(int(handles[1].split(":")[1]), signal.SIGKILL)


def test_a_start_that_fails_gives_its_place_back(leases, tmp_path):
    launcher = LocalLauncher()
    with pytest.raises(LaunchError, match="is not a directory"):
        launcher.start(spec(tmp_path, SLEEP, name="a", cwd=tmp_path / "missing"))
    with pytest.raises(LaunchError, match="no such executable program"):
        launcher.start(LaunchSpec("b", ["no-such-program"], tmp_path / "b"))
    assert launcher.free_slots(0) == 2
    assert list((leases.root / POOL).iterdir()) == []


def test_waiting_for_other_tuners_jobs_is_said_once_and_names_them(leases, tmp_path, caplog):
    mine, theirs = LocalJobLimit(2, leases), LocalJobLimit(2, leases)
    theirs.take("theirs-1", "/runs/a/theirs-1")
    theirs.take("theirs-2", "/runs/a/theirs-2")
    with caplog.at_level("WARNING", logger="tuner.launchers"):
        assert [mine.free() for _ in range(3)] == [0, 0, 0]
    (record,) = caplog.records
    assert record.getMessage() == (
        f"waiting for a local job place: {LIMIT_ENV}=2 jobs run on this machine (theirs-1 0.5, "
        f"theirs-2 0.5; leases in {leases.root})"
    )
    theirs.release("theirs-1")
    mine.take("mine", "/runs/b/mine")
    theirs.release("theirs-2")
    mine.take("mine-2", "/runs/b/mine-2")
    caplog.clear()
    assert mine.free() == 0  # its own jobs fill the places: nothing to say
    assert caplog.records == []


def test_no_limit_takes_no_lease(tmp_path, monkeypatch):
    monkeypatch.setenv(LEASE_DIR_ENV, str(tmp_path / "leases"))
    monkeypatch.delenv(LIMIT_ENV, raising=False)
    launcher = LocalLauncher()
    assert launcher.free_slots(0) is None
    handle = launcher.start(spec(tmp_path, "pass", name="j"))
    wait(launcher, handle)
    assert not (tmp_path / "leases").exists()


@pytest.mark.parametrize(
    "value", ["0", "-1", "two", "1.5", "+3", "1_0", "\u0663", " ", "1000001", "9" * 5001]
)
def test_a_bad_limit_is_refused_with_the_rule_and_the_value(value, tmp_path, monkeypatch):
    monkeypatch.setenv(LEASE_DIR_ENV, str(tmp_path / "leases"))
    monkeypatch.setenv(LIMIT_ENV, value)
    if not value.strip():
        assert LocalLauncher().free_slots(0) is None  # blank: unset
        return
    with pytest.raises(ValidationError) as error:
        LocalLauncher()
    rule = "must be a whole number from 1 to 1,000,000"
    assert str(error.value) == f"{LIMIT_ENV} {rule}; got {value!r}"


def test_a_limit_below_max_parallel_jobs_gives_each_job_the_larger_thread_share(
    leases, tmp_path, monkeypatch
):
    for name in THREAD_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(LIMIT_ENV, "1")
    printed = run_local(tmp_path, LocalLauncher(parallel_jobs=8))  # one at a time: every core
    assert printed == str([str(local_cores())] * len(THREAD_VARIABLES))


def test_tuner_gpus_shows_who_holds_the_local_job_places(leases, tmp_path):
    def shown() -> list[str]:
        command = [sys.executable, "-m", "tuner", "gpus"]
        done = subprocess.run(command, capture_output=True, text=True, check=True, cwd=ROOT)
        return done.stdout.splitlines()[1:]

    launcher = LocalLauncher()
    handle = launcher.start(spec(tmp_path, SLEEP, name="busy"))
    assert shown() == [
        "  none: no tuner process here has leased a GPU",
        f"Local job places ({LIMIT_ENV}): 0.5 held by busy 0.5",
    ]
    stop(launcher, handle)
    assert shown() == ["  none: no tuner process here has leased a GPU"]
