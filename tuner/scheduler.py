"""The tuning loop: ask the strategy, launch, read logs, tell results, persist every step.

Guarantees:
- At most ``max_parallel_jobs`` training jobs run at once (fewer when the launcher has fewer
  free GPU slots) and at most ``max_jobs`` are ever started for one tuning job.
- Each training job is recorded (Pending) before it starts, marked InProgress once started,
  and its end (status, objective, reason) is committed before the strategy hears of it.
- The tuning job ends Completed (budget used, search space exhausted, target objective
  reached, or ``max_jobs_without_improvement`` jobs without a better objective), Stopped (stop
  requested, from this process or through the store by another), or Failed
  (``max_failed_jobs`` failures, or an internal error); the reason is stored with the status.
  Training jobs still running at that point are stopped and recorded as Stopped.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tuner.definition import TuningJobDefinition
from tuner.errors import LaunchError
from tuner.launchers import Launcher, LaunchSpec, LocalLauncher
from tuner.metrics import LogMetricParser, MetricPoint, final_objective
from tuner.records import TrainingJob, TrainingStatus, TuningJob, TuningStatus
from tuner.space import Config
from tuner.storage import Store
from tuner.strategies import Strategy, make_strategy

EventHandler = Callable[[str, TrainingJob], None]
STOP_CHECK_INTERVAL = 0.5
MIN_SLEEP = 0.005


def format_value(value: Any) -> str:
    """A hyperparameter as one argv word: floats in full precision, booleans as true/false."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    return str(value)


def training_argv(command: list[str], static: dict[str, Any], config: Config) -> list[str]:
    """``command`` followed by ``--name value`` for static, then tuned hyperparameters."""
    argv = list(command)
    for name, value in {**static, **config}.items():
        argv += [f"--{name}", format_value(value)]
    return argv


def launcher_for(definition: TuningJobDefinition) -> Launcher:
    job = definition.job_definition
    return LocalLauncher(
        gpus=job.gpus, jobs_per_gpu=job.jobs_per_gpu, grace_period=job.grace_period
    )


