"""The store: every tuning job, training job and metric point, in SQL.

Contract (tests/storage/test_store_contract.py runs it on SQLite and PostgreSQL):
- Every method is one transaction, committed before it returns; what it returns is a plain
  snapshot (``tuner.records``), never a live ORM object.
- Names are unique: creating a tuning job under a taken name raises ``ValidationError``;
  asking for a missing one raises ``NotFoundError``. Training job numbers are unique within
  their tuning job, and their names are ``<tuning job>-<number:03d>``.
- Training jobs are listed by number (or sorted and filtered as asked), tuning jobs newest
  first; metric points by ``seq``.
- Metric values round-trip exactly, ``nan`` and ``inf`` included.
- Leases: a tuning job is run by at most one process at a time. ``claim_tuning_job`` takes
  it atomically (only when it has not ended and its lease is free, expired or already the
  caller's), ``renew_lease`` extends it and fails once another process holds it, and
  ``release_tuning_job`` gives it up. Two services on one database never both hold a lease.
- A call whose database does not answer (``OperationalError``: a server restarting, a
  network cut, SQLite locked) is retried for up to ``patience`` seconds, then raises
  ``StoreUnavailable``; with no patience (the default) at once. A tuner running jobs waits
  (``RUN_PATIENCE``); a request to the REST service does not.
- The URL is any SQLAlchemy URL: ``sqlite:///path.db`` (the default; the parent folder is
  created, WAL journal so readers do not block the running tuner) or
  ``postgresql+psycopg://user@host:port/db``.
"""

from __future__ import annotations

import functools
import logging
import math
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from sqlalchemy import (
    Engine,
    case,
    create_engine,
    event,
    func,
    insert,
    inspect,
    or_,
    select,
    text,
    update,
)
from sqlalchemy.engine import make_url
from sqlalchemy.exc import (
    ArgumentError,
    DatabaseError,
    IntegrityError,
    InterfaceError,
    NoSuchModuleError,
    OperationalError,
    ProgrammingError,
)
from sqlalchemy.orm import Session, sessionmaker

from tuner.errors import (
    LeaseLost,
    NotFoundError,
    StorageError,
    StoreUnavailable,
    ValidationError,
)
from tuner.metrics import MetricPoint
from tuner.records import (
    ObjectiveStatus,
    TrainingJob,
    TrainingStatus,
    TuningJob,
    TuningStatus,
)
from tuner.storage.models import Base, MetricPointRow, TrainingJobRow, TuningJobRow

DEFAULT_DATABASE_URL = "sqlite:///tuner-runs/tuner.db"
# What training jobs can be listed by (``Store.list_training_jobs``): SageMaker's SortBy values
# are Name, CreationTime, Status and FinalObjectiveMetricValue.
TRAINING_SORT_KEYS = {
    "number": TrainingJobRow.number,
    "name": TrainingJobRow.name,
    "created": TrainingJobRow.created_at,
    "status": TrainingJobRow.status,
    "objective": TrainingJobRow.objective,
}


def default_url() -> str:
    """``$TUNER_DATABASE_URL`` when set, else a SQLite file under ``./tuner-runs``."""
    return os.environ.get("TUNER_DATABASE_URL") or DEFAULT_DATABASE_URL


