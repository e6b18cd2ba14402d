"""A service runs at most ``max_running`` tuning jobs at once: the rest wait, unleased, and
start in submission order as places free up; a waiting one asked to stop ends at once."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.test_resume import definition, wait_for
from tuner import TrainingStatus, TuningStatus
from tuner import service as service_module
from tuner.env_values import count_from_env
from tuner.errors import StoreUnavailable, ValidationError
from tuner.launch_policy import LaunchPolicy
from tuner.service import NEVER_RAN, TuningService
from tuner.storage import Store


def submitted(service: TuningService, name: str, sleep: float, max_jobs: int = 1) -> None:
    body = definition(service.runs_dir.parent, sleep, max_jobs=max_jobs, max_parallel_jobs=1)
    service.submit(body.model_copy(update={"name": name}))


def ended(store: Store, name: str) -> bool:
    return store.get_tuning_job(name).status.terminal


def stored_too_wide(store: Store, tmp_path) -> None:
    """Tuning job "wide" (40 parallel jobs), waiting, as a service with a wider policy (or
    ``tuner run``) left it: more than ``LaunchPolicy(max_parallel_jobs=10)`` allows."""
    wide = definition(tmp_path, 0.1, max_jobs=40, max_parallel_jobs=40)
    store.create_tuning_job("wide", wide.model_copy(update={"name": "wide"}).to_json())


def test_tuning_jobs_beyond_max_running_wait_and_start_in_submission_order(tmp_path, sqlite_url):
    store = Store(sqlite_url)
    service = TuningService(store, tmp_path / "runs", 60, scan_interval=0.2, max_running=1)
    service.start()
    try:
        for name in ("first", "second", "third"):
            submitted(service, name, 0.3)
        assert service.running() == ["first"]
        for name in ("second", "third"):  # recorded, waiting: nobody holds them, nothing runs
            record = store.get_tuning_job(name)
            assert record.status is TuningStatus.IN_PROGRESS and record.owner is None
            assert store.list_training_jobs(name) == []
        wait_for(lambda: ended(store, "third"), timeout=90)
    finally:
        service.shutdown()
    jobs = {n: store.list_training_jobs(n)[0] for n in ("first", "second", "third")}
    assert all(store.get_tuning_job(n).status is TuningStatus.COMPLETED for n in jobs)
    # one at a time, in the order submitted: each began after the one before had ended
    assert jobs["second"].created_at >= store.get_tuning_job("first").ended_at
    assert jobs["third"].created_at >= store.get_tuning_job("second").ended_at


def test_a_place_that_frees_up_is_taken_at_once_not_at_the_next_periodic_scan(tmp_path, sqlite_url):
    store = Store(sqlite_url)
    service = TuningService(store, tmp_path / "runs", 60, scan_interval=120, max_running=1)
    service.start()
    try:
        submitted(service, "first", 0.1)
        submitted(service, "second", 0.1)
        wait_for(lambda: ended(store, "second"), timeout=60)  # long before 120 s
    finally:
        service.shutdown(timeout=10)
    assert not service._scanner.is_alive()  # shutdown wakes the scanner too


def test_a_place_freed_before_the_next_scan_goes_to_the_oldest_waiting_tuning_job(
    tmp_path, sqlite_url
):
    store = Store(sqlite_url)
    service = TuningService(store, tmp_path / "runs", 60, max_running=1)  # no scans of its own
    try:
        submitted(service, "first", 0.1)
        submitted(service, "second", 0.1)
        wait_for(lambda: service.running() == [], timeout=60)  # "first" ended, no scan yet
        submitted(service, "third", 0.1)  # the older one gets the place
        assert service.running() == ["second"] and store.get_tuning_job("third").owner is None
    finally:
        service.shutdown()


def test_a_waiting_tuning_job_asked_to_stop_ends_at_once_and_keeps_nobody_out(tmp_path, sqlite_url):
    store = Store(sqlite_url)
    service = TuningService(store, tmp_path / "runs", 60, scan_interval=0.2, max_running=1)
    service.start()
    try:
        submitted(service, "long", 2.0, max_jobs=3)
        submitted(service, "waiting", 0.3)
        record = service.stop("waiting")
        assert record.status is TuningStatus.STOPPED  # answered ended, not Stopping
        assert record.status_reason == NEVER_RAN and record.owner is None
        assert store.list_training_jobs("waiting") == []
        assert service.running() == ["long"]  # the place was never given up
    finally:
        service.shutdown()


def test_tuning_jobs_stopped_while_waiting_are_ended_by_a_scan_without_a_worker_each(
    tmp_path, sqlite_url
):
    """Stopped by another process (``tuner stop`` on the database): a worker each would have
    started any number of interpreters at once, whatever the bound."""
    store = Store(sqlite_url)
    service = TuningService(store, tmp_path / "runs", 60, max_running=1)
    try:
        submitted(service, "long", 2.0, max_jobs=3)
        names = [f"waiting-{i}" for i in range(6)]
        for name in names:
            submitted(service, name, 0.1)
            store.request_stop(name)
        assert service.scan() == []
        assert service.running() == ["long"]
        for name in names:
            record = store.get_tuning_job(name)
            assert (record.status, record.status_reason) == (TuningStatus.STOPPED, NEVER_RAN)
    finally:
        service.shutdown()


def test_a_waiting_tuning_job_the_policy_now_refuses_neither_blocks_others_nor_resists_a_stop(
    tmp_path, sqlite_url
):
    """Accepted before a restart with a narrower policy: it is not taken, later ones run."""
    store = Store(sqlite_url)
    stored_too_wide(store, tmp_path)
    policy = LaunchPolicy(max_parallel_jobs=10)
    service = TuningService(store, tmp_path / "runs", 60, policy=policy, max_running=4)
    try:
        assert service.scan() == []  # refused, said once in the log
        submitted(service, "fresh", 0.1)
        assert service.running() == ["fresh"]  # not held behind the refused one
        assert service.stop("wide").status is TuningStatus.STOPPED
    finally:
        service.shutdown()


def test_a_refused_tuning_job_with_training_jobs_asked_to_stop_is_taken_to_stop_them(
    tmp_path, sqlite_url
):
    """A worker only stops what runs: the policy (which bounds what is started) does not
    keep it Stopping forever, claimed and released by every scan."""
    store = Store(sqlite_url)
    stored_too_wide(store, tmp_path)
    store.create_training_job("wide", 1, {"x": 0.5})  # recorded, never started
    store.request_stop("wide")
    policy = LaunchPolicy(max_parallel_jobs=10)
    service = TuningService(store, tmp_path / "runs", 60, policy=policy, max_running=1)
    try:
        assert service.scan() == ["wide"]
        wait_for(lambda: ended(store, "wide"), timeout=60)
        assert store.get_tuning_job("wide").status is TuningStatus.STOPPED
        assert service.stop("wide").status is TuningStatus.STOPPED
    finally:
        service.shutdown()


def test_a_service_never_started_takes_the_oldest_itself_so_a_submit_is_not_stranded(
    tmp_path, sqlite_url
):
    """A library's use (``submit`` without ``start``): no scanner would ever come."""
    store = Store(sqlite_url)
    stored_too_wide(store, tmp_path)
    service = TuningService(store, tmp_path / "runs", 60, policy=LaunchPolicy(max_parallel_jobs=10))
    try:
        submitted(service, "fresh", 0.1)
        assert service.running() == ["fresh"] and service.worker_pid("fresh") is not None
    finally:
        service.shutdown()


