"""Training jobs as local processes: the embedded default launcher.

Each job runs in its own working directory and process group (``start_new_session``), with stdout
and stderr going to ``<workdir>/log.txt``. GPUs are handed out as slots: each id in ``gpus`` offers
``jobs_per_gpu`` slots, a job takes ``gpus_per_job`` distinct GPUs and sees them through
``CUDA_VISIBLE_DEVICES``; the slots are host-wide leases (``tuner.launchers.host_leases``) whose
locks the job's wrapper inherits, so other tuner processes on the machine count them for as long
as the job runs. So does a job's place under ``TUNER_MAX_LOCAL_JOBS``, the machine-wide bound on
local jobs (``tuner.launchers.local_limit``; unset: none). Each job gets a fair share of the CPU
threads (``tuner/launchers/threads.py``: the cores divided by ``parallel_jobs``, or by that bound
when it is lower). Stopping signals the
whole process group: SIGTERM, then SIGKILL after ``grace_period`` seconds; when the job's main
process ends, whatever it left behind in its group is killed too. The job's handle is written to
``<workdir>/handle`` as soon as it has started, so a tuner that dies before recording the start can
be resumed without running the job twice (``recover``); a tuner killed between starting the process
and writing that file is covered too: every job carries its folder in ``TUNER_LAUNCH_FOLDER``, by
which ``recover`` finds it among the running processes, and a job that ran and ended meanwhile is
known by its log. The folder of the tuner's own Python interpreter comes first on the job's PATH,
so ``python`` in a command is the tuner's virtualenv, as if it were activated. Every job runs
under ``exit_keeper.py``, which writes the job's exit status into ``<workdir>/exit_code``: a job
re-attached after the tuner was killed is recorded with its real exit status, never guessed,
and with the time it ended (the file's modification time), so the scheduler can judge a job that
ran past ``max_runtime`` while no tuner watched it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from tuner.errors import LaunchError, ValidationError
from tuner.launchers.base import JobStatus, LaunchSpec
from tuner.launchers.exit_keeper import EXIT_FILE, read_exit_code
from tuner.launchers.host_leases import host_leases
from tuner.launchers.lease_keeper import running as runs
from tuner.launchers.local_limit import LocalJobLimit, limit_from_env
from tuner.launchers.slots import GpuSlots
from tuner.launchers.threads import local_cores, thread_env
from tuner.launchers.tracked import (
    HANDLE_FILE,
    LAUNCH_MARKER,
    LOG_FILE,
    TrackedJob,
    TrackedLauncher,
    with_interpreter_dir,
    write_atomically,
)
from tuner.owners import start_ticks

KEEPER = str(Path(__file__).with_name("exit_keeper.py"))
# How every local job's wrapper starts: a bare interpreter (no site, no user environment).
KEEPER_COMMAND = (sys.executable, "-I", "-S", KEEPER)


def _unrunnable(program: str, cwd: Path, path: str) -> str | None:
    """Why ``execvp`` could not run ``program`` (found on ``path``, or relative to ``cwd``
    when it holds a slash), or None when it can."""
    if "/" not in program:
        found = shutil.which(program, path=path)
        return _missing_interpreter(Path(found)) if found else "no such executable program on PATH"
    full = Path(cwd) / program
    if not full.exists():
        return "no such file"
    if full.is_dir():
        return "it is a directory"
    if not os.access(full, os.X_OK):
        return f"it is not executable (chmod +x, or run it with its interpreter: python {program})"
    return _missing_interpreter(full)


def _missing_interpreter(script: Path) -> str | None:
    """Why script ``script`` cannot run when the interpreter its ``#!`` line names is missing
    (``execvp`` then says "No such file or directory" of the script itself), else None."""
    try:
        with open(script, "rb") as f:
            first = f.readline(256)
    except OSError:
        return None
    words = first[2:].split() if first.startswith(b"#!") else []
    if not words or not words[0].startswith(b"/") or os.path.exists(words[0]):
        return None
    return f"the interpreter its #! line names, {os.fsdecode(words[0])!r}, does not exist"


@dataclass
class _LocalJob(TrackedJob):
    process: subprocess.Popen[bytes] | None = None  # None for an adopted job (not our child)
    pid: int = 0
    ticks: int = 0  # the process's start time in clock ticks, against pid reuse
    log: IO[bytes] | None = None


def _processes() -> Iterator[Path]:
    """Every process's folder in /proc."""
    return (entry for entry in Path("/proc").iterdir() if entry.name.isdigit())


def _group_members(group: int) -> list[int]:
    """The running processes of process group ``group`` (from /proc)."""
    members = []
    for entry in _processes():
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == group and fields[0] != "Z":
            members.append(int(entry.name))
    return members


def _ended_at(exit_file: Path, watched: bool) -> float | None:
    """When the job ended: when its wrapper kept its status; else now for a job watched until
    its end (the wrapper itself was killed), None for an adopted one."""
    try:
        return exit_file.stat().st_mtime
    except OSError:
        return time.time() if watched else None


