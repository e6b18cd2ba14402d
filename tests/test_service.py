"""The service's worker processes: each tuning job runs in one, leaves its tuning job (lease
released, training jobs untouched) when the service detaches it, dies or signals it, and is
started again by a scan when it ends without leaving."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from tests.test_early_stopping import alive
from tests.test_resume import definition, leave_running, runs_per_job, wait_for
from tuner import TuningStatus
from tuner.owners import owner_is_gone, process_owner
from tuner.service import TuningService
from tuner.storage import Store


def job_running(store: Store) -> bool:
    return any(j.status.value == "InProgress" for j in store.list_training_jobs("resume"))


def ended(store: Store) -> bool:
    return store.get_tuning_job("resume").status.terminal


def test_each_tuning_job_runs_in_a_worker_process_that_shutdown_detaches(tmp_path, sqlite_url):
    store = Store(sqlite_url)
    service = TuningService(store, tmp_path / "runs", lease_seconds=60)
    service.submit(definition(tmp_path, 2.0, max_jobs=2, max_parallel_jobs=1))
    pid = service.worker_pid("resume")
    assert pid is not None and pid != os.getpid()
    wait_for(lambda: job_running(store))
    # the worker holds the lease under its own name (it took it over from the service's):
    # a worker left by a killed service is a live holder, not one `resume` may take from
    owner = store.get_tuning_job("resume").owner
    assert alive(pid) and owner is not None and owner.split(":")[1] == str(pid)
    assert owner != service.owner and not owner_is_gone(owner)
    assert Path(f"/proc/{pid}/cmdline").read_bytes().endswith(b"\0tuner-worker\0resume\0")

    service.shutdown()
    assert not alive(pid) and service.running() == []
    record = store.get_tuning_job("resume")
    assert record.owner is None and record.status is TuningStatus.IN_PROGRESS  # left, not ended
    assert job_running(store)  # its training job runs on

    again = TuningService(store, tmp_path / "runs", lease_seconds=60)
    assert again.scan() == ["resume"]  # no lease to wait for
    wait_for(lambda: ended(store), timeout=60)
    assert store.get_tuning_job("resume").status is TuningStatus.COMPLETED
    assert list(runs_per_job(store).values()) == [1, 1]  # re-attached, not run again
    again.shutdown()


SERVICE = textwrap.dedent(
    """
    import json, sys, time
    from tuner import TuningJobDefinition
    from tuner.service import TuningService
    from tuner.storage import Store

    url, runs, body = sys.argv[1:]
    service = TuningService(Store(url), runs, lease_seconds=60)
    service.submit(TuningJobDefinition.parse(json.loads(body)))
    print(service.worker_pid("resume"), flush=True)
    time.sleep(600)
    """
)


def test_a_worker_whose_service_is_killed_outright_leaves_its_tuning_job_at_once(
    tmp_path, sqlite_url
):
    """With threads, a SIGKILLed service held its tuning jobs until their leases ran out (30 s
    by default, here 60): nobody could resume them before."""
    body = json.dumps(definition(tmp_path, 3.0, max_jobs=2, max_parallel_jobs=1).to_json())
    runs = str(tmp_path / "runs")
    service = subprocess.Popen(
        [sys.executable, "-c", SERVICE, sqlite_url, runs, body],
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).parent.parent,
    )
    assert service.stdout is not None
    worker = int(service.stdout.readline())
    store = Store(sqlite_url)
    wait_for(lambda: job_running(store))
    service.kill()
    service.wait()

    wait_for(lambda: store.get_tuning_job("resume").owner is None, timeout=10)
    wait_for(lambda: not alive(worker), timeout=10)
    assert store.get_tuning_job("resume").status is TuningStatus.IN_PROGRESS
    assert job_running(store)  # untouched
    again = TuningService(store, tmp_path / "runs", lease_seconds=60)
    assert again.scan() == ["resume"]
    wait_for(lambda: ended(store), timeout=60)
    assert store.get_tuning_job("resume").status is TuningStatus.COMPLETED
    assert list(runs_per_job(store).values()) == [1, 1]
    again.shutdown()


def running_three_jobs(
    tmp_path: Path, url: str, lease_seconds: float
) -> tuple[Store, TuningService, int]:
    """A started service running a tuning job of three jobs of 2 s, one at a time, once its
    first job runs; its worker's pid."""
    store = Store(url)
    service = TuningService(store, tmp_path / "runs", lease_seconds, scan_interval=0.2)
    service.start()
    service.submit(definition(tmp_path, 2.0, max_jobs=3, max_parallel_jobs=1))
    pid = service.worker_pid("resume")
    assert pid is not None
    wait_for(lambda: job_running(store))
    return store, service, pid


