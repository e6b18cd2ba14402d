"""GPU slots: each configured GPU offers ``jobs_per_gpu`` slots; a job takes one slot on each
of ``gpus_per_job`` distinct GPUs, the least loaded first. Shared by every launcher. A job that
asks for a fraction of a GPU takes one slot; ``jobs_per_gpu_for`` says how many slots a GPU must
offer for that fraction."""

from __future__ import annotations

import math
from collections.abc import Sequence

from tuner.errors import LaunchError, ValidationError


def jobs_per_gpu_for(gpus_per_job: float, jobs_per_gpu: int = 1) -> int:
    """Slots per GPU so that jobs of ``gpus_per_job`` (1/k of a GPU: k slots) fit."""
    if 0 < gpus_per_job < 1:
        return max(jobs_per_gpu, round(1 / gpus_per_job))
    return jobs_per_gpu


class GpuSlots:
    def __init__(self, gpus: Sequence[str | int] = (), jobs_per_gpu: int = 1) -> None:
        if not isinstance(jobs_per_gpu, int) or jobs_per_gpu < 1:
            raise ValidationError(f"jobs_per_gpu must be an integer >= 1, got {jobs_per_gpu!r}")
        self.gpus = [str(g) for g in gpus]
        if len(set(self.gpus)) != len(self.gpus):
            raise ValidationError(f"gpus must be distinct, got {self.gpus}")
        self.jobs_per_gpu = jobs_per_gpu
        self.load = dict.fromkeys(self.gpus, 0)
        self.held: dict[str, list[str]] = {}

    def free(self, gpus_per_job: float) -> int | None:
        """How many more jobs of this size fit now (None: the job needs no GPU)."""
        if gpus_per_job <= 0:
            return None
        gpus_per_job = math.ceil(gpus_per_job)
        if gpus_per_job > len(self.gpus):
            return 0
        free = [self.jobs_per_gpu - n for n in self.load.values()]
        count = 0
        while True:
            free.sort(reverse=True)
            if free[gpus_per_job - 1] <= 0:
                return count
            for i in range(gpus_per_job):
                free[i] -= 1
            count += 1

    def take(self, job: str, gpus_per_job: float) -> list[str]:
        """Slots on ``gpus_per_job`` distinct GPUs (one for a fraction) for ``job``."""
        if gpus_per_job <= 0:
            return []
        count = math.ceil(gpus_per_job)
        if not self.gpus:
            raise LaunchError(
                f"job {job} asks for gpus_per_job={gpus_per_job:g} but no gpus are configured"
            )
        ranked = sorted(self.gpus, key=lambda g: self.load[g])
        chosen = [g for g in ranked if self.load[g] < self.jobs_per_gpu][:count]
        if len(chosen) < count:
            raise LaunchError(f"job {job} needs {count} GPU slots, only {len(chosen)} are free")
        return self.take_these(job, sorted(chosen, key=self.gpus.index))

    def take_these(self, job: str, gpus: Sequence[str]) -> list[str]:
        """Record that ``job`` holds these GPUs (a job re-attached after a restart)."""
        taken = [g for g in gpus if g in self.load]
        for g in taken:
            self.load[g] += 1
        self.held[job] = taken
        return taken

    def release(self, job: str) -> None:
        for g in self.held.pop(job, []):
            self.load[g] -= 1