def _left_a_trace(workdir: Path) -> bool:
    """A job started in ``workdir`` ran: its wrapper kept a status, or its log holds output."""
    try:
        return (workdir / EXIT_FILE).exists() or (workdir / LOG_FILE).stat().st_size > 0
    except OSError:
        return False


def processes_with(marker: bytes) -> Iterator[int]:
    """The pids of running processes whose environment holds ``marker`` (``NAME=value``)."""
    for entry in _processes():
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if marker in environ.split(b"\0"):
            yield int(entry.name)


def _find_process(marker: bytes) -> int | None:
    """The pid of a running process whose environment holds ``marker`` (``NAME=value``)."""
    return next(processes_with(marker), None)


def _kill_strays(spec: LaunchSpec) -> None:
    """SIGKILL what an ended job left outside its process group (``setsid``, a daemon's double
    fork): processes whose environment still names the job's output folder."""
    folder = spec.env.get("TUNER_OUTPUT_DIR")
    if not folder:
        return
    for pid in processes_with(f"TUNER_OUTPUT_DIR={folder}".encode()):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


class LocalLauncher(TrackedLauncher[_LocalJob]):
    """Runs each job as a local process group (see the module docstring)."""

    def __init__(
        self,
        gpus: Sequence[str | int] = (),
        jobs_per_gpu: int = 1,
        grace_period: float = 10.0,
        parallel_jobs: int = 1,
    ) -> None:
        if grace_period < 0:
            raise ValidationError(f"grace_period must be >= 0 seconds, got {grace_period!r}")
        super().__init__()
        leases = host_leases()
        self.slots = GpuSlots(gpus, jobs_per_gpu, leases)
        self.places = LocalJobLimit(limit_from_env(), leases)
        self.grace_period = grace_period
        self.parallel_jobs = parallel_jobs

    def stop_waiting(self) -> None:
        self.slots.stop_waiting()
        self.places.stop_waiting()

    def free_slots(self, gpus_per_job: float) -> int | None:
        counts = [self.slots.free(gpus_per_job), self.places.free()]
        return min((c for c in counts if c is not None), default=None)

    def start(self, spec: LaunchSpec) -> str:
        if spec.name in self._jobs:
            raise LaunchError(f"a job named {spec.name} was already started by this launcher")
        spec.workdir.mkdir(parents=True, exist_ok=True)
        if spec.shared_dir is not None:  # TUNER_SHARED_DIR: there for the job to write in
            spec.shared_dir.mkdir(parents=True, exist_ok=True)
        self.places.take(spec.name, key=str(spec.workdir))
        try:
            gpus = self.slots.take(spec.name, spec.gpus_per_job, key=str(spec.workdir))
        except BaseException:
            self.places.release(spec.name)
            raise
        at_once = min(self.parallel_jobs, self.places.limit or self.parallel_jobs)
        threads = thread_env(local_cores(), at_once, os.environ, spec.env)
        env = {**os.environ, **threads, **spec.env}
        env["PATH"] = with_interpreter_dir(env.get("PATH", ""))
        env[LAUNCH_MARKER] = str(spec.workdir)
        if gpus:
            env["CUDA_VISIBLE_DEVICES"] = ",".join(gpus)
        if spec.cwd is not None and not Path(spec.cwd).is_dir():
            self._release(spec.name)
            raise LaunchError(
                f"cannot start {spec.argv[0]!r} for job {spec.name}: working_directory "
                f"{str(spec.cwd)!r} is not a directory"
            )
        why = _unrunnable(spec.argv[0], spec.cwd or spec.workdir, env["PATH"])
        if any("\x00" in arg for arg in spec.argv):
            why = "a NUL byte in an argument"
        if why is not None:
            self._release(spec.name)
            raise LaunchError(f"cannot start {spec.argv[0]!r} for job {spec.name}: {why}")
        with contextlib.suppress(FileNotFoundError):
            (spec.workdir / EXIT_FILE).unlink()  # a status from an earlier start is not ours
        log = open(spec.workdir / LOG_FILE, "wb")  # noqa: SIM115 - closed when the job ends
        reader = open(spec.workdir / LOG_FILE, "rb")  # noqa: SIM115 - see TrackedLauncher.read_logs
        try:
            process = subprocess.Popen(
                [*KEEPER_COMMAND, str(spec.workdir / EXIT_FILE), *spec.argv],
                cwd=spec.cwd or spec.workdir,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                pass_fds=self._descriptors(spec.name),  # its leases live as long as it does
            )
        except (OSError, ValueError) as exc:  # ValueError: a NUL byte in an argument
            log.close()
            reader.close()
            self._release(spec.name)
            raise LaunchError(f"cannot start {spec.argv[0]!r} for job {spec.name}: {exc}") from None
        handle = f"local:{process.pid}:{start_ticks(process.pid)}:{spec.name}"
        write_atomically(spec.workdir / HANDLE_FILE, handle)
        self._jobs[handle] = _LocalJob(
            spec,
            time.monotonic(),
            gpus,
            process=process,
            pid=process.pid,
            ticks=start_ticks(process.pid),
            log=log,
            began_at=time.time(),
            reader=reader,
        )
        return handle

    def adopt(self, handle: str, spec: LaunchSpec, gpus: str | None = None) -> bool:
        """Watch a job that a LocalLauncher started before this process did (see base).

        A job that already ended is adopted too when its wrapper kept its exit status in the
        job's folder (``poll`` then reports the end at once). One that is gone without that
        status was killed together with its wrapper (a reboot, a kill of every process, the
        tuner's included) and is not adopted: the scheduler records it as interrupted and runs
        it again. Without a log there is nothing to adopt.
        """
        try:
            kind, pid, ticks, _name = handle.split(":", 3)
            if int(ticks) == 0:  # ``recover``'s handle of a job that had ended: start unknown
                job = _LocalJob(spec, time.monotonic(), pid=int(pid), ticks=0)
            else:
                uptime = float(Path("/proc/uptime").read_text().split()[0])
                age = max(0.0, uptime - int(ticks) / os.sysconf("SC_CLK_TCK"))
                job = _LocalJob(spec, time.monotonic() - age, pid=int(pid), ticks=int(ticks))
                job.began_at = time.time() - age
        except ValueError:
            return False
        if kind != "local" or not (spec.workdir / LOG_FILE).exists():
            return False
        if not runs(job.pid, job.ticks) and not (spec.workdir / EXIT_FILE).exists():
            return False  # (alive first: a wrapper writes the status before it exits)
        ids = [g for g in (gpus or "").split(",") if g]
        job.gpus = self.slots.take_these(spec.name, ids, key=str(spec.workdir))
        self.places.take_again(spec.name, key=str(spec.workdir))
        self._jobs[handle] = job
        return True

    def recover(self, spec: LaunchSpec) -> str | None:
        """The handle of a job started for ``spec`` whose start was never recorded, if any.

        That is the handle written into the job's folder; else the handle of the process that
        carries the job's folder as its launch marker; else, when the job left a trace (the
        status its wrapper kept, or output in its log), a handle of a job that has already
        ended (``adopt`` takes it when the status is there). An empty log without a status is
        a tuner that died between opening the log and starting the wrapper: nothing ran, None,
        and the job is started.
        """
        with contextlib.suppress(OSError):
            if handle := (spec.workdir / HANDLE_FILE).read_text().strip():
                return handle
        marker = f"{LAUNCH_MARKER}={spec.workdir}".encode()
        pid = _find_process(marker)
        if pid is not None and (ticks := start_ticks(pid)):
            handle = f"local:{pid}:{ticks}:{spec.name}"
        elif _left_a_trace(spec.workdir):
            handle = f"local:0:0:{spec.name}"
        else:
            return None
        write_atomically(spec.workdir / HANDLE_FILE, handle)
        return handle

    def _signal(self, job: _LocalJob, sig: int) -> None:
        """SIGKILL to the job's whole process group; any other signal once to every process of
        the group but the wrapper (a group-wide SIGTERM reached the program twice: directly and
        forwarded by the wrapper, and 'a second SIGTERM means quit now' lost the checkpoint).
        The wrapper forwards it when no other member is found (the job is still starting)."""
        if job.process is None and not runs(job.pid, job.ticks):
            return  # an adopted job's pid may belong to someone else by now
        with contextlib.suppress(ProcessLookupError, PermissionError):
            if sig == signal.SIGKILL:
                os.killpg(job.pid, sig)
                return
            members = [pid for pid in _group_members(job.pid) if pid != job.pid]
            for pid in members or [job.pid]:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, sig)

    def close(self) -> None:
        """Close the logs and leases this launcher holds open; the jobs run on (their own
        copies)."""
        for job in self._jobs.values():
            if job.log is not None:
                job.log.close()
                job.log = None
        self.slots.close()
        self.places.close()
        super().close()

    def poll(self, handle: str) -> JobStatus:
        job = self._job(handle)
        code = job.process.returncode if job.process else None
        if job.finished:
            return self._ended(job, code)
        if job.process is not None:
            code = job.process.poll()
            running = code is None
        else:
            running = runs(job.pid, job.ticks)
        if running:
            return self._still_running(job)
        if code is None:  # not our child: the wrapper kept the status in the job's folder
            code = read_exit_code(job.spec.workdir / EXIT_FILE)
        job.ended_at = _ended_at(job.spec.workdir / EXIT_FILE, watched=job.process is not None)
        self._signal(job, signal.SIGKILL)  # leftovers of the job's process group
        _kill_strays(job.spec)  # and those that left it
        job.finished = True
        if job.log is not None:
            job.log.close()
        self._release(job.spec.name)
        return self._ended(job, code)

    def _descriptors(self, name: str) -> list[int]:
        """The locked lease descriptors job ``name`` holds (GPUs, its place), for its wrapper."""
        return [*self.slots.descriptors(name), *self.places.descriptors(name)]

    def _release(self, name: str) -> None:
        self.slots.release(name)
        self.places.release(name)
