"""GPU slots: each configured GPU offers ``jobs_per_gpu`` slots; a job takes one slot on each
of ``gpus_per_job`` distinct GPUs, the least loaded first. Shared by every launcher. A job that
asks for a fraction of a GPU takes one slot; ``jobs_per_gpu_for`` says how many slots a GPU must
offer for that fraction.

With ``leases`` (``tuner.launchers.host_leases``; the local and Docker launchers' default) a slot
is also a host-wide lease of 1/``jobs_per_gpu`` of the GPU, so a GPU's load counts the jobs of
every tuner process on the machine, whatever their slot size: a GPU that other tuning jobs fill
offers no slot here until they end, and then to the tuner that waited longest
(``wait_queue``). A start that finds the slots ``free`` promised taken by
another process meanwhile raises ``LauncherFull`` (run it again later); one asked beyond
what ``free`` offered, with only this process's jobs holding the GPUs, is ``LaunchError``.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
from collections.abc import Sequence

from tuner.errors import LauncherFull, LaunchError, ValidationError
from tuner.launchers.host_leases import (
    HostLeases,
    WaitNotice,
    gpu_name,
    gpu_pool,
    holders_text,
    shares_left,
)
from tuner.launchers.wait_queue import WaitQueue

log = logging.getLogger("tuner.launchers")


def jobs_per_gpu_for(gpus_per_job: float, jobs_per_gpu: int = 1) -> int:
    """Slots per GPU so that jobs of ``gpus_per_job`` (1/k of a GPU: k slots) fit."""
    if 0 < gpus_per_job < 1:
        return max(jobs_per_gpu, round(1 / gpus_per_job))
    return jobs_per_gpu


def gpu_fraction(gpus_per_job: float, jobs_per_gpu: int = 1, launcher: str = "local") -> float:
    """The share of each of its GPUs that a job gets (``TUNER_GPU_FRACTION`` below 1): one of
    the slots a GPU offers (``gpus_per_job: 0.5`` with ``jobs_per_gpu: 4`` is a quarter), or on
    Slurm, which makes no slots, ``gpus_per_job`` itself; 1 for a job without GPUs."""
    if gpus_per_job <= 0:
        return 1.0
    if launcher == "slurm":
        return min(gpus_per_job, 1.0)
    return 1 / jobs_per_gpu_for(gpus_per_job, jobs_per_gpu)


class GpuSlots:
    def __init__(
        self,
        gpus: Sequence[str | int] = (),
        jobs_per_gpu: int = 1,
        leases: HostLeases | None = None,
        machine: str = "",
    ) -> None:
        if not isinstance(jobs_per_gpu, int) or jobs_per_gpu < 1:
            raise ValidationError(f"jobs_per_gpu must be an integer >= 1, got {jobs_per_gpu!r}")
        self.gpus = [str(g) for g in gpus]
        if len(set(self.gpus)) != len(self.gpus):
            raise ValidationError(f"gpus must be distinct, got {self.gpus}")
        self.jobs_per_gpu = jobs_per_gpu
        self.machine = machine  # whose GPUs: "" for this machine's, else a remote engine's address
        self.leases = leases if self.gpus else None
        if self.leases is not None:
            with self.leases.locked():  # an unusable directory is refused before any job
                pass
        self.load = dict.fromkeys(self.gpus, 0)  # this process's jobs, in slots
        self.held: dict[str, list[str]] = {}
        self._keys: dict[str, str] = {}
        self._descriptors: dict[str, list[int]] = {}
        self._notice = WaitNotice()
        self._queue = (  # room that frees goes to the tuner that waited longest
            WaitQueue(self.leases, [self._pool(g) for g in self.gpus]) if self.leases else None
        )

    def free(self, gpus_per_job: float) -> int | None:
        """How many more jobs of this size fit now (None: the job needs no GPU). When other
        processes' jobs leave none that this process's own would leave, that is logged (a
        tuning job waits for them, and says why)."""
        if gpus_per_job <= 0:
            return None
        gpus_per_job = math.ceil(gpus_per_job)
        if gpus_per_job > len(self.gpus):
            return 0
        with self._host():
            count = _fitting(list(self._free_per_gpu().values()), gpus_per_job)
            if self._queue is not None:  # without leases only this process's jobs count
                own_room = _fitting(self._own_free(), gpus_per_job) > 0
                count, waiting = self._queue.room(count, own_room)
            else:
                waiting = False
            if self.leases is not None and self._notice.due(waiting):
                log.warning(
                    "waiting for GPU slots: other jobs on this machine hold them (%s; leases in "
                    "%s)",
                    "; ".join(self._holders(g) for g in self.gpus),
                    self.leases.root,
                )
        return count

    def take(self, job: str, gpus_per_job: float, key: str | None = None) -> list[str]:
        """Slots on ``gpus_per_job`` distinct GPUs (one for a fraction) for ``job``; ``key``
        names its host-wide lease (unique on the machine, e.g. the job's folder; default
        ``job``)."""
        if gpus_per_job <= 0:
            return []
        count = math.ceil(gpus_per_job)
        if not self.gpus:
            raise LaunchError(
                f"job {job} asks for gpus_per_job={gpus_per_job:g} but no gpus are configured"
            )
        with self._host():
            free = self._free_per_gpu()
            ranked = sorted(self.gpus, key=lambda g: -free[g])
            chosen = [g for g in ranked if free[g] > 0][:count]
            if len(chosen) < count:
                message = f"job {job} needs {count} GPU slots, only {len(chosen)} are free"
                if _fitting(self._own_free(), count) > 0:  # this process's jobs leave room
                    raise LauncherFull(f"{message}: other jobs on this machine took them meanwhile")
                raise LaunchError(message)
            held = self._hold(job, sorted(chosen, key=self.gpus.index), key or job, fresh=True)
            if self._queue is not None:
                self._queue.leave()
            return held

    def take_these(self, job: str, gpus: Sequence[str], key: str | None = None) -> list[str]:
        """Record that ``job`` holds these GPUs (a job re-attached after a restart); its lease
        is taken again where its wrapper no longer holds it."""
        taken = [g for g in gpus if g in self.load]
        with self._host():
            return self._hold(job, taken, key or job, fresh=False)

    def release(self, job: str) -> None:
        gpus = self.held.pop(job, [])
        for g in gpus:
            self.load[g] -= 1
        key = self._keys.pop(job, job)
        for fd in self._descriptors.pop(job, []):
            os.close(fd)
        if self.leases is not None and gpus:
            with self._host():
                for g in gpus:
                    self.leases.forget(self._pool(g), key)

    def close(self) -> None:
        """Let go of this process's lease descriptors (a launcher that closes leaves its jobs
        running): a local job's wrapper holds its own copy, so its lease lasts as long as it
        does; a container's lease is taken again by whoever adopts it. Wait in line no more."""
        for descriptors in self._descriptors.values():
            for fd in descriptors:
                os.close(fd)
        self._descriptors.clear()
        self.stop_waiting()

    def stop_waiting(self) -> None:
        """Leave the line for GPU room (``free`` joins it when other processes' jobs fill
        the GPUs), if in it."""
        if self._queue is not None:
            self._queue.stop()

    def descriptors(self, job: str) -> list[int]:
        """The locked lease descriptors ``job`` holds, to pass on to its process."""
        return list(self._descriptors.get(job, []))

    def _hold(self, job: str, gpus: list[str], key: str, fresh: bool) -> list[str]:
        descriptors = []
        if self.leases is not None:
            share = 1 / self.jobs_per_gpu
            try:
                for g in gpus:
                    if fresh or not self.leases.is_held(self._pool(g), key):
                        descriptors.append(self.leases.hold(self._pool(g), key, share, job))
            except OSError as exc:
                for fd in descriptors:
                    os.close(fd)
                raise LaunchError(
                    f"job {job}: cannot take a GPU lease in {self.leases.root}: {exc}"
                ) from None
        for g in gpus:
            self.load[g] += 1
        self.held[job] = gpus
        self._keys[job] = key
        self._descriptors[job] = descriptors
        return gpus

    def _own_free(self) -> list[int]:
        """Slots free on each GPU as far as this process's own jobs go."""
        return [self.jobs_per_gpu - self.load[g] for g in self.gpus]

    def _free_per_gpu(self) -> dict[str, int]:
        """Slots free on each GPU: this process's own count, or with leases every process's."""
        if self.leases is None:
            return dict(zip(self.gpus, self._own_free(), strict=True))
        try:
            loads = {g: self.leases.load(self._pool(g)) for g in self.gpus}
        except OSError as exc:
            raise LaunchError(f"cannot read the GPU leases in {self.leases.root}: {exc}") from None
        return {g: shares_left(loads[g], self.jobs_per_gpu) for g in self.gpus}

    def _pool(self, gpu: str) -> str:
        return gpu_pool(gpu, self.machine)

    def _holders(self, gpu: str) -> str:
        """``GPU id: job share, ...`` (call inside ``_host`` with leases)."""
        assert self.leases is not None
        held = self.leases.holders(self._pool(gpu))
        return f"GPU {gpu_name(gpu, self.machine)}: {holders_text(held, 4)}"

    def _host(self) -> contextlib.AbstractContextManager[None]:
        return self.leases.locked() if self.leases is not None else contextlib.nullcontext()


def _fitting(free: list[int], gpus_per_job: int) -> int:
    """How many jobs of ``gpus_per_job`` distinct GPUs fit in slots ``free`` per GPU."""
    free = list(free)
    count = 0
    while True:
        free.sort(reverse=True)
        if free[gpus_per_job - 1] <= 0:
            return count
        for i in range(gpus_per_job):
            free[i] -= 1
        count += 1
