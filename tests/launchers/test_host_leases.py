"""Host-wide GPU leases: launchers of different tuner processes on one machine count each
other's jobs on a GPU, whatever their slot sizes, and a job's lease lives exactly as long as the
job, even when the tuner that started it dies."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.launchers.test_contract import spec, wait
from tests.test_resume import wait_for
from tuner import LaunchError
from tuner.errors import LauncherFull
from tuner.launchers import LocalLauncher
from tuner.launchers.host_leases import EARLIER_LEASE_DIR_ENV, LEASE_DIR_ENV, host_leases
from tuner.launchers.slots import GpuSlots

SLEEP = "import time; time.sleep(60)"
ROOT = Path(__file__).resolve().parents[2]


def test_two_tuners_launchers_share_one_gpu_and_its_end_frees_it(leases, tmp_path):
    mine, theirs = LocalLauncher(gpus=["0"]), LocalLauncher(gpus=["0"])
    assert mine.free_slots(1) == theirs.free_slots(1) == 1
    handle = theirs.start(spec(tmp_path, SLEEP, name="theirs", gpus_per_job=1))
    assert mine.free_slots(1) == 0  # another launcher's job holds the GPU
    assert mine.free_slots(0) is None  # a job without GPUs is not held back
    theirs.stop(handle)
    wait(theirs, handle)
    assert mine.free_slots(1) == 1
    assert list((leases.root / "gpu-0").iterdir()) == []  # its lease file is gone too


def test_fractions_of_different_sizes_add_up_to_one_gpu(leases, tmp_path):
    quarters = LocalLauncher(gpus=["0", "1"], jobs_per_gpu=4)
    halves = LocalLauncher(gpus=["0", "1"], jobs_per_gpu=2)
    wholes = LocalLauncher(gpus=["0", "1"])
    handles = [
        quarters.start(spec(tmp_path, SLEEP, name=f"q{i}", gpus_per_job=0.25)) for i in range(3)
    ]  # GPU 0: 2 quarters, GPU 1: 1 quarter (the least loaded first)
    assert halves.free_slots(0.5) == 2  # half of 0 and half of 1 are free (0.5 + 0.75 -> 1 + 1)
    assert wholes.free_slots(1) == 0
    wholes.stop_waiting()  # it only looked (asking puts a launcher in line for the room)
    assert quarters.free_slots(0.25) == 5
    h = halves.start(spec(tmp_path, SLEEP, name="h0", gpus_per_job=0.5))
    held = [json.loads(p.read_text()) for p in (leases.root / "gpu-0").iterdir()]
    assert sorted((x["job"], x["share"]) for x in held) == [("h0", 0.5), ("q0", 0.25), ("q2", 0.25)]
    assert quarters.free_slots(0.25) == 3
    assert halves.free_slots(0.5) == 1
    for launcher, handle in [*((quarters, x) for x in handles), (halves, h)]:
        launcher.stop(handle)
        wait(launcher, handle)
    assert wholes.free_slots(1) == 2


def test_a_slot_taken_by_another_process_meanwhile_is_a_start_to_try_again(leases):
    mine, theirs = GpuSlots(["0"], 1, leases), GpuSlots(["0"], 1, leases)
    assert mine.free(1) == 1
    theirs.take("theirs", 1)
    with pytest.raises(LauncherFull, match="needs 1 GPU slots, only 0 are free: other"):
        mine.take("mine", 1)
    mine_only = GpuSlots(["0"], 1, leases)  # a launcher asked beyond its own slots: a mistake
    theirs.release("theirs")
    mine_only.take("a", 1)
    with pytest.raises(LaunchError, match=r"needs 1 GPU slots, only 0 are free$"):
        mine_only.take("b", 1)
    mine_only.release("a")


def test_a_lease_lives_with_its_job_after_the_tuner_that_took_it_is_killed(leases, tmp_path):
    """A tuner process starts a job on GPU 0 and is SIGKILLed: the job's wrapper holds the
    lease on, so no other tuner hands the GPU out; a tuner adopting the job counts it once;
    when the job ends, the GPU is free again."""
    code = (
        "import sys, time; from tuner.launchers import LocalLauncher, LaunchSpec; "
        "from pathlib import Path; launcher = LocalLauncher(gpus=['0'], jobs_per_gpu=2); "
        f"handle = launcher.start(LaunchSpec(name='job', argv=[sys.executable, '-c', {SLEEP!r}], "
        f"workdir=Path({str(tmp_path / 'job')!r}), gpus_per_job=1)); "
        "print(handle, flush=True); time.sleep(60)"
    )
    tuner = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, cwd=ROOT)
    assert tuner.stdout is not None
    handle = tuner.stdout.readline().decode().strip()
    tuner.kill()
    tuner.wait()
    other = LocalLauncher(gpus=["0"], jobs_per_gpu=2)
    assert other.free_slots(1) == 1  # one of two slots is still the job's
    probe = LocalLauncher(gpus=["0"])
    assert probe.free_slots(1) == 0  # no whole GPU for anyone
    probe.stop_waiting()
    job_spec = spec(tmp_path, SLEEP, name="job", gpus_per_job=1)
    assert other.adopt(handle, job_spec, gpus="0")
    assert other.free_slots(1) == 1  # adopted, counted once
    pid = int(handle.split(":")[1])
    os.killpg(pid, signal.SIGTERM)
    wait(other, handle)
    assert other.free_slots(1) == 2


def test_a_lease_file_nobody_holds_is_stale_and_removed(leases):
    gpu = leases.root / "gpu-0"
    gpu.mkdir(parents=True)
    (gpu / "left-behind").write_text(json.dumps({"share": 1.0}))  # its holder died
    slots = GpuSlots(["0"], 1, leases)
    assert slots.free(1) == 1
    assert not (gpu / "left-behind").exists()


def test_an_unreadable_lease_counts_as_a_whole_gpu(leases):
    holder = GpuSlots(["0"], 4, leases)
    holder.take("j", 0.25)
    (lease,) = (leases.root / "gpu-0").iterdir()
    os.truncate(lease, 0)  # its share can no longer be read: never hand out what may be taken
    probe = GpuSlots(["0"], 4, leases)
    assert probe.free(0.25) == 0
    holder.release("j")
    assert probe.free(0.25) == 4


def test_an_unusable_lease_directory_is_refused_when_the_launcher_is_made(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv(LEASE_DIR_ENV, str(blocker))
    with pytest.raises(LaunchError, match=f"cannot use {blocker} for leases"):
        LocalLauncher(gpus=["0"])
    LocalLauncher()  # without GPUs there is nothing to lease


def test_gpu_ids_that_are_not_file_names_are_leased_safely(leases, tmp_path):
    ids = ["GPU-8f2a/1", "..", "MIG 3g.40gb"]
    slots = GpuSlots(ids, 1, leases)
    assert slots.take("j", 3) == ids
    assert sorted(p.name for p in leases.root.iterdir() if p.is_dir()) == sorted(
        ["gpu-GPU-8f2a%2F1", "gpu-..", "gpu-MIG%203g.40gb"]
    )
    probe = GpuSlots(ids, 1, leases)
    assert probe.free(1) == 0
    slots.release("j")
    assert probe.free(1) == 3


def test_waiting_for_other_processes_gpus_is_said_once(leases, caplog):
    mine, theirs = GpuSlots(["0"], 1, leases), GpuSlots(["0"], 1, leases)
    theirs.take("theirs", 1)
    with caplog.at_level("WARNING", logger="tuner.launchers"):
        assert [mine.free(1) for _ in range(3)] == [0, 0, 0]
    (record,) = caplog.records
    assert record.getMessage() == (  # who holds them, so a user knows what they wait for
        f"waiting for GPU slots: other jobs on this machine hold them (GPU 0: theirs 1; "
        f"leases in {leases.root})"
    )
    theirs.release("theirs")
    mine.take("mine", 1)
    caplog.clear()
    assert mine.free(1) == 0  # its own job fills the GPU: nothing to say
    assert caplog.records == []
    mine.release("mine")


def test_a_wait_that_keeps_coming_back_is_said_once_a_minute_not_at_every_start(monkeypatch):
    """Under lasting contention each freed place is taken and the wait begins again: the
    warning came at every job start. Now at the first wait and then at most once a minute."""
    from tuner.launchers import host_leases

    clock = [1000.0]
    monkeypatch.setattr(host_leases.time, "monotonic", lambda: clock[0])
    notice = host_leases.WaitNotice()
    said = []
    for second in range(0, 150, 5):  # a place frees every 5 s and is taken: wait, start, ...
        clock[0] = 1000.0 + second
        said += [second] if notice.due(True) else []
        assert not notice.due(True)  # the same wait, asked again: nothing new to say
        notice.due(False)
    assert said == [0, 60, 120]


def test_a_closed_launchers_job_holds_its_lease_until_it_ends(leases, tmp_path):
    """A launcher that closes (its tuning job ended or was handed over, its jobs left running)
    lets go of its copies: the lease then ends with the job, not with the tuner's process."""
    launcher, other = LocalLauncher(gpus=["0"]), LocalLauncher(gpus=["0"])
    handle = launcher.start(spec(tmp_path, SLEEP, name="job", gpus_per_job=1))
    launcher.close()
    assert other.free_slots(1) == 0
    os.killpg(int(handle.split(":")[1]), signal.SIGKILL)
    wait_for(lambda: other.free_slots(1) == 1, timeout=10)


