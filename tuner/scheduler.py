"""The tuning loop: ask the strategy, launch, read logs, tell results, persist every step.

Guarantees:
- At most ``max_parallel_jobs`` training jobs run at once (fewer when the launcher has fewer
  free GPU slots) and at most ``max_jobs`` are ever started for one tuning job.
- Each training job is recorded (Pending) before it starts, marked InProgress once started,
  and its end (status, objective, reason) is committed before the strategy hears of it.
- The tuning job ends Completed (budget used, search space exhausted, target objective
  reached, ``max_jobs_without_improvement`` jobs without a better objective (better by at
  least ``min_relative_improvement`` of the best), or
  ``max_tuning_runtime`` seconds passed since it was created, as SageMaker's
  ``ResourceLimits.MaxRuntimeInSeconds``; resumed, its clock still runs from its creation),
  Stopped (stop requested, from this process or through the store by another), or Failed
  (``max_failed_jobs`` failures, no training job succeeded (``tuner.failures``: the first five
  all failed, or the budget or time ended without a success), or an internal error); the
  reason is stored with the status.
  Training jobs still running at that point are stopped and recorded as Stopped.
- Resuming (a tuning job whose training jobs are already in the store, after a crash or a
  restart): ended jobs are replayed into the strategy and the counters; jobs recorded as
  running are re-attached through the launcher when they still run (their logs are read again
  from the start, points already stored are not stored twice), otherwise recorded as Stopped
  ("interrupted") and their configurations run again without using up ``max_jobs``; jobs
  recorded but never started are started. The limits hold across the restart, ``max_runtime``
  included: a job that ran longer than it from its recorded start until it ended (by itself,
  while no tuner watched it) is Failed as timed out, as a watched job would have been.
- A job its launcher reports ``interrupted`` (ended by its platform, e.g. a Docker engine
  shutting down) is recorded Stopped ("interrupted from outside: ...") and its configuration
  runs again without using up ``max_jobs``, as a start the launcher could not make does; a
  configuration ended so for the third time fails (a program that ends itself that way would
  otherwise run for ever).
- Uploads (``output_s3_uri``) run in the background; an ending tuning job waits for them (one
  stopped by Ctrl-C or SIGTERM at most ``UPLOAD_WAIT_SECONDS``, logging those it leaves);
  resuming uploads every ended job (not run again) that has no recorded location.
- Early stopping (``early_stopping_type="Auto"`` or Hyperband's rungs, ``tuner.stopping``): each
  value of the objective metric a running job reports is step k of that job and is shown to the
  stopping rule; a job the rule stops gets the launcher's stop (SIGTERM, then the grace
  period) and ends Stopped with reason ``early stopping at step k`` and its value at step k
  as objective (values it prints in its grace period are stored, not made its objective). It
  counts towards ``max_jobs``, not ``max_failed_jobs``; the strategy is told
  ``tuner.stopping.told_value``. On resume the rule is rebuilt from the stored points in the
  order they were read, so no job is judged twice; a job it had stopped is recorded as such,
  never run again.
- A tracker (``tuner.tracking``, MLflow with ``tracking_uri``) hears of each started job, each
  batch of metric points and each ended job, and of the tuning job's end; it never blocks or
  fails the loop, and it is told only after the store has the change.
- Warm start (``tuner.warm_start``): what the tuning job took from its parents when it was
  created is handed to the strategy before its own jobs are replayed, on every (re)start; it
  changes no counter (parents' jobs never count towards ``max_jobs``, the patience of
  ``max_jobs_without_improvement`` or the best job).
- A start for which another tuner process took the room meanwhile (``LauncherFull``: a GPU
  slot or local job place that the launcher's ``free_slots`` offered) stays recorded Pending
  and is started, before any new configuration, when room frees up; one still waiting when the
  tuning job ends is recorded Stopped (``NOT_STARTED_AT_END``).
- After each ask, the strategy's ``describe()`` is stored with the tuning job when it changed
  (``describe``'s ``strategy_state``).
- With an ``owner``, the scheduler holds the tuning job's lease in the store and renews it; if
  another process has taken the lease it leaves at once, touching no training job. Setting
  ``detach_event`` makes it leave the same way (its lease released) so another process can
  resume the tuning job with its training jobs still running.
"""

from __future__ import annotations

import json
import logging
import math
import threading
import time
from collections.abc import Callable
from concurrent import futures
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tuner import signal_safe
from tuner.artifacts import ArtifactUploader, BackgroundUploads
from tuner.definition import TuningJobDefinition
from tuner.errors import (
    LauncherFull,
    LaunchError,
    LauncherUnavailable,
    LeaseLost,
    StoreUnavailable,
)
from tuner.failures import NO_SUCCESS_ATTEMPTS, exit_reason, no_success_reason
from tuner.launchers import JobStatus, Launcher, LaunchSpec, LocalLauncher
from tuner.launchers.shared import SHARED_FOLDER, shared_cache_env
from tuner.launchers.slots import gpu_fraction, jobs_per_gpu_for
from tuner.metrics import LogMetricParser, MetricPoint, final_objective
from tuner.parameters import argv_word
from tuner.records import TrainingJob, TrainingStatus, TuningJob, TuningStatus
from tuner.space import Config
from tuner.stopping import StoppingRule, stopping_rule_for, told_value
from tuner.storage import Store
from tuner.strategies import Strategy, make_strategy
from tuner.summary import (
    ENDED_OUTSIDE,
    INTERRUPTED,
    NOT_STARTED,
    objective_text,
    ran_again,
    stopped_early,
)
from tuner.tracking import Tracker, tracker_for
from tuner.warm_start import prime