@dataclass
class _Running:
    job: TrainingJob
    config: Config
    handle: str
    parser: LogMetricParser
    points: list[MetricPoint] = field(default_factory=list)


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
            definition.strategy_options,
        )
        self.metric_definitions = definition.metrics()
        self.on_event = on_event
        self.stop_event = stop_event or threading.Event()
        self.poll_interval = poll_interval
        self.running: dict[str, _Running] = {}
        self.launched = 0
        self.failed = 0
        self.completed = 0
        self.best: TrainingJob | None = None
        self.since_improvement = 0
        self.workdir = Path(definition.job_definition.output_path) / name
        self._last_stop_check = 0.0

    # The loop

    def run(self) -> TuningJob:
        """Drive the tuning job to a terminal status and return its final record."""
        try:
            self._replay()
            status, reason = self._loop()
        except KeyboardInterrupt:
            self._shutdown()
            self.store.set_tuning_status(self.name, TuningStatus.STOPPED, "interrupted")
            raise
        except Exception as exc:
            self._shutdown()
            self.store.set_tuning_status(
                self.name, TuningStatus.FAILED, f"internal error: {type(exc).__name__}: {exc}"
            )
            raise
        self._shutdown()
        return self.store.set_tuning_status(self.name, status, reason)

    def _loop(self) -> tuple[TuningStatus, str]:
        sleep = MIN_SLEEP
        while True:
            progressed = self._poll_running()
            verdict = self._verdict()
            if verdict is not None:
                return verdict
            progressed |= self._launch_free_slots()
            if not self.running and (
                self.launched >= self.definition.max_jobs or self.strategy.exhausted
            ):
                return self._budget_verdict()
            sleep = MIN_SLEEP if progressed else min(sleep * 2, self.poll_interval)
            self.stop_event.wait(sleep)

    def _budget_verdict(self) -> tuple[TuningStatus, str]:
        if self.launched >= self.definition.max_jobs:
            return TuningStatus.COMPLETED, f"all max_jobs={self.definition.max_jobs} jobs ended"
        return TuningStatus.COMPLETED, (f"the search space is exhausted after {self.launched} jobs")

    def _verdict(self) -> tuple[TuningStatus, str] | None:
        """A reason to end the tuning job now, or None to go on."""
        d = self.definition
        if self._stop_requested():
            return TuningStatus.STOPPED, "stopped on request"
        if d.max_failed_jobs is not None and self.failed >= d.max_failed_jobs:
            return TuningStatus.FAILED, (
                f"max_failed_jobs={d.max_failed_jobs} reached: {self.failed} training jobs failed"
            )
        best = self.best
        if best is not None and best.objective is not None:
            target = d.target_objective_value
            if target is not None and (
                best.objective >= target if d.maximize else best.objective <= target
            ):
                return TuningStatus.COMPLETED, (
                    f"target_objective_value={target:g} reached by {best.name} "
                    f"({d.objective_metric_name}={best.objective:g})"
                )
            patience = d.max_jobs_without_improvement
            if patience is not None and self.since_improvement >= patience:
                return TuningStatus.COMPLETED, (
                    f"no improvement in {patience} jobs since {best.name} "
                    f"({d.objective_metric_name}={best.objective:g})"
                )
        return None

    def _stop_requested(self) -> bool:
        if self.stop_event.is_set():
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
        slots = self.launcher.free_slots(self.definition.job_definition.gpus_per_job)
        if slots is not None:
            free = min(free, slots)
        if free <= 0 or self.strategy.exhausted:
            return False
        configs = self.strategy.ask(free)
        for config in configs:
            self._launch(config)
        return bool(configs)

    def _launch(self, config: Config) -> None:
        self.launched += 1
        job = self.store.create_training_job(self.name, self.launched, config)
        jd = self.definition.job_definition
        workdir = (self.workdir / job.name).resolve()
        spec = LaunchSpec(
            name=job.name,
            argv=training_argv(jd.command or [], jd.static_hyperparameters, config),
            workdir=workdir,
            cwd=Path(jd.working_directory) if jd.working_directory else None,
            env={
                **jd.environment,
                "TUNER_TRIAL_NAME": job.name,
                "TUNER_TUNING_JOB_NAME": self.name,
                "TUNER_OUTPUT_DIR": str(workdir / "output"),
            },
            gpus_per_job=jd.gpus_per_job,
            max_runtime=jd.max_runtime,
        )
        (workdir / "output").mkdir(parents=True, exist_ok=True)
        try:
            handle = self.launcher.start(spec)
        except LaunchError as exc:
            ended = self.store.finish_training_job(
                job.name, TrainingStatus.FAILED, failure_reason=str(exc)
            )
            self._record_end(ended, config)
            return
        gpus = self.launcher.poll(handle).gpus
        job = self.store.mark_started(job.name, handle, str(workdir), gpus)
        self.running[job.name] = _Running(
            job, config, handle, LogMetricParser(self.metric_definitions)
        )
        self._emit("started", job)

    # Watching

    def _poll_running(self) -> bool:
        progressed = False
        for name in list(self.running):
            run = self.running[name]
            status = self.launcher.poll(run.handle)
            self._read_logs(run, final=not status.running)
            if not status.running:
                self._finish(run, status.exit_code, status.timed_out, status.stopped)
                progressed = True
        return progressed

    def _read_logs(self, run: _Running, final: bool) -> None:
        points: list[MetricPoint] = []
        while data := self.launcher.read_logs(run.handle):
            points.extend(run.parser.feed(data))
            if not final:
                break
        if final:
            points.extend(run.parser.close())
        if points:
            self.store.add_metric_points(run.job.name, points)
            run.points.extend(points)

    def _finish(self, run: _Running, exit_code: int | None, timed_out: bool, stopped: bool) -> None:
        del self.running[run.job.name]
        d = self.definition
        objective = final_objective(run.points, d.objective_metric_name, d.aggregation, d.maximize)
        status, reason = TrainingStatus.COMPLETED, None
        last = f"; last log line: {run.parser.last_line[:300]!r}" if run.parser.last_line else ""
        if stopped:
            status, reason = TrainingStatus.STOPPED, "stopped by the tuner"
        elif timed_out:
            status = TrainingStatus.FAILED
            reason = f"exceeded max_runtime={d.job_definition.max_runtime:g}s and was stopped"
        elif exit_code != 0:
            status, reason = TrainingStatus.FAILED, f"exited with code {exit_code}{last}"
        elif objective is None:
            status = TrainingStatus.FAILED
            reason = (
                f"objective metric {d.objective_metric_name!r} was never reported in the log{last}"
            )
        elif not math.isfinite(objective):
            status = TrainingStatus.FAILED
            reason = f"objective metric {d.objective_metric_name!r} is {objective}"
        ended = self.store.finish_training_job(run.job.name, status, objective, reason, exit_code)
        self._record_end(ended, run.config)

    def _record_end(self, job: TrainingJob, config: Config) -> None:
        if job.status is TrainingStatus.COMPLETED:
            self.completed += 1
            self.since_improvement += 1
            if self._improves(job):
                self.best = job
                self.since_improvement = 0
        elif job.status is TrainingStatus.FAILED:
            self.failed += 1
        if job.status is not TrainingStatus.STOPPED:
            completed = job.status is TrainingStatus.COMPLETED
            self.strategy.tell(config, job.objective if completed else None)
        self._emit("ended", job)

    def _improves(self, job: TrainingJob) -> bool:
        if job.objective is None:
            return False
        if self.best is None or self.best.objective is None:
            return True
        if self.definition.maximize:
            return job.objective > self.best.objective
        return job.objective < self.best.objective

    # Start and end

    def _replay(self) -> None:
        """Rebuild counters and strategy state from training jobs already in the store."""
        for job in self.store.list_training_jobs(self.name):
            self.launched = max(self.launched, job.number)
            if not job.status.terminal:
                job = self.store.finish_training_job(
                    job.name, TrainingStatus.FAILED, failure_reason="interrupted: the tuner ended"
                )
            self._record_end(job, job.hyperparameters)

    def _shutdown(self) -> None:
        """Stop every running job and wait until each has ended and been recorded."""
        for run in self.running.values():
            self.launcher.stop(run.handle)
        while self.running:
            self._poll_running()
            if self.running:
                time.sleep(0.02)
        self.launcher.close()

    def _emit(self, kind: str, job: TrainingJob) -> None:
        if self.on_event is not None:
            self.on_event(kind, job)
