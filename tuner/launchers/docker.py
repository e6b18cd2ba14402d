"""Training jobs as Docker containers (the Docker SDK for Python).

Each job is one container of ``image``: the job's argv is the container's command (with the
image's entrypoint in front, if it has one), never a shell line. The job's folder is
bind-mounted at the same path inside the container, so ``TUNER_OUTPUT_DIR`` means the same
thing in and out; a working directory and the tuning job's shared folder (``spec.shared_dir``,
which holds the trials' common compile cache), when given, are mounted the same way. GPUs are
handed out as slots like the local launcher's (host-wide leases, held by this process while it
watches the container and, on a local engine, by ``lease_keeper.py`` for as long as the
container's first process runs, so a container whose tuner was killed still counts; taken again
when a restarted tuner adopts it where nobody holds them; a remote engine's GPUs are leased in
pools of their own, named by its address) and reach the container as
``device_requests`` (the NVIDIA container runtime sees only those GPUs). CPU and memory limits,
the network mode and the user (default: the tuner's own uid:gid, so outputs belong to the user)
are settings; each container gets a fair share of CPU threads (``tuner/launchers/threads.py``:
its ``cpus`` limit, else the engine's cores divided by ``parallel_jobs``).
Containers run with ``docker-init`` as PID 1 (signals reach the job), no new privileges and
every capability dropped; nothing privileged. Logs stream from the engine into
``<workdir>/log.txt``. Stopping sends SIGTERM, then SIGKILL after the grace period. An ended
container is removed once its whole log has been copied (a job is reported running until then,
unless the copy makes no progress for ``LOG_DRAIN_STALL`` seconds). Exit codes of jobs killed by
a signal are reported as ``-signal``, as for local processes. A container ended by SIGTERM that
the tuner did not send is reported ``interrupted`` and runs again: that is how an engine that
shuts down (a restart, an upgrade, the host going down) ends its containers, and a program's
own failure does not end that way. SIGKILL is not taken as such (the out-of-memory killer's).
An engine that stops answering is asked again at each poll; a job whose engine has not answered
for ``ENGINE_PATIENCE`` seconds is reported ended with an unknown exit code and a note saying so
(its container may still run if the engine comes back with live-restore).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tuner.errors import LaunchError, LauncherUnavailable, ValidationError
from tuner.launchers.base import JobStatus, LaunchSpec
from tuner.launchers.host_leases import host_leases
from tuner.launchers.slots import GpuSlots
from tuner.launchers.threads import thread_env
from tuner.launchers.tracked import HANDLE_FILE, LOG_FILE, TrackedJob, TrackedLauncher
from tuner.owners import start_ticks

LABEL = "tuner.training-job"
GPU_LABEL = "tuner.gpus"  # the GPU ids a container was given, for a tuner that re-attaches
LOG_DRAIN_STALL = 30.0  # seconds without log growth after which an ended job's copy gives up
ENGINE_PATIENCE = 120.0  # seconds an unanswering engine is waited for, per job
LEASE_KEEPER = (sys.executable, "-I", "-S", str(Path(__file__).with_name("lease_keeper.py")))
INTERRUPTED_NOTE = (
    "its container got SIGTERM from outside the tuner (the Docker engine stopping its "
    "containers as it shuts down, or a docker stop)"
)


@dataclass
class _Container(TrackedJob):
    container: Any = None
    exit_code: int | None = None
    follower: threading.Thread | None = None
    state: dict[str, Any] | None = None  # the engine's State of the ended container
    log_size: int = -1  # while the log is drained: its size at the last growth ...
    log_grew: float = 0.0  # ... and when that was (time.monotonic())
    unreachable_since: float | None = None  # time.monotonic() of the first failed poll
    keeper: subprocess.Popen[bytes] | None = None  # holds its GPU leases (lease_keeper.py)


def in_container(pid: int, container_id: str) -> bool:
    """Whether process ``pid`` of this machine's ``/proc`` runs in container ``container_id``
    (its cgroup path names the container). The engine reports its own host's pids: a tuner in
    a container of its own sees other processes, or none, under the same numbers."""
    try:
        return container_id in Path(f"/proc/{pid}/cgroup").read_text()
    except OSError:
        return False


def _exit_code(raw: int) -> int:
    """Docker reports 128+N for a process killed by signal N; report -N like Popen does."""
    return -(raw - 128) if 128 < raw <= 128 + 64 else raw


class DockerLauncher(TrackedLauncher[_Container]):
    """Runs each job as a container of ``image`` (see the module docstring)."""

    def __init__(
        self,
        image: str,
        gpus: Sequence[str | int] = (),
        jobs_per_gpu: int = 1,
        grace_period: float = 10.0,
        cpus: float | None = None,
        memory: str | None = None,
        network: str | None = None,
        user: str | None = None,
        docker_host: str | None = None,
        parallel_jobs: int = 1,
    ) -> None:
        from tuner.extras import require

        docker = require("docker", "docker", "the docker launcher")
        if not image:
            raise ValidationError("the docker launcher needs an image, got none")
        if grace_period < 0:
            raise ValidationError(f"grace_period must be >= 0 seconds, got {grace_period!r}")
        if cpus is not None and cpus <= 0:
            raise ValidationError(f"cpus must be > 0, got {cpus!r}")
        super().__init__()
        self.image = image
        engine = docker_host or os.environ.get("DOCKER_HOST") or "unix://"
        # Its containers' processes are this machine's (a unix socket): leases can follow them.
        self._local_engine = engine.startswith("unix://")
        # A remote engine's GPUs are its machine's: their leases are pools of their own here.
        self.slots = GpuSlots(
            gpus, jobs_per_gpu, host_leases(), machine="" if self._local_engine else engine
        )
        self.grace_period = grace_period
        self.cpus = cpus
        self.memory = memory
        self.network = network
        self.user = user or f"{os.getuid()}:{os.getgid()}"
        self.parallel_jobs = parallel_jobs
        self._engine_cores: int | None = None
        self._engine_away = False  # a start found the engine not answering
        self._unremoved: set[str] = set()  # jobs whose containers could not be removed
        try:
            self.client = (
                docker.DockerClient(base_url=docker_host) if docker_host else (docker.from_env())
            )
            self.client.ping()
        except Exception as exc:
            raise LaunchError(f"cannot reach the Docker engine: {exc}") from None

    def stop_waiting(self) -> None:
        self.slots.stop_waiting()

    def free_slots(self, gpus_per_job: float) -> int | None:
        """GPU slots free; none while the engine does not answer (a start failed for that and
        a ping still fails): nothing is launched into an engine that is away."""
        if self._engine_away:
            try:
                self.client.ping()
            except Exception:
                return 0
            self._engine_away = False
            self._sweep()
        return self.slots.free(gpus_per_job)

    def _sweep(self) -> None:
        """Remove the containers left when the engine could not be asked to (best effort)."""
        import docker

        for name in list(self._unremoved):
            with contextlib.suppress(docker.errors.DockerException, *_ENGINE_ERRORS):
                self._remove_by_label(name)
                self._unremoved.discard(name)

    def cores_per_job(self) -> float:
        """The CPUs a job may use: its ``cpus`` limit, else the engine's cores shared fairly."""
        if self.cpus:
            return self.cpus
        if self._engine_cores is None:
            self._engine_cores = int(self.client.info().get("NCPU") or 1)
        return self._engine_cores / max(1, self.parallel_jobs)

    def device_requests(self, gpus: list[str]) -> list[Any]:
        from docker.types import DeviceRequest

        if not gpus:
            return []
        return [DeviceRequest(device_ids=gpus, capabilities=[["gpu"]])]

    def start(self, spec: LaunchSpec) -> str:
        import docker

        spec.workdir.mkdir(parents=True, exist_ok=True)
        try:
            cores = self.cores_per_job()
        except _ENGINE_ERRORS as exc:
            self._engine_away = True
            raise _unanswered(exc) from None
        gpus = self.slots.take(spec.name, spec.gpus_per_job, key=str(spec.workdir))
        mounts = {str(spec.workdir): {"bind": str(spec.workdir), "mode": "rw"}}
        if spec.cwd is not None:
            mounts[str(spec.cwd)] = {"bind": str(spec.cwd), "mode": "rw"}
        env = {**thread_env(cores, 1, spec.env), **spec.env}
        if spec.shared_dir is not None:
            spec.shared_dir.mkdir(parents=True, exist_ok=True)
            mounts[str(spec.shared_dir)] = {"bind": str(spec.shared_dir), "mode": "rw"}
        if gpus:
            env["CUDA_VISIBLE_DEVICES"] = ",".join(str(i) for i in range(len(gpus)))
        try:
            container = self.client.containers.run(
                self.image,
                command=spec.argv,
                detach=True,
                environment=env,
                volumes=mounts,
                working_dir=str(spec.cwd) if spec.cwd else None,
                user=self.user,
                init=True,
                network_mode=self.network,
                nano_cpus=int(self.cpus * 1e9) if self.cpus else None,
                mem_limit=self.memory,
                device_requests=self.device_requests(gpus),
                security_opt=["no-new-privileges"],
                cap_drop=["ALL"],
                privileged=False,
                labels={LABEL: spec.name, GPU_LABEL: ",".join(gpus)},
            )
        except _ENGINE_ERRORS as exc:  # it may have been created: removed once it answers
            self.slots.release(spec.name)
            self._engine_away = True
            self._unremoved.add(spec.name)
            raise LauncherUnavailable(
                f"the Docker engine did not answer, so job {spec.name} was not started: {exc}"
            ) from None
        except docker.errors.DockerException as exc:
            self.slots.release(spec.name)
            with contextlib.suppress(docker.errors.DockerException, *_ENGINE_ERRORS):
                self._remove_by_label(spec.name)
            raise LaunchError(
                f"cannot start job {spec.name} from image {self.image!r}: {exc}"
            ) from None
        handle = f"docker:{container.id}"
        (spec.workdir / HANDLE_FILE).write_text(handle)
        self._register(handle, spec, container, time.monotonic(), gpus)
        return handle

    def _register(
        self, handle: str, spec: LaunchSpec, container: Any, started: float, gpus: list[str]
    ) -> None:
        job = _Container(spec, started, gpus, container=container)
        job.began_at = time.time() - (time.monotonic() - started)
        job.keeper = self._keep_leases(spec.name, container)
        job.follower = threading.Thread(target=self._follow, args=(job,), daemon=True)
        job.follower.start()
        self._jobs[handle] = job

    def _keep_leases(self, name: str, container: Any) -> subprocess.Popen[bytes] | None:
        """A ``lease_keeper.py`` holding the GPU leases this process took for job ``name`` for
        as long as its container's first process runs; None when it took none, or when that
        process is not this machine's to watch (a remote engine, the tuner in a container)."""
        descriptors = self.slots.descriptors(name)
        if not descriptors or not self._local_engine:
            return None
        try:
            container.reload()
            pid = int(container.attrs["State"].get("Pid") or 0)
        except Exception:  # the engine went away or the container ended: polls tell
            return None
        ticks = start_ticks(pid) if pid > 0 and in_container(pid, container.id) else 0
        if not ticks:
            return None
        return subprocess.Popen(
            [*LEASE_KEEPER, str(pid), str(ticks)],
            pass_fds=descriptors,
            start_new_session=True,  # a signal to the tuner's group does not end it
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    def _release(self, job: _Container) -> None:
        """Give back the job's GPU slots: its keeper goes too, so they are free at once."""
        if job.keeper is not None:
            job.keeper.kill()
            job.keeper.wait()
            job.keeper = None
        self.slots.release(job.spec.name)

    def _follow(self, job: _Container) -> None:
        """Copy the container's output, from its start, into the log file as it streams."""
        with open(job.spec.workdir / LOG_FILE, "wb") as log:
            try:
                for chunk in job.container.logs(stdout=True, stderr=True, stream=True, follow=True):
                    log.write(chunk)
                    log.flush()
            except Exception:  # the container went away; what was read is kept
                pass

    def _remove_by_label(self, name: str) -> None:
        for container in self.client.containers.list(
            all=True, filters={"label": f"{LABEL}={name}"}
        ):
            container.remove(force=True)

    def poll(self, handle: str) -> JobStatus:
        import docker

        job = self._job(handle)
        if job.finished:
            return self._ended(job, job.exit_code)
        if job.state is None:
            try:
                job.container.reload()
                state = job.container.attrs["State"]
            except docker.errors.NotFound:
                state = {"Status": "removed", "ExitCode": None}
            except _ENGINE_ERRORS as exc:
                return self._unreachable(job, exc)
            job.unreachable_since = None
            if state["Status"] in ("created", "running", "restarting", "paused"):
                return self._still_running(job)
            job.state = state
        if self._draining(job):  # ended, its log still being copied: not yet removed
            return JobStatus(True, None, job.timed_out, job.stopped, ",".join(job.gpus) or None)
        return self._end(job, job.state)

    def _draining(self, job: _Container) -> bool:
        """Whether the ended job's log is still being copied (and grew lately)."""
        if job.follower is None or not job.follower.is_alive():
            return False
        try:
            size = (job.spec.workdir / LOG_FILE).stat().st_size
        except OSError:
            size = 0
        now = time.monotonic()
        if size != job.log_size:
            job.log_size, job.log_grew = size, now
        return now - job.log_grew < LOG_DRAIN_STALL

    def _end(self, job: _Container, state: dict[str, Any]) -> JobStatus:
        import docker

        raw = state.get("ExitCode")
        job.exit_code = None if raw is None else _exit_code(int(raw))
        job.ended_at = _epoch(state.get("FinishedAt", ""))
        if state.get("OOMKilled") and job.exit_code in (None, -signal.SIGKILL):
            # (a child killed for memory, its program ending 0 all the same, Completed)
            job.exit_code = -signal.SIGKILL
        elif job.exit_code == -signal.SIGTERM and not (job.stopped or job.timed_out):
            job.interrupted = True
            job.note = INTERRUPTED_NOTE
        if state["Status"] == "removed":
            job.note = "its container was removed (not by the tuner) before its end was read"
        job.finished = True
        self._release(job)
        try:
            job.container.remove(force=True)
        except docker.errors.NotFound:
            pass
        except (docker.errors.DockerException, *_ENGINE_ERRORS):
            self._unremoved.add(job.spec.name)  # removed by a later sweep
        return self._ended(job, job.exit_code)

    def _unreachable(self, job: _Container, exc: Exception) -> JobStatus:
        """A poll the engine did not answer: still running, until ``ENGINE_PATIENCE``."""
        now = time.monotonic()
        if job.unreachable_since is None:
            job.unreachable_since = now
        if now - job.unreachable_since < ENGINE_PATIENCE:
            return JobStatus(True, None, job.timed_out, job.stopped, ",".join(job.gpus) or None)
        job.note = (
            f"the Docker engine did not answer for {ENGINE_PATIENCE:g}s, so its end could not be "
            f"read (its container may still run): {str(exc)[:300]}"
        )
        job.finished = True
        self._release(job)
        self._unremoved.add(job.spec.name)  # removed once the engine answers again
        return self._ended(job, None)

    def _signal(self, job: _Container, sig: int) -> None:
        import docker

        # it ended meanwhile, or the engine does not answer (poll reports that)
        with contextlib.suppress(docker.errors.DockerException, *_ENGINE_ERRORS):
            job.container.kill(signal=int(sig))

    def adopt(self, handle: str, spec: LaunchSpec, gpus: str | None = None) -> bool:
        import docker

        kind, _, container_id = handle.partition(":")
        if kind != "docker" or not container_id:
            return False
        try:
            container = self.client.containers.get(container_id)
        except docker.errors.DockerException:
            return False
        except _ENGINE_ERRORS as exc:
            raise _unanswered(exc) from None
        started = container.attrs["State"].get("StartedAt", "")
        age = _age_seconds(started)
        given = gpus or container.labels.get(GPU_LABEL, "")  # recorded, else as started
        ids = [g for g in given.split(",") if g]
        taken = self.slots.take_these(spec.name, ids, key=str(spec.workdir))
        self._register(handle, spec, container, time.monotonic() - age, taken)
        return True

    def recover(self, spec: LaunchSpec) -> str | None:
        try:
            found = self.client.containers.list(all=True, filters={"label": f"{LABEL}={spec.name}"})
        except _ENGINE_ERRORS as exc:
            raise _unanswered(exc) from None
        return f"docker:{found[0].id}" if found else None

    def close(self) -> None:
        """Remove what is left to remove, then close the engine connection; log streams of
        this launcher end with it."""
        self._sweep()
        self.client.close()
        self.slots.close()
        super().close()


def _unanswered(exc: Exception) -> LauncherUnavailable:
    return LauncherUnavailable(f"the Docker engine did not answer: {exc}")


def _engine_errors() -> tuple[type[Exception], ...]:
    """What the Docker SDK raises when the engine does not answer at all (a stopped engine's
    socket, a network cut): ``requests``' errors, which are not ``DockerException``."""
    try:
        import requests
    except ImportError:  # without the docker extra nothing here runs
        return ()
    return (requests.exceptions.ConnectionError, requests.exceptions.Timeout)


_ENGINE_ERRORS = _engine_errors()


def _epoch(stamp: str) -> float | None:
    """An RFC 3339 time from the engine as epoch seconds (None when unset or unreadable)."""
    from datetime import datetime

    if not stamp or stamp.startswith("0001-"):  # the engine's zero time: never happened
        return None
    try:
        return datetime.fromisoformat(stamp[:26].rstrip("Z") + "+00:00").timestamp()
    except ValueError:
        return None


def _age_seconds(started_at: str) -> float:
    """Seconds since an RFC 3339 time from the engine (0 when it cannot be read)."""
    from datetime import UTC, datetime

    try:
        stamp = datetime.fromisoformat(started_at[:26].rstrip("Z") + "+00:00")
    except ValueError:
        return 0.0
    return max(0.0, (datetime.now(UTC) - stamp).total_seconds())
