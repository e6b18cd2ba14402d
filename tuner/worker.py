"""A service's worker process: ``main`` runs one tuning job.

The service (``tuner.service``) starts a fresh interpreter whose stdin's first line, JSON, is
the task (its ``path``, the store's ``url`` and ``patience``, the tuning job's ``name``, the
lease's ``owner`` and ``lease_seconds``); ``main`` takes the lease over under its own name and
runs the tuning job until it ends, or until
its stdin ends: the service closes it to detach the worker, and it ends by itself when
the service dies, even by SIGKILL. Detached, the worker leaves as a detached scheduler does: its
lease released, its training jobs still running. SIGINT and SIGTERM only detach it too: a
terminal's Ctrl-C, or a supervisor's SIGTERM, reaches every process of the service's group,
and what they mean is the service's to decide.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
from typing import Any, BinaryIO

from tuner.definition import TuningJobDefinition
from tuner.errors import LauncherUnavailable, StoreUnavailable, TunerError
from tuner.owners import process_owner
from tuner.records import TuningStatus
from tuner.scheduler import Scheduler
from tuner.storage import Store

log = logging.getLogger("tuner.service")


def run_tuning_job(
    store: Store, name: str, owner: str, lease_seconds: float, detach: threading.Event
) -> None:
    """Run tuning job ``name`` (its lease held by ``owner``) until it ends or ``detach`` is
    set; an unexpected error is recorded as the tuning job's failure, a database or engine
    that does not answer only logged (its lease runs out; a later scan resumes it)."""
    try:
        record = store.get_tuning_job(name)
        definition = TuningJobDefinition.from_store(record.definition, name)
        Scheduler(
            definition,
            name,
            store,
            owner=owner,
            lease_seconds=lease_seconds,
            detach_event=detach,
        ).run()
    except (StoreUnavailable, LauncherUnavailable) as exc:
        log.error("tuning job %s: %s", name, exc)
    except Exception as exc:
        log.exception("tuning job %s failed", name)
        try:
            record = store.get_tuning_job(name)
            if not record.status.terminal and record.owner in (None, owner):
                store.set_tuning_status(
                    name, TuningStatus.FAILED, f"internal error: {type(exc).__name__}: {exc}"
                )
        except Exception:
            log.exception("could not record the failure of %s", name)


def main(task: dict[str, Any] | None, told: BinaryIO) -> int:
    """Run ``task``'s tuning job until it ends or ``told`` ends (module docstring); None: the
    service detached the worker before telling it anything."""
    detach = threading.Event()
    # a handler, not SIG_IGN: an ignored signal would stay ignored in the training jobs; the
    # service started the worker with both blocked, so one sent during its start-up is
    # answered now (and the training jobs it starts get them unblocked)
    numbers = {signal.SIGINT, signal.SIGTERM}
    for number in numbers:
        # set here, not by tuner.signal_safe's thread (a moment later: a worker signalled
        # during start-up could launch first): this thread never holds detach's lock
        signal.signal(number, lambda *_: detach.set())
    signal.pthread_sigmask(signal.SIG_UNBLOCK, numbers)
    if task is None:
        return 0
    threading.Thread(target=_detach_at_end, args=(told, detach), daemon=True).start()
    try:
        store = Store(task["url"], patience=task["patience"])
    except TunerError as exc:  # the database does not answer: a later scan tries again
        log.error("tuning job %s: %s", task["name"], exc)
        return 1
    try:
        # The service claimed the lease under its own name; this worker holds it under its own
        # (tuner.owners): a worker outliving a killed service must not look like a holder that
        # has ended, which `tuner resume` on this machine would take over at once. The name
        # carries the service's too: a worker that ended while its service runs is not gone.
        name, own = task["name"], process_owner(service=task["owner"])
        if not store.claim_tuning_job(name, own, task["lease_seconds"], task["owner"]):
            log.warning("tuning job %s: another process took it before this worker began", name)
            return 0
        run_tuning_job(store, name, own, task["lease_seconds"], detach)
    finally:
        store.close()
    return 0


def _detach_at_end(told: BinaryIO, detach: threading.Event) -> None:
    """Set ``detach`` once ``told`` ends (or fails): the service detached this worker, or died.
    Read from its descriptor, not its buffer: a daemon thread blocked holding the buffer's
    lock aborts the interpreter's exit."""
    with contextlib.suppress(OSError):
        while os.read(told.fileno(), 4096):
            pass
    detach.set()
