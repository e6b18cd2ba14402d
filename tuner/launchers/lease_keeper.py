"""Holds a container's host-wide GPU leases for as long as the container's first process runs,
so that its GPU share stays counted while no tuner watches it (the tuner that started it was
killed; a local job's wrapper does the same for a local job).

    python -I -S lease_keeper.py PID TICKS

The Docker launcher starts it with the leases' locked descriptors inherited and the
container's init process as ``PID`` (seen from this machine's ``/proc``) started at ``TICKS``
(clock ticks since boot, against pid reuse); it exits, and the locks with it, when that process
is gone. The launcher kills it when it records the job's end itself. Standard library only: it
runs under a bare interpreter, like ``exit_keeper.py``.
"""

from __future__ import annotations

import sys
import time

POLL_SECONDS = 0.5


def running(pid: int, ticks: int) -> bool:
    """Whether process ``pid``, started at ``ticks``, still runs (not a zombie)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return False
    return fields[0] != "Z" and int(fields[19]) == ticks


def main(argv: list[str]) -> int:
    pid, ticks = int(argv[1]), int(argv[2])
    while running(pid, ticks):
        time.sleep(POLL_SECONDS)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
