"""Room that frees goes to the tuner that waited longest (``tuner/launchers/wait_queue.py``): a
tuner whose job just ended took the place back in the same pass, and a waiting tuning job
started only once the other had used up its whole budget."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time

from tests.launchers.test_host_leases import ROOT
from tuner.launchers import wait_queue
from tuner.launchers.local_limit import LocalJobLimit
from tuner.launchers.slots import GpuSlots


def test_a_freed_place_goes_to_the_tuner_that_waited_not_back_to_its_holder(leases):
    holder, waiter = LocalJobLimit(2, leases), LocalJobLimit(2, leases)
    holder.take("h1", "/runs/a/h1")
    holder.take("h2", "/runs/a/h2")
    assert waiter.free() == 0  # in line from now
    holder.release("h1")
    assert holder.free() == 0  # its own job ended, but the other tuner waited first
    assert waiter.free() == 1
    waiter.take("w1", "/runs/b/w1")
    assert holder.free() == 0  # full again; the holder waits now, the first in line
    waiter.release("w1")
    assert waiter.free() == 0 and holder.free() == 1  # turn by turn
    holder.take("h3", "/runs/a/h3")
    assert waiter.free() == 0
    for job in ("h2", "h3"):
        holder.release(job)
    assert waiter.free() == 2  # nobody else waits: all the room it sees


def test_nobody_waits_for_a_tuner_that_left_stopped_asking_or_died(leases, monkeypatch):
    holder, waiter = LocalJobLimit(1, leases), LocalJobLimit(1, leases)
    holder.take("h", "/runs/a/h")
    assert waiter.free() == 0
    waiter.close()  # its tuning job ended
    holder.release("h")
    assert holder.free() == 1
    holder.take("h", "/runs/a/h")
    assert waiter.free() == 0  # waits again
    holder.release("h")
    monkeypatch.setattr(wait_queue, "STALE_SECONDS", 0.2)
    time.sleep(0.3)  # it asked for no room since: passed over
    assert holder.free() == 1
    holder.take("h", "/runs/a/h")
    waiter.close()
    script = (
        "import sys, time\n"
        "from tuner.launchers.host_leases import HostLeases\n"
        "from tuner.launchers.local_limit import LocalJobLimit\n"
        "assert LocalJobLimit(1, HostLeases(sys.argv[1])).free() == 0\n"
        "print('waiting', flush=True)\n"
        "time.sleep(60)\n"
    )
    other = [sys.executable, "-c", script, str(leases.root)]
    process = subprocess.Popen(other, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None and process.stdout.readline() == "waiting\n"
    monkeypatch.setattr(wait_queue, "STALE_SECONDS", 60.0)
    holder.release("h")
    assert holder.free() == 0  # another process waits
    process.send_signal(signal.SIGKILL)
    process.wait(10)
    assert holder.free() == 1  # its line ended with it


def test_a_whole_gpu_job_is_not_starved_by_half_gpu_jobs_of_another_tuner(leases):
    halves, whole = GpuSlots(["0"], 2, leases), GpuSlots(["0"], 1, leases)
    halves.take("a", 0.5)
    halves.take("b", 0.5)
    assert whole.free(1) == 0
    halves.release("a")
    assert halves.free(0.5) == 0  # half the GPU is free, but a whole-GPU job waits first
    assert whole.free(1) == 0  # and it needs all of it
    halves.release("b")
    assert halves.free(0.5) == 0 and whole.free(1) == 1
    whole.take("w", 1)
    assert halves.free(0.5) == 0  # full: the halves wait in line now
    whole.release("w")
    assert whole.free(1) == 0 and halves.free(0.5) == 2


def test_a_launcher_that_wants_no_room_leaves_the_line(leases, monkeypatch):
    """The scheduler calls ``stop_waiting`` when its tuning job starts nothing more (all of
    ``max_parallel_jobs`` running, the budget started): nobody waits for it in line."""
    from tuner.launchers import LocalLauncher
    from tuner.launchers.local_limit import LIMIT_ENV

    monkeypatch.setenv(LIMIT_ENV, "1")
    holder, launcher = LocalJobLimit(1, leases), LocalLauncher()
    holder.take("h", "/runs/a/h")
    assert launcher.free_slots(0) == 0  # in line
    holder.release("h")
    assert holder.free() == 0
    launcher.stop_waiting()
    assert holder.free() == 1
    launcher.close()


def test_tuner_gpus_shows_who_waits_in_line_first_in_line_first(leases):
    """The line had no view: ``tuner gpus`` listed the holders only."""
    holder = GpuSlots(["0"], 1, leases)
    holder.take("gpu-job", 1)
    places = LocalJobLimit(1, leases)
    places.take("cpu-job", "/runs/a/cpu-job")
    first, second = GpuSlots(["0"], 1, leases), LocalJobLimit(1, leases)
    command = [sys.executable, "-m", "tuner", "gpus"]
    pid = os.getpid()
    for _ in range(3):  # a waiter that asked no room for 5 s (a slow start here) is not shown
        assert first.free(1) == 0 and second.free() == 0  # both in line, in their own pools
        done = subprocess.run(command, capture_output=True, text=True, check=True, cwd=ROOT)
        shown = [re.sub(r"for \d+ s", "for N s", line) for line in done.stdout.splitlines()]
        if len(shown) == 5:
            break
    assert shown[1:] == [
        "  GPU 0: 1 held by gpu-job 1",
        f"    waiting, first in line first: process {pid} for N s",
        "Local job places (TUNER_MAX_LOCAL_JOBS): 1 held by cpu-job 1",
        f"    waiting, first in line first: process {pid} for N s",
    ]
    first.stop_waiting()
    second.stop_waiting()
    done = subprocess.run(command, capture_output=True, text=True, check=True, cwd=ROOT)
    assert "waiting" not in done.stdout
    holder.release("gpu-job")
    places.release("cpu-job")
