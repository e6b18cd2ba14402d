"""A machine-wide limit on local training jobs: at most ``TUNER_MAX_LOCAL_JOBS`` of them run at
once on this machine, counted across every tuner process that shares the lease directory (the
service's workers, ``tuner run``s, comparisons), whatever each one's ``max_parallel_jobs``.

Each local job holds a lease of 1/limit of the ``local-jobs`` pool (``tuner.launchers.host_leases``)
for as long as it runs; its wrapper inherits the locked descriptor, so the place stays taken
when the tuner that started the job dies and is freed when the job ends. Unset, there is no
limit and no lease is taken.
"""

from __future__ import annotations

import logging
import os

from tuner.env_values import optional_count_from_env
from tuner.errors import LauncherFull, LaunchError
from tuner.launchers.host_leases import HostLeases, WaitNotice, holders_text, shares_left
from tuner.launchers.wait_queue import WaitQueue

log = logging.getLogger("tuner.launchers")
LIMIT_ENV = "TUNER_MAX_LOCAL_JOBS"
POOL = "local-jobs"


def limit_from_env() -> int | None:
    """``TUNER_MAX_LOCAL_JOBS`` as a whole number >= 1, None when unset; ValidationError naming
    the variable, the rule and the value otherwise."""
    return optional_count_from_env(LIMIT_ENV)


class LocalJobLimit:
    """The places of ``limit`` local jobs in ``leases``' ``local-jobs`` pool (no limit: None)."""

    def __init__(self, limit: int | None, leases: HostLeases) -> None:
        self.limit = limit
        self.leases = leases
        if limit is not None:
            with leases.locked():  # an unusable directory is refused before any job
                pass
        self._keys: dict[str, str] = {}
        self._descriptors: dict[str, int] = {}
        self._notice = WaitNotice()
        self._queue = WaitQueue(leases, [POOL])

    def free(self) -> int | None:
        """How many more local jobs may start now (None: no limit). When other processes' jobs
        fill the places, this launcher waits in line (``wait_queue``: room that frees goes to
        the tuner that waited longest), and that is logged (a tuning job waits for them, and
        says why)."""
        if self.limit is None:
            return None
        with self.leases.locked():
            count, waiting = self._queue.room(self._free(), len(self._keys) < self.limit)
            if self._notice.due(waiting):
                log.warning(
                    "waiting for a local job place: %s=%d jobs run on this machine (%s; leases "
                    "in %s)",
                    LIMIT_ENV,
                    self.limit,
                    holders_text(self.leases.holders(POOL), 4),
                    self.leases.root,
                )
        return count

    def take(self, job: str, key: str) -> None:
        """A place for ``job`` (``key``: its lease's unique name, e.g. the job's folder);
        ``LauncherFull`` when another process took the last one meanwhile."""
        if self.limit is None:
            return
        with self.leases.locked():
            if self._free() <= 0:
                raise LauncherFull(
                    f"job {job}: {LIMIT_ENV}={self.limit} local jobs already run on this machine"
                )
            self._hold(job, key)
            self._queue.leave()

    def take_again(self, job: str, key: str) -> None:
        """Record that ``job`` (re-attached after a restart) holds a place; its lease is taken
        again where its wrapper no longer holds it, even beyond the limit: the job runs."""
        if self.limit is None:
            return
        with self.leases.locked():
            if not self.leases.is_held(POOL, key):
                self._hold(job, key)
            else:
                self._keys[job] = key

    def release(self, job: str) -> None:
        key = self._keys.pop(job, None)
        fd = self._descriptors.pop(job, None)
        if fd is not None:
            os.close(fd)
        if key is not None:
            with self.leases.locked():
                self.leases.forget(POOL, key)

    def close(self) -> None:
        """Let go of this process's lease descriptors (a launcher that closes leaves its jobs
        running, and each job's wrapper holds its own copy); wait in line no more."""
        for fd in self._descriptors.values():
            os.close(fd)
        self._descriptors.clear()
        self.stop_waiting()

    def stop_waiting(self) -> None:
        """Leave the line for a place (``free`` joins it when other processes' jobs fill the
        places), if in it."""
        self._queue.stop()

    def descriptors(self, job: str) -> list[int]:
        """The locked lease descriptor ``job`` holds, to pass on to its process."""
        return [self._descriptors[job]] if job in self._descriptors else []

    def _free(self) -> int:
        assert self.limit is not None
        try:
            load = self.leases.load(POOL)
        except OSError as exc:
            raise LaunchError(f"cannot read the leases in {self.leases.root}: {exc}") from None
        return shares_left(load, self.limit)

    def _hold(self, job: str, key: str) -> None:
        assert self.limit is not None
        try:
            fd = self.leases.hold(POOL, key, 1 / self.limit, job)
        except OSError as exc:
            raise LaunchError(
                f"job {job}: cannot take a local job lease in {self.leases.root}: {exc}"
            ) from None
        self._keys[job] = key
        self._descriptors[job] = fd
