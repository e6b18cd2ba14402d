"""MLflow tracking: a tuning job is a parent run, each training job a nested run under it.

What is written (to the experiment named by the tuning job's ``comparison`` tag, else by the
tuning job itself):
- the parent run (named after the tuning job): the definition's strategy, objective, limits
  and seed as params; its tags (``arm``, ``comparison``, ``seed``...), ``strategy``, and at
  the end ``status``, ``status_reason``, ``best_training_job`` and ``best_objective``;
- one nested run per training job (named after it): its hyperparameters (static and tuned) as
  params; every metric point read from its log as a metric, step k being the k-th value of
  that metric in the job's log (the stopping rules' step); when it ends the tags ``status``,
  ``objective``, ``failure_reason`` and ``exit_code``, its ``log.txt`` and ``output/`` as
  artifacts, and the MLflow run status (FINISHED, FAILED, or KILLED for a stopped job).

The scheduler's calls only put work on a bounded queue; one thread sends it. A failed call
(server down, slow, refusing) is logged and retried with backoff, the tuning job never waits
for it. When the queue is full new work is dropped and counted, and once the server answers
again the tracker writes the whole tuning job again from the store (what MLflow already has is
skipped), so nothing stays missing; resuming a tuning job does the same. ``close`` waits up to
``close_timeout`` seconds for the queue to drain and logs what was not delivered; ``catch_up``
(``tuner track NAME``) writes an ended tuning job's remainder once the server is back.
MLflow's own HTTP retries (``MLFLOW_HTTP_REQUEST_MAX_RETRIES``, ``MLFLOW_HTTP_REQUEST_TIMEOUT``)
apply to each call. ``MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT`` is set to true unless set (the
process's environment, so training jobs inherit it), to keep MLflow's "View run" lines out of
the tuner's output.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import math
import os
import posixpath
import queue
import re
import shutil
import tempfile
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from tuner.definition import TuningJobDefinition
from tuner.extras import require
from tuner.metrics import MetricPoint
from tuner.records import TrainingJob, TrainingStatus, TuningJob, TuningStatus
from tuner.storage import Store
from tuner.summary import best_of
from tuner.tracking.base import Tracker

log = logging.getLogger("tuner.tracking")

TUNING_TAG = "tuner.tuning_job"
TRAINING_TAG = "tuner.training_job"
CREATED_TAG = "tuner.created_at"  # the tuning job's creation time in its store
ROLE_TAG = "tuner.role"  # "tuning job" on the parent run, "training job" on nested ones
PARENT_TAG = "mlflow.parentRunId"
RUN_STATUS = {
    TrainingStatus.COMPLETED: "FINISHED",
    TrainingStatus.FAILED: "FAILED",
    TrainingStatus.STOPPED: "KILLED",
}
TUNING_RUN_STATUS = {
    TuningStatus.COMPLETED: "FINISHED",
    TuningStatus.FAILED: "FAILED",
    TuningStatus.STOPPED: "KILLED",
}
MAX_TAG = 5000  # MLflow's smallest tag value limit across versions is 5000 characters
MAX_PARAM = 6000  # MLflow's param value limit
MAX_KEY = 250  # MLflow's limit on param, metric and tag keys
BATCH = 1000  # metrics per log_batch call (MLflow's limit)
ARTIFACT_ATTEMPTS = 3  # a job's log and outputs are given up on after this many failures

Op = tuple[str, Any]


def _ms(seconds: float | None) -> int | None:
    return None if seconds is None else int(seconds * 1000)


def _word(value: Any) -> str:
    """A param as the training job saw it on its command line (booleans as true/false)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def mlflow_key(name: str) -> str:
    """``name`` as MLflow takes a param, metric or tag key: a name it takes stays as it is;
    otherwise characters other than letters, digits, ``_ - . /`` and space become ``_``, a path
    that would normalise to another name (``a//b``, ``/a``, ``..``) is flattened, and ``_``
    plus six hex digits of the name's SHA-1 end it, within ``MAX_KEY`` characters. The key
    depends on the name alone, whichever name comes first (a resumed tuner and ``tuner track``
    meet them in another order than the first tuner did); two names share one only when one of
    them is the other's key itself (``lr_group_d27fe6`` beside ``lr@group``)."""
    key = re.sub(r"[^\w.\- /]", "_", name)
    if posixpath.normpath(key) != key or key.startswith(("/", "..")) or key == ".":
        key = key.replace("/", "_")
        if key.startswith("..") or key == ".":
            key = "_" + key
    if key == name and 0 < len(name) <= MAX_KEY:
        return name
    digest = hashlib.sha1(name.encode("utf-8", "surrogatepass")).hexdigest()[:6]
    return f"{key[: MAX_KEY - 7]}_{digest}"


