"""Training jobs as Slurm batch jobs: ``sbatch`` to submit, ``scontrol`` to watch, ``scancel``
to stop.

Each job is submitted as ``sbatch [options] <workdir>/job.sh FOLDER STATUS_FILE ARGV...``: the
script enters the working directory (a job whose folder does not exist on the node fails
saying so, where Slurm alone would run it in /tmp), runs ``"$@"``, so the command and its
hyperparameters reach the program as separate arguments, never parsed by a shell, and keeps
the exit status in ``<workdir>/exit_code`` (128+N for a signal N, as a shell reports it). Stops
signal every process of the job (``scancel --full``); the script only waits for the program.
Its stdout and stderr go to ``<workdir>/log.txt`` (``--output``), which
the tuner reads while the job runs: the job folders must be on a filesystem the compute nodes
share with the tuner. The job's environment is the tuner's plus ``spec.env`` (``--export=ALL``).

Resources: ``--gres=gpu:N`` for whole GPUs, ``--gres=shard:K`` for a fraction of a GPU (needs the
cluster's shards per GPU), ``--cpus-per-task``, ``--mem``, ``--partition``, and ``--time`` (the
runtime limit rounded up to minutes, a backstop; the tuner itself stops a job at
``max_runtime`` after it began running, not after it was queued). A queued job is "running" to
the tuner (it holds a place under ``max_parallel_jobs``); ``poll`` reports ``began_at`` once
Slurm started it, and the GPUs Slurm gave it.

State and exit code come from ``scontrol show job`` (jobs are kept there ``MinJobAge`` seconds
after they end); for a job that has aged out, from ``sacct`` where accounting runs, else from
the status the script kept (a job killed by ``SIGKILL`` keeps none: its exit code is unknown).
A job the cluster ended (``PLATFORM_ENDS``) or requeued after it began (then cancelled here:
``_requeued``) is reported ``interrupted``, so its configuration runs again; one that Slurm
ended with exit code 0 in another state than ``COMPLETED`` (cancelled while queued) with an
unknown exit code and a note naming the state. A job kept pending for a reason in
``UNRUNNABLE_REASONS`` for ``unrunnable_patience`` seconds (the request can never be met as the
cluster stands) is cancelled and ends with a note naming the reason. The handle is
``slurm:<job id>:<name>``, written to ``<workdir>/handle`` at once; ``recover`` also finds a job
by its name and log path in Slurm's records, so a tuner killed right after ``sbatch`` does not
submit the job again.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import signal
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from tuner.errors import LaunchError, LauncherUnavailable, ValidationError
from tuner.launchers.base import JobStatus, LaunchSpec
from tuner.launchers.exit_keeper import EXIT_FILE, read_exit_code
from tuner.launchers.tracked import (
    HANDLE_FILE,
    LAUNCH_MARKER,
    LOG_FILE,
    TrackedJob,
    TrackedLauncher,
    with_interpreter_dir,
    write_atomically,
)

JOB_SCRIPT = """#!/bin/sh
# Written by the tuner. job.sh FOLDER STATUS_FILE PROGRAM [ARG...]: runs the program in FOLDER
# with its arguments as given (no shell parses them) and keeps its exit status in STATUS_FILE.
folder=$1 status_file=$2
shift 2
trap : TERM INT HUP  # scancel --full signals the program too; this shell waits for its end
if cd -- "$folder"; then
  "$@"
  status=$?
else
  echo "tuner: cannot run in working_directory '$folder' on ${SLURMD_NODENAME:-this node}" >&2
  status=1
