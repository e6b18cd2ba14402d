"""First come, first served among the tuner processes that wait for room in the same host-wide
lease pools (``host_leases``): GPU slots, local job places.

Without it a tuner whose job just ended took the freed room back in the same scheduler pass,
before a waiting tuner's next look, so a waiting tuning job started only once the other had
used up its whole budget. Now a launcher that finds room taken by other processes' jobs joins
the queue of each of its pools (a file per pool that it keeps locked, so a waiter whose process
died drops out; one that stops asking for ``STALE_SECONDS`` is passed over), and a launcher
sees no room while a waiter that came before it (any waiter, when it is not in the queue
itself) is still waiting; it leaves the queue when it takes room, asks for none
(``stop_waiting``) or closes. The oldest waiter is first in every pool it waits in, so the
queue never blocks it: it waits for room alone.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import secrets
import time
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import quote

from tuner.launchers.host_leases import HostLeases, read_held

FOLDER = "waiting"  # under the lease directory: one folder per pool, one file per waiter
STALE_SECONDS = 5.0  # a waiter that has not asked for room this long is passed over


class WaitQueue:
    """This launcher's place in the queues of ``pools`` under ``leases`` (methods are called
    inside ``leases.locked()``)."""

    def __init__(self, leases: HostLeases, pools: Sequence[str]) -> None:
        self.leases = leases
        self.pools = list(pools)
        self.key = f"{os.getpid()}-{secrets.token_hex(6)}"
        self._since: float | None = None  # when it joined; None: not waiting
        self._descriptors: dict[str, int] = {}

    @property
    def waiting(self) -> bool:
        return self._since is not None

    def room(self, free: int, own_room: bool) -> tuple[int, bool]:
        """``(room, waiting)``: of the ``free`` room the pools have now, what this launcher
        may take (none while a waiter that came first waits), and whether it waits for other
        processes' jobs (no room, though its own jobs, ``own_room``, would leave some). Waiting
        puts it in line; once in line it keeps its place until it takes room (``leave``)."""
        if free > 0 and self.others_first():
            free = 0
        waiting = free == 0 and own_room
        if waiting or (free > 0 and self.waiting):
            self.join()
        return free, waiting

    def stop(self) -> None:
        """Leave the line, if in it, taking the lease directory's lock itself."""
        if self.waiting:
            with self.leases.locked():
                self.leave()

    def others_first(self) -> bool:
        """Whether a live waiter that joined before this one (any live waiter, when this one
        is not waiting) waits in one of its pools; stale files are removed on the way."""
        mine = (self._since, self.key) if self._since is not None else None
        for pool in self.pools:
            for since, key in self._waiters(pool):
                if key != self.key and (mine is None or (since, key) < mine):
                    return True
        return False

    def join(self) -> None:
        """Wait in every pool from now (it keeps its place when it waits already), and say
        that it still asks for room."""
        if self._since is None:
            self._since = time.time()
        for pool in self.pools:
            fd = self._descriptors.get(pool)
            if fd is None:
                path = self._path(pool, self.key)
                path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
                fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
                fcntl.flock(fd, fcntl.LOCK_EX)
                self._descriptors[pool] = fd
            text = json.dumps({"since": self._since, "seen": time.time(), "pid": os.getpid()})
            os.ftruncate(fd, 0)
            os.pwrite(fd, text.encode(), 0)

    def leave(self) -> None:
        """Wait no more (after taking room, or at close)."""
        for pool, fd in self._descriptors.items():
            with contextlib.suppress(FileNotFoundError):
                self._path(pool, self.key).unlink()
            os.close(fd)
        self._descriptors.clear()
        self._since = None

    def _waiters(self, pool: str) -> list[tuple[float, str]]:
        """``(since, key)`` of each live waiter in ``pool`` that asked for room lately."""
        now = time.time()
        return [
            (entry["since"], key)
            for key, entry in _live_entries(self.leases, pool, prune=True)
            if now - entry["seen"] < STALE_SECONDS or key == self.key
        ]

    def _path(self, pool: str, key: str) -> Path:
        return self.leases.root / FOLDER / quote(pool, safe="") / key


def in_line(leases: HostLeases, pool: str) -> list[tuple[float, int]]:
    """``(since, pid)`` of each tuner process waiting in ``pool``'s line now, first in line
    first (for ``tuner gpus``: it reads only, removing nothing; stale waiters are left out)."""
    now = time.time()
    return sorted(
        (entry["since"], int(entry["pid"]))
        for _, entry in _live_entries(leases, pool)
        if now - entry["seen"] < STALE_SECONDS
    )


def _live_entries(
    leases: HostLeases, pool: str, prune: bool = False
) -> list[tuple[str, dict[str, float]]]:
    """``(key, entry)`` of each waiter in ``pool``'s line whose process holds its file;
    ``prune``: the files of those gone are removed on the way."""
    found = []
    with contextlib.suppress(FileNotFoundError):
        for path in (leases.root / FOLDER / quote(pool, safe="")).iterdir():
            entry = _live_entry(path)
            if entry is not None:
                found.append((path.name, entry))
            elif prune:
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
    return found


def _live_entry(path: Path) -> dict[str, float] | None:
    """A waiter's ``since``, ``seen`` and ``pid`` while its process locks the file; None
    otherwise (an unreadable live one is stale: passed over rather than waited for)."""
    entry = read_held(path)
    if entry is None:
        return None
    try:
        return {key: float(entry[key]) for key in ("since", "seen", "pid")}
    except (ValueError, KeyError, TypeError, AttributeError):
        return {"since": 0.0, "seen": 0.0, "pid": 0.0}