def _make_engine(url: str, create: bool = True) -> Engine:
    try:
        parsed = make_url(url)
    except ArgumentError:
        raise ValidationError(
            f"storage must be a SQLAlchemy URL such as sqlite:///tuner.db, got {url!r}"
        ) from None
    if parsed.get_backend_name() == "sqlite":
        if parsed.database and parsed.database != ":memory:":
            if not create and not Path(parsed.database).exists():
                raise NotFoundError(
                    f"storage {_shown(url)} holds no tuning job: {parsed.database} does not "
                    "exist (tuner run creates it; check --storage or TUNER_DATABASE_URL)"
                )
            folder = Path(parsed.database).parent
            try:
                folder.mkdir(parents=True, exist_ok=True)
            except OSError as exc:  # a file in the way, no permission, a read-only place
                reason = f"its folder {folder} cannot be created ({exc.strerror or exc})"
                raise _unusable(url, reason) from None
        engine = create_engine(parsed, connect_args={"timeout": 30})

        @event.listens_for(engine, "connect")
        def _pragmas(dbapi_connection: Any, _record: Any) -> None:
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA synchronous=NORMAL")
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.close()

        return engine
    try:
        return create_engine(parsed, pool_pre_ping=True)
    except NoSuchModuleError:  # a scheme SQLAlchemy has no dialect for (``bogus://``)
        reason = (
            f"no database dialect is named {parsed.drivername!r} (e.g. sqlite:///tuner.db, "
            "postgresql://user@host/db)"
        )
        raise _unusable(url, reason) from None
    except ImportError as exc:  # the URL's driver is not installed
        extra = "postgres" if parsed.get_backend_name() == "postgresql" else None
        hint = f": pip install 'tuner[{extra}]'" if extra else ""
        raise ValidationError(
            f"storage {parsed.render_as_string()} needs the database driver "
            f"{exc.name or parsed.drivername!r}, which is not installed{hint}"
        ) from None


# Columns whose old rows are filled from another when added: a training job recorded before
# ``running_at`` existed began running when it started (else all its time counted as queued).
BACKFILL = {("training_jobs", "running_at"): "started_at"}


def _add_missing_columns(engine: Engine) -> None:
    """Add the nullable columns a newer version brought to tables an older one created."""
    inspector = inspect(engine)
    with engine.begin() as connection:
        for table in Base.metadata.sorted_tables:
            present = {c["name"] for c in inspector.get_columns(table.name)}
            for column in table.columns:
                if column.name not in present and column.nullable:
                    kind = column.type.compile(dialect=engine.dialect)
                    connection.execute(
                        text(f'ALTER TABLE {table.name} ADD COLUMN "{column.name}" {kind}')
                    )
                    if source := BACKFILL.get((table.name, column.name)):
                        connection.execute(
                            text(f'UPDATE {table.name} SET "{column.name}" = "{source}"')
                        )


def _create_schema(engine: Engine, attempts: int = 5) -> None:
    """Create missing tables and columns; another process doing it at the same moment is fine."""
    for attempt in range(attempts):
        try:
            Base.metadata.create_all(engine)
            _add_missing_columns(engine)
            return
        except (OperationalError, ProgrammingError, IntegrityError):
            if attempt == attempts - 1:
                raise
            time.sleep(0.05 * (attempt + 1))


def _unusable(url: str, reason: str) -> StorageError:
    return StorageError(f"storage {_shown(url)} cannot be used: {reason}")