def test_a_key_whose_lease_is_live_is_not_taken_twice(leases):
    first, second = GpuSlots(["0"], 3, leases), GpuSlots(["0"], 3, leases)
    first.take("j", 1, key="/runs/t/j")
    with pytest.raises(LaunchError, match="job j: cannot take a GPU lease in"):
        second.take("j", 1, key="/runs/t/j")  # the same folder's job, started twice
    assert second.free(1) == 2  # the first lease is intact and counted once, nothing leaked
    first.release("j")
    assert second.free(1) == 3


def test_the_wait_names_the_jobs_holding_each_gpu_the_largest_first(leases, caplog):
    eighths, half = GpuSlots(["0", "1"], 8, leases), GpuSlots(["0", "1"], 2, leases)
    half.take("big", 0.5)  # GPU 0
    for i in range(12):
        eighths.take(f"e{i:02}", 0.125)  # the least loaded first: 4 on GPU 0, 8 on GPU 1
    with caplog.at_level("WARNING", logger="tuner.launchers"):
        assert GpuSlots(["0", "1"], 1, leases).free(1) == 0
    (record,) = caplog.records
    assert record.getMessage().startswith(
        "waiting for GPU slots: other jobs on this machine hold them (GPU 0: big 0.5, "
        "e04 0.125, e06 0.125, e08 0.125 and 1 more; GPU 1: e00 0.125, e01 0.125, e02 0.125, "
        "e03 0.125 and 4 more; leases in "
    )