fi
echo "$status" >"$status_file.partial" && mv -f -- "$status_file.partial" "$status_file"
exit "$status"
"""
QUEUED = {"PENDING", "CONFIGURING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "RESIZING"}
ACTIVE = QUEUED | {"RUNNING", "COMPLETING", "SUSPENDED", "STOPPED", "SIGNALING", "STAGE_OUT"}
TIMEOUT_STATES = {"TIMEOUT", "DEADLINE"}
PLATFORM_ENDS = {"PREEMPTED", "NODE_FAIL", "BOOT_FAIL"}  # the cluster ended it, not its program
# Pending reasons that mean the job as submitted cannot run until an administrator changes the
# cluster (Slurm's squeue(1) "JOB REASON CODES"); reasons that clear by themselves (Resources,
# Priority, ReqNodeNotAvail, PartitionDown, PartitionNodeLimit with nodes down...) are waited out.
UNRUNNABLE_REASONS = {
    "PartitionConfig": "its request exceeds what the partition's nodes or limits allow",
    "PartitionTimeLimit": "its time limit exceeds the partition's MaxTime",
    "BadConstraints": "its constraints cannot be satisfied",
    "InvalidAccount": "its account is invalid",
    "InvalidQOS": "its QOS is invalid",
}
GRES_IDX = re.compile(r"GRES=\S*?\(IDX:([^)]*)\)")


@dataclass
class _SlurmJob(TrackedJob):
    job_id: str = ""
    state: str = "PENDING"
    exit_code: int | None = None
    checked: float = float("-inf")  # time.monotonic() of the last scontrol query
    unrunnable_since: float | None = None  # time.monotonic() it was first seen unrunnable


def _fields(line: str) -> dict[str, str]:
    """``Key=Value`` pairs of one ``scontrol -o`` line (values may hold no spaces but these).

    ``Command=`` holds the job's arguments, hyperparameter values among them, as plain words:
    a value ``JobState=COMPLETED`` read as a field called a running job ended. So a field
    Slurm prints before ``Command=`` (state, times, exit code, GPUs) is never set again by a
    word after it, and one it prints after it (``WorkDir``, ``StdOut``) is set by its last
    occurrence, which is Slurm's own."""
    out: dict[str, str] = {}
    before: set[str] = set()  # the fields before Command=
    key = None
    for token in line.split(" "):
        name, eq, value = token.partition("=")
        if eq and re.fullmatch(r"[A-Za-z_/:]+", name) and name not in before:
            key = name
            out[key] = value
            if "Command" not in out:
                before.add(name)
        elif key is not None:  # a value with spaces, such as Command=
            out[key] += " " + token
    return out


def _exit_code(text: str, state: str) -> int | None:
    """Slurm's ``status:signal`` as one code: the status, or -signal when a signal ended it; a
    job in state ``OUT_OF_MEMORY`` was killed by SIGKILL (as Docker's ``OOMKilled``), whatever
    its ``ExitCode`` says (often ``0:125``)."""
    if state == "OUT_OF_MEMORY":
        return -signal.SIGKILL
    status, _, sig = text.partition(":")
    if not status.isdigit():
        return None
    return -int(sig) if sig.isdigit() and int(sig) else _shell_status(int(status))


def _shell_status(status: int) -> int:
    """The job script's status (128+N when a signal N ended the program) as one code."""
    return -(status - 128) if 128 < status <= 128 + 64 else status


def _epoch(stamp: str) -> float | None:
    """A Slurm time stamp (local time, no zone) as epoch seconds; None for Unknown/None."""
    try:
        return datetime.fromisoformat(stamp).timestamp()
    except ValueError:
        return None


def sbatch_resources(gpus_per_job: float, shards_per_gpu: int | None) -> list[str]:
    """The ``--gres`` option for a job's GPUs: whole GPUs, or shards for a fraction of one."""
    if gpus_per_job <= 0:
        return []
    if gpus_per_job >= 1:
        return [f"--gres=gpu:{int(gpus_per_job)}"]
    if not shards_per_gpu:
        raise ValidationError(
            f"gpus_per_job={gpus_per_job:g} (a fraction of a GPU) needs slurm_shards_per_gpu, "
            "the number of shards the cluster's gres.conf gives each GPU"
        )
    shards = gpus_per_job * shards_per_gpu
    if abs(shards - round(shards)) > 1e-6 or round(shards) < 1:
        raise ValidationError(
            f"gpus_per_job={gpus_per_job:g} times slurm_shards_per_gpu={shards_per_gpu} must be "
            f"a whole number of shards, got {shards:g}"
        )
    return [f"--gres=shard:{round(shards)}"]


