"""The launcher interface: start / poll / read_logs / stop, one training job at a time.

Contract every launcher keeps (tests/launchers/test_contract.py runs it on each):
- ``start(spec)`` runs ``spec.argv`` exactly as given (never through a shell), with
  ``spec.env`` added to the environment, and returns an opaque handle (a string that names the
  job to this launcher). It raises ``LaunchError`` when the job cannot be started at all; where
  only the job's own init learns that its program is missing (a container), the job ends at
  once with exit code 127 and its log says why.
- ``poll(handle)`` never blocks; it reports whether the job still runs and, once it ended, its
  exit code. A job that outlives ``spec.max_runtime`` is stopped by the launcher and reported
  with ``timed_out=True``.
- ``read_logs(handle)`` returns the log bytes (stdout and stderr together) written since the
  previous call; after the job ended, repeated calls drain the rest and then return ``b""``.
- ``stop(handle)`` asks the job to end (SIGTERM or the equivalent) and forces it
  (SIGKILL) once ``grace_period`` has passed; it returns at once, ``poll`` reports the end.
- ``free_slots(gpus_per_job)`` tells how many more jobs of that size fit now (None: no limit).
- ``recover(spec)`` finds the handle of a job started for ``spec`` whose start was never
  recorded (the tuner died right after starting it), so that it is adopted, not run twice.
- ``adopt(handle, spec, gpus)`` takes over a job started by another launcher object of the
  same kind (before a restart of the tuner) and returns True when it could; from then on
  ``poll``, ``read_logs`` (from the start of the log) and ``stop`` work on it. Its exit code may
  be unknown (``None``) when it was not this process's child.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class LaunchSpec:
    """What to run for one training job."""

    name: str
    argv: list[str]
    workdir: Path  # the job's own folder: its log and its output live here
    cwd: Path | None = None  # where the command runs (default: workdir)
    env: dict[str, str] = field(default_factory=dict)
    gpus_per_job: float = 0  # whole GPUs, or a fraction (1/k) of one GPU
    max_runtime: float | None = None
    shared_dir: Path | None = None  # shared by the trials of a tuning job (mounted likewise)


@dataclass(frozen=True)
class JobStatus:
    """A snapshot of one job: ``running`` until it ended, then its ``exit_code``.

    ``began_at`` (epoch seconds) is when the program began running; None while the job waits
    in a queue (a cluster launcher), so queue time and training time can be told apart.
    ``ended_at`` (epoch seconds) is when an ended job ended, where the launcher can tell (a job
    that ended while no tuner watched it is judged against ``max_runtime`` by it).
    ``note`` says why an ended job's exit code is None, where the launcher knows (the container
    was removed, the cluster cancelled it before it started); it becomes the failure reason.
    ``interrupted``: the platform ended it, not its program nor the tuner (a Docker engine
    stopping its containers as it shuts down); the scheduler runs it again, ``note`` says how.
    """

    running: bool
    exit_code: int | None = None
    timed_out: bool = False
    stopped: bool = False
    gpus: str | None = None
    began_at: float | None = None
    ended_at: float | None = None
    note: str | None = None
    interrupted: bool = False


class Launcher(ABC):
    """Runs training jobs somewhere (local processes, containers, a cluster)."""

    @abstractmethod
    def start(self, spec: LaunchSpec) -> str: ...

    @abstractmethod
    def poll(self, handle: str) -> JobStatus: ...

    @abstractmethod
    def read_logs(self, handle: str) -> bytes: ...

    @abstractmethod
    def stop(self, handle: str) -> None: ...

    def free_slots(self, gpus_per_job: float) -> int | None:
        """How many more jobs of that size may start now (None: no limit). Asking, when other
        tuners' jobs fill the machine's room, puts this launcher in line for it
        (``wait_queue``) until it starts a job or calls ``stop_waiting``."""
        return None

    def stop_waiting(self) -> None:
        """Ask for no room for now: leave the line for the machine's room, if in it."""

    def adopt(self, handle: str, spec: LaunchSpec, gpus: str | None = None) -> bool:
        """Re-attach to a job started before a restart; False when this launcher cannot."""
        return False

    def recover(self, spec: LaunchSpec) -> str | None:
        """The handle of a job that was started for ``spec`` but whose start the tuner may not
        have recorded (it died in between), or None when none was started."""
        return None

    def close(self) -> None:
        """Release what the launcher holds; running jobs are not touched."""
