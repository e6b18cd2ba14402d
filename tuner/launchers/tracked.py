"""What the local and Docker launchers share: per-job state, the log file in the job's folder,
the runtime limit, and stopping with a grace period (SIGTERM, then SIGKILL)."""

from __future__ import annotations

import os
import signal
import sys
import time
from abc import abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Generic, TypeVar

from tuner.errors import LaunchError
from tuner.launchers.base import JobStatus, Launcher, LaunchSpec

LOG_FILE = "log.txt"
HANDLE_FILE = "handle"
READ_CHUNK = 1 << 20
LAUNCH_MARKER = "TUNER_LAUNCH_FOLDER"  # in each job's environment: the job's folder


def write_atomically(path: Path, text: str) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(text)
    tmp.replace(path)


def with_interpreter_dir(path: str) -> str:
    """PATH with the running interpreter's folder first, as an activated virtualenv has it."""
    here = str(Path(sys.executable).parent)
    parts = [p for p in path.split(os.pathsep) if p and p != here]
    return os.pathsep.join([here, *parts])


@dataclass
class TrackedJob:
    spec: LaunchSpec
    started: float  # time.monotonic() when it started
    gpus: list[str] = field(default_factory=list)
    offset: int = 0  # bytes of the log already handed out
    kill_at: float | None = None
    timed_out: bool = False
    stopped: bool = False
    finished: bool = False
    began_at: float | None = None  # epoch seconds when the program began running
    ended_at: float | None = None  # epoch seconds when it ended, where known
    note: str | None = None  # why its exit code is unknown, where known (JobStatus.note)
    interrupted: bool = False  # ended by its platform, not its program (JobStatus.interrupted)
    reader: BinaryIO | None = None  # the log opened at the start: followed even when unlinked


J = TypeVar("J", bound=TrackedJob)


class TrackedLauncher(Launcher, Generic[J]):
    """A launcher whose jobs write ``<workdir>/log.txt`` and die by signals."""

    grace_period: float

    def __init__(self) -> None:
        self._jobs: dict[str, J] = {}

    def _job(self, handle: str) -> J:
        try:
            return self._jobs[handle]
        except KeyError:
            raise LaunchError(f"no job with handle {handle!r} was started here") from None

    @abstractmethod
    def _signal(self, job: J, sig: int) -> None:
        """Send ``sig`` to everything the job runs; a job that has ended is no error."""

    def _still_running(self, job: J) -> JobStatus:
        """Enforce the runtime limit and the grace period of a job that still runs."""
        now = time.monotonic()
        limit = job.spec.max_runtime
        if limit is not None and not (job.timed_out or job.stopped) and now - job.started > limit:
            job.timed_out = True
            self._terminate(job)
        if job.kill_at is not None and now >= job.kill_at:
            self._signal(job, signal.SIGKILL)
        return JobStatus(
            True, None, job.timed_out, job.stopped, ",".join(job.gpus) or None, job.began_at
        )

    def _ended(self, job: J, exit_code: int | None) -> JobStatus:
        gpus = ",".join(job.gpus) or None
        return JobStatus(
            False,
            exit_code,
            job.timed_out,
            job.stopped,
            gpus,
            job.began_at,
            job.ended_at,
            job.note,
            job.interrupted,
        )

    def read_logs(self, handle: str) -> bytes:
        """The job's log beyond what was read, up to ``READ_CHUNK`` bytes. A log now shorter
        than what was read was truncated by the job (``exec > log.txt`` again): it is read
        again from its start, so what the job writes next is not lost. Where the launcher kept
        the log open from the start (``reader``), a job that deletes ``log.txt`` is still read;
        that descriptor is closed once an ended job's log has been read to its end."""
        job = self._job(handle)
        try:
            f = job.reader or open(job.spec.workdir / LOG_FILE, "rb")  # noqa: SIM115
        except FileNotFoundError:
            return b""
        try:
            if os.fstat(f.fileno()).st_size < job.offset:
                job.offset = 0
            f.seek(job.offset)
            data = f.read(READ_CHUNK)
        finally:
            if f is not job.reader:
                f.close()
        job.offset += len(data)
        if job.finished and job.reader is not None and len(data) < READ_CHUNK:
            job.reader.close()  # all of it read: nothing more will come
            job.reader = None
        return data

    def close(self) -> None:
        """Close the logs kept open for reading; the jobs run on (see base)."""
        for job in self._jobs.values():
            if job.reader is not None:
                job.reader.close()
                job.reader = None

    def _terminate(self, job: J) -> None:
        if job.kill_at is None:
            self._signal(job, signal.SIGTERM)
            job.kill_at = time.monotonic() + self.grace_period

    def stop(self, handle: str) -> None:
        job = self._job(handle)
        if not job.finished:
            job.stopped = True
            self._terminate(job)
