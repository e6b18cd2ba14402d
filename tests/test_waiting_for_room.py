"""A start whose room (a local job place, a GPU slot) another tuner process took between the
launcher's ``free_slots`` and its ``start`` stays one recorded Pending training job and starts
when room frees up: no extra record, no budget used, nothing lost when the tuning job ends first.
The rival process is a ``LocalJobLimit`` on the same lease directory, taking the places at the
worst moment."""

from __future__ import annotations

import threading

import pytest

from tests.test_resume import definition, wait_for
from tuner import TrainingStatus, TuningStatus
from tuner.launchers import LocalLauncher
from tuner.launchers.host_leases import LEASE_DIR_ENV, HostLeases
from tuner.launchers.local_limit import LIMIT_ENV, LocalJobLimit
from tuner.scheduler import NOT_STARTED_AT_END, Scheduler
from tuner.storage import Store


class _Raced(LocalLauncher):
    """Its first start finds both places taken by ``rival`` since ``free_slots`` offered one."""

    def __init__(self, rival: LocalJobLimit) -> None:
        super().__init__(parallel_jobs=1)
        self.rival = rival
        self.raced = False

    def start(self, spec):
        if not self.raced:
            self.raced = True
            for i in range(2):
                self.rival.take(f"rival-{i}", f"/elsewhere/rival-{i}")
        return super().start(spec)


@pytest.fixture
def rival(tmp_path, monkeypatch) -> LocalJobLimit:
    monkeypatch.setenv(LEASE_DIR_ENV, str(tmp_path / "leases"))
    monkeypatch.setenv(LIMIT_ENV, "2")
    return LocalJobLimit(2, HostLeases(tmp_path / "leases"))


def test_a_start_that_lost_its_place_waits_recorded_and_starts_when_room_frees(
    tmp_path, sqlite_url, rival
):
    d = definition(tmp_path, sleep=0.0, max_jobs=3, max_parallel_jobs=2)
    store = Store(sqlite_url)
    store.create_tuning_job("resume", d.to_json())
    seen: list[tuple[str, str, str]] = []
    recorded_while_waiting: list[int] = []

    def on_event(kind, job):
        seen.append((kind, job.name, job.status.value))

    scheduler = Scheduler(d, "resume", store, launcher=_Raced(rival), on_event=on_event)

    def free_later():
        try:
            wait_for(lambda: scheduler.waiting, timeout=20)  # recorded, waiting for room
            recorded_while_waiting.append(len(store.list_training_jobs("resume")))
        finally:
            rival.release("rival-0")

    freer = threading.Thread(target=free_later)
    freer.start()
    record = scheduler.run()
    freer.join()
    assert record.status is TuningStatus.COMPLETED, record.failure_reason
    # The second configuration of that first batch was not recorded to wait beside it.
    assert recorded_while_waiting == [1]
    jobs = store.list_training_jobs("resume")
    assert [(j.number, j.status) for j in jobs] == [
        (n, TrainingStatus.COMPLETED) for n in (1, 2, 3)
    ]
    assert jobs[0].started_at is not None and jobs[0].started_at > jobs[0].created_at
    assert [e for e in seen if e[0] == "ended" and e[2] != "Completed"] == []
    rival.release("rival-1")


def test_a_start_still_waiting_when_its_tuning_job_is_stopped_ends_stopped_not_started(
    tmp_path, sqlite_url, rival
):
    d = definition(tmp_path, sleep=0.0, max_jobs=3, max_parallel_jobs=1)
    store = Store(sqlite_url)
    store.create_tuning_job("resume", d.to_json())
    stop = threading.Event()
    scheduler = Scheduler(d, "resume", store, launcher=_Raced(rival), stop_event=stop)

    def stop_when_waiting():
        try:
            wait_for(lambda: scheduler.waiting, timeout=20)
        finally:
            stop.set()

    stopper = threading.Thread(target=stop_when_waiting)
    stopper.start()
    record = scheduler.run()
    stopper.join()
    assert record.status is TuningStatus.STOPPED
    (job,) = store.list_training_jobs("resume")  # nothing else was recorded or started
    assert (job.status, job.failure_reason, job.handle) == (
        TrainingStatus.STOPPED,
        NOT_STARTED_AT_END,
        None,
    )
    for i in range(2):
        rival.release(f"rival-{i}")