def test_a_database_that_fails_after_the_record_does_not_make_the_client_submit_twice(
    tmp_path, sqlite_url, monkeypatch
):
    """Told to retry, the client would have got "already exists", or a second job under a
    new generated name; the recorded tuning job waits for a scan instead."""
    store = Store(sqlite_url)
    service = TuningService(store, tmp_path / "runs", 60, scan_interval=0.2)
    request_store = Store(sqlite_url)

    def away(*args, **kwargs):
        raise StoreUnavailable("storage did not answer (simulated)")

    monkeypatch.setattr(request_store, "claimable_tuning_jobs", away)
    service.start()
    try:
        body = definition(tmp_path, 0.1, max_jobs=1, max_parallel_jobs=1)
        record = service.submit(body.model_copy(update={"name": "once"}), request_store)
        assert record.name == "once" and record.status is TuningStatus.IN_PROGRESS
        wait_for(lambda: ended(store, "once"), timeout=60)
        assert store.get_tuning_job("once").status is TuningStatus.COMPLETED
    finally:
        service.shutdown()


def test_a_submit_does_not_wait_behind_a_scan_that_holds_the_start(
    tmp_path, sqlite_url, monkeypatch
):
    """A scan riding out a database outage holds the start for up to 120 s: a submit records
    its tuning job and leaves the start to the scanner instead of waiting with it."""
    monkeypatch.setattr(service_module, "SUBMIT_WAIT", 0.2)
    store = Store(sqlite_url)
    service = TuningService(store, tmp_path / "runs", 60, scan_interval=60, max_running=2)
    service.start()
    try:
        with service._launching:  # a scan under way
            began = time.monotonic()
            submitted(service, "quick", 0.1)
            assert time.monotonic() - began < 5
            assert store.get_tuning_job("quick").owner is None  # recorded, waiting
        wait_for(lambda: ended(store, "quick"), timeout=60)  # the woken scanner started it
        assert store.get_tuning_job("quick").status is TuningStatus.COMPLETED
    finally:
        service.shutdown()