def test_the_default_directory_must_be_this_users_own(tmp_path, monkeypatch):
    """In a temporary directory anyone may write in, another user could make the default lease
    directory first (or a link to elsewhere) and drop or forge its leases: refused."""
    monkeypatch.delenv(LEASE_DIR_ENV)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    default = tmp_path / f"tuner-leases-{os.getuid()}"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    default.symlink_to(elsewhere)
    with pytest.raises(LaunchError, match=r"is not a directory \(a symbolic link\?\); refused"):
        LocalLauncher(gpus=["0"])
    default.unlink()
    LocalLauncher(gpus=["0"])  # made here: used
    assert default.is_dir() and (default.stat().st_mode & 0o777) == 0o700
    if os.getuid() == 0:  # root can give it away, as another user's would be
        os.chown(default, 12345, -1)
        with pytest.raises(LaunchError, match="belongs to uid 12345, not this user's; refused"):
            LocalLauncher(gpus=["0"])


def test_tuner_gpus_shows_which_jobs_hold_which_share(leases, tmp_path, monkeypatch):
    def gpus(*ids: str) -> list[str]:
        command = [sys.executable, "-m", "tuner", "gpus", *ids]
        done = subprocess.run(command, capture_output=True, text=True, check=True, cwd=ROOT)
        return done.stdout.splitlines()

    head = f"GPU leases in {leases.root} (every tuner process of this user on this machine)"
    quarters = LocalLauncher(gpus=["0", "1"], jobs_per_gpu=4)
    handles = [
        quarters.start(spec(tmp_path, SLEEP, name=f"q{i}", gpus_per_job=0.25)) for i in range(3)
    ]
    assert gpus() == [
        head,
        "  GPU 0: 0.5 held by q0 0.25, q2 0.25",
        "  GPU 1: 0.25 held by q1 0.25",
    ]
    assert gpus("1", "7") == [head, "  GPU 1: 0.25 held by q1 0.25", "  GPU 7: free"]
    assert gpus("01") == [head, "  GPU 1: 0.25 held by q1 0.25"]  # one GPU, one spelling
    bad = [sys.executable, "-m", "tuner", "gpus", "abc"]  # listed as free before
    refused = subprocess.run(bad, capture_output=True, text=True, cwd=ROOT)
    assert refused.returncode == 2 and "gpus must be GPU indices" in refused.stderr
    assert "got 'abc'" in refused.stderr
    for handle in handles:
        quarters.stop(handle)
        wait(quarters, handle)
    assert gpus() == [head, "  GPU 0: free", "  GPU 1: free"]
    monkeypatch.setenv(LEASE_DIR_ENV, str(tmp_path / "never-used"))
    assert gpus()[1:] == ["  none: no tuner process here has leased a GPU"]
    assert not (tmp_path / "never-used").exists()  # a reading verb makes no directory