log = logging.getLogger("tuner.scheduler")

EventHandler = Callable[[str, TrainingJob], None]
STOP_CHECK_INTERVAL = 0.5
# An early stop decided on several values read at once waits this long, then stops the job if
# it still runs: such a job runs ahead of its reader and may be exiting by itself (a Python
# interpreter's exit took 0.1-0.3 s); one value at a time (a real epoch) stops at once.
STOP_SETTLE_SECONDS = 0.5
LAUNCH_RETRY_SECONDS = 5.0  # no launch for this long after the launcher's engine did not answer,
MAX_LAUNCH_RETRY_SECONDS = 60.0  # twice as long after each further refusal, up to this
MIN_SLEEP = 0.005
UPLOAD_WAIT_SECONDS = 30.0  # how long a tuning job stopped by a signal waits for uploads
UNREAD_EXIT = "its exit status could not be read after the tuner re-attached to it"
MAX_OUTSIDE_RERUNS = 2  # a configuration ended that way a third time fails (a loop otherwise)
NEVER_STARTED = "stopped before it started: its tuning job was asked to stop"
NOT_STARTED_AT_END = "stopped before it started: its tuning job ended while it waited for room"
SIGNALLED = "interrupted"  # a tuning job ended by Ctrl-C or SIGTERM to its process
STOPPED_BY_TUNER = "stopped by the tuner"  # a training job its tuner stopped (not early)


class _Detached(Exception):
    pass


def _config_key(config: Config) -> str:
    return json.dumps(config, sort_keys=True, default=str)


def training_argv(command: list[str], static: dict[str, Any], config: Config) -> list[str]:
    """``command`` followed by ``--name value`` for static, then tuned hyperparameters."""
    argv = list(command)
    for name, value in {**static, **config}.items():
        argv += [f"--{name}", argv_word(value)]
    return argv


def launcher_for(definition: TuningJobDefinition) -> Launcher:
    """The launcher a job definition names, configured by it."""
    job = definition.job_definition
    if job.launcher == "slurm":
        from tuner.launchers.slurm import SlurmLauncher

        return SlurmLauncher(
            partition=job.slurm_partition,
            cpus_per_job=job.cpus,
            memory=job.memory,
            shards_per_gpu=job.slurm_shards_per_gpu,
            sbatch_options=job.slurm_options,
            grace_period=job.grace_period,
        )
    jobs_per_gpu = jobs_per_gpu_for(job.gpus_per_job, job.jobs_per_gpu)
    if job.launcher == "docker":
        from tuner.launchers.docker import DockerLauncher

        return DockerLauncher(
            job.image or "",
            gpus=job.gpus,
            jobs_per_gpu=jobs_per_gpu,
            grace_period=job.grace_period,
            cpus=job.cpus,
            memory=job.memory,
            network=job.network,
            docker_host=job.docker_host,
            parallel_jobs=definition.max_parallel_jobs,
        )
    return LocalLauncher(
        gpus=job.gpus,
        jobs_per_gpu=jobs_per_gpu,
        grace_period=job.grace_period,
        parallel_jobs=definition.max_parallel_jobs,
    )


@dataclass
class _Running:
    job: TrainingJob
    config: Config
    handle: str
    parser: LogMetricParser
    points: list[MetricPoint] = field(default_factory=list)
    stored: int = 0  # points of this job already in the store (after a re-attach)
    began_at: float | None = None  # when its program began running (recorded once)
    steps: int = 0  # values of the objective metric reported so far
    early_stop: str | None = None  # why the stopping rule stopped it
    stop_due: tuple[str, float] | None = None  # a stop decided in a burst: (why, when)
    recovered: bool = False  # found by ``recover``: its start was never recorded