def test_a_scan_takes_tuning_jobs_nobody_runs_only_up_to_max_running(tmp_path, sqlite_url):
    """Left by a service that died, or waiting for a place: the oldest are taken first."""
    store = Store(sqlite_url)
    for name in ("older", "newer"):
        body = definition(tmp_path, 0.3, max_jobs=1, max_parallel_jobs=1)
        store.create_tuning_job(name, body.model_copy(update={"name": name}).to_json())
    service = TuningService(store, tmp_path / "runs", 60, max_running=1)
    try:
        assert service.scan() == ["older"]
        assert service.scan() == []  # full
        assert store.get_tuning_job("newer").owner is None
    finally:
        service.shutdown()
    with pytest.raises(ValueError, match="max_running must be at least 1"):
        TuningService(store, tmp_path / "runs", max_running=0)


def test_max_parallel_jobs_above_the_policys_limit_is_refused_and_nothing_stored(
    tmp_path, sqlite_url
):
    store = Store(sqlite_url)
    policy = LaunchPolicy(max_parallel_jobs=4)
    service = TuningService(store, tmp_path / "runs", policy=policy)
    wide = definition(tmp_path, 0.1, max_jobs=8, max_parallel_jobs=8)
    with pytest.raises(ValidationError) as refused:
        service.submit(wide)
    assert "max_parallel_jobs must be at most 4" in str(refused.value)
    assert "got 8" in str(refused.value)
    assert store.list_tuning_jobs() == []
    policy.check_definition(wide.model_copy(update={"max_parallel_jobs": 4}))


@pytest.mark.parametrize("raw", ["0", "-3", "many", "2.5", "1_0", "+3", "\u00b2"])
def test_a_bad_count_in_the_environment_names_the_variable_and_value(monkeypatch, raw):
    monkeypatch.setenv("TUNER_MAX_RUNNING_TUNING_JOBS", raw)
    with pytest.raises(ValidationError) as refused:
        count_from_env("TUNER_MAX_RUNNING_TUNING_JOBS", 16)
    assert "TUNER_MAX_RUNNING_TUNING_JOBS must be a whole number from 1 to 1,000,000" in str(
        refused.value
    )
    assert repr(raw) in str(refused.value)


def test_the_capacity_settings_reach_the_service(tmp_path, sqlite_url, monkeypatch):
    from api.app import create_app
    from api.settings import Settings

    settings = Settings(token="t", database_url=sqlite_url, runs_dir=str(tmp_path / "runs"))
    service = create_app(settings).state.service
    assert (service.max_running, service.policy.max_parallel_jobs) == (16, 100)  # defaults
    monkeypatch.setenv("TUNER_MAX_RUNNING_TUNING_JOBS", "3")
    monkeypatch.setenv("TUNER_MAX_PARALLEL_JOBS", "7")
    monkeypatch.setenv("TUNER_DATABASE_URL", sqlite_url)
    service = create_app(Settings.from_env()).state.service
    assert (service.max_running, service.policy.max_parallel_jobs) == (3, 7)