def _shown(url: str) -> str:
    """The URL without its password, for messages."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return "?"


def _tuning(row: TuningJobRow) -> TuningJob:
    return TuningJob(
        name=row.name,
        status=TuningStatus(row.status),
        status_reason=row.status_reason,
        definition=row.definition,
        stop_requested=row.stop_requested,
        created_at=row.created_at,
        ended_at=row.ended_at,
        owner=row.owner,
        lease_expires=row.lease_expires,
        warm_start=row.warm_start,
        strategy_state=row.strategy_state,
        pauses=tuple((float(a), float(b)) for a, b in row.pauses or ()),
    )


def _training(row: TrainingJobRow, tuning_name: str) -> TrainingJob:
    return TrainingJob(
        name=row.name,
        tuning_job_name=tuning_name,
        number=row.number,
        status=TrainingStatus(row.status),
        objective_status=ObjectiveStatus(row.objective_status),
        hyperparameters=row.hyperparameters,
        objective=row.objective,
        failure_reason=row.failure_reason,
        exit_code=row.exit_code,
        handle=row.handle,
        workdir=row.workdir,
        gpus=row.gpus,
        created_at=row.created_at,
        started_at=row.started_at,
        ended_at=row.ended_at,
        running_at=row.running_at,
        artifacts_uri=row.artifacts_uri,
    )


def _finite_or_none(value: float | None) -> float | None:
    return value if value is not None and not math.isnan(value) else None


RUN_PATIENCE = 120.0  # seconds a store that runs tuning jobs waits for its database
STOP_ATTEMPTS = 3  # conditional UPDATEs a stop makes while its job reads as running
log = logging.getLogger("tuner.storage")
P = ParamSpec("P")
R = TypeVar("R")


def _patient(method: Callable[P, R]) -> Callable[P, R]:
    """Retry ``method`` (one transaction) while the database does not answer, for up to the
    store's ``patience``; then ``StoreUnavailable``."""

    @functools.wraps(method)
    def call(*args: P.args, **kwargs: P.kwargs) -> R:
        store: Store = args[0]  # type: ignore[assignment]
        deadline = time.monotonic() + store.patience
        delay = 0.25
        while True:
            try:
                return method(*args, **kwargs)
            except (OperationalError, InterfaceError) as exc:
                text = str(exc.orig or exc).strip()
                reason = text.splitlines()[0] if text else repr(exc)
                if time.monotonic() + delay > deadline:
                    waited = f" for {store.patience:g}s" if store.patience else ""
                    raise StoreUnavailable(
                        f"storage {store.shown_url} did not answer{waited}: {reason}"
                    ) from None
                log.warning("storage %s did not answer (%s); retrying", store.shown_url, reason)
                time.sleep(delay)
                delay = min(delay * 2, 5.0)

    return call