def test_a_remote_engines_gpus_are_leased_apart_from_this_machines(leases, caplog):
    """A remote Docker engine's GPU 0 is another card than this machine's GPU 0: the leases of
    jobs there filled this machine's GPU (and the reverse). Each machine's GPUs are a pool of
    their own; tuners of this machine on the same remote engine still share its pool."""
    remote = "tcp://gpu-box:2376"
    here, there = GpuSlots(["0"], 1, leases), GpuSlots(["0"], 1, leases, machine=remote)
    here.take("local-job", 1)
    assert there.free(1) == 1 and here.free(1) == 0
    there.take("remote-job", 1)
    assert GpuSlots(["0"], 1, leases).free(1) == 0  # this machine's GPU: the local job's
    with caplog.at_level("WARNING", logger="tuner.launchers"):
        assert GpuSlots(["0"], 1, leases, machine=remote).free(1) == 0  # the same remote GPU
    assert f"(GPU 0@{remote}: remote-job 1; leases in " in caplog.records[-1].getMessage()
    assert GpuSlots(["0"], 1, leases, machine="tcp://other-box:2376").free(1) == 1
    command = [sys.executable, "-m", "tuner", "gpus"]
    shown = subprocess.run(command, capture_output=True, text=True, check=True, cwd=ROOT)
    held = [line for line in shown.stdout.splitlines()[1:] if "waiting" not in line]
    assert held == [  # (the slots above that found no room wait in line)
        "  GPU 0: 1 held by local-job 1",
        f"  GPU 0@{remote}: 1 held by remote-job 1",
    ]
    here.release("local-job")
    there.release("remote-job")


def test_a_relative_lease_directory_is_refused(tmp_path, monkeypatch):
    """Tuner processes started in different folders would each lease in their own copy."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(LEASE_DIR_ENV, "leases")
    message = f"{LEASE_DIR_ENV} must be an absolute path .* got 'leases'"
    with pytest.raises(LaunchError, match=message):
        LocalLauncher(gpus=["0"])
    command = [sys.executable, "-m", "tuner", "gpus"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    shown = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, env=env)
    assert shown.returncode == 2 and "must be an absolute path" in shown.stderr
    assert not (tmp_path / "leases").exists()


def test_the_directorys_earlier_variable_is_still_read(tmp_path, monkeypatch):
    """TUNER_GPU_LEASE_DIR named it before local jobs had leases too; the new name wins."""
    monkeypatch.delenv(LEASE_DIR_ENV)
    monkeypatch.setenv(EARLIER_LEASE_DIR_ENV, str(tmp_path / "earlier"))
    assert host_leases().root == tmp_path / "earlier"
    monkeypatch.setenv(LEASE_DIR_ENV, str(tmp_path / "now"))
    assert host_leases().root == tmp_path / "now"
