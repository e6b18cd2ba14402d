"""The lease keeper holds inherited leases exactly as long as the process it watches runs."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from tuner.launchers.docker import LEASE_KEEPER
from tuner.launchers.lease_keeper import running
from tuner.owners import start_ticks


def test_the_keeper_holds_the_lease_until_the_watched_process_ends(leases):
    watched = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    with leases.locked():
        fd = leases.hold("gpu-0", "/runs/t/job", 1.0, "job")
    keeper = subprocess.Popen(
        [*LEASE_KEEPER, str(watched.pid), str(start_ticks(watched.pid))], pass_fds=[fd]
    )
    os.close(fd)  # the tuner is gone: only the keeper holds it now
    time.sleep(0.6)
    assert keeper.poll() is None
    with leases.locked():
        assert leases.holders("gpu-0") == [(1.0, "job")]
    watched.kill()
    watched.wait()
    assert keeper.wait(timeout=10) == 0
    with leases.locked():
        assert leases.holders("gpu-0") == []


def test_a_pid_reused_by_another_process_is_not_the_watched_one():
    me = os.getpid()
    assert running(me, start_ticks(me))
    assert not running(me, start_ticks(me) + 1)  # same pid, another start: not it
    assert not running(2**22 + 1, 1)  # no such process
