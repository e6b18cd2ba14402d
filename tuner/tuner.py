"""``HyperparameterTuner``: the Python front door, shaped like SageMaker's, running in-process.

    tuner = HyperparameterTuner(
        job_definition={"command": ["python", "train.py"]},
        objective_metric_name="validation-accuracy",
        hyperparameter_ranges={"learning_rate": ContinuousParameter(1e-3, 0.5, "Logarithmic")},
        metric_definitions=[{"Name": "validation-accuracy", "Regex": "accuracy=([0-9.]+)"}],
        max_jobs=20, max_parallel_jobs=2,
    )
    tuner.fit()
    tuner.best_training_job()

Everything is validated in the constructor (``ValidationError`` names the field, the rule and
the value); ``fit`` records the tuning job in the store before anything is launched.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import secrets
import sys
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from tuner import signal_safe
from tuner.analytics import TuningJobAnalytics
from tuner.client import REQUEST_TIMEOUT, ServiceClient
from tuner.definition import JobDefinition, TuningJobDefinition, check_working_directory
from tuner.env_values import positive_seconds
from tuner.errors import NotFoundError, NotResumable, TunerError, ValidationError
from tuner.fidelity import tuning_job_report
from tuner.metrics import MetricDefinition
from tuner.owners import owner_is_gone, owner_text, process_owner
from tuner.parameters import Parameter
from tuner.progress import ProgressBar
from tuner.records import TrainingJob, TrainingStatus, TuningStatus
from tuner.scheduler import (
    SIGNALLED,
    STOPPED_BY_TUNER,
    EventHandler,
    Scheduler,
)
from tuner.storage import Store
from tuner.storage.store import RUN_PATIENCE
from tuner.strategies import strategy_name
from tuner.summary import STOPPED_BY_SIGNAL, best_of, describe
from tuner.warm_start import WarmStartConfig, resolve


def _given(options: Any) -> Any:
    """Options as given, {} for None: 0, "" or [] are refused by the definition, not taken for
    none (as YAML refuses them)."""
    return {} if options is None else options


def _both(first: EventHandler, second: EventHandler | None) -> EventHandler:
    """An event handler that calls ``first``, then ``second`` when there is one."""

    def handler(kind: str, job: TrainingJob) -> None:
        first(kind, job)
        if second is not None:
            second(kind, job)

    return handler


def lease_seconds() -> float:
    """How long a process's hold on a tuning job lasts unless renewed (``TUNER_LEASE_SECONDS``,
    default 30): after a crash, ``resume`` or another service may take the job over then."""
    raw = os.environ.get("TUNER_LEASE_SECONDS", "30")
    value = positive_seconds(raw)
    if value is None:
        raise ValidationError(f"TUNER_LEASE_SECONDS must be a number of seconds > 0; got {raw!r}")
    return value


def default_name(prefix: str = "tuning") -> str:
    return f"{prefix}-{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(2)}"


class HyperparameterTuner:
    """Tunes a training command's hyperparameters against a metric read from its log.

    Args:
        job_definition: a ``JobDefinition`` or mapping: ``command`` (argv list),
            ``static_hyperparameters``, ``gpus``/``gpus_per_job``/``jobs_per_gpu``,
            ``max_runtime`` seconds, ``environment``, ``output_path``.
        objective_metric_name: the metric (one of ``metric_definitions``) to optimise.
        hyperparameter_ranges: name -> ContinuousParameter/IntegerParameter/CategoricalParameter.
        metric_definitions: ``[{"Name": ..., "Regex": ...}]``, one capture group each.
        strategy: ``"Bayesian"`` (default), ``"Random"``, ``"TPE"``, ``"Grid"`` or
            ``"Hyperband"`` (configured by ``strategy_config``).
        objective_type: ``"Maximize"`` or ``"Minimize"``.
        max_jobs / max_parallel_jobs: total and concurrent training jobs (``max_jobs`` left
            out: 10, or a Grid's whole grid).
        random_seed: makes the suggestions repeatable.
        max_failed_jobs: the tuning job fails once this many training jobs failed.
        target_objective_value: stop as soon as a job reaches it.
        max_jobs_without_improvement: stop after this many completed jobs without a new best.
        min_relative_improvement: a new best counts as an improvement for
            ``max_jobs_without_improvement`` only when it beats the previous best by at least
            this fraction of it (SageMaker's ``BestObjectiveNotImproving``: 0.01; default 0).
        max_tuning_runtime: seconds from the tuning job's creation after which it ends
            (SageMaker's ``ResourceLimits.MaxRuntimeInSeconds``); running jobs are stopped.
        objective_aggregation: ``"Last"`` reported value (default) or ``"Best"``.
        strategy_options: keyword arguments of the strategy (e.g. ``n_initial_points``).
        strategy_config: Hyperband's ``resource`` (a static hyperparameter, default
            ``epochs``), ``min_resource``, ``max_resource`` (default: the static value),
            ``reduction_factor`` (3) and ``sampler`` (``"Random"`` or ``"Bayesian"``).
        early_stopping_type: ``"Off"`` (default) or ``"Auto"``: the median stopping rule
            stops jobs whose intermediate objective values are worse than the median of
            earlier jobs' running averages at the same step.
        early_stopping_options: the median rule's ``min_jobs`` (3) and ``warmup_steps`` (1).
        warm_start_config: ``{"parents": [names], "type": "IdenticalDataAndAlgorithm" |
            "TransferLearning"}`` (or a ``WarmStartConfig``): start from the results of up to
            five ended tuning jobs in the same store (``tuner.warm_start`` says what each type
            takes and what must match); checked when ``fit`` creates the job.
        storage: SQLAlchemy URL of the store (default ``$TUNER_DATABASE_URL``, else
            ``sqlite:///tuner-runs/tuner.db``).
        name: the tuning job's name (default: generated, unique).
        tracking_uri: an MLflow tracking URI (``http://host:5000``, ``databricks``...): the
            tuning job is written there as a parent run with one nested run per training job,
            as it progresses (``tuner.tracking``; needs the ``mlflow`` extra).
        service_url / service_token: submit to and follow a running tuner service (``tuner
            serve``) instead of running in this process; the token defaults to
            ``$TUNER_API_TOKEN``.
    """

    def __init__(
        self,
        job_definition: JobDefinition | Mapping[str, Any],
        objective_metric_name: str,
        hyperparameter_ranges: Mapping[str, Parameter],
        metric_definitions: Sequence[MetricDefinition | Mapping[str, str]],
        strategy: str = "Bayesian",
        objective_type: str = "Maximize",
        max_jobs: int | None = None,
        max_parallel_jobs: int = 1,
        random_seed: int | None = None,
        max_failed_jobs: int | None = None,
        target_objective_value: float | None = None,
        max_jobs_without_improvement: int | None = None,
        max_tuning_runtime: float | None = None,
        objective_aggregation: str = "Last",
        strategy_options: Mapping[str, Any] | None = None,
        strategy_config: Mapping[str, Any] | None = None,
        early_stopping_type: str = "Off",
        early_stopping_options: Mapping[str, Any] | None = None,
        warm_start_config: WarmStartConfig | Mapping[str, Any] | None = None,
        storage: str | None = None,
        name: str | None = None,
        service_url: str | None = None,
        service_token: str | None = None,
        tracking_uri: str | None = None,
        min_relative_improvement: float = 0.0,
    ) -> None:
        if not isinstance(hyperparameter_ranges, Mapping):
            raise ValidationError(
                "hyperparameter_ranges must be a mapping of names to ContinuousParameter, "
                f"IntegerParameter or CategoricalParameter, got {hyperparameter_ranges!r:.100}"
            )
        ranges: dict[str, Any] = {}
        for key, rng in dict(hyperparameter_ranges).items():
            if not hasattr(rng, "to_dict"):
                raise ValidationError(
                    f"hyperparameter_ranges[{key!r}] must be a ContinuousParameter, "
                    f"IntegerParameter or CategoricalParameter, got {rng!r}"
                )
            ranges[key] = rng.to_dict()
        jd = (
            job_definition.model_dump()
            if isinstance(job_definition, JobDefinition)
            else _plain(job_definition)
        )
        try:
            grid = strategy_name(strategy) == "Grid"
        except ValidationError:  # the definition names the rule
            grid = False
        limit = {"max_jobs": max_jobs} if max_jobs is not None else {} if grid else {"max_jobs": 10}
        definition = TuningJobDefinition.parse(
            {
                **limit,
                "name": name,
                "job_definition": jd,
                "objective_metric_name": objective_metric_name,
                "objective_type": objective_type,
                "objective_aggregation": objective_aggregation,
                "hyperparameter_ranges": ranges,
                "metric_definitions": [
                    m.to_dict() if isinstance(m, MetricDefinition) else _plain(m)
                    for m in metric_definitions
                ]
                if isinstance(metric_definitions, Iterable)
                and not isinstance(metric_definitions, str | bytes | Mapping)
                else metric_definitions,
                "strategy": strategy,
                "strategy_options": _plain(_given(strategy_options)),
                "strategy_config": _plain(_given(strategy_config)),
                "early_stopping_type": early_stopping_type,
                "early_stopping_options": _plain(_given(early_stopping_options)),
                "max_parallel_jobs": max_parallel_jobs,
                "max_failed_jobs": max_failed_jobs,
                "random_seed": random_seed,
                "target_objective_value": target_objective_value,
                "max_jobs_without_improvement": max_jobs_without_improvement,
                "min_relative_improvement": min_relative_improvement,
                "max_tuning_runtime": max_tuning_runtime,
                "tracking_uri": tracking_uri,
                "warm_start_config": warm_start_config.model_dump()
                if isinstance(warm_start_config, WarmStartConfig)
                else warm_start_config,
            }
        )
        self._init(definition, storage, service_url, service_token)
        if not service_url:  # a service checks its own folders
            check_working_directory(definition.job_definition)

    def _init(
        self,
        definition: TuningJobDefinition,
        storage: str | None,
        service_url: str | None = None,
        service_token: str | None = None,
        client: ServiceClient | None = None,
    ) -> None:
        self.definition = definition
        if client is None and service_url:
            client = ServiceClient(service_url, service_token)
        self.client = client
        self._store = None if client is not None else Store(storage, patience=RUN_PATIENCE)
        self.name: str | None = definition.name
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._signalled = False  # interrupt() was called
        self._scheduler: Scheduler | None = None
        self._error: BaseException | None = None

    @classmethod
    def from_definition(
        cls,
        definition: TuningJobDefinition | Mapping[str, Any],
        storage: str | None = None,
        service_url: str | None = None,
        service_token: str | None = None,
    ) -> HyperparameterTuner:
        """A tuner for a definition document (a parsed YAML file, say)."""
        tuner = cls.__new__(cls)
        parsed = TuningJobDefinition.parse(
            dict(definition) if isinstance(definition, Mapping) else definition
        )
        tuner._init(parsed, storage, service_url, service_token)
        if not service_url:  # a service checks its own folders
            check_working_directory(parsed.job_definition)
        return tuner

    @classmethod
    def attach(
        cls,
        name: str,
        storage: str | None = None,
        service_url: str | None = None,
        service_token: str | None = None,
    ) -> HyperparameterTuner:
        """The tuner of an existing tuning job, from the store or a service (raises
        ``NotFoundError``)."""
        if service_url:
            client = ServiceClient(service_url, service_token)
            definition = client.describe(name)["definition"]
        else:
            try:
                store = Store(storage, create=False)
            except NotFoundError as exc:  # no store there at all
                raise NotFoundError(f"no tuning job named {name!r}: {exc}") from None
            definition = store.get_tuning_job(name).definition
        tuner = cls.__new__(cls)
        parsed = TuningJobDefinition.from_store(definition, name)
        tuner._init(parsed, storage, service_url, service_token)
        tuner.name = name
        return tuner

    @property
    def store(self) -> Store:
        if self._store is None:
            raise TunerError("this tuner talks to a service; it has no store of its own")
        return self._store

    # Running

    def fit(
        self,
        wait: bool = True,
        on_event: EventHandler | None = None,
        progress: bool | None = None,
    ) -> HyperparameterTuner:
        """Record the tuning job and run it (in a background thread when ``wait=False``; on the
        service when there is one, ``on_event`` then unused). Without a name every call is a new
        tuning job, newly named; a named job that exists, or a fit still running, is refused.

        ``progress``: a progress bar on stderr while ``fit`` waits (one step per ended training
        job, the best objective so far); ``None`` (default) shows it when stderr is a terminal,
        ``False`` never, ``True`` always."""
        if self.client is not None:
            if self.name is not None:  # its last fit(wait=False) may still run there
                try:
                    last = self.client.describe(self.name)["status"]
                except NotFoundError:  # named, not created yet
                    last = TuningStatus.COMPLETED.value
                if not TuningStatus(last).terminal:
                    raise ValidationError(
                        f"tuning job {self.name!r} is still running on the service; wait() for "
                        "it or stop() it before fit() starts another"
                    )
            self.name = self.client.create(self.definition.to_json())["name"]
            if wait:
                try:
                    self.wait(progress=progress)
                except KeyboardInterrupt:  # as in-process: Ctrl-C stops what fit() started
                    print(
                        f"tuner: interrupted; asking the service to stop tuning job {self.name} "
                        "(its running training jobs are stopped)",
                        file=sys.stderr,
                    )
                    self.client.stop(self.name)
                    raise
            return self
        if self._thread is not None and self._thread.is_alive():
            raise ValidationError(
                f"tuning job {self.name!r} is still running in this tuner; wait() for it or "
                "stop() it before fit() starts another"
            )
        requested = self.definition.name  # None: every fit() is a new tuning job, newly named
        if requested is not None and self._exists(requested):
            raise ValidationError(
                f"tuning job {requested!r} already exists; attach to it or choose another name"
            )
        self.name = requested or default_name()
        self._fresh_run()
        jd = self.definition.job_definition
        definition = self.definition.model_copy(
            update={
                "name": self.name,
                "job_definition": jd.model_copy(
                    update={
                        "working_directory": str(Path(jd.working_directory or ".").resolve()),
                        "output_path": str(Path(jd.output_path).resolve()),
                    }
                ),
            }
        )
        check_working_directory(definition.job_definition)
        owner = process_owner()
        scheduler = Scheduler(  # first: a missing extra or launcher error records nothing
            definition,
            self.name,
            self.store,
            on_event=on_event,
            stop_event=self._stop,
            owner=owner,
            lease_seconds=lease_seconds(),
        )
        warm = resolve(self.store, definition)  # parents checked: a refusal stores nothing
        self.store.create_tuning_job(
            self.name,
            definition.to_json(),
            owner,
            lease_seconds(),
            warm.to_json() if warm else None,
        )
        self._use(scheduler)
        if wait:
            bar = self._progress_bar(progress)
            scheduler.on_event = _both(bar, on_event)
            try:
                self._run(scheduler)
            finally:
                bar.close()
            return self
        self._thread = threading.Thread(
            target=self._run_in_background,
            args=(scheduler,),
            name=f"tuner-{self.name}",
            daemon=True,
        )
        self._thread.start()
        atexit.register(self._warn_if_left_running)
        return self

    def _warn_if_left_running(self) -> None:
        """At the interpreter's exit: a ``fit(wait=False)`` still running is left (its thread
        dies with the process, its training jobs run on unwatched), so say how to go on."""
        if self._thread is not None and self._thread.is_alive():
            running = len(self._scheduler.running) if self._scheduler is not None else 0
            jobs = {0: "no training job of it runs now"}.get(
                running,
                f"its {running} running training job{' runs' if running == 1 else 's run'} on "
                "unwatched",
            )
            print(
                f"tuner: this process ends while tuning job {self.name} still runs in it: "
                f"{jobs}; `tuner resume {self.name}` continues it "
                f"(once its lease has run out), `tuner stop {self.name}` stops them "
                "(call wait() before the end to avoid this)",
                file=sys.stderr,
            )

    def resume(self, on_event: EventHandler | None = None) -> HyperparameterTuner:
        """Continue an attached tuning job that no process runs any more (its process died,
        or Ctrl-C / SIGTERM stopped it: Stopped "interrupted"): running training jobs are
        re-attached, lost ones and those the interruption stopped run again without using up
        ``max_jobs``, nothing runs twice. Raises ``NotResumable`` (a ``ValidationError``) when
        it has ended otherwise or another process holds it, and ``ValidationError`` for a bad
        launcher setting (e.g. ``TUNER_MAX_LOCAL_JOBS``) before taking anything over."""
        name = self._require_name()
        self._fresh_run()
        owner = process_owner()
        scheduler = Scheduler(  # first: a launcher error (a bad setting) claims nothing
            self.definition,
            name,
            self.store,
            on_event=on_event,
            stop_event=self._stop,
            owner=owner,
            lease_seconds=lease_seconds(),
        )
        try:
            self._claim(name, owner)
        except BaseException:
            scheduler.launcher.close()
            raise
        self._use(scheduler)
        self._run(scheduler)
        return self

    def _claim(self, name: str, owner: str) -> None:
        """Take tuning job ``name`` over for ``owner`` (``resume``); ``NotResumable`` when it
        has ended otherwise or another process holds it."""
        record = self.store.get_tuning_job(name)
        reopened = record.status is TuningStatus.STOPPED and self.store.reopen_tuning_job(
            name, SIGNALLED, STOPPED_BY_TUNER, STOPPED_BY_SIGNAL, owner, lease_seconds()
        )
        if reopened or record.status is TuningStatus.STOPPED:
            record = self.store.get_tuning_job(name)  # reopened, or by another process
        if record.status.terminal:
            raise NotResumable(
                f"tuning job {name} has ended ({record.status.value}): {record.status_reason}; "
                "only one whose process died, or that Ctrl-C or SIGTERM stopped, can be "
                "resumed: start another (warm_start_config takes this one's results)"
            )
        gone = record.owner if owner_is_gone(record.owner) else None  # killed on this machine
        if not reopened and not self.store.claim_tuning_job(name, owner, lease_seconds(), gone):
            record = self.store.get_tuning_job(name)  # as it is now: who won, or that it ended
            if record.status.terminal:
                raise NotResumable(f"tuning job {name} has ended ({record.status.value})")
            raise NotResumable(
                f"tuning job {name} is being run by {owner_text(record.owner)} (its lease has "
                "not expired)"
            )

    def _use(self, scheduler: Scheduler) -> None:
        """Run with ``scheduler`` from now on; an ``interrupt`` that came before it existed
        (a signal during start-up) ends it as interrupted too, not as stopped on request."""
        self._scheduler = scheduler
        if self._signalled:
            scheduler.interrupt()

    def _exists(self, name: str) -> bool:
        try:
            self.store.get_tuning_job(name)
        except TunerError:
            return False
        return True

    def _run_in_background(self, scheduler: Scheduler) -> None:
        try:
            self._run(scheduler)
        except BaseException as exc:  # reported by wait()
            self._error = exc

    def _fresh_run(self) -> None:
        """Before a run starts: forget a stop asked of an earlier one, but not an
        ``interrupt`` that came since the last run ended (a signal during start-up, after a
        command installed its handler)."""
        if not self._signalled:
            self._stop.clear()
            if self._signalled:  # it came in between
                self._stop.set()

    def _run(self, scheduler: Scheduler) -> None:
        """Run ``scheduler`` to its end; an ``interrupt`` is this run's only."""
        try:
            scheduler.run()
        finally:
            self._signalled = False

    def wait(
        self,
        timeout: float | None = None,
        poll_interval: float = 0.5,
        progress: bool | None = False,
    ) -> dict[str, Any]:
        """Block until the tuning job has ended (also one run by another process or a
        service); returns ``describe()``. ``progress`` as in ``fit`` (off by default here).
        A stop asked of a tuning job whose process is gone is carried out here, as ``stop``
        does; that takes up to the jobs' grace period, which may run past ``timeout``."""
        name = self._require_name()
        deadline = None if timeout is None else time.monotonic() + timeout
        if self._thread is not None:
            self._thread.join(timeout)
            if self._error is not None:
                raise self._error
        bar = self._progress_bar(progress)
        try:
            while True:
                description = self._poll(name, deadline, timeout)
                bar.show(description)
                if TuningStatus(description["status"]).terminal:
                    return description
                stopping = description["status"] == TuningStatus.STOPPING.value
                if stopping and self._stop_if_orphaned():
                    continue  # stopped here: describe how it ended
                if deadline is not None and time.monotonic() >= deadline:
                    raise TimeoutError(
                        f"tuning job {name} still {description['status']} after {timeout}s"
                    )
                time.sleep(poll_interval)
        finally:
            bar.close()

    def _poll(self, name: str, deadline: float | None, timeout: float | None) -> dict[str, Any]:
        """``describe()`` for ``wait``: from a service, patient with one that is restarting (up
        to ``RUN_PATIENCE``, as a store is) but never past ``deadline`` (``TimeoutError``)."""
        if self.client is None:
            return self.describe()
        left = None if deadline is None else max(deadline - time.monotonic(), 0.1)
        try:
            return self.client.describe(
                name,
                patience=RUN_PATIENCE if left is None else min(RUN_PATIENCE, left),
                timeout=None if left is None else min(left, REQUEST_TIMEOUT),
            )
        except TunerError as exc:
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(
                    f"tuning job {name}: the service did not answer within {timeout}s ({exc})"
                ) from None
            raise

    def _progress_bar(self, progress: bool | None) -> ProgressBar:
        d = self.definition
        return ProgressBar(d.max_jobs, d.objective_metric_name, d.maximize, progress)

    def interrupt(self) -> None:
        """Stop a tuning job this process runs, from a signal handler (it takes no lock:
        ``tuner.signal_safe``): running training jobs are stopped and the tuning job ends as
        Stopped."""
        self._signalled = True  # for a scheduler made after this (during start-up)
        if self._scheduler is not None:
            self._scheduler.interrupt()  # which sets its stop_event, self._stop
        else:
            signal_safe.set_event(self._stop)

    def stop(self) -> dict[str, Any]:
        """Stop the tuning job: running training jobs are stopped, none is started."""
        name = self._require_name()
        self._stop.set()
        if self.client is not None:
            self.client.stop(name)
        else:
            self.store.request_stop(name)
            self._stop_if_orphaned()
        return self.describe()

    def _stop_if_orphaned(self) -> bool:
        """A stop asked of a tuning job whose process is gone (no owner, its lease ran out, or
        its holder is known to have ended: ``tuner.owners``)
        is carried out here, as ``tuner stop`` does: this process takes it over like
        ``resume``, stops its training jobs (starting none) and ends it; True then. Else its
        owner does, and this returns False."""
        if self.client is not None or (self._thread is not None and self._thread.is_alive()):
            return False
        record = self.store.get_tuning_job(self._require_name())
        if record.status.terminal or not record.stop_requested:
            return False
        expired = (record.lease_expires or 0.0) < time.time()
        if record.owner is None or expired or owner_is_gone(record.owner):
            with contextlib.suppress(NotResumable):  # another process took it meanwhile
                self.resume()
                return True
        return False

    # Looking

    def identical_dataset_and_algorithm_tuner(
        self, additional_parents: Iterable[str] | str | None = None
    ) -> HyperparameterTuner:
        """A new tuner (not fitted yet, unnamed) with this one's definition, warm-started from
        this tuning job and ``additional_parents`` as ``IdenticalDataAndAlgorithm``, on the same
        store or service: SageMaker's helper of that name. ``TunerError`` before ``fit``;
        ``ValidationError`` when the parents break a warm-start rule (at most 5 in all)."""
        return self._child("IdenticalDataAndAlgorithm", additional_parents, None)

    def transfer_learning_tuner(
        self,
        additional_parents: Iterable[str] | str | None = None,
        job_definition: JobDefinition | Mapping[str, Any] | None = None,
    ) -> HyperparameterTuner:
        """As ``identical_dataset_and_algorithm_tuner``, warm-started as ``TransferLearning``;
        ``job_definition`` (SageMaker's ``estimator``) replaces this one's when given."""
        return self._child("TransferLearning", additional_parents, job_definition)

    def _child(
        self,
        kind: str,
        additional_parents: Iterable[str] | str | None,
        job_definition: JobDefinition | Mapping[str, Any] | None,
    ) -> HyperparameterTuner:
        name = self._require_name()
        others = additional_parents or []
        if isinstance(others, str):
            others = [others]
        if not isinstance(others, Iterable):
            raise ValidationError(
                f"additional_parents must be tuning job names, got {additional_parents!r:.100}"
            )
        data = self.definition.model_dump(mode="json")
        data["name"] = None
        data["warm_start_config"] = {"parents": list(dict.fromkeys([name, *others])), "type": kind}
        if job_definition is not None:
            data["job_definition"] = (
                job_definition.model_dump(mode="json")
                if isinstance(job_definition, JobDefinition)
                else _plain(job_definition)
            )
        child = type(self).__new__(type(self))
        storage = self._store.url if self._store is not None else None
        child._init(TuningJobDefinition.parse(data), storage, client=self.client)
        if self.client is None:  # a service checks its own folders
            check_working_directory(child.definition.job_definition)
        return child

    def _require_name(self) -> str:
        if self.name is None:
            raise TunerError("this tuner has not been fitted yet: call fit() first")
        return self.name

    def describe(self) -> dict[str, Any]:
        """Status, reason, counters of training-job and objective states, best training job,
        consumed training seconds, and the stored definition."""
        name = self._require_name()
        if self.client is not None:
            return self.client.describe(name)
        return describe(self.store.get_tuning_job(name), self.store.list_training_jobs(name))

    def best_training_job(self) -> TrainingJob | None:
        """The completed training job with the best objective (earliest on ties), or None."""
        return best_of(self.training_jobs(), self.definition.maximize)

    def training_jobs(
        self,
        status: TrainingStatus | str | None = None,
        sort_by: str = "number",
        sort_order: str | None = None,
        limit: int | None = None,
        offset: int = 0,
    ) -> list[TrainingJob]:
        """The training jobs, by number; or sorted and filtered as SageMaker's
        ``ListTrainingJobsForHyperParameterTuningJob`` does: ``sort_by`` one of number, name,
        created, status, objective (best first unless ``sort_order`` is "Ascending" or
        "Descending"; jobs without an objective last), one ``status``, and a page of ``limit``
        from ``offset``. Raises ``ValidationError`` for a value outside these."""
        name = self._require_name()
        _check_page(limit, offset)
        if not isinstance(sort_by, str):
            raise ValidationError(f"sort_by must be a text, got {sort_by!r}")
        if sort_order not in (None, "Ascending", "Descending"):
            raise ValidationError(
                f"sort_order must be Ascending or Descending (or None), got {sort_order!r}"
            )
        if status is not None and status not in set(TrainingStatus):
            allowed = ", ".join(s.value for s in TrainingStatus)
            raise ValidationError(f"status must be one of {allowed}, got {status!r}")
        status = None if status is None else TrainingStatus(status)
        if self.client is not None:
            return self.client.training_jobs(name, status, sort_by, sort_order, limit, offset)
        descending = None if sort_order is None else sort_order == "Descending"
        return self.store.list_training_jobs(name, status, sort_by, descending, limit, offset)

    def analytics(self) -> TuningJobAnalytics:
        name = self._require_name()
        metric = self.definition.objective_metric_name
        client = self.client
        steps = (
            (lambda: client.step_counts(name))
            if client is not None
            else lambda: self.store.metric_counts(name, metric)
        )
        return TuningJobAnalytics(
            list(self.definition.hyperparameter_ranges), metric, self.training_jobs, steps
        )

    def importance(self) -> dict[str, Any]:
        """Each tuned hyperparameter's share of the objective's variation over the completed
        jobs (fANOVA, ``tuner.reports.importance``): ``{"importance": {name: share} | None,
        "why", "jobs", "of"}``; from the store or the service."""
        name = self._require_name()
        if self.client is not None:
            row = self.client.importance(name)
        else:
            from tuner.reports import build  # loads matplotlib and Optuna: only here

            row = build(self.store, [name], importance=True)["importance"][0]
        return {k: v for k, v in row.items() if k != "arm"}

    def step_agreement(self, eta: int = 3) -> dict[str, Any]:
        """How well each step of the objective ranks the completed jobs' final objectives, and
        the ``min_resource`` that suggests (``tuner.fidelity``; from the store or the service)."""
        if self.client is not None:
            return self.client.step_agreement(self._require_name(), eta)
        return tuning_job_report(self.store, self._require_name(), eta)


MAX_PAGE = 100_000  # training jobs one training_jobs() call returns at most, as the REST API
MAX_OFFSET = 1_000_000_000


def _check_page(limit: Any, offset: Any) -> None:
    """``training_jobs``' page, checked alike in-process and against a service: an integer
    ``limit`` of 1..``MAX_PAGE`` (or None) and ``offset`` of 0..``MAX_OFFSET``."""
    if limit is not None and (
        isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_PAGE
    ):
        raise ValidationError(f"limit must be an integer 1..{MAX_PAGE} (or None), got {limit!r}")
    if isinstance(offset, bool) or not isinstance(offset, int) or not 0 <= offset <= MAX_OFFSET:
        raise ValidationError(f"offset must be an integer 0..{MAX_OFFSET}, got {offset!r}")


def _plain(value: Any) -> Any:
    """A mapping as a dict; anything else as it is, for the definition to refuse by its rule
    (``dict("acc")`` raised a bare ValueError)."""
    return dict(value) if isinstance(value, Mapping) else value