# Characters MLflow's HTTP artifact client cuts a file's name at (``#``, ``?``) or decodes
# (``%``): ``ckpt#1.txt`` and ``ckpt#2.txt`` both became ``ckpt``, the second overwriting the first.
ARTIFACT_ESCAPES = {"#": "_23", "?": "_3f", "%": "_25"}


def artifact_name(relative: str) -> str:
    """A file's path under ``output/`` as logged: ``ARTIFACT_ESCAPES`` replaced."""
    return "".join(ARTIFACT_ESCAPES.get(c, c) for c in relative)


def log_outputs(client: Any, run_id: str, output: Path) -> None:
    """Log the folder ``output`` as the run's ``output/`` artifacts; files whose names MLflow
    would mangle go under ``artifact_name`` (hard-linked into a staging folder beside it)."""
    files = [p.relative_to(output).as_posix() for p in output.rglob("*") if p.is_file()]
    if all(artifact_name(f) == f for f in files):
        client.log_artifacts(run_id, str(output), "output")
        return
    taken = set(files)
    with tempfile.TemporaryDirectory(dir=output.parent, prefix=".mlflow-output-") as staging:
        for relative in files:
            name = artifact_name(relative)
            if name != relative:  # escaped: never onto another file's name
                while name in taken:
                    name = f"{name}_"
                taken.add(name)
            target = Path(staging, name)
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.link(output / relative, target)
            except OSError:  # another file system, or links refused
                shutil.copy2(output / relative, target)
        client.log_artifacts(run_id, staging, "output")


def steps(points: Iterable[MetricPoint], counts: dict[str, int]) -> list[tuple[MetricPoint, int]]:
    """Each point with its step (the k-th value of its metric, 1-based); updates ``counts``."""
    out = []
    for point in points:
        counts[point.name] = counts.get(point.name, 0) + 1
        out.append((point, counts[point.name]))
    return out