class Scheduler:
    """Runs one stored tuning job to its end (see the module guarantees)."""

    def __init__(
        self,
        definition: TuningJobDefinition,
        name: str,
        store: Store,
        launcher: Launcher | None = None,
        strategy: Strategy | None = None,
        on_event: EventHandler | None = None,
        stop_event: threading.Event | None = None,
        poll_interval: float = 0.2,
        owner: str | None = None,
        lease_seconds: float = 30.0,
        detach_event: threading.Event | None = None,
    ) -> None:
        self.definition = definition
        self.name = name
        self.store = store
        self.launcher = launcher or launcher_for(definition)
        self.space = definition.space()
        self.strategy = strategy or make_strategy(
            definition.strategy,
            self.space,
            definition.maximize,
            definition.random_seed,
            definition.strategy_arguments(),
        )
        self.metric_definitions = definition.metrics()
        self.stopping: StoppingRule | None = stopping_rule_for(
            definition.early_stopping_type,
            definition.early_stopping_options.model_dump(),
            definition.maximize,
            self.strategy,
        )
        self.tracker: Tracker = tracker_for(definition, name, store)
        self.stopped_early = 0
        self._strategy_state: dict[str, Any] | None = None  # last recorded (strategy.describe())
        self.worst_completed: float | None = None
        self.on_event = on_event
        self.stop_event = stop_event or threading.Event()
        self.stop_reason = "stopped on request"  # recorded when stop_event ends the run
        self.interrupted = False  # interrupt() was called: stop as if stop_event were set
        self.poll_interval = poll_interval
        self.owner = owner
        self.lease_seconds = lease_seconds
        self.detach_event = detach_event or threading.Event()
        self._last_renewal = time.monotonic()
        self.running: dict[str, _Running] = {}
        self.reruns: list[Config] = []
        self.waiting: list[TrainingJob] = []  # recorded, not started: others took the room
        self.launched = 0  # started jobs that count against max_jobs
        self.last_number = 0
        self.failed = 0
        self.completed = 0
        self.best: TrainingJob | None = None
        self.since_improvement = 0
        self._patience_base: float | None = None  # the best when since_improvement was reset
        self.workdir = Path(definition.job_definition.output_path) / name
        jd = definition.job_definition
        self.uploader = (
            ArtifactUploader(jd.output_s3_uri, jd.s3_endpoint_url) if jd.output_s3_uri else None
        )
        self.uploads: dict[str, Future[str]] = {}
        self._upload_pool: BackgroundUploads | None = None
        self._last_stop_check = 0.0
        self._deadline: float | None = None  # epoch seconds, from max_tuning_runtime in run()
        self._launch_paused_until = 0.0  # monotonic; set when the launcher was unavailable
        self._launch_retry = LAUNCH_RETRY_SECONDS

    # The loop

    def run(self) -> TuningJob:
        """Drive the tuning job to a terminal status and return its final record."""
        self.tracker.start()
        try:
            if self.definition.max_tuning_runtime is not None:
                created = self.store.get_tuning_job(self.name).created_at
                self._deadline = created + self.definition.max_tuning_runtime
            self._replay()
            status, reason = self._loop()
            self._shutdown()
        except (LeaseLost, _Detached) as exc:
            if isinstance(exc, _Detached) and self.owner is not None:
                self.store.release_tuning_job(self.name, self.owner)
            self.launcher.close()
            self.tracker.close(None)
            return self.store.get_tuning_job(self.name)
        except StoreUnavailable as exc:  # nothing can be recorded: leave the jobs running
            self.launcher.close()
            self.tracker.close(None)
            raise StoreUnavailable(
                f"{exc}; tuning job {self.name!r} was left as it was, with its "
                f"{len(self.running)} training jobs still running: resume it once the store "
                "answers (tuner resume; a service does so by itself)"
            ) from None
        except LauncherUnavailable as exc:  # on re-attaching: nothing can be told of the jobs
            self.launcher.close()
            self.tracker.close(None)
            raise LauncherUnavailable(
                f"{exc}; tuning job {self.name!r} was left as it was: resume it once the "
                "engine answers and its lease has run out (tuner resume; a service does so by "
                "itself)"
            ) from None
        except KeyboardInterrupt:
            self._shutdown(upload_wait=UPLOAD_WAIT_SECONDS)  # a supervisor's kill may follow
            self._end(TuningStatus.STOPPED, SIGNALLED)
            raise
        except Exception as exc:
            if self._lease_lost():  # e.g. its write raced the process that took over: leave
                log.warning("%s: %s after another process took it over", self.name, exc)
                self.launcher.close()
                self.tracker.close(None)
                return self.store.get_tuning_job(self.name)
            reason = f"internal error: {type(exc).__name__}: {exc}"
            try:
                self._shutdown()
            except Exception:  # the launcher itself fails (its engine went away, say)
                log.exception("%s: its running jobs could not be stopped", self.name)
                self._abandon(reason)
            self._end(TuningStatus.FAILED, reason)
            raise
        return self._end(status, reason)

    def _end(self, status: TuningStatus, reason: str) -> TuningJob:
        """Record the tuning job's end, then let the tracker write it."""
        record = self.store.set_tuning_status(self.name, status, reason)
        self.tracker.close(record)
        return record

    def _loop(self) -> tuple[TuningStatus, str]:
        sleep = MIN_SLEEP
        while True:
            self._heartbeat()
            self._record_uploads()
            progressed = self._poll_running()
            verdict = self._verdict()
            if verdict is not None:
                return verdict
            progressed |= self._launch_free_slots()
            if (
                not self.running
                and not self.waiting
                and (
                    self.launched >= self.definition.max_jobs
                    or (self.strategy.exhausted and not self.reruns)
                )
            ):
                return self._budget_verdict()
            sleep = MIN_SLEEP if progressed else min(sleep * 2, self.poll_interval)
            self.stop_event.wait(sleep)

    def _budget_verdict(self) -> tuple[TuningStatus, str]:
        if self.launched == 0 and self.strategy.exhausted and not self.reruns:
            return TuningStatus.FAILED, (
                "the search space was exhausted before any training job ran "
                "(warm-start parents had run every configuration)"
            )
        if self.completed == 0:
            jobs = self.store.list_training_jobs(self.name)
            return TuningStatus.FAILED, no_success_reason(jobs, early=False)
        if self.launched >= self.definition.max_jobs:
            return TuningStatus.COMPLETED, f"all max_jobs={self.definition.max_jobs} jobs ended"
        return TuningStatus.COMPLETED, (f"the search space is exhausted after {self.launched} jobs")

    def _verdict(self) -> tuple[TuningStatus, str] | None:
        """A reason to end the tuning job now, or None to go on."""
        d = self.definition
        if self._stop_requested():
            return TuningStatus.STOPPED, self.stop_reason
        if d.max_failed_jobs is not None and self.failed >= d.max_failed_jobs:
            return TuningStatus.FAILED, (
                f"max_failed_jobs={d.max_failed_jobs} reached: {self.failed} training jobs failed"
            )
        if self.completed == 0 and self.failed >= NO_SUCCESS_ATTEMPTS:
            jobs = self.store.list_training_jobs(self.name)
            return TuningStatus.FAILED, no_success_reason(jobs, early=True)
        if self._deadline is not None and time.time() >= self._deadline:
            reached = f"max_tuning_runtime={d.max_tuning_runtime:g}s reached"
            if self.completed:
                return TuningStatus.COMPLETED, f"{reached} after {self.launched} jobs"
            jobs = self.store.list_training_jobs(self.name)
            why = (
                no_success_reason(jobs, early=False) if self.failed else "no training job had ended"
            )
            return TuningStatus.FAILED, f"{reached}; {why}"
        best = self.best
        if best is not None and best.objective is not None:
            target = d.target_objective_value
            if target is not None and (
                best.objective >= target if d.maximize else best.objective <= target
            ):
                return TuningStatus.COMPLETED, (
                    f"target_objective_value={objective_text(target)} reached by {best.name} "
                    f"({d.objective_metric_name}={objective_text(best.objective)})"
                )
            patience = d.max_jobs_without_improvement
            if patience is not None and self.since_improvement >= patience:
                shown = objective_text(best.objective)
                best_text = f"{best.name} ({d.objective_metric_name}={shown})"
                if not d.min_relative_improvement:
                    return TuningStatus.COMPLETED, (
                        f"no improvement in {patience} jobs since {best_text}"
                    )
                return TuningStatus.COMPLETED, (
                    f"no improvement by min_relative_improvement={d.min_relative_improvement:g} "
                    f"of the best in {patience} jobs; best {best_text}"
                )
        return None

    def _heartbeat(self) -> None:
        if self.detach_event.is_set():
            raise _Detached
        if self.owner is None:
            return
        if time.monotonic() - self._last_renewal >= self.lease_seconds / 3:
            self._renew_lease()

    def _renew_lease(self) -> None:
        """Extend the lease; LeaseLost when another process holds it. The new expiry counts
        from when the renewal began: one that waited long on the database is soon renewed again."""
        if self.owner is None:
            return
        began = time.monotonic()
        if not self.store.renew_lease(self.name, self.owner, self.lease_seconds):
            raise LeaseLost(f"another process took over tuning job {self.name}")
        self._last_renewal = began

    def _lease_lost(self) -> bool:
        """True when another process has taken this tuning job over (checked by renewing)."""
        if self.owner is None:
            return False
        try:
            return not self.store.renew_lease(self.name, self.owner, self.lease_seconds)
        except Exception:  # the store fails too: not known to be lost
            return False

    def interrupt(self) -> None:
        """End the run as interrupted (``SIGNALLED``) at its next check, from a signal handler:
        plain attribute writes, and ``stop_event`` set by ``tuner.signal_safe`` (which sets it
        a moment later, from another thread) only to end the loop's wait."""
        self.stop_reason = SIGNALLED
        self.interrupted = True
        signal_safe.set_event(self.stop_event)

    def _stop_requested(self) -> bool:
        if self.interrupted or self.stop_event.is_set():
            return True
        now = time.monotonic()
        if now - self._last_stop_check >= STOP_CHECK_INTERVAL:
            self._last_stop_check = now
            if self.store.get_tuning_job(self.name).stop_requested:
                self.stop_event.set()
        return self.stop_event.is_set()

    # Launching

    def _launch_free_slots(self) -> bool:
        free = min(
            self.definition.max_parallel_jobs - len(self.running),
            self.definition.max_jobs - self.launched,
        )
        nothing_to_start = not self.waiting and not self.reruns and self.strategy.exhausted
        if free <= 0 or nothing_to_start or time.monotonic() < self._launch_paused_until:
            self.launcher.stop_waiting()  # wants no room now: nobody waits for it in line
            return False
        slots = self.launcher.free_slots(self.definition.job_definition.gpus_per_job)
        if slots is not None:
            free = min(free, slots)
        if free <= 0:
            return False
        self._renew_lease()  # right before launching: never two launchers for one tuning job
        if self.waiting:  # recorded starts that found no room come first, new ones next round
            for job in [self.waiting.pop(0) for _ in range(min(free, len(self.waiting)))]:
                self._start(job)
            return True
        configs = [self.reruns.pop(0) for _ in range(min(free, len(self.reruns)))]
        if len(configs) < free and not self.strategy.exhausted:
            configs += self.strategy.ask(free - len(configs))
            self._record_strategy_state()
        for i, config in enumerate(configs):
            if self.waiting or time.monotonic() < self._launch_paused_until:
                self.reruns.extend(configs[i:])  # room ran out, or the engine went, meanwhile
                break
            self.last_number += 1
            began = time.monotonic()
            lease = (self.owner, self.lease_seconds) if self.owner is not None else None
            job = self.store.create_training_job(self.name, self.last_number, config, lease=lease)
            self._last_renewal = began  # the create renewed the lease, as of when it began
            self._heartbeat()  # a create that waited on the database renews it again: fresh
            self._start(job)  # when the job starts, so no other process can start it too
        return bool(configs)

    def _record_strategy_state(self) -> None:
        """Store the strategy's ``describe()`` when it changed (``describe``'s strategy_state)."""
        state = json.loads(json.dumps(self.strategy.describe(), default=str))
        if state != self._strategy_state:
            self.store.set_strategy_state(self.name, state)
            self._strategy_state = state

    def _cwd(self) -> Path | None:
        """Where a job's command runs: ``working_directory``; None for a Docker image run as
        built (no ``command``: its ENTRYPOINT in its WORKDIR, as SageMaker runs an image; the
        tuner's folder mounted over WORKDIR hid the image's code)."""
        jd = self.definition.job_definition
        if not jd.working_directory or (jd.launcher == "docker" and jd.command is None):
            return None
        return Path(jd.working_directory)

    def _spec(self, job: TrainingJob) -> LaunchSpec:
        jd = self.definition.job_definition
        workdir = (self.workdir / job.name).resolve()
        fraction = gpu_fraction(jd.gpus_per_job, jd.jobs_per_gpu, jd.launcher)
        share = {"TUNER_GPU_FRACTION": f"{fraction:g}"} if fraction < 1 else {}
        shared_dir = (self.workdir / SHARED_FOLDER).resolve()
        return LaunchSpec(
            name=job.name,
            argv=training_argv(jd.argv_prefix, jd.static_hyperparameters, job.hyperparameters),
            workdir=workdir,
            cwd=self._cwd(),
            env={
                **shared_cache_env(shared_dir),
                **jd.environment,
                "TUNER_TRIAL_NAME": job.name,
                "TUNER_TUNING_JOB_NAME": self.name,
                "TUNER_OUTPUT_DIR": str(workdir / "output"),
                **share,
            },
            gpus_per_job=jd.gpus_per_job,
            max_runtime=jd.max_runtime,
            shared_dir=shared_dir,
        )

    def _start(self, job: TrainingJob) -> None:
        """Start a recorded (Pending) training job; a launch failure is a failed job."""
        self.launched += 1
        spec = self._spec(job)
        (spec.workdir / "output").mkdir(parents=True, exist_ok=True)
        try:
            handle = self.launcher.start(spec)
        except LauncherFull:  # not started: it waits, recorded, for room (budget kept)
            self.launched -= 1
            self.waiting.append(job)
            return
        except LauncherUnavailable as exc:  # not started: run it again later, budget kept
            self.launched -= 1
            self._launch_paused_until = time.monotonic() + self._launch_retry
            self._launch_retry = min(2 * self._launch_retry, MAX_LAUNCH_RETRY_SECONDS)
            self._run_again(job.name, job.hyperparameters, f"{NOT_STARTED}{exc}")
            return
        except LaunchError as exc:
            ended = self.store.finish_training_job(
                job.name, TrainingStatus.FAILED, failure_reason=str(exc)
            )
            self._record_end(ended, job.hyperparameters)
            return
        self._launch_retry = LAUNCH_RETRY_SECONDS  # it answers again
        gpus = self.launcher.poll(handle).gpus
        try:
            job = self.store.mark_started(job.name, handle, str(spec.workdir), gpus)
        except StoreUnavailable:
            raise  # left running: a resume finds it (``launcher.recover``) and adopts it
        except Exception as exc:
            self._end_unrecorded(job, handle, exc)
            raise
        self.running[job.name] = _Running(
            job, job.hyperparameters, handle, LogMetricParser(self.metric_definitions)
        )
        self._emit("started", job)

    def _end_unrecorded(self, job: TrainingJob, handle: str, exc: Exception) -> None:
        """A started job whose start the store refused to record must not run on unwatched:
        stopped, waited for (so the launcher cleans up after it: a container is removed) and
        recorded Failed where the store takes that."""
        self.launcher.stop(handle)
        while self.launcher.poll(handle).running:
            time.sleep(0.05)
        reason = f"its start could not be recorded ({type(exc).__name__}: {exc}); stopped"
        try:
            self.store.finish_training_job(job.name, TrainingStatus.FAILED, failure_reason=reason)
        except Exception:
            log.exception("%s: %s, and its end could not be recorded either", job.name, reason)

    # Watching

    def _poll_running(self) -> bool:
        progressed = False
        for name in list(self.running):
            run = self.running[name]
            status = self.launcher.poll(run.handle)
            if run.began_at is None and status.began_at is not None:
                run.began_at = status.began_at
                run.job = self.store.mark_running(run.job.name, status.began_at, status.gpus)
            self._read_logs(run, final=not status.running)
            if not status.running:
                if run.stop_due and run.early_stop is None and status.exit_code == 0:
                    log.info("%s: ended by itself before it could be stopped", run.job.name)
                self._finish(run, status)
                progressed = True
            else:
                self._stop_when_due(run)
        return progressed

    def _read_logs(self, run: _Running, final: bool) -> None:
        """Parse and store what the job's log holds beyond what was read: one chunk while it
        runs; all of it once it has ended, chunk by chunk (each stored before the next is
        read, the lease kept), so a log of millions of metric lines never sits in memory."""
        while True:
            data = self.launcher.read_logs(run.handle)
            points = run.parser.feed(data) if data else []
            if final and not data:
                points = [*points, *run.parser.close()]
            self._keep(run, [p for p in points if p.seq >= run.stored], final)
            if not final or not data:
                return
            self._heartbeat()

    def _keep(self, run: _Running, points: list[MetricPoint], final: bool) -> None:
        """Store new points, show them to the tracker and the stopping rule; the job keeps
        only its objective's values (all its final objective needs)."""
        if not points:
            return
        self.store.add_metric_points(run.job.name, points)
        self.tracker.points(run.job, points)
        objective = self.definition.objective_metric_name
        run.points.extend(p for p in points if p.name == objective)
        self._consult_stopping(run, points, final)

    def _consult_stopping(self, run: _Running, points: list[MetricPoint], final: bool) -> None:
        """Show each new objective value to the stopping rule; stop the job when it says so.
        In a burst (several values read at once: the job runs ahead of its reader, and may
        have printed its last line and be exiting) the stop waits ``STOP_SETTLE_SECONDS``
        (``_stop_when_due``), so that a job ending by itself is not killed on its way out."""
        objective = self.definition.objective_metric_name
        burst = sum(p.name == objective for p in points) > 1
        for point in points:
            if point.name != objective:
                continue
            run.steps += 1
            if self.stopping is None:
                continue
            reason = self.stopping.report(
                run.job.name, run.job.number, run.config, run.steps, point.value
            )
            if reason is None or final or run.early_stop is not None or run.stop_due:
                continue
            if not self.launcher.poll(run.handle).running:
                # It ended by itself after the poll that saw it running, all its steps in the
                # log read at once: its full run stands (Completed), nothing is left to stop.
                log.info("%s: ended by itself before it could be stopped", run.job.name)
                continue
            if burst:
                run.stop_due = (reason, time.monotonic())
            else:
                self._stop_early(run, reason)

    def _stop_when_due(self, run: _Running) -> None:
        """Stop a job whose stop was decided in a burst, once it is due and if it still runs
        (it is polled just before): one that ended by itself meanwhile stays Completed."""
        if run.stop_due is not None and run.early_stop is None:
            reason, decided = run.stop_due
            if time.monotonic() - decided >= STOP_SETTLE_SECONDS:
                self._stop_early(run, reason)

    def _stop_early(self, run: _Running, reason: str) -> None:
        log.info("%s: %s", run.job.name, reason)
        run.early_stop = reason
        self.launcher.stop(run.handle)

    def _finish(self, run: _Running, status: JobStatus) -> None:
        del self.running[run.job.name]
        exit_code, timed_out, stopped = status.exit_code, status.timed_out, status.stopped
        d = self.definition
        objective = final_objective(run.points, d.objective_metric_name, d.aggregation, d.maximize)
        outcome, reason = TrainingStatus.COMPLETED, None
        last = f"; last log line: {run.parser.last_line[:300]!r}" if run.parser.last_line else ""
        if run.early_stop is not None:
            outcome, reason = TrainingStatus.STOPPED, run.early_stop
        elif timed_out:  # being stopped for it when the tuner stopped it too (a Ctrl-C)
            outcome = TrainingStatus.FAILED
            reason = f"exceeded max_runtime={d.job_definition.max_runtime:g}s and was stopped"
        elif stopped:
            outcome, reason = TrainingStatus.STOPPED, STOPPED_BY_TUNER
        elif (ran := self._overran(run, status)) is not None:
            outcome = TrainingStatus.FAILED
            reason = (
                f"exceeded max_runtime={d.job_definition.max_runtime:g}s: it ran {ran:.1f}s and "
                "ended by itself before the tuner could stop it"
            )
        elif status.interrupted and self._ended_outside(run.config) < MAX_OUTSIDE_RERUNS:
            # not the program's doing: run again, budget kept
            self.launched -= 1
            self._run_again(
                run.job.name,
                run.config,
                f"{ENDED_OUTSIDE}{status.note}",
                exit_code=exit_code,
                began_at=status.began_at,
                ended_at=status.ended_at,
            )
            return
        elif exit_code is None:  # never guessed: a launcher that cannot tell says None
            outcome = TrainingStatus.FAILED
            reason = f"{status.note or UNREAD_EXIT}{last}"
        elif exit_code != 0:
            outcome, reason = TrainingStatus.FAILED, f"{exit_reason(exit_code)}{last}"
        elif objective is None:
            outcome = TrainingStatus.FAILED
            text = run.parser.last_unparsed.get(d.objective_metric_name)
            cut = run.parser.cut_note(d.objective_metric_name)
            reason = (
                f"objective metric {d.objective_metric_name!r} was never reported in the "
                f"log{cut}{last}"
                if text is None
                else f"objective metric {d.objective_metric_name!r} was captured only as text "
                f"that is not a number, last {text!r:.100}"
            )
        elif not math.isfinite(objective):
            outcome = TrainingStatus.FAILED
            reason = f"objective metric {d.objective_metric_name!r} is {objective}"
        if outcome is not TrainingStatus.COMPLETED:  # any job that did not complete keeps its
            points = (
                run.points if run.early_stop is None else self._judged(run.job.name, run.points)
            )
            objective = final_objective(points, d.objective_metric_name)  # last value
        began_at = status.began_at
        if began_at is None and run.recovered and exit_code is not None:
            began_at = run.job.started_at  # it ended before it was found: it began when started
        ended = self.store.finish_training_job(
            run.job.name, outcome, objective, reason, exit_code, began_at, status.ended_at
        )
        self._upload(ended)
        self._record_end(ended, run.config)

    def _judged(self, name: str, points: list[MetricPoint]) -> list[MetricPoint]:
        """A job's objective values up to the step its early stop was decided at (all of them
        when it was not stopped early): values it printed after that, in its grace period, are
        stored but do not make its objective, which so depends only on the reports the rule
        judged, never on how fast the process ended."""
        step = self.stopping.decided_at(name) if self.stopping is not None else None
        return points if step is None else points[:step]

    def _run_again(self, name: str, config: Config, reason: str, **end: Any) -> None:
        """Record a job whose configuration runs again without using up ``max_jobs`` (a start
        the launcher could not make, a job lost or ended from outside): Stopped with ``reason``
        (``end``: its exit code and times, where known), forgotten by the stopping rule so
        that its rerun is not judged against it, and queued."""
        if self.stopping is not None:
            self.stopping.forget(name)
        ended = self.store.finish_training_job(
            name, TrainingStatus.STOPPED, failure_reason=reason, **end
        )
        self.reruns.append(config)
        self._emit("ended", ended)

    def _ended_outside(self, config: Config) -> int:
        """How many of this tuning job's runs of ``config`` its platform ended (recorded)."""
        return sum(
            (job.failure_reason or "").startswith(ENDED_OUTSIDE) and job.hyperparameters == config
            for job in self.store.list_training_jobs(self.name)
        )

    def _overran(self, run: _Running, status: JobStatus) -> float | None:
        """How long an ended job ran when that is more than ``max_runtime`` (the launcher
        stops a job it watches then; one that ended unwatched is judged here), else None."""
        limit = self.definition.job_definition.max_runtime
        began = run.began_at if run.began_at is not None else status.began_at
        if limit is None or began is None or status.ended_at is None:
            return None
        ran = status.ended_at - began
        return ran if ran > limit else None

    def _upload(self, job: TrainingJob) -> None:
        """Start uploading the ended job's log and outputs (in the background)."""
        if self.uploader is None or job.workdir is None:
            return
        if self._upload_pool is None:
            self._upload_pool = BackgroundUploads(self.uploader)
        self.uploads[job.name] = self._upload_pool.submit(self.name, job.name, Path(job.workdir))

    def _record_uploads(self, wait: float | None = 0.0) -> None:
        """Record the location of every finished upload; log the ones that failed. With
        ``wait`` (seconds; None: as long as they take), wait for the others first; those still
        going after it are logged and left (their files stay in the job's folder)."""
        if wait != 0.0 and self.uploads:
            futures.wait(self.uploads.values(), timeout=wait)
        for name, future in list(self.uploads.items()):
            if not future.done():
                if wait != 0.0:
                    log.warning(
                        "outputs of %s were not uploaded within %g s; left (its files stay "
                        "in its folder)",
                        name,
                        wait,
                    )
                continue
            del self.uploads[name]
            try:
                uri = future.result()
            except Exception as exc:  # boto3 raises more than TunerError (a bad endpoint)
                log.warning(
                    "outputs of %s were not uploaded: %s: %s", name, type(exc).__name__, exc
                )
                continue
            self.store.set_artifacts_uri(name, uri)

    def _record_end(self, job: TrainingJob, config: Config) -> None:
        if job.status is TrainingStatus.COMPLETED:
            self.completed += 1
            self.since_improvement += 1
            if self._improves(job):
                if self._improves_enough(job):
                    self.since_improvement = 0
                    self._patience_base = job.objective
                self.best = job
            elif (
                self.best is not None
                and job.objective == self.best.objective
                and job.number < self.best.number
            ):
                self.best = job  # as best_of: the earliest of a tie
            if job.objective is not None and self._improves_on(
                job.objective, self.worst_completed, worst=True
            ):
                self.worst_completed = job.objective
        elif job.status is TrainingStatus.FAILED:
            self.failed += 1
        if stopped_early(job):
            self.stopped_early += 1
            self.since_improvement += 1
            value = told_value(job.objective, self.worst_completed, self.definition.maximize)
            self.strategy.tell(config, value)
        elif job.status is not TrainingStatus.STOPPED:
            completed = job.status is TrainingStatus.COMPLETED
            self.strategy.tell(config, job.objective if completed else None)
        self._emit("ended", job)

    def _improves(self, job: TrainingJob) -> bool:
        if job.objective is None:
            return False
        return self._improves_on(job.objective, self.best.objective if self.best else None)

    def _improves_enough(self, job: TrainingJob) -> bool:
        """Whether a new best resets ``max_jobs_without_improvement``'s count: it beats the
        best as of the last reset by at least ``min_relative_improvement`` of it (so gains too
        small one by one count once they add up; any gain when that is 0 or there was none)."""
        base = self._patience_base
        if base is None or job.objective is None:
            return True
        return abs(job.objective - base) >= self.definition.min_relative_improvement * abs(base)

    def _improves_on(self, value: float, other: float | None, worst: bool = False) -> bool:
        """Whether ``value`` is better than ``other`` (worse, with ``worst``); None loses."""
        if other is None:
            return True
        if value == other:
            return False
        better = value > other if self.definition.maximize else value < other
        return better != worst

    # Start and end

    def _replay(self) -> None:
        """Resume from the training jobs already in the store (see the module docstring)."""
        not_started = []
        prime(self.strategy, self.store.get_tuning_job(self.name).warm_start)
        jobs = self.store.list_training_jobs(self.name)
        self._replay_stopping(jobs)
        last_run = {_config_key(j.hyperparameters): j.number for j in jobs}  # each one's last
        for job in jobs:
            self.last_number = max(self.last_number, job.number)
            if job.status is TrainingStatus.PENDING:
                not_started.append(job)
            elif job.status is TrainingStatus.IN_PROGRESS:
                self._reattach(job)
            else:
                if not ran_again(job):
                    self.launched += 1
                    if job.artifacts_uri is None and job.workdir and Path(job.workdir).is_dir():
                        self._upload(job)  # its upload had not ended when its tuner did
                elif last_run[_config_key(job.hyperparameters)] == job.number:
                    self.reruns.append(job.hyperparameters)  # its tuner ended before the rerun
                    self.strategy.mark_pending(job.hyperparameters)
                self._record_end(job, job.hyperparameters)
        stopping = bool(not_started) and self.store.get_tuning_job(self.name).stop_requested
        for job in not_started:
            self.strategy.mark_pending(job.hyperparameters)
            handle = self.launcher.recover(self._spec(job))
            if handle is not None:  # started, but the start was never recorded: it was
                # started right after it was recorded Pending (when it began running may be
                # unknown: it can have ended before this resume)
                workdir = str(self._spec(job).workdir)
                started = self.store.mark_started(
                    job.name, handle, workdir, started_at=job.created_at
                )
                self._reattach(started, recovered=True)
            elif stopping:  # taken over to be stopped: nothing new starts
                ended = self.store.finish_training_job(
                    job.name, TrainingStatus.STOPPED, failure_reason=NEVER_STARTED
                )
                self._emit("ended", ended)
            else:
                self._start(job)

    def _replay_stopping(self, jobs: list[TrainingJob]) -> None:
        """Rebuild the stopping rule from the stored objective values, in the order read."""
        if self.stopping is None:
            return
        objective = self.definition.objective_metric_name
        values: list[tuple[float, int, float, TrainingJob, float | None]] = [
            (p.timestamp, job.number, p.seq, job, p.value)
            for job in jobs
            for p in self.store.metric_points(job.name, objective)
        ]
        # A job that ran again was forgotten when it ended, after its values.
        values += [(j.ended_at or 0.0, j.number, math.inf, j, None) for j in jobs if ran_again(j)]
        steps: dict[str, int] = {}
        for _, _, _, job, value in sorted(values, key=lambda v: v[:3]):
            if value is None:
                self.stopping.forget(job.name)
                continue
            steps[job.name] = steps.get(job.name, 0) + 1
            self.stopping.report(job.name, job.number, job.hyperparameters, steps[job.name], value)

    def _reattach(self, job: TrainingJob, recovered: bool = False) -> None:
        decided = self.stopping.decided(job.name) if self.stopping else None
        if job.handle and self.launcher.adopt(job.handle, self._spec(job), job.gpus):
            self.launched += 1
            stored = self.store.metric_points(job.name)
            run = _Running(
                job,
                job.hyperparameters,
                job.handle,
                LogMetricParser(self.metric_definitions),
                points=[p for p in stored if p.name == self.definition.objective_metric_name],
                stored=len(stored),
                began_at=job.running_at,
                steps=sum(p.name == self.definition.objective_metric_name for p in stored),
                recovered=recovered,
            )
            self.running[job.name] = run
            self.strategy.mark_pending(job.hyperparameters)
            if decided is not None:  # decided before the restart; its stop may not have landed
                self._stop_early(run, decided)
            return
        if decided is not None:  # it was stopped early and is gone: never run it again
            self.launched += 1
            points = self.store.metric_points(job.name, self.definition.objective_metric_name)
            ended = self.store.finish_training_job(
                job.name,
                TrainingStatus.STOPPED,
                final_objective(
                    self._judged(job.name, points), self.definition.objective_metric_name
                ),
                decided,
            )
            self._record_end(ended, job.hyperparameters)
            return
        self.strategy.mark_pending(job.hyperparameters)
        self._run_again(job.name, job.hyperparameters, INTERRUPTED)

    def _shutdown(self, upload_wait: float | None = None) -> None:
        """Stop every running job and wait until each has ended and been recorded, and for
        the uploads of their outputs (at most ``upload_wait`` seconds, if given)."""
        for run in self.running.values():
            self.launcher.stop(run.handle)
        while self.waiting:
            job = self.waiting.pop(0)
            ended = self.store.finish_training_job(
                job.name, TrainingStatus.STOPPED, failure_reason=NOT_STARTED_AT_END
            )
            self._emit("ended", ended)
        while self.running:
            self._poll_running()
            if self.running:
                time.sleep(0.02)
        self._record_uploads(wait=upload_wait)
        if self._upload_pool is not None:
            self._upload_pool.close()
        self.launcher.close()

    def _abandon(self, reason: str) -> None:
        """Record every job still running as Failed: the launcher could not stop them."""
        for name in list(self.running):
            del self.running[name]
            self.store.finish_training_job(
                name,
                TrainingStatus.FAILED,
                failure_reason=f"the tuner ended ({reason}) and could not stop it; it may run on",
            )

    def _emit(self, kind: str, job: TrainingJob) -> None:
        if kind == "started":
            self.tracker.job_started(job)
        elif kind == "ended":
            self.tracker.job_ended(job)
        if self.on_event is not None:
            self.on_event(kind, job)
