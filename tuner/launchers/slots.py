"""GPU slots: each configured GPU offers ``jobs_per_gpu`` slots; a job takes one slot on each
of ``gpus_per_job`` distinct GPUs, the least loaded first. Shared by every launcher."""

from __future__ import annotations

from collections.abc import Sequence

from tuner.errors import LaunchError, ValidationError


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

    def free(self, gpus_per_job: int) -> int | None:
        """How many more jobs of this size fit now (None: the job needs no GPU)."""
        if gpus_per_job <= 0:
            return None
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

    def take(self, job: str, count: int) -> list[str]:
        """Slots on ``count`` distinct GPUs for ``job`` (ids in configured order)."""
        if count <= 0:
            return []
        if not self.gpus:
            raise LaunchError(f"job {job} asks for gpus_per_job={count} but no gpus are configured")
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