class SlurmLauncher(TrackedLauncher[_SlurmJob]):
    """Submits each job to Slurm (see the module docstring)."""

    def __init__(
        self,
        partition: str | None = None,
        cpus_per_job: float | None = None,
        memory: str | None = None,
        shards_per_gpu: int | None = None,
        sbatch_options: Sequence[str] = (),
        grace_period: float = 10.0,
        poll_interval: float = 1.0,
        unrunnable_patience: float = 60.0,
    ) -> None:
        if grace_period < 0:
            raise ValidationError(f"grace_period must be >= 0 seconds, got {grace_period!r}")
        for option in sbatch_options:
            if not option.startswith("--") or "\x00" in option:
                raise ValidationError(
                    f"slurm_options must be long sbatch options such as --qos=high, got {option!r}"
                )
        super().__init__()
        self.partition = partition
        self.cpus_per_job = cpus_per_job
        self.memory = memory
        self.shards_per_gpu = shards_per_gpu
        self.sbatch_options = list(sbatch_options)
        self.grace_period = grace_period
        self.poll_interval = poll_interval
        self.unrunnable_patience = unrunnable_patience

    # Slurm's commands

    def _slurm(
        self, *args: str, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        try:
            return subprocess.run(
                list(args), capture_output=True, text=True, env=env, timeout=60, check=False
            )
        except subprocess.TimeoutExpired:
            raise LauncherUnavailable(f"{args[0]} did not answer within 60 s") from None
        except OSError as exc:
            raise LaunchError(f"cannot run {args[0]}: {exc}") from None

    def _show(self, job_id: str | None = None) -> list[dict[str, str]]:
        """``scontrol -o -d show job [ID]`` as records ([] when Slurm no longer knows the job)."""
        args = ["scontrol", "-o", "-d", "show", "job"] + ([job_id] if job_id else [])
        done = self._slurm(*args)
        if done.returncode != 0:
            if "Invalid job id" in done.stderr:
                return []
            raise _failure("scontrol failed", done.stderr)
        return [_fields(line) for line in done.stdout.splitlines() if line.startswith("JobId=")]

    def _accounted(self, job_id: str) -> tuple[str, int | None] | None:
        """State and exit code from ``sacct`` (None where accounting does not run)."""
        try:
            done = self._slurm("sacct", "-n", "-P", "-X", "-j", job_id, "-o", "State,ExitCode")
        except LaunchError:
            return None
        line = done.stdout.strip().splitlines()[0] if done.stdout.strip() else ""
        if done.returncode != 0 or "|" not in line:
            return None
        state, code = line.split("|", 1)
        state = state.split()[0]
        return state, _exit_code(code, state)

    # The launcher contract

    def start(self, spec: LaunchSpec) -> str:
        if any(j.spec.name == spec.name for j in self._jobs.values()):
            raise LaunchError(f"a job named {spec.name} was already started by this launcher")
        spec.workdir.mkdir(parents=True, exist_ok=True)
        if spec.shared_dir is not None:  # TUNER_SHARED_DIR: there for the job to write in
            spec.shared_dir.mkdir(parents=True, exist_ok=True)
        script = spec.workdir / "job.sh"
        script.write_text(JOB_SCRIPT)
        script.chmod(0o755)
        options = [
            "--parsable",
            f"--job-name={spec.name}",
            f"--output={str(spec.workdir / LOG_FILE).replace('%', '%%')}",  # no %j patterns
            f"--chdir={spec.workdir}",  # job.sh enters the working directory itself
            "--export=ALL",
            *self._resources(spec),
        ]
        if spec.max_runtime is not None:
            options.append(f"--time={math.ceil(spec.max_runtime / 60) + 1}")
        env = {**os.environ, **spec.env, LAUNCH_MARKER: str(spec.workdir)}
        env["PATH"] = with_interpreter_dir(env.get("PATH", ""))
        folder = str(spec.cwd or spec.workdir)
        status_file = spec.workdir / EXIT_FILE
        status_file.unlink(missing_ok=True)  # a status from an earlier start is not ours
        try:
            done = self._slurm(
                "sbatch",
                *options,
                *self.sbatch_options,
                str(script),
                folder,
                str(status_file),
                *spec.argv,
                env=env,
            )
        except LauncherUnavailable as exc:  # timed out: it may have been submitted all the same
            raise self._unsure(spec, str(exc)) from None
        job_id = done.stdout.strip().split(";")[0]
        if done.returncode != 0 or not job_id.isdigit():
            if any(sign in done.stderr for sign in SLOW):
                raise self._unsure(spec, done.stderr.strip()[:500])
            raise _failure(f"sbatch refused job {spec.name}{self._asked(spec)}", done.stderr)
        handle = f"slurm:{job_id}:{spec.name}"
        write_atomically(spec.workdir / HANDLE_FILE, handle)
        self._jobs[handle] = _SlurmJob(spec, time.monotonic(), job_id=job_id)
        return handle

    def _resources(self, spec: LaunchSpec) -> list[str]:
        """The sbatch options for what a job needs: GPUs or shards, partition, CPUs, memory."""
        options = sbatch_resources(spec.gpus_per_job, self.shards_per_gpu)
        if self.partition:
            options.append(f"--partition={self.partition}")
        if self.cpus_per_job:
            options.append(f"--cpus-per-task={math.ceil(self.cpus_per_job)}")
        if self.memory:
            options.append(f"--mem={self.memory}")
        return options

    def _asked(self, spec: LaunchSpec) -> str:
        """What a refused job asked for (Slurm's "Requested node configuration is not
        available" names none of it), GPUs with the setting they came from."""
        asked = [*self._resources(spec), *self.sbatch_options]
        if spec.gpus_per_job > 0:
            asked[0] += f" from gpus_per_job={spec.gpus_per_job:g}"
        return f" (it asked for {', '.join(asked)})" if asked else ""

    def _unsure(self, spec: LaunchSpec, reason: str) -> LaunchError:
        """An sbatch that timed out may have queued the job anyway: it is cancelled by its
        (unique) name, so it never runs beside the tuner's next job, and fails (not run again:
        the cancel may not have reached the controller either)."""
        with contextlib.suppress(LaunchError):
            self._slurm("scancel", f"--name={spec.name}")
        return LaunchError(
            f"sbatch did not answer for job {spec.name} ({reason}); it was cancelled by name "
            "in case it had been queued"
        )

    def poll(self, handle: str) -> JobStatus:
        job = self._job(handle)
        if not job.finished and time.monotonic() - job.checked >= self.poll_interval:
            self._refresh(job)
        if job.finished:
            return self._ended(job, job.exit_code)
        if job.state in QUEUED:
            return JobStatus(True, stopped=job.stopped)
        return self._still_running(job)

    def _refresh(self, job: _SlurmJob) -> None:
        job.checked = time.monotonic()
        try:
            records = self._show(job.job_id)
        except LaunchError:
            return  # slurmctld is busy or restarting: ask again at the next poll
        if records:
            record = records[0]
            job.state = record.get("JobState", "UNKNOWN").split()[0]
            restarts = (
                int(record.get("Restarts", "0")) if record.get("Restarts", "").isdigit() else 0
            )
            ran = record.get("NodeList", "") not in ("", "(null)")  # cancelled queued: none
            if restarts > 0 or (job.began_at is not None and job.state in QUEUED):
                self._requeued(job)
                return
            if job.began_at is None and job.state not in QUEUED and ran:
                began = _epoch(record.get("StartTime", ""))
                if began is not None:
                    job.began_at = began
                    job.started = time.monotonic() - max(0.0, time.time() - began)
            shown = " ".join(f"{k}={v}" for k, v in record.items() if k != "Command")
            if match := GRES_IDX.search(shown):
                job.gpus = _expand_indices(match.group(1))
            if job.state == "PENDING" and record.get("Reason") in UNRUNNABLE_REASONS:
                self._give_up_if_unrunnable(job, record["Reason"])
            else:
                job.unrunnable_since = None
            if job.state in ACTIVE or job.finished:
                return
            job.exit_code = _exit_code(record.get("ExitCode", ""), job.state)
            job.ended_at = _epoch(record.get("EndTime", ""))
        elif accounted := self._accounted(job.job_id):  # aged out of scontrol
            job.state, job.exit_code = accounted
        else:  # no accounting either: the status the job script kept
            job.state, job.exit_code = self._kept(job)
        if job.state in PLATFORM_ENDS and not job.stopped:
            job.interrupted = True  # not its program's doing: its configuration runs again
            job.note = f"Slurm ended it in state {job.state}"
        elif job.exit_code == 0 and job.state != "COMPLETED":
            job.exit_code = None
            queued = "" if job.began_at is not None else " before it started"
            job.note = f"Slurm ended it{queued} in state {job.state} (exit code 0)"
        job.timed_out = job.timed_out or job.state in TIMEOUT_STATES
        job.finished = True

    def _requeued(self, job: _SlurmJob) -> None:
        """A job that Slurm put back in the queue after it began (preemption, a node that
        failed, ``scontrol requeue``): cancelled, so that it never runs again beside the
        tuner's rerun, and ended as interrupted from outside (its configuration runs again
        without using up ``max_jobs``). Left running, it was read twice from a truncated log
        and failed as over ``max_runtime`` counted from its first start."""
        with contextlib.suppress(LaunchError):
            self._slurm("scancel", job.job_id)
        job.exit_code, job.ended_at = None, time.time()
        job.interrupted = True
        job.note = (
            f"Slurm requeued it (state {job.state}: preemption, a node failure or scontrol "
            "requeue); cancelled there"
        )
        job.finished = True

    def _give_up_if_unrunnable(self, job: _SlurmJob, reason: str) -> None:
        """Cancel a job Slurm has kept pending for an unrunnable reason for
        ``unrunnable_patience`` seconds; it ends with a note naming the reason."""
        now = time.monotonic()
        if job.unrunnable_since is None:
            job.unrunnable_since = now
        if now - job.unrunnable_since < self.unrunnable_patience:
            return
        self._slurm("scancel", job.job_id)
        job.state, job.exit_code, job.ended_at = "CANCELLED", None, time.time()
        job.note = (
            f"Slurm would not run it: pending with reason {reason} ({UNRUNNABLE_REASONS[reason]}) "
            f"for {self.unrunnable_patience:g} s; cancelled"
        )
        job.finished = True

    def _kept(self, job: _SlurmJob) -> tuple[str, int | None]:
        """State and exit code from the status file the job script wrote, and its time."""
        status_file = job.spec.workdir / EXIT_FILE
        kept = read_exit_code(status_file)
        if kept is None:
            return "UNKNOWN", None
        with contextlib.suppress(OSError):
            job.ended_at = status_file.stat().st_mtime
        code = _shell_status(kept)
        return ("COMPLETED" if code == 0 else "FAILED"), code

    def _signal(self, job: _SlurmJob, sig: int) -> None:
        if job.state in QUEUED:
            self._refresh(job)  # it may have started since it was last seen queued
        if job.finished:
            return
        if job.state in QUEUED:
            self._slurm("scancel", job.job_id)
        elif sig == signal.SIGKILL:  # --full --batch kills at once (a plain scancel, or --full
            # alone, sends TERM again and leaves the kill to KillWait); then any other steps
            self._slurm("scancel", "--full", "--batch", "--signal=KILL", job.job_id)
            self._slurm("scancel", job.job_id)
        else:  # --full: the batch step's every process, the program included
            self._slurm("scancel", "--full", f"--signal={signal.Signals(sig).name[3:]}", job.job_id)

    def adopt(self, handle: str, spec: LaunchSpec, gpus: str | None = None) -> bool:
        """Watch a job submitted before this process started (see base)."""
        kind, _, rest = handle.partition(":")
        job_id = rest.split(":", 1)[0]
        if kind != "slurm" or not job_id.isdigit():
            return False
        if not self._show(job_id) and not (spec.workdir / LOG_FILE).exists():
            return False
        job = _SlurmJob(spec, time.monotonic(), job_id=job_id)
        job.gpus = [g for g in (gpus or "").split(",") if g]
        self._jobs[handle] = job
        return True

    def recover(self, spec: LaunchSpec) -> str | None:
        """The handle in the job's folder, else the job Slurm knows by this name and log."""
        try:
            if handle := (spec.workdir / HANDLE_FILE).read_text().strip():
                return handle
        except OSError:
            pass
        log = str(spec.workdir / LOG_FILE)
        for record in self._show():  # StdOut as given (%% for a %) or as Slurm expanded it
            if record.get("JobName") == spec.name and record.get("StdOut") in (
                log,
                log.replace("%", "%%"),
            ):
                handle = f"slurm:{record['JobId']}:{spec.name}"
                write_atomically(spec.workdir / HANDLE_FILE, handle)
                return handle
        return None


UNREACHABLE = ("Unable to contact slurm controller", "Connection refused")
SLOW = ("Socket timed out",)  # the controller got the request and may have acted on it


def _failure(what: str, stderr: str) -> LaunchError:
    """A Slurm command's failure: ``LauncherUnavailable`` when slurmctld did not answer (it
    restarts; the same call may succeed later), else ``LaunchError``."""
    text = f"{what}: {stderr.strip()[:500]}"
    if any(sign in stderr for sign in UNREACHABLE + SLOW):
        return LauncherUnavailable(text)
    return LaunchError(text)


def _expand_indices(text: str) -> list[str]:
    """Slurm's GPU index list ("0", "0-1", "0,2-3") as ids."""
    ids: list[str] = []
    for part in text.split(","):
        first, _, last = part.partition("-")
        if first.isdigit() and last.isdigit():
            ids += [str(i) for i in range(int(first), int(last) + 1)]
        elif first.isdigit():
            ids.append(first)
    return ids