class Store:
    """SQL persistence for tuning jobs (see the module contract)."""

    def __init__(self, url: str | None = None, create: bool = True, patience: float = 0) -> None:
        """Open (``create``: or create) the store at ``url``; ``StorageError`` naming it when it
        cannot be used; without ``create``, ``NotFoundError`` when its SQLite file does not
        exist (reading a mistyped path must not leave an empty store behind). ``patience``:
        seconds each call waits for a database that stops answering (module contract)."""
        url = url or default_url()
        self.url = url
        self.patience = patience
        self.shown_url = _shown(url)
        self.engine = _make_engine(url, create)
        try:
            _create_schema(self.engine)
        except DatabaseError as exc:  # no server there, refused, not a database file, ...
            self.engine.dispose()
            raise _unusable(url, str(exc.orig or exc).strip().splitlines()[0]) from None
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)

    def close(self) -> None:
        self.engine.dispose()

    @contextmanager
    def _session(self) -> Iterator[Session]:
        with self._sessions.begin() as session:
            yield session

    def _tuning_row(self, session: Session, name: str) -> TuningJobRow:
        row = session.scalar(select(TuningJobRow).where(TuningJobRow.name == name))
        if row is None:
            raise NotFoundError(f"no tuning job named {name!r} in {self.shown_url}")
        return row

    def _training_row(self, session: Session, name: str) -> TrainingJobRow:
        row = session.scalar(select(TrainingJobRow).where(TrainingJobRow.name == name))
        if row is None:
            raise NotFoundError(f"no training job named {name!r} in {self.shown_url}")
        return row

    # Tuning jobs

    def create_tuning_job(
        self,
        name: str,
        definition: dict[str, Any],
        owner: str | None = None,
        ttl: float = 0,
        warm_start: dict[str, Any] | None = None,
    ) -> TuningJob:
        """Record a new InProgress tuning job, leased to ``owner`` for ``ttl`` s when given,
        with what it took from its parents (``tuner.warm_start``) when it has any."""
        now = time.time()
        row = TuningJobRow(
            name=name,
            status=TuningStatus.IN_PROGRESS.value,
            definition=definition,
            stop_requested=False,
            created_at=now,
            owner=owner,
            lease_expires=now + ttl if owner else None,
            warm_start=warm_start,
        )
        try:
            with self._session() as session:
                session.add(row)
        except IntegrityError:
            raise ValidationError(
                f"tuning job names must be unique, {name!r} already exists"
            ) from None
        return _tuning(row)

    def get_tuning_job(self, name: str) -> TuningJob:
        with self._session() as session:
            return _tuning(self._tuning_row(session, name))

    def list_tuning_jobs(
        self, status: TuningStatus | None = None, limit: int | None = None, offset: int = 0
    ) -> list[TuningJob]:
        query = select(TuningJobRow).order_by(
            TuningJobRow.created_at.desc(), TuningJobRow.id.desc()
        )
        if status is not None:
            query = query.where(TuningJobRow.status == TuningStatus(status).value)
        query = query.offset(offset).limit(limit)
        with self._session() as session:
            return [_tuning(r) for r in session.scalars(query)]

    def set_tuning_status(
        self, name: str, status: TuningStatus, reason: str | None = None
    ) -> TuningJob:
        """Set the status (and reason); a terminal status also records ``ended_at``."""
        with self._session() as session:
            row = self._tuning_row(session, name)
            row.status = TuningStatus(status).value
            if reason is not None:
                row.status_reason = reason
            if TuningStatus(status).terminal:
                row.ended_at = time.time()
                row.owner = None
                row.lease_expires = None
            return _tuning(row)

    def reopen_tuning_job(
        self,
        name: str,
        ended_reason: str,
        stopped_reason: str,
        rerun_reason: str,
        owner: str,
        ttl: float,
    ) -> bool:
        """Make a tuning job that ended Stopped with ``ended_reason`` InProgress again, leased to
        ``owner`` for ``ttl`` seconds, in one conditional UPDATE (two processes resuming it at
        once: one wins, the other finds it running; no service adopts it in between), the time
        it stood ended recorded in ``pauses``; its training jobs Stopped with
        ``stopped_reason`` get ``rerun_reason``. True when it did."""
        with self._session() as session:
            ended = session.scalar(select(TuningJobRow).where(TuningJobRow.name == name))
            if ended is None:
                return False
            now = time.time()
            pauses = [*(ended.pauses or []), [ended.ended_at or now, now]]  # see active_seconds
            reopened = session.execute(
                update(TuningJobRow)
                .where(
                    TuningJobRow.name == name,
                    TuningJobRow.status == TuningStatus.STOPPED.value,
                    TuningJobRow.status_reason == ended_reason,
                    TuningJobRow.ended_at == ended.ended_at,  # not reopened and ended meanwhile
                )
                .values(
                    status=TuningStatus.IN_PROGRESS.value,
                    status_reason=None,
                    ended_at=None,
                    stop_requested=False,
                    owner=owner,
                    lease_expires=now + ttl,
                    pauses=pauses,
                )
            ).rowcount  # type: ignore[attr-defined]
            if not reopened:
                return False
            row = self._tuning_row(session, name)
            session.execute(
                update(TrainingJobRow)
                .where(
                    TrainingJobRow.tuning_job_id == row.id,
                    TrainingJobRow.status == TrainingStatus.STOPPED.value,
                    TrainingJobRow.failure_reason == stopped_reason,
                )
                .values(failure_reason=rerun_reason)
            )
            return True

    def set_strategy_state(self, name: str, state: dict[str, Any]) -> None:
        """Record what the tuning job's strategy says of itself (``Strategy.describe``)."""
        with self._session() as session:
            self._tuning_row(session, name).strategy_state = state

    def request_stop(self, name: str) -> TuningJob:
        """Ask the process running the tuning job to stop it; no-op once it has ended. A
        conditional UPDATE: an end recorded meanwhile by the scheduler is never undone. One that
        matched nothing is tried again while the job reads as running: a create committed
        between the UPDATE and the read (a stop sent as the job was being created) was answered
        "InProgress" and the stop was lost."""
        active = [TuningStatus.IN_PROGRESS.value, TuningStatus.STOPPING.value]
        query = (
            update(TuningJobRow)
            .where(TuningJobRow.name == name, TuningJobRow.status.in_(active))
            .values(stop_requested=True, status=TuningStatus.STOPPING.value)
        )
        for _ in range(STOP_ATTEMPTS):
            with self._session() as session:
                if session.execute(query).rowcount:  # type: ignore[attr-defined]
                    break
            job = self.get_tuning_job(name)  # NotFoundError when there is none
            if job.status.value not in active:
                return job  # it has ended: nothing to stop
        return self.get_tuning_job(name)

    # Leases

    def claim_tuning_job(
        self, name: str, owner: str, ttl: float, replacing: str | None = None
    ) -> bool:
        """Take the lease of a tuning job that has not ended; True when the caller holds it.
        The lease must be free, expired or the caller's own, or held by ``replacing``: a holder
        the caller knows has ended (``tuner.owners.owner_is_gone``), or one handing its lease
        over (a service to its worker process)."""
        now = time.time()
        active = [TuningStatus.IN_PROGRESS.value, TuningStatus.STOPPING.value]
        takeable = [owner] if replacing is None else [owner, replacing]
        query = (
            update(TuningJobRow)
            .where(TuningJobRow.name == name, TuningJobRow.status.in_(active))
            .where(
                or_(
                    TuningJobRow.owner.is_(None),
                    TuningJobRow.owner.in_(takeable),
                    TuningJobRow.lease_expires < now,
                )
            )
            .values(owner=owner, lease_expires=now + ttl)
        )
        with self._session() as session:
            return bool(session.execute(query).rowcount)  # type: ignore[attr-defined]

    def renew_lease(self, name: str, owner: str, ttl: float) -> bool:
        """Extend the caller's lease; False when another process holds it now."""
        query = (
            update(TuningJobRow)
            .where(TuningJobRow.name == name, TuningJobRow.owner == owner)
            .values(lease_expires=time.time() + ttl)
        )
        with self._session() as session:
            return bool(session.execute(query).rowcount)  # type: ignore[attr-defined]

    def release_tuning_job(self, name: str, owner: str) -> None:
        """Free the lease if ``owner`` holds it: a holder leaving, or anyone for a holder known
        to have ended (``tuner.owners.owner_is_gone``)."""
        query = (
            update(TuningJobRow)
            .where(TuningJobRow.name == name, TuningJobRow.owner == owner)
            .values(owner=None, lease_expires=None)
        )
        with self._session() as session:
            session.execute(query)

    def held_tuning_jobs(self) -> list[tuple[str, str]]:
        """(name, holder) of the tuning jobs that have not ended and whose lease is held and
        has not run out, oldest first."""
        now = time.time()
        active = [TuningStatus.IN_PROGRESS.value, TuningStatus.STOPPING.value]
        query = (
            select(TuningJobRow.name, TuningJobRow.owner)
            .where(TuningJobRow.status.in_(active), TuningJobRow.owner.is_not(None))
            .where(TuningJobRow.lease_expires >= now)
            .order_by(TuningJobRow.created_at, TuningJobRow.id)
        )
        with self._session() as session:
            return [(name, owner or "") for name, owner in session.execute(query)]

    def claimable_tuning_jobs(
        self, stopping_only: bool = False, limit: int | None = None
    ) -> list[str]:
        """Names of tuning jobs that have not ended (with ``stopping_only``: that are being
        stopped) and whose lease is free or expired, oldest first; at most ``limit``."""
        now = time.time()
        active = [TuningStatus.STOPPING.value]
        if not stopping_only:
            active.append(TuningStatus.IN_PROGRESS.value)
        query = (
            select(TuningJobRow.name)
            .where(TuningJobRow.status.in_(active))
            .where(or_(TuningJobRow.owner.is_(None), TuningJobRow.lease_expires < now))
            .order_by(TuningJobRow.created_at, TuningJobRow.id)  # one tick: as created
            .limit(limit)
        )
        with self._session() as session:
            return list(session.scalars(query))

    # Training jobs

    def create_training_job(
        self,
        tuning_job_name: str,
        number: int,
        hyperparameters: dict[str, Any],
        lease: tuple[str, float] | None = None,
    ) -> TrainingJob:
        """Record a Pending training job (before it is started). With ``lease`` (owner, ttl),
        only while that owner holds the tuning job's lease, renewed in the same transaction:
        else ``LeaseLost`` and nothing is recorded (another process took the tuning job over
        and numbers its jobs now)."""
        with self._session() as session:
            if lease is not None:
                renewed = session.execute(
                    update(TuningJobRow)
                    .where(TuningJobRow.name == tuning_job_name, TuningJobRow.owner == lease[0])
                    .values(lease_expires=time.time() + lease[1])
                )
                if not renewed.rowcount:  # type: ignore[attr-defined]
                    raise LeaseLost(f"another process took over tuning job {tuning_job_name}")
            tuning = self._tuning_row(session, tuning_job_name)
            row = TrainingJobRow(
                tuning_job_id=tuning.id,
                name=f"{tuning_job_name}-{number:03d}",
                number=number,
                status=TrainingStatus.PENDING.value,
                objective_status=ObjectiveStatus.PENDING.value,
                hyperparameters=hyperparameters,
                created_at=time.time(),
            )
            session.add(row)
            return _training(row, tuning_job_name)

    def mark_started(
        self,
        name: str,
        handle: str,
        workdir: str,
        gpus: str | None = None,
        started_at: float | None = None,
    ) -> TrainingJob:
        """Record that the training job was launched (at ``started_at``; default now)."""
        with self._session() as session:
            row = self._training_row(session, name)
            row.status = TrainingStatus.IN_PROGRESS.value
            row.handle = handle
            row.workdir = workdir
            row.gpus = gpus
            row.started_at = time.time() if started_at is None else started_at
            return _training(row, row.tuning_job.name)

    def finish_training_job(
        self,
        name: str,
        status: TrainingStatus,
        objective: float | None = None,
        failure_reason: str | None = None,
        exit_code: int | None = None,
        began_at: float | None = None,
        ended_at: float | None = None,
    ) -> TrainingJob:
        """Record the end of a training job; the objective counts only when Completed.

        ``began_at`` is when its program began running, where known (see ``mark_running``);
        ``ended_at`` is when it ended, where the launcher can tell (a job that ended while no
        tuner watched it ended before it is recorded), else now; never later than now nor
        earlier than it began."""
        status = TrainingStatus(status)
        succeeded = status is TrainingStatus.COMPLETED and objective is not None
        with self._session() as session:
            row = self._training_row(session, name)
            row.status = status.value
            row.objective = _finite_or_none(objective)
            row.objective_status = (
                ObjectiveStatus.SUCCEEDED if succeeded else ObjectiveStatus.FAILED
            ).value
            row.failure_reason = failure_reason
            row.exit_code = exit_code
            if began_at is not None:
                row.running_at = began_at
            now = time.time()
            row.ended_at = now if ended_at is None else min(ended_at, now)
            if row.running_at is not None:
                row.ended_at = max(row.ended_at, row.running_at)
            if row.started_at is None:
                row.started_at = row.ended_at
            if row.running_at is None:  # it never ran (it ended in a queue, or never started)
                row.running_at = row.ended_at
            return _training(row, row.tuning_job.name)

    def mark_running(self, name: str, began_at: float, gpus: str | None = None) -> TrainingJob:
        """Record when a launched job's program began running (after any queue), and its GPUs."""
        with self._session() as session:
            row = self._training_row(session, name)
            row.running_at = began_at
            if gpus:
                row.gpus = gpus
            return _training(row, row.tuning_job.name)

    def set_artifacts_uri(self, name: str, uri: str) -> TrainingJob:
        """Record where a training job's outputs were uploaded."""
        with self._session() as session:
            row = self._training_row(session, name)
            row.artifacts_uri = uri
            return _training(row, row.tuning_job.name)

    def get_training_job(self, name: str) -> TrainingJob:
        with self._session() as session:
            row = self._training_row(session, name)
            return _training(row, row.tuning_job.name)

    def list_training_jobs(
        self,
        tuning_job_name: str,
        status: TrainingStatus | None = None,
        sort_by: str = "number",
        descending: bool | None = None,
        limit: int | None = None,
        offset: int = 0,
    ) -> list[TrainingJob]:
        """A tuning job's training jobs, by number unless ``sort_by`` (one of
        ``TRAINING_SORT_KEYS``) says otherwise, ties by number (earliest first); by objective,
        ``descending`` None means best first (by the definition's ``objective_type``), and jobs
        whose objective did not succeed (none, ``inf`` read from a log, a failed or early-stopped
        job's last value) come after those whose did, in either direction; otherwise None
        means ascending. ``status`` keeps one status; ``limit`` and ``offset`` page (a page
        shorter than ``limit`` is the last). Raises ``ValidationError`` for an unknown
        ``sort_by``, a ``limit`` below 1 or a negative ``offset``."""
        if sort_by not in TRAINING_SORT_KEYS:
            raise ValidationError(
                f"sort_by must be one of {', '.join(TRAINING_SORT_KEYS)}, got {sort_by!r}"
            )
        if (limit is not None and limit < 1) or offset < 0:
            raise ValidationError(f"limit must be >= 1 and offset >= 0, got {limit=}, {offset=}")
        column = TRAINING_SORT_KEYS[sort_by]
        with self._session() as session:
            tuning = self._tuning_row(session, tuning_job_name)
            if descending is None:
                maximize = tuning.definition.get("objective_type", "Maximize") == "Maximize"
                descending = sort_by == "objective" and maximize
            order = column.desc() if descending else column.asc()
            by_number_down = descending and column is TrainingJobRow.number
            # ties by number, earliest first: the best job is the first of the best (best_of)
            number = TrainingJobRow.number.desc() if by_number_down else TrainingJobRow.number.asc()
            # Plain rows of the table's columns, not ORM objects: building and tracking an
            # object per job was most of the time for a large tuning job (the dashboard polls
            # this); ``_training`` reads the same attribute names from either.
            query = select(*TrainingJobRow.__table__.columns).where(
                TrainingJobRow.tuning_job_id == tuning.id
            )
            if status is not None:
                query = query.where(TrainingJobRow.status == TrainingStatus(status).value)
            if sort_by == "objective":
                succeeded = TrainingJobRow.objective_status == ObjectiveStatus.SUCCEEDED.value
                query = query.order_by(case((succeeded, 0), else_=1))
            if column is not TrainingJobRow.number:
                query = query.order_by(order.nulls_last())
            rows = session.execute(query.order_by(number).offset(offset).limit(limit))
            return [_training(r, tuning_job_name) for r in rows]  # type: ignore[arg-type]

    def count_training_jobs(self, tuning_job_name: str) -> int:
        with self._session() as session:
            tuning = self._tuning_row(session, tuning_job_name)
            return int(
                session.scalar(
                    select(func.count()).where(TrainingJobRow.tuning_job_id == tuning.id)
                )
                or 0
            )

    # Metric points

    def add_metric_points(self, training_job_name: str, points: Iterable[MetricPoint]) -> int:
        """Append points to a training job's time series; returns how many were stored."""
        with self._session() as session:
            job_id = self._training_row(session, training_job_name).id
            rows = [
                {
                    "training_job_id": job_id,
                    "name": p.name,
                    "value": _finite_or_none(p.value),
                    "seq": p.seq,
                    "timestamp": p.timestamp,
                }
                for p in points
            ]
            if rows:  # one bulk INSERT: about 10x the rows per second of ORM objects
                session.execute(insert(MetricPointRow), rows)
            return len(rows)

    def metric_counts(self, tuning_job_name: str, name: str) -> dict[str, int]:
        """How many points of metric ``name`` each training job of a tuning job reported (its
        steps, for the objective metric); jobs without any are left out."""
        with self._session() as session:
            tuning = self._tuning_row(session, tuning_job_name)
            rows = session.execute(
                select(TrainingJobRow.name, func.count(MetricPointRow.id))
                .join(MetricPointRow, MetricPointRow.training_job_id == TrainingJobRow.id)
                .where(TrainingJobRow.tuning_job_id == tuning.id, MetricPointRow.name == name)
                .group_by(TrainingJobRow.name)
            )
            return {str(job): int(count) for job, count in rows}

    def tuning_metric_points(self, tuning_job_name: str, name: str) -> dict[str, list[MetricPoint]]:
        """Metric ``name``'s points of every training job of a tuning job, by training job name,
        each in reported order; one query, however many jobs (jobs without any are left out)."""
        with self._session() as session:
            tuning = self._tuning_row(session, tuning_job_name)
            rows = session.execute(
                select(
                    TrainingJobRow.name,
                    MetricPointRow.value,
                    MetricPointRow.seq,
                    MetricPointRow.timestamp,
                )
                .join(MetricPointRow, MetricPointRow.training_job_id == TrainingJobRow.id)
                .where(TrainingJobRow.tuning_job_id == tuning.id, MetricPointRow.name == name)
                .order_by(TrainingJobRow.id, MetricPointRow.seq)
            )
            points: dict[str, list[MetricPoint]] = {}
            for job, value, seq, timestamp in rows:
                point = MetricPoint(name, math.nan if value is None else value, seq, timestamp)
                points.setdefault(str(job), []).append(point)
            return points

    def last_metric_points(self, training_job_name: str) -> list[MetricPoint]:
        """Each metric's last finite point of a training job (NaN is stored empty, infinities
        as they are), in reported order; the job's points are not read whole (500,000 points
        took 10 s and 150 MB through ``metric_points``)."""
        largest = sys.float_info.max
        with self._session() as session:
            job = self._training_row(session, training_job_name)
            last = (
                select(MetricPointRow.name, func.max(MetricPointRow.seq).label("seq"))
                .where(
                    MetricPointRow.training_job_id == job.id,
                    MetricPointRow.value.between(-largest, largest),  # neither NULL nor inf
                )
                .group_by(MetricPointRow.name)
                .subquery()
            )
            rows = session.scalars(
                select(MetricPointRow)
                .join(
                    last, (MetricPointRow.name == last.c.name) & (MetricPointRow.seq == last.c.seq)
                )
                .where(MetricPointRow.training_job_id == job.id)
                .order_by(MetricPointRow.seq)
            )
            return [MetricPoint(r.name, float(r.value or 0.0), r.seq, r.timestamp) for r in rows]

    def metric_points(self, training_job_name: str, name: str | None = None) -> list[MetricPoint]:
        with self._session() as session:
            job = self._training_row(session, training_job_name)
            query = select(MetricPointRow).where(MetricPointRow.training_job_id == job.id)
            if name is not None:
                query = query.where(MetricPointRow.name == name)
            rows = session.scalars(query.order_by(MetricPointRow.seq))
            return [
                MetricPoint(r.name, math.nan if r.value is None else r.value, r.seq, r.timestamp)
                for r in rows
            ]


for _name, _method in list(vars(Store).items()):  # every public call is one transaction
    if not _name.startswith("_") and callable(_method) and _name != "close":
        setattr(Store, _name, _patient(_method))