class MlflowTracker(Tracker):
    """Mirrors one tuning job into MLflow at ``uri`` (see the module docstring).

    Raises ``MissingExtra`` when mlflow is not installed."""

    def __init__(
        self,
        uri: str,
        tuning_job: str,
        definition: TuningJobDefinition,
        store: Store,
        queue_size: int = 10_000,
        close_timeout: float = 30.0,
        max_backoff: float = 10.0,
    ) -> None:
        require("mlflow", "mlflow", "tracking_uri (MLflow tracking)")
        # MlflowClient.set_terminated prints two "View run" lines to stdout per run; the tuner's
        # output (progress bar, summary) stays its own. The user's setting wins.
        os.environ.setdefault("MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT", "true")
        from mlflow.tracking import MlflowClient

        self.uri = uri
        self.name = tuning_job
        self.definition = definition
        self.store = store
        self.close_timeout = close_timeout
        self.max_backoff = max_backoff
        self.client = MlflowClient(tracking_uri=uri)
        self.sent = 0  # operations delivered
        self.dropped: Counter[str] = Counter()  # operations dropped because the queue was full
        self.errors = 0  # failed calls (each retried)
        self.refused = 0  # calls the server refused for good (4xx but 429), skipped
        self.last_error: str | None = None
        self._queue: queue.Queue[Op] = queue.Queue(queue_size)
        self._counts: dict[str, dict[str, int]] = {}  # job -> metric -> values seen
        self._ended: set[str] = set()
        self._behind = threading.Event()  # something was dropped: write again from the store
        self._closing = threading.Event()
        self._abandon = threading.Event()
        self._experiment: str | None = None
        self._parent: str | None = None
        self._runs: dict[str, str] = {}  # training job -> run id
        self._held: Op | None = None  # taken from the queue, to be sent next
        self._inflight: Op | None = None  # being sent (retried until it goes through)
        self._done: set[str] = set()  # training jobs whose runs MLflow holds as ended
        self._artifact_failures: Counter[str] = Counter()  # training job -> failed uploads
        self._thread = threading.Thread(target=self._work, name=f"mlflow-{tuning_job}", daemon=True)

    # Called by the scheduler: quick, never raising

    def start(self) -> None:
        for job in self.store.list_training_jobs(self.name):
            self._counts[job.name] = {}
            steps(self.store.metric_points(job.name), self._counts[job.name])
            if job.status.terminal:
                self._ended.add(job.name)
        self._put(("sync", None))
        self._thread.start()

    def job_started(self, job: TrainingJob) -> None:
        self._counts.setdefault(job.name, {})
        self._put(("run", job))

    def points(self, job: TrainingJob, points: Sequence[MetricPoint]) -> None:
        self._put(("metrics", (job, steps(points, self._counts.setdefault(job.name, {})))))

    def job_ended(self, job: TrainingJob) -> None:
        if job.name in self._ended:
            return
        self._ended.add(job.name)
        self._put(("end", job))

    def close(self, record: TuningJob | None) -> None:
        if record is not None:
            self._put(("finish", record))
        self._closing.set()
        if not self._thread.is_alive():
            return
        self._thread.join(self.close_timeout)
        if self._thread.is_alive():
            self._abandon.set()
            left = Counter(kind for kind, _ in list(self._queue.queue))
            left.update(op[0] for op in (self._held, self._inflight) if op is not None)
            undelivered = left + self.dropped
            if record is not None:
                undelivered["finish"] = 1  # queued above; counted once
            log.error(
                "MLflow tracking of %s at %s gave up after waiting %gs: not delivered %s "
                "(last error: %s); the store holds all of it: `tuner track %s` writes it once "
                "the server answers",
                self.name,
                self.uri,
                self.close_timeout,
                _describe(undelivered) or "nothing queued",
                self.last_error or "none yet: a call was still inside MLflow's own retries",
                self.name,
            )
        elif self.dropped:
            log.info("MLflow tracking of %s caught up from the store", self.name)

    def catch_up(self) -> None:
        """Write the whole tuning job from the store now, in this thread, skipping what MLflow
        already holds (``tuner track``: a tuning job that ended while its server was away).
        MLflow's errors are raised, not retried."""
        self._sync(final=True)

    def _put(self, op: Op) -> None:
        try:
            self._queue.put_nowait(op)
        except queue.Full:
            if not self.dropped:
                log.warning(
                    "MLflow tracking of %s is behind (queue full); dropping new work and "
                    "writing the tuning job again from the store once %s answers",
                    self.name,
                    self.uri,
                )
            self.dropped[op[0]] += 1
            self._behind.set()

    # The sending thread

    def _work(self) -> None:
        while not self._abandon.is_set():
            if self._behind.is_set():
                self._behind.clear()
                if not self._retry(lambda: self._sync(final=True)):
                    return
                continue
            try:
                kind, payload = self._held or self._queue.get(timeout=0.2)
            except queue.Empty:
                if self._closing.is_set() and not self._behind.is_set():
                    return
                continue
            self._held = None
            if kind == "metrics":
                payload = self._more_points(payload)
            handler: Callable[[Any], None] = getattr(self, f"_do_{kind}")
            self._inflight = (kind, payload)
            if not self._retry(functools.partial(handler, payload)):
                return
            self._inflight = None

    def _more_points(
        self, payload: tuple[TrainingJob, list[tuple[MetricPoint, int]]]
    ) -> tuple[TrainingJob, list[tuple[MetricPoint, int]]]:
        """The points of ``payload`` and of the metrics operations of the same job queued right
        after it (up to one batch), so a chatty job costs one call per batch, not per read."""
        job, points = payload
        points = list(points)
        while len(points) < BATCH:
            try:
                op = self._queue.get_nowait()
            except queue.Empty:
                break
            if op[0] != "metrics" or op[1][0].name != job.name:
                self._held = op
                break
            points += op[1][1]
        return job, points

    def _retry(self, call: Callable[[], None]) -> bool:
        """Run ``call`` until it succeeds (True) or the tracker is abandoned (False)."""
        delay = 0.5
        while True:
            try:
                call()
            except Exception as exc:
                if _refused(exc):
                    self._note_refusal(exc)
                    return True
                self.errors += 1
                self.last_error = f"{type(exc).__name__}: {str(exc)[:300]}"
                log.warning(
                    "MLflow tracking of %s at %s failed, retrying in %.1fs: %s",
                    self.name,
                    self.uri,
                    delay,
                    self.last_error,
                )
                if self._abandon.wait(delay):
                    return False
                delay = min(delay * 2, self.max_backoff)
                continue
            self.sent += 1
            if self.last_error is not None:
                log.warning("MLflow tracking of %s at %s works again", self.name, self.uri)
                self.last_error = None
            return True

    # Runs

    def _parent_run(self) -> str:
        if self._parent is not None:
            return self._parent
        d = self.definition
        experiment_name = d.tags.get("comparison") or self.name
        experiment = self.client.get_experiment_by_name(experiment_name)
        if experiment is not None and experiment.lifecycle_stage == "deleted":
            from mlflow.exceptions import MlflowException
            from mlflow.protos.databricks_pb2 import INVALID_PARAMETER_VALUE

            raise MlflowException(  # a refusal: logged once, skipped, `tuner track` later
                f"experiment {experiment_name!r} is deleted in MLflow and its name stays taken: "
                "restore it (mlflow experiments restore) or purge it (mlflow gc), then run "
                f"`tuner track {self.name}`",
                error_code=INVALID_PARAMETER_VALUE,  # a 400: refused, not retried
            )
        self._experiment = (
            experiment.experiment_id
            if experiment is not None
            else self.client.create_experiment(experiment_name)
        )
        # Name and creation time: a tuning job of the same name from another store (or one
        # deleted and made again) gets a parent run of its own.
        created = repr(self.store.get_tuning_job(self.name).created_at)
        filter_string = (
            f"tags.`{TUNING_TAG}` = '{self.name}' and tags.`{CREATED_TAG}` = '{created}' "
            f"and tags.`{ROLE_TAG}` = 'tuning job'"
        )
        found = self._find(filter_string)
        tags = {
            **d.tags,
            "strategy": d.strategy,
            TUNING_TAG: self.name,
            CREATED_TAG: created,
            ROLE_TAG: "tuning job",
        }
        if found is None:
            run_id: str = self.client.create_run(
                self._experiment,
                run_name=self.name,
                start_time=_ms(self.store.get_tuning_job(self.name).created_at),
                tags=self._tags(tags),
            ).info.run_id
            self._find(filter_string, keep=run_id)  # twins of a retried create go
        else:
            run_id = found.info.run_id
        params = {
            "strategy": d.strategy,
            "objective_metric_name": d.objective_metric_name,
            "objective_type": d.objective_type,
            "max_jobs": d.max_jobs,
            "max_parallel_jobs": d.max_parallel_jobs,
            "random_seed": d.random_seed,
            "early_stopping_type": d.early_stopping_type,
        }
        self._tolerant(lambda: self._log(run_id, params=params))
        self._parent = run_id  # known once its params are there, as a training job's (_run)
        return run_id

    def _run(self, job: TrainingJob) -> str:
        if job.name in self._runs:
            return self._runs[job.name]
        parent = self._parent_run()
        filter_string = f"tags.`{PARENT_TAG}` = '{parent}' and tags.`{TRAINING_TAG}` = '{job.name}'"
        found = self._find(filter_string)
        if found is not None:
            run_id: str = found.info.run_id
            if found.info.status != "RUNNING":
                self._done.add(job.name)
        else:
            d = self.definition
            tags = {
                **d.tags,
                "strategy": d.strategy,
                TUNING_TAG: self.name,
                TRAINING_TAG: job.name,
                ROLE_TAG: "training job",
                PARENT_TAG: parent,
                "status": job.status.value,
            }
            run_id = self.client.create_run(
                self._experiment or "",
                run_name=job.name,
                start_time=_ms(job.started_at or job.created_at),
                tags=self._tags(tags),
            ).info.run_id
            self._find(filter_string, keep=run_id)  # twins of a retried create go
        static = self.definition.job_definition.static_hyperparameters
        self._tolerant(lambda: self._log(run_id, params={**static, **job.hyperparameters}))
        # known once its params are there (a refused one is skipped): a server gone between
        # the run's creation and its params fails this call, and its retry finds the run and
        # logs them (the run was known first, and its params were never written)
        self._runs[job.name] = run_id
        return run_id

    def _find(self, filter_string: str, keep: str | None = None) -> Any:
        """The run of the experiment that matches, or None. MLflow's client retries a
        ``create_run`` the server did take when its answer was lost (a gateway's 504, a
        timeout): the twins, empty (no params, no metrics), are deleted. Kept: ``keep``, else a
        run holding params or metrics (the one that was used), else the first."""
        runs = self.client.search_runs([self._experiment or ""], filter_string, max_results=20)
        if not runs:
            return None
        chosen = next((r for r in runs if r.info.run_id == keep), None) or next(
            (r for r in runs if r.data.params or r.data.metrics), runs[0]
        )
        for run in runs:  # only empty twins: a run holding data is never deleted
            if run is not chosen and not (run.data.params or run.data.metrics):
                log.info(
                    "deleting MLflow run %s, a twin of %s", run.info.run_id, chosen.info.run_id
                )
                self._tolerant(functools.partial(self.client.delete_run, run.info.run_id))
        return chosen

    def _log(
        self,
        run_id: str,
        params: dict[str, Any] | None = None,
        tags: dict[str, Any] | None = None,
        metrics: Sequence[tuple[MetricPoint, int]] = (),
    ) -> None:
        from mlflow.entities import Metric, Param, RunTag

        param_list = [Param(mlflow_key(k), _word(v)[:MAX_PARAM]) for k, v in (params or {}).items()]
        tag_list = [
            RunTag(mlflow_key(k), "" if v is None else str(v)[:MAX_TAG])
            for k, v in (tags or {}).items()
        ]
        metric_list = [
            Metric(mlflow_key(p.name), p.value, _ms(p.timestamp) or 0, step) for p, step in metrics
        ]
        for i in range(0, max(len(metric_list), 1), BATCH):
            self.client.log_batch(
                run_id,
                metrics=metric_list[i : i + BATCH],
                params=param_list if i == 0 else [],
                tags=tag_list if i == 0 else [],
            )

    def _tags(self, tags: dict[str, Any]) -> dict[str, str]:
        """Tags as a new run takes them: keys MLflow takes, values within its limit."""
        return {mlflow_key(k): "" if v is None else str(v)[:MAX_TAG] for k, v in tags.items()}

    def _tolerant(self, call: Callable[[], None]) -> None:
        """Run one part of an operation whose refusal (a 4xx) must not stop the rest of it."""
        try:
            call()
        except Exception as exc:
            if not _refused(exc):
                raise
            self._note_refusal(exc)

    def _note_refusal(self, exc: Exception) -> None:
        self.refused += 1
        log.log(
            logging.ERROR if self.refused == 1 else logging.DEBUG,
            "MLflow at %s refused part of the tracking of %s, which is skipped "
            "(refusals so far: %d): %s",
            self.uri,
            self.name,
            self.refused,
            f"{type(exc).__name__}: {str(exc)[:300]}",
        )

    # Operations

    def _do_run(self, job: TrainingJob) -> None:
        self._run(job)

    def _do_metrics(self, payload: tuple[TrainingJob, list[tuple[MetricPoint, int]]]) -> None:
        job, points = payload
        if points:
            self._log(self._run(job), metrics=points)

    def _do_end(self, job: TrainingJob) -> None:
        run_id = self._run(job)
        objective = job.objective if job.objective is None or math.isfinite(job.objective) else None
        tags = {
            "status": job.status.value,
            "objective": "" if objective is None else repr(objective),
            "failure_reason": job.failure_reason or "",
            "exit_code": "" if job.exit_code is None else job.exit_code,
        }
        self._tolerant(lambda: self._log(run_id, tags=tags))
        if job.workdir is not None and self._artifact_failures[job.name] < ARTIFACT_ATTEMPTS:
            try:
                self._tolerant(lambda: self._artifacts(run_id, Path(job.workdir or "")))
            except Exception:  # retried with the operation, a few times, then left out
                self._artifact_failures[job.name] += 1
                if self._artifact_failures[job.name] < ARTIFACT_ATTEMPTS:
                    raise
                log.error(
                    "MLflow at %s did not take the log and outputs of %s after %d attempts; "
                    "they are left out (the job's folder holds them)",
                    self.uri,
                    job.name,
                    ARTIFACT_ATTEMPTS,
                )
        self.client.set_terminated(
            run_id, RUN_STATUS.get(job.status, "FAILED"), end_time=_ms(job.ended_at)
        )
        self._done.add(job.name)

    def _artifacts(self, run_id: str, workdir: Path) -> None:
        if (workdir / "log.txt").is_file():
            self.client.log_artifact(run_id, str(workdir / "log.txt"))
        output = workdir / "output"
        if output.is_dir() and any(output.iterdir()):
            log_outputs(self.client, run_id, output)

    def _do_finish(self, record: TuningJob) -> None:
        run_id = self._parent_run()
        jobs = self.store.list_training_jobs(self.name)
        best = best_of(jobs, self.definition.maximize)
        tags = {
            "status": record.status.value,
            "status_reason": record.status_reason or "",
            "best_training_job": best.name if best else "",
            "best_objective": "" if best is None or best.objective is None else best.objective,
        }
        self._tolerant(lambda: self._log(run_id, tags=tags))
        status = TUNING_RUN_STATUS.get(record.status)
        if status is not None:
            self.client.set_terminated(run_id, status, end_time=_ms(record.ended_at))

    def _do_sync(self, _: None) -> None:
        self._sync(final=False)

    def _sync(self, final: bool) -> None:
        """Write the tuning job from the store, skipping what MLflow already holds; with
        ``final``, also the tuning job's end when it has ended."""
        self._parent_run()
        for job in self.store.list_training_jobs(self.name):
            if job.started_at is None and not job.status.terminal:
                continue
            run_id = self._run(job)
            stored = steps(self.store.metric_points(job.name), {})
            for name in sorted({p.name for p, _ in stored}):
                history = self.client.get_metric_history(run_id, mlflow_key(name))
                held = {(m.step, m.timestamp) for m in history}
                missing = [
                    (p, k)
                    for p, k in stored
                    if p.name == name and (k, _ms(p.timestamp)) not in held
                ]
                if missing:
                    self._log(run_id, metrics=missing)
            if job.status.terminal and job.name not in self._done:
                self._do_end(job)
        record = self.store.get_tuning_job(self.name)
        if final and record.status.terminal:
            self._do_finish(record)


def _refused(exc: Exception) -> bool:
    """Whether MLflow refused a call for good (a 4xx answer other than 429): retrying the same
    call cannot help."""
    from mlflow.exceptions import MlflowException

    if not isinstance(exc, MlflowException):
        return False
    code = exc.get_http_status_code()
    return 400 <= code < 500 and code != 429


def _describe(counts: Counter[str]) -> str:
    words = {
        "sync": "a catch-up from the store",
        "run": "started jobs",
        "metrics": "batches of metric points",
        "end": "job ends",
        "finish": "the tuning job's end",
    }
    return ", ".join(f"{n} {words.get(k, k)}" for k, n in counts.items() if n)