def test_tuning_jobs_of_one_service_never_hold_more_than_the_gpu_together(tmp_path, sqlite_url):
    """Two tuning jobs on GPU 0, one in halves (2 at a time), one in wholes: at no moment do
    their running training jobs, by their own clocks, hold more than the whole GPU."""
    store = Store(sqlite_url)
    service = TuningService(store, tmp_path / "runs", 60, scan_interval=0.2)
    shares = {"halves": 0.5, "wholes": 1}
    try:
        for name, share in shares.items():
            body = definition(
                tmp_path,
                0.6,
                {"gpus": [0], "gpus_per_job": share},
                max_jobs=4,
                max_parallel_jobs=2,
            )
            service.submit(body.model_copy(update={"name": name}))
        wait_for(lambda: all(ended(store, n) for n in shares), timeout=120)
    finally:
        service.shutdown()
    spans = []
    for name, share in shares.items():
        assert store.get_tuning_job(name).status is TuningStatus.COMPLETED
        for job in store.list_training_jobs(name):
            times = json.loads((Path(job.workdir) / "output" / "times.json").read_text())
            spans.append((times["start"], times["end"], share))
    assert len(spans) == 8
    held = [sum(s for b, e, s in spans if b <= start < e) for start, _, _ in spans]
    assert max(held) <= 1  # each job's start: the shares of those running then, itself included
    assert any(h == 1 for h in held)  # and they did share the GPU: two halves at once


def test_tuning_jobs_of_one_service_never_run_more_local_jobs_than_the_machines_limit(
    tmp_path, sqlite_url, monkeypatch
):
    """``TUNER_MAX_LOCAL_JOBS=2`` (``tuner serve --max-local-jobs 2``) and two tuning jobs of
    three parallel training jobs each: never more than two run at once, by their own clocks,
    and both tuning jobs complete."""
    monkeypatch.setenv("TUNER_MAX_LOCAL_JOBS", "2")
    store = Store(sqlite_url)
    service = TuningService(store, tmp_path / "runs", 60, scan_interval=0.2)
    names = ["first", "second"]
    try:
        for name in names:
            body = definition(tmp_path, 0.6, max_jobs=4, max_parallel_jobs=3)
            service.submit(body.model_copy(update={"name": name}))
        wait_for(lambda: all(ended(store, n) for n in names), timeout=120)
    finally:
        service.shutdown()
    spans = []
    for name in names:
        assert store.get_tuning_job(name).status is TuningStatus.COMPLETED
        jobs = store.list_training_jobs(name)
        assert [j.number for j in jobs] == [1, 2, 3, 4]  # no start was recorded and redone
        for job in jobs:
            assert job.status is TrainingStatus.COMPLETED, job.failure_reason
            times = json.loads((Path(job.workdir) / "output" / "times.json").read_text())
            spans.append((times["start"], times["end"]))
    at_once = [sum(b <= start < e for b, e in spans) for start, _ in spans]
    assert max(at_once) == 2  # at each start, those running then (itself included)


def test_a_tuning_job_waiting_for_a_local_place_gets_one_as_soon_as_one_frees(
    tmp_path, sqlite_url, monkeypatch
):
    """Under ``TUNER_MAX_LOCAL_JOBS=2`` a tuning job submitted while another fills both places
    started only once the other had started its whole budget: each freed place was taken back
    by its holder in the same pass. Now the waiting one gets the next place that frees."""
    monkeypatch.setenv("TUNER_MAX_LOCAL_JOBS", "2")
    store = Store(sqlite_url)
    service = TuningService(store, tmp_path / "runs", 60, scan_interval=0.2)
    try:
        service.submit(  # jobs long enough that the second's worker is in line before
            # the first two end (0.8 s raced its start-up: it failed by 46 us once)
            definition(tmp_path, 3.0, max_jobs=8, max_parallel_jobs=2).model_copy(
                update={"name": "first"}
            )
        )
        wait_for(lambda: len(store.list_training_jobs("first")) >= 2, timeout=60)
        service.submit(
            definition(tmp_path, 0.8, max_jobs=2, max_parallel_jobs=2).model_copy(
                update={"name": "second"}
            )
        )
        wait_for(lambda: ended(store, "first") and ended(store, "second"), timeout=120)
    finally:
        service.shutdown()
    starts = {}
    for name in ("first", "second"):
        assert store.get_tuning_job(name).status is TuningStatus.COMPLETED
        jobs = store.list_training_jobs(name)
        assert all(j.status is TrainingStatus.COMPLETED for j in jobs)
        starts[name] = sorted(
            json.loads((Path(j.workdir) / "output" / "times.json").read_text())["start"]
            for j in jobs
        )
    # the second's first job took the first place that freed, before the first's third job
    assert starts["second"][0] < starts["first"][2]
