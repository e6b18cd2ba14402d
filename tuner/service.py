"""Running tuning jobs in the background for a long-lived process (the REST service).

A ``TuningService`` submits tuning jobs to the store and runs every tuning job it holds the
lease of in a thread of its own. A scan picks up tuning jobs that nobody holds (submitted by
another process, or left behind by a process that died: their leases expire) and resumes
them; any number of services may share one database, and a tuning job is run by one of them at
a time. ``shutdown()`` leaves the training jobs running and releases the leases, so a service
started again (or another one) re-attaches to them.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from pathlib import Path

from tuner.definition import TuningJobDefinition, check_working_directory
from tuner.errors import LauncherUnavailable, StoreUnavailable, ValidationError
from tuner.launch_policy import LaunchPolicy
from tuner.records import TuningJob, TuningStatus
from tuner.scheduler import Scheduler
from tuner.storage import Store
from tuner.tracking import tracker_for
from tuner.tuner import default_name, process_owner
from tuner.warm_start import resolve

log = logging.getLogger("tuner.service")


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
    ) -> None:
        self.store = store
        self.runs_dir = Path(runs_dir).resolve()
        self.lease_seconds = lease_seconds
        self.scan_interval = scan_interval
        self.policy = policy or LaunchPolicy(programs=tuple(allowed_programs))
        self.owner = process_owner()
        self._running: dict[str, tuple[threading.Thread, threading.Event]] = {}
        self._refused: set[str] = set()  # tuning jobs its policy does not allow, said once
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._scanner: threading.Thread | None = None

    def start(self) -> None:
        self.runs_dir.mkdir(parents=True, exist_ok=True)
        self._scanner = threading.Thread(target=self._scan_forever, name="tuner-scan", daemon=True)
        self._scanner.start()

    def submit(self, definition: TuningJobDefinition, store: Store | None = None) -> TuningJob:
        """Validate, record and start a tuning job; its folders live under ``runs_dir``.
        ``store``: the one to record it in (a REST request's, which does not wait for a
        database that stopped answering); by default the service's own."""
        store = store or self.store
        self.policy.check(definition.job_definition)
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
        record = store.create_tuning_job(
            name,
            definition.to_json(),
            self.owner,
            self.lease_seconds,
            warm.to_json() if warm else None,
        )
        self._launch(name)
        return record

    def stop(self, name: str, store: Store | None = None) -> TuningJob:
        """Ask whichever process runs the tuning job to stop it (``store`` as in ``submit``)."""
        return (store or self.store).request_stop(name)

    def shutdown(self, timeout: float = 30.0) -> None:
        """Leave every tuning job (training jobs keep running) and release the leases."""
        self._closing.set()
        with self._lock:
            running = list(self._running.values())
        for _, detach in running:
            detach.set()
        for thread, _ in running:
            thread.join(timeout)
        if self._scanner is not None:
            self._scanner.join(timeout)

    def running(self) -> list[str]:
        with self._lock:
            return sorted(self._running)

    def _scan_forever(self) -> None:
        while not self._closing.wait(self.scan_interval):
            try:
                self.scan()
            except Exception:  # a database hiccup must not end the scanning
                log.exception("scanning for tuning jobs failed")

    def scan(self) -> list[str]:
        """Claim and start the tuning jobs that nobody runs; returns their names."""
        taken = []
        for name in self.store.claimable_tuning_jobs():
            with self._lock:
                if name in self._running:
                    continue
            if not self._allowed(name):
                continue
            if self.store.claim_tuning_job(name, self.owner, self.lease_seconds):
                self._launch(name)
                taken.append(name)
        return taken

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
            self.policy.check(definition.job_definition)
        except ValidationError as exc:
            log.warning("not taking over tuning job %s: %s", name, exc)
            self._refused.add(name)
            return False
        return True

    def _launch(self, name: str) -> None:
        detach = threading.Event()
        thread = threading.Thread(
            target=self._run, args=(name, detach), name=f"tuner-{name}", daemon=True
        )
        with self._lock:
            self._running[name] = (thread, detach)
        thread.start()

    def _run(self, name: str, detach: threading.Event) -> None:
        try:
            record = self.store.get_tuning_job(name)
            definition = TuningJobDefinition.from_store(record.definition, name)
            Scheduler(
                definition,
                name,
                self.store,
                owner=self.owner,
                lease_seconds=self.lease_seconds,
                detach_event=detach,
            ).run()
        except (StoreUnavailable, LauncherUnavailable) as exc:  # its lease runs out; a later
            # scan resumes it once the database or the engine answers
            log.error("tuning job %s: %s", name, exc)
        except Exception as exc:
            log.exception("tuning job %s failed", name)
            try:
                record = self.store.get_tuning_job(name)
                if not record.status.terminal and record.owner in (None, self.owner):
                    self.store.set_tuning_status(
                        name, TuningStatus.FAILED, f"internal error: {type(exc).__name__}: {exc}"
                    )
            except Exception:
                log.exception("could not record the failure of %s", name)
        finally:
            with self._lock:
                self._running.pop(name, None)
