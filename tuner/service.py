"""Running tuning jobs in the background for a long-lived process (the REST service).

A ``TuningService`` submits tuning jobs to the store and runs every tuning job it holds the
lease of on its own: by default in a worker process of its own (``workers="process"``), so
that a scheduler and the service's readers never wait on one Python interpreter's lock, or in a
thread of the service (``workers="thread"``, for a store no other process can open). A scan
picks up tuning jobs that nobody holds (submitted by another process, or left behind by a
process that died: at once when it ran on this machine, ``tuner.owners``, else once its lease
expires) and resumes them; any number of services may share one
database, and a tuning job is run by one of them at a time. ``shutdown()`` leaves the training
jobs running and releases the leases, so a service started again (or another one) re-attaches
to them. A worker (``tuner.worker``) whose service dies, even by SIGKILL, leaves its tuning job the
same way at once.

``max_running`` bounds the tuning jobs one service runs at once (each worker is an interpreter
of 70-230 MB running up to ``max_parallel_jobs`` training jobs): one submitted beyond it, or
while others wait, is recorded with no lease and waits, InProgress, until a scan of this or
another service with room takes it, in the order they were submitted. A waiting tuning job
asked to stop, never having run, ends Stopped without a worker.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Literal, cast

from sqlalchemy.engine import make_url

from tuner.definition import TuningJobDefinition, check_working_directory
from tuner.errors import StorageError, TunerError, ValidationError
from tuner.launch_policy import LaunchPolicy
from tuner.owners import owner_is_gone, process_owner
from tuner.records import TuningJob, TuningStatus
from tuner.storage import Store
from tuner.tracking import catch_up, tracker_for
from tuner.tuner import default_name
from tuner.warm_start import resolve
from tuner.worker import run_tuning_job

log = logging.getLogger("tuner.service")

Workers = Literal["process", "thread"]
# a worker's first line on stdin is its task, with the service's sys.path, so that it imports
# this very ``tuner`` (from a checkout, an installed wheel, a test's path)
_WORKER = (
    "import json, sys; task = json.loads(sys.stdin.buffer.readline() or 'null'); "
    "sys.path[:] = task['path'] if task else sys.path; "
    "from tuner.worker import main; sys.exit(main(task, sys.stdin.buffer))"
)
SUBMIT_WAIT = 5.0  # s a submit or stop waits for a scan under way, then leaves it to the scanner
NEVER_RAN = "stopped on request before any training job started"
# held back from a worker until ``main`` answers them: one during its start-up killed it with
# its lease held (a Ctrl-C or a supervisor's SIGTERM right after a submit or a scan)
_DETACHING = {signal.SIGINT, signal.SIGTERM}


@dataclass
class _Running:
    """A tuning job this service runs: the thread that runs it (``workers="thread"``) or waits
    for its worker process, and how to tell it to leave."""

    thread: threading.Thread
    detach: Callable[[], None]
    process: subprocess.Popen[bytes] | None = None


class TuningService:
    """Background runner of tuning jobs (see the module docstring)."""

    def __init__(
        self,
        store: Store,
        runs_dir: str | Path,
        lease_seconds: float = 30.0,
        scan_interval: float = 1.0,
        allowed_programs: Sequence[str] = (),
        policy: LaunchPolicy | None = None,
        workers: Workers = "process",
        max_running: int | None = None,
    ) -> None:
        """``workers``: where each tuning job's scheduler runs (module docstring); "process"
        needs a database other processes can open (ValueError for an in-memory SQLite one).
        ``max_running``: the most tuning jobs run at once (module docstring; None: no bound)."""
        if max_running is not None and max_running < 1:
            raise ValueError(f"max_running must be at least 1 (or None), not {max_running!r}")
        if workers not in ("process", "thread"):
            raise ValueError(f"workers must be 'process' or 'thread', not {workers!r}")
        if workers == "process" and in_memory(store.url):
            raise ValueError(
                f"worker processes need a database other processes can open, not {store.url!r}"
                " (an in-memory SQLite database): use a file or PostgreSQL, or run tuning jobs"
                " as threads (workers='thread'; tuner serve --workers thread)"
            )
        if workers == "process" and not sys.executable:
            raise ValueError("worker processes need a Python to start: sys.executable is empty")
        self.store = store
        self.workers = workers
        self.max_running = max_running
        self.runs_dir = Path(runs_dir).resolve()
        self.lease_seconds = lease_seconds
        self.scan_interval = scan_interval
        self.policy = policy or LaunchPolicy(programs=tuple(allowed_programs))
        self.owner = process_owner()
        self._running: dict[str, _Running] = {}
        self._refused: set[str] = set()  # tuning jobs its policy does not allow, said once
        self._workers_died: set[str] = set()  # whose worker ended (maybe holding the lease)
        self._lock = threading.Lock()  # guards _running
        self._launching = threading.Lock()  # a scan or a submit's start, whole; shutdown's wait
        self._closing = threading.Event()
        self._freed = threading.Event()  # a tuning job left this service: scan now
        self._scanner: threading.Thread | None = None

    def start(self) -> None:
        self.runs_dir.mkdir(parents=True, exist_ok=True)
        self._scanner = threading.Thread(target=self._scan_forever, name="tuner-scan", daemon=True)
        self._scanner.start()

    def submit(self, definition: TuningJobDefinition, store: Store | None = None) -> TuningJob:
        """Validate, record and start a tuning job, or leave it waiting (unleased) when
        ``max_running`` are running; its folders live under ``runs_dir``. ``store``: the one to
        record it in (a REST request's, which does not wait for a database that stopped
        answering); by default the service's own."""
        store = store or self.store
        self.policy.check_definition(definition)
        self.runs_dir.mkdir(parents=True, exist_ok=True)  # also before start()
        name = definition.name or default_name()
        jd = definition.job_definition.model_copy(
            update={
                "output_path": str(self.runs_dir),
                "working_directory": definition.job_definition.working_directory
                or str(self.runs_dir),
            }
        )
        check_working_directory(jd)
        definition = definition.model_copy(update={"name": name, "job_definition": jd})
        # a tracking_uri that cannot be used is refused now, as in-process (it was stored, then
        # Failed with an internal error)
        tracker_for(definition, name, store).close(None)
        warm = resolve(store, definition)  # parents checked: a refusal stores nothing
        # recorded waiting, on the caller's store: a database that does not answer is an error
        # at once, not a wait behind a scan that is riding it out (holding ``_launching``)
        record = store.create_tuning_job(
            name, definition.to_json(), None, 0, warm.to_json() if warm else None
        )
        try:
            if self._launching.acquire(timeout=SUBMIT_WAIT):
                try:
                    self._start_if_next(name, store)
                finally:
                    self._launching.release()
            else:
                self._freed.set()  # the scanner starts it when it can
            return store.get_tuning_job(name)
        except StorageError as exc:  # recorded: an error now would have the client submit twice
            log.warning("tuning job %s waits for a scan to start it: %s", name, exc)
            self._freed.set()
            return record

    def stop(self, name: str, store: Store | None = None) -> TuningJob:
        """Ask whichever process runs the tuning job to stop it (``store`` as in ``submit``);
        one that waits, never having run a training job, ends Stopped here and now."""
        store = store or self.store
        record = store.request_stop(name)
        if record.status is not TuningStatus.STOPPING or not self._launching.acquire(
            timeout=SUBMIT_WAIT
        ):
            return record
        try:
            self._end_if_never_ran(name, store)
        finally:
            self._launching.release()
        return store.get_tuning_job(name)  # ended here, or meanwhile by another process

    def shutdown(self, timeout: float = 30.0) -> None:
        """Leave every tuning job (training jobs keep running) and release the leases; a
        worker process still there after ``timeout`` s is killed (its lease runs out)."""
        self._closing.set()
        self._freed.set()  # the scanner leaves now
        with self._launching, self._lock:  # a scan under way has started what it claimed
            running = list(self._running.values())
        for each in running:
            each.detach()
        deadline = time.monotonic() + timeout
        for each in running:
            each.thread.join(max(0.0, deadline - time.monotonic()))
            if each.process is not None and each.process.poll() is None:
                log.warning("worker %s did not leave in %g s: killed", each.process.pid, timeout)
                each.process.kill()
        if self._scanner is not None:
            self._scanner.join(max(0.0, deadline - time.monotonic()))

    def running(self) -> list[str]:
        with self._lock:
            return sorted(self._running)

    def _full(self) -> bool:
        """Whether ``max_running`` tuning jobs are running here."""
        with self._lock:
            return self.max_running is not None and len(self._running) >= self.max_running

    def worker_pid(self, name: str) -> int | None:
        """The process id of the worker running tuning job ``name``; None when this service
        does not run it in a worker process."""
        with self._lock:
            each = self._running.get(name)
        return each.process.pid if each is not None and each.process is not None else None

    def _scan_forever(self) -> None:
        """Scan every ``scan_interval`` s, and at once when a place frees up."""
        while True:
            self._freed.wait(self.scan_interval)
            self._freed.clear()
            if self._closing.is_set():
                return
            try:
                self.scan()
            except Exception:  # a database hiccup must not end the scanning
                log.exception("scanning for tuning jobs failed")

    def scan(self) -> list[str]:
        """Claim and start the tuning jobs that nobody runs, oldest first, up to
        ``max_running``; returns their names. Of those being stopped, one that never ran a
        training job is ended here; one that did is started beyond ``max_running`` (it has
        training jobs to stop, and they ran within a bound before)."""
        with self._launching:  # scans never overlap: one claim and one start per tuning job
            return self._scan_holding_the_start()

    def _scan_holding_the_start(self) -> list[str]:
        """``scan``, called holding ``_launching``. A tuning job being stopped is taken
        whatever the launch policy: its worker only stops what runs, it starts nothing."""
        taken: list[str] = []
        self._free_leases_of_the_dead()
        for name in self.store.claimable_tuning_jobs(stopping_only=True):
            if self._closing.is_set():
                return taken
            if not self._end_if_never_ran(name, self.store) and self._take(name, stopping=True):
                taken.append(name)
        waiting = [] if self._full() else self.store.claimable_tuning_jobs()
        for name in waiting:
            if self._closing.is_set() or self._full():
                break
            if self._take(name):
                taken.append(name)
        return taken

    def _free_leases_of_the_dead(self) -> None:
        """Free the leases held by processes of this machine that have ended (a ``tuner run``
        killed outright), so that this scan takes their tuning jobs without waiting the
        leases out; not those of this service's own workers that it saw die, whose leases
        run out (a worker failing at once again would otherwise be restarted every scan: one
        that could not re-attach, the engine down, ends with 0 holding its lease)."""
        with self._lock:
            mine = set(self._running) | self._workers_died
        for name, holder in self.store.held_tuning_jobs():
            if name not in mine and owner_is_gone(holder):
                log.warning(
                    "tuning job %s: the process holding it (%s) has ended; taking it over",
                    name,
                    holder,
                )
                self.store.release_tuning_job(name, holder)

    def _take(self, name: str, stopping: bool = False) -> bool:
        """Claim and start tuning job ``name`` unless it runs here already or (unless it is
        being stopped) this service's policy refuses it (called holding ``_launching``)."""
        with self._lock:
            if name in self._running:
                return False
        if not stopping and not self._allowed(name):
            return False
        claimed = self.store.claim_tuning_job(name, self.owner, self.lease_seconds)
        if claimed:
            with self._lock:
                self._workers_died.discard(name)
        return claimed and self._launch(name)

    def _start_if_next(self, name: str, store: Store) -> None:
        """Start tuning job ``name``, just recorded, when there is room and no older one waits
        (called holding ``_launching``); else the scanner is woken to take the oldest."""
        if self._full():
            return
        older = store.claimable_tuning_jobs(limit=len(self._refused) + 1)
        if [n for n in older if n not in self._refused][:1] == [name]:
            if store.claim_tuning_job(name, self.owner, self.lease_seconds):
                self._launch(name)
        elif self._scanner is None:  # not started (a library's use): scan here, oldest first
            self._scan_holding_the_start()
        else:
            self._freed.set()

    def _end_if_never_ran(self, name: str, store: Store) -> bool:
        """End tuning job ``name``, being stopped, Stopped at once when nobody runs it and it
        never ran a training job: it needs no worker (called holding ``_launching``)."""
        with self._lock:
            if name in self._running:
                return False
        if not store.claim_tuning_job(name, self.owner, self.lease_seconds):
            return False  # another process runs it
        if store.list_training_jobs(name, limit=1):
            store.release_tuning_job(name, self.owner)
            return False
        store.set_tuning_status(name, TuningStatus.STOPPED, NEVER_RAN)
        self._track_ended_here(name, store)
        return True

    def _track_ended_here(self, name: str, store: Store) -> None:
        """Write tuning job ``name``, ended here without a worker, to its MLflow tracking
        server (a parent run, Stopped, with no nested run), in a thread of its own: a slow
        server must not hold the scan or the request. A failure is logged (``tuner track``
        writes it later); nothing here fails the stop, which is recorded already."""
        try:
            record = store.get_tuning_job(name)
            definition = TuningJobDefinition.from_store(record.definition, name)
        except TunerError as exc:
            log.error("tuning job %s: not written to MLflow: %s", name, exc)
            return
        if definition.tracking_uri is None:
            return

        def track() -> None:
            try:
                catch_up(definition, name, self.store, None)
            except Exception as exc:  # the tuning job has ended: nothing of it is lost
                log.error(
                    "MLflow tracking of %s at %s failed: %s; `tuner track %s` writes it",
                    name,
                    definition.tracking_uri,
                    exc,
                    name,
                )

        threading.Thread(target=track, name=f"mlflow-{name}", daemon=True).start()

    def _allowed(self, name: str) -> bool:
        """Whether this service's launch policy allows what the tuning job runs: one created
        by ``tuner run`` on the same database, whose process died, is not taken over when it
        runs a program, image or engine the service would refuse at ``submit``."""
        if name in self._refused:
            return False
        try:
            definition = TuningJobDefinition.from_store(
                self.store.get_tuning_job(name).definition, name
            )
            self.policy.check_definition(definition)
        except ValidationError as exc:
            log.warning("not taking over tuning job %s: %s", name, exc)
            self._refused.add(name)
            return False
        return True

    def _launch(self, name: str) -> bool:
        """Start running tuning job ``name``, whose lease this service holds (called holding
        ``_launching``); False, the lease released, when closing or when no worker starts."""
        if self._closing.is_set():
            self.store.release_tuning_job(name, self.owner)
            return False
        if self.workers == "thread":
            detach = threading.Event()
            thread = threading.Thread(
                target=self._run_here, args=(name, detach), name=f"tuner-{name}", daemon=True
            )
            each = _Running(thread, detach.set)
        else:
            try:
                process = self._start_worker(name)
            except OSError as exc:  # no process to be had (EAGAIN, ENOMEM, EMFILE...)
                log.error("could not start a worker for tuning job %s: %s", name, exc)
                self.store.release_tuning_job(name, self.owner)
                return False
            thread = threading.Thread(
                target=self._watch, args=(name, process), name=f"tuner-{name}", daemon=True
            )
            each = _Running(thread, lambda: _close(process.stdin), process)
        with self._lock:
            self._running[name] = each
        thread.start()
        return True

    def _done(self, name: str) -> None:
        """Forget tuning job ``name``'s entry, if it is still the calling thread's."""
        with self._lock:
            if (each := self._running.get(name)) and each.thread is threading.current_thread():
                del self._running[name]
                self._freed.set()

    def _run_here(self, name: str, detach: threading.Event) -> None:
        try:
            run_tuning_job(self.store, name, self.owner, self.lease_seconds, detach)
        finally:
            self._done(name)

    def _start_worker(self, name: str) -> subprocess.Popen[bytes]:
        """A fresh interpreter (not a fork of the service's threads) running
        ``tuner.worker.main``, told what to run on its stdin (a database URL may hold a
        password: not in argv, which every user of the machine can read)."""
        task = {
            "path": sys.path,
            "url": self.store.url,
            "patience": self.store.patience,
            "name": name,
            "owner": self.owner,
            "lease_seconds": self.lease_seconds,
        }
        line = json.dumps(task).encode() + b"\n"
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, _DETACHING)  # the child inherits it
        try:
            process = subprocess.Popen(  # the name in argv: what ps shows an operator
                [sys.executable, "-c", _WORKER, "tuner-worker", name], stdin=subprocess.PIPE
            )
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        assert process.stdin is not None
        try:
            process.stdin.write(line)
            process.stdin.flush()
        except OSError:  # it died at once: _watch says how
            _close(process.stdin)
        return process

    def _watch(self, name: str, process: subprocess.Popen[bytes]) -> None:
        """Wait for the worker process to end."""
        try:
            code = process.wait()
            with self._lock:  # before _done: a scan now leaves its lease to run out
                self._workers_died.add(name)
            if code:
                log.error(
                    "the worker process of tuning job %s ended with exit code %s; its lease"
                    " runs out and a later scan resumes it",
                    name,
                    code,
                )
        finally:
            _close(process.stdin)
            self._done(name)


def _close(stream: IO[bytes] | None) -> None:
    """Close a worker's stdin, which tells it to leave; data it could not take is dropped."""
    if stream is not None:
        with contextlib.suppress(OSError):
            stream.close()


def workers_from_env() -> Workers:
    """``TUNER_WORKERS``: ``process`` (default) or ``thread``; ValidationError otherwise."""
    raw = os.environ.get("TUNER_WORKERS", "process")
    if raw not in ("process", "thread"):
        raise ValidationError(f"TUNER_WORKERS must be 'process' or 'thread'; got {raw!r}")
    return cast(Workers, raw)


def in_memory(url: str) -> bool:
    """Whether ``url`` names an SQLite database that lives in one process's memory."""
    parsed = make_url(url)
    return parsed.get_backend_name() == "sqlite" and (
        parsed.database in (None, "")
        or ":memory:" in parsed.database
        or parsed.query.get("mode") == "memory"
    )