@pytest.mark.parametrize("number", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_to_a_worker_only_detaches_it_and_a_scan_starts_it_again(
    tmp_path, sqlite_url, number
):
    """A supervisor's SIGTERM to every process of the service, or a terminal's Ctrl-C, must not
    stop the tuning job as a person's stop or ``tuner run``'s Ctrl-C does."""
    store, service, first = running_three_jobs(tmp_path, sqlite_url, lease_seconds=60)
    os.kill(first, number)
    wait_for(lambda: service.worker_pid("resume") not in (None, first), timeout=20)
    wait_for(lambda: ended(store), timeout=60)
    assert store.get_tuning_job("resume").status is TuningStatus.COMPLETED
    assert list(runs_per_job(store).values()) == [1, 1, 1]
    service.shutdown()


def test_a_worker_killed_outright_is_named_and_started_again_once_its_lease_runs_out(
    tmp_path, sqlite_url, caplog
):
    store, service, first = running_three_jobs(tmp_path, sqlite_url, lease_seconds=2)
    with caplog.at_level(logging.ERROR, logger="tuner.service"):
        os.kill(first, signal.SIGKILL)
        wait_for(lambda: service.worker_pid("resume") not in (None, first), timeout=20)
    assert "the worker process of tuning job resume ended with exit code -9" in caplog.text
    wait_for(lambda: ended(store), timeout=60)
    assert store.get_tuning_job("resume").status is TuningStatus.COMPLETED
    assert list(runs_per_job(store).values()) == [1, 1, 1]
    service.shutdown()


def test_worker_processes_need_a_database_other_processes_can_open(tmp_path):
    store = Store("sqlite://")
    with pytest.raises(ValueError, match="need a database other processes can open, not 'sq"):
        TuningService(store, tmp_path / "runs")
    with pytest.raises(ValueError, match="workers must be 'process' or 'thread', not 'fork'"):
        TuningService(store, tmp_path / "runs", workers="fork")  # type: ignore[arg-type]
    TuningService(store, tmp_path / "runs", workers="thread")  # runs them in its threads


def test_thread_workers_run_tuning_jobs_inside_the_service(tmp_path, sqlite_url):
    store = Store(sqlite_url)
    service = TuningService(store, tmp_path / "runs", workers="thread")
    service.submit(definition(tmp_path, 0.2, max_jobs=2, max_parallel_jobs=1))
    assert service.running() == ["resume"] and service.worker_pid("resume") is None
    wait_for(lambda: ended(store), timeout=60)
    assert store.get_tuning_job("resume").status is TuningStatus.COMPLETED
    wait_for(lambda: service.running() == [])
    service.shutdown()


def test_a_worker_that_cannot_start_is_named_and_tried_again_after_the_lease(
    tmp_path, sqlite_url, caplog, monkeypatch
):
    """A worker gone before it read its task left the tuning job marked running in the
    service for good (closing its stdin raised), so no scan ever started it again."""
    store = Store(sqlite_url)
    service = TuningService(store, tmp_path / "runs", lease_seconds=1)
    d = definition(tmp_path, 0.2, max_jobs=2, max_parallel_jobs=1)  # its jobs run Python
    monkeypatch.setattr(sys, "executable", "/bin/false")
    with caplog.at_level(logging.ERROR, logger="tuner.service"):
        service.submit(d)
        wait_for(lambda: service.running() == [])
    assert "the worker process of tuning job resume ended with exit code 1" in caplog.text
    monkeypatch.undo()
    wait_for(lambda: service.scan() == ["resume"], timeout=10)  # once the lease ran out
    wait_for(lambda: ended(store), timeout=60)
    assert store.get_tuning_job("resume").status is TuningStatus.COMPLETED
    service.shutdown()


def test_scans_at_the_same_time_start_one_worker(tmp_path, sqlite_url):
    """Both claimed the tuning job (the lease is the service's either way) and both started a
    worker; the first was lost to shutdown()."""
    store = Store(sqlite_url)
    store.create_tuning_job("resume", definition(tmp_path, 1.0, max_jobs=1).to_json())
    service = TuningService(store, tmp_path / "runs", lease_seconds=60)
    taken: list[str] = []
    barrier = threading.Barrier(2)

    def scan() -> None:
        barrier.wait()
        taken.extend(service.scan())

    scans = [threading.Thread(target=scan) for _ in range(2)]
    for t in scans:
        t.start()
    for t in scans:
        t.join()
    assert taken == ["resume"] and service.running() == ["resume"]
    wait_for(lambda: ended(store), timeout=60)
    assert list(runs_per_job(store).values()) == [1]
    service.shutdown()


def test_shutdown_during_a_scan_starts_nothing_and_leaves_no_lease(
    tmp_path, sqlite_url, monkeypatch
):
    """A tuning job claimed after shutdown() looked got a worker nobody detached, renewing
    the service's lease until the process ended."""
    store = Store(sqlite_url)
    store.create_tuning_job("resume", definition(tmp_path, 1.0, max_jobs=1).to_json())
    service = TuningService(store, tmp_path / "runs", lease_seconds=60)
    claimed, go = threading.Event(), threading.Event()
    claim = store.claim_tuning_job

    def slow_claim(*args):
        won = claim(*args)
        claimed.set()
        go.wait(10)
        return won

    monkeypatch.setattr(store, "claim_tuning_job", slow_claim)
    taken: list[str] = []
    scanning = threading.Thread(target=lambda: taken.extend(service.scan()))
    scanning.start()
    assert claimed.wait(10)
    closing = threading.Thread(target=service.shutdown)
    closing.start()
    wait_for(lambda: service._closing.is_set())
    go.set()
    scanning.join()
    closing.join()
    assert taken == [] and service.running() == []
    assert store.get_tuning_job("resume").owner is None  # another service may take it at once
    assert store.list_training_jobs("resume") == []


def test_the_workers_setting_reaches_the_service(tmp_path, sqlite_url, monkeypatch):
    from api.app import create_app
    from api.settings import Settings

    monkeypatch.setenv("TUNER_WORKERS", "thread")
    assert Settings.from_env().workers == "thread"
    # An image's tag holds ':' (os.pathsep here): "repo:1.0" was read as two images.
    monkeypatch.setenv("TUNER_ALLOWED_IMAGES", "repo:1.0  registry:5000/team/train@sha256:ab")
    assert Settings.from_env().allowed_images == ("repo:1.0", "registry:5000/team/train@sha256:ab")
    settings = Settings(token="t", database_url=sqlite_url, runs_dir=str(tmp_path / "runs"))
    assert create_app(settings).state.service.workers == "process"  # the default
    threads = Settings(**{**settings.__dict__, "workers": "thread"})
    assert create_app(threads).state.service.workers == "thread"


@pytest.mark.parametrize("number", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_during_a_workers_start_up_detaches_it_too(tmp_path, sqlite_url, number):
    """Sent before the worker answered signals, it was killed (SIGTERM) or crashed with a
    traceback (SIGINT) still holding the lease: the tuning job stalled until the lease ran out."""
    store = Store(sqlite_url)
    service = TuningService(store, tmp_path / "runs", lease_seconds=60)
    service.submit(definition(tmp_path, 0.2, max_jobs=1))
    pid = service.worker_pid("resume")
    assert pid is not None
    os.kill(pid, number)  # within milliseconds of its start: still importing
    wait_for(lambda: service.running() == [], timeout=30)
    assert store.get_tuning_job("resume").owner is None
    assert store.list_training_jobs("resume") == []  # it left before starting anything
    service.shutdown()


def test_the_training_jobs_of_a_worker_get_signals_as_usual(tmp_path, sqlite_url):
    """The service starts a worker with SIGINT and SIGTERM blocked (to answer them once it
    can); a training job must not inherit that, or it would not stop on SIGTERM."""
    store = Store(sqlite_url)
    service = TuningService(store, tmp_path / "runs")
    status = "import sys; print(open('/proc/self/status').read()); print('accuracy=0.5')"
    d = definition(tmp_path, 0.0, job={"command": [sys.executable, "-c", status]}, max_jobs=1)
    service.submit(d)
    wait_for(lambda: ended(store), timeout=60)
    (job,) = store.list_training_jobs("resume")
    assert "SigBlk:\t0000000000000000" in (Path(job.workdir) / "log.txt").read_text()
    service.shutdown()


def test_a_scan_takes_over_at_once_a_tuning_job_whose_holder_on_this_machine_ended(
    tmp_path, sqlite_url
):
    """A ``tuner run`` killed outright left its lease to run out (30 s) before a service's scan
    took its tuning job over, although ``tuner resume`` on the same machine takes it at once."""
    store = Store(sqlite_url)
    d = definition(tmp_path, 2.0, max_jobs=2, max_parallel_jobs=1)
    leave_running(store, d, 1)
    code = "from tuner.owners import process_owner; print(process_owner())"
    ended_holder = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    with store.engine.begin() as conn:  # held for ten minutes more by a process now gone
        conn.exec_driver_sql(
            "UPDATE tuning_jobs SET owner = ?, lease_expires = ?",
            (ended_holder, time.time() + 600),
        )
    service = TuningService(store, tmp_path / "runs", lease_seconds=60)
    assert service.scan() == ["resume"]
    wait_for(lambda: ended(store), timeout=60)
    assert store.get_tuning_job("resume").status is TuningStatus.COMPLETED
    assert list(runs_per_job(store).values()) == [1, 1]  # re-attached, not run again
    service.shutdown()


def test_a_scan_leaves_a_tuning_job_whose_holder_lives_or_cannot_be_told(tmp_path, sqlite_url):
    store = Store(sqlite_url)
    holders = {"live": process_owner(), "elsewhere": "otherhost:1:ab:1:2:3"}
    for name, holder in holders.items():
        d = definition(tmp_path, 0.1, max_jobs=1)
        store.create_tuning_job(name, d.to_json(), owner=holder, ttl=600)
    service = TuningService(store, tmp_path / "runs", lease_seconds=60)
    assert service.scan() == []
    assert dict(store.held_tuning_jobs()) == holders
    service.shutdown()


ENGINE_DOWN = (
    "import tuner.scheduler\n"
    "from tuner.errors import LauncherUnavailable\n"
    "def engine_down(self):\n"
    "    raise LauncherUnavailable('the Docker engine did not answer')\n"
    "tuner.scheduler.Scheduler.run = engine_down\n"
)


def test_a_worker_that_ends_holding_its_lease_is_not_restarted_every_scan(
    tmp_path, sqlite_url, monkeypatch
):
    """Review: a worker whose engine is down ends with 0, its lease held (to be resumed once it
    runs out); the scan took that lease from the dead worker at once and started another, about
    once a second."""
    import tuner.service

    monkeypatch.setattr(tuner.service, "_WORKER", ENGINE_DOWN + tuner.service._WORKER)
    starts: list[str] = []
    start = TuningService._start_worker

    def counted(self: TuningService, name: str) -> subprocess.Popen[bytes]:
        starts.append(name)
        return start(self, name)

    monkeypatch.setattr(TuningService, "_start_worker", counted)
    store = Store(sqlite_url)
    service = TuningService(store, tmp_path / "runs", lease_seconds=30, scan_interval=0.2)
    service.start()
    try:
        service.submit(definition(tmp_path, 0.1, max_jobs=1))
        wait_for(lambda: service.running() == [], timeout=30)  # the worker has ended
        time.sleep(3)  # fifteen scans
        assert starts == ["resume"]
        held = store.get_tuning_job("resume").owner
        assert held is not None  # left to run out
        # Another service on this machine leaves it too (it freed the lease of the dead
        # worker, and took the tuning job over at once, once per scan of each other service).
        other = TuningService(Store(sqlite_url), tmp_path / "other", lease_seconds=30)
        try:
            assert other.scan() == []
            assert store.get_tuning_job("resume").owner == held
        finally:
            other.shutdown()
    finally:
        service.shutdown()
