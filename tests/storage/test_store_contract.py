"""The store contract (tuner/storage/store.py), run on SQLite and on a real PostgreSQL."""

import math
import threading
import time

import pytest

from tuner import NotFoundError, ValidationError
from tuner.metrics import MetricPoint
from tuner.records import ObjectiveStatus, TrainingStatus, TuningStatus
from tuner.storage import Store

DEFINITION = {"strategy": "Random", "hyperparameter_ranges": {"lr": {"type": "continuous"}}}


def test_tuning_job_round_trip(store):
    created = store.create_tuning_job("t1", DEFINITION)
    assert created.status is TuningStatus.IN_PROGRESS
    got = store.get_tuning_job("t1")
    assert got.definition == DEFINITION
    assert got.created_at == pytest.approx(created.created_at)


def test_names_are_unique_and_missing_names_say_so(store):
    store.create_tuning_job("t1", DEFINITION)
    with pytest.raises(ValidationError, match="'t1' already exists"):
        store.create_tuning_job("t1", DEFINITION)
    with pytest.raises(NotFoundError, match="no tuning job named 'nope'"):
        store.get_tuning_job("nope")
    with pytest.raises(NotFoundError, match="no training job named 'nope-001'"):
        store.get_training_job("nope-001")
    assert store.get_tuning_job("t1").definition == DEFINITION  # nothing lost


def test_listing_newest_first_filtered_and_paged(store):
    for name in ("a", "b", "c"):
        store.create_tuning_job(name, DEFINITION)
    store.set_tuning_status("b", TuningStatus.COMPLETED, "done")
    assert [j.name for j in store.list_tuning_jobs()] == ["c", "b", "a"]
    assert [j.name for j in store.list_tuning_jobs(TuningStatus.COMPLETED)] == ["b"]
    assert [j.name for j in store.list_tuning_jobs(limit=1, offset=1)] == ["b"]
    b = store.get_tuning_job("b")
    assert b.status_reason == "done" and b.ended_at is not None


def test_training_job_lifecycle(store):
    store.create_tuning_job("t", DEFINITION)
    job = store.create_training_job("t", 1, {"lr": 0.1, "opt": "sgd", "n": 3, "flag": True})
    assert job.name == "t-001" and job.status is TrainingStatus.PENDING
    store.mark_started(job.name, "handle-1", "/tmp/w", gpus="0,1")
    running = store.get_training_job("t-001")
    assert running.status is TrainingStatus.IN_PROGRESS and running.gpus == "0,1"
    done = store.finish_training_job("t-001", TrainingStatus.COMPLETED, 0.93, exit_code=0)
    assert done.objective_status is ObjectiveStatus.SUCCEEDED
    assert done.objective == 0.93 and done.duration is not None and done.duration >= 0
    assert done.hyperparameters == {"lr": 0.1, "opt": "sgd", "n": 3, "flag": True}
    failed = store.create_training_job("t", 2, {"lr": 0.2})
    store.finish_training_job(failed.name, TrainingStatus.FAILED, None, "boom", 1)
    jobs = store.list_training_jobs("t")
    assert [j.number for j in jobs] == [1, 2]
    assert jobs[1].failure_reason == "boom" and jobs[1].objective_status is ObjectiveStatus.FAILED
    assert store.count_training_jobs("t") == 2


def test_training_jobs_sorted_filtered_and_paged(store):
    store.create_tuning_job("t", DEFINITION)
    store.create_tuning_job("other", DEFINITION)
    store.create_training_job("other", 1, {})
    ends = {1: 0.5, 2: None, 3: 0.9, 4: 0.7, 5: 0.9}  # 2 fails; 6 is still pending
    for number, objective in ends.items():
        job = store.create_training_job("t", number, {"lr": number / 10})
        status = TrainingStatus.FAILED if objective is None else TrainingStatus.COMPLETED
        store.finish_training_job(job.name, status, objective)
    store.create_training_job("t", 6, {"lr": 0.6})

    def numbers(**how):
        return [j.number for j in store.list_training_jobs("t", **how)]

    assert numbers() == [1, 2, 3, 4, 5, 6]
    # best first unless told (Maximize here); ties by number, earliest first in either
    # direction (the best job is the first of the best: the list agrees with best_training_job);
    # no objective last either way
    assert numbers(sort_by="objective") == [3, 5, 4, 1, 2, 6]
    assert numbers(sort_by="objective", descending=True) == [3, 5, 4, 1, 2, 6]
    assert numbers(sort_by="objective", descending=False) == [1, 4, 3, 5, 2, 6]
    assert numbers(sort_by="objective", limit=2) == [3, 5]
    assert numbers(sort_by="objective", limit=2, offset=2) == [4, 1]
    assert numbers(sort_by="objective", descending=False, limit=10, offset=5) == [6]
    assert numbers(status=TrainingStatus.COMPLETED, sort_by="objective") == [3, 5, 4, 1]
    assert numbers(sort_by="number", descending=True) == [6, 5, 4, 3, 2, 1]
    store.create_tuning_job("low", {**DEFINITION, "objective_type": "Minimize"})
    for number, objective in {1: 0.3, 2: 0.1, 3: 0.2}.items():
        job = store.create_training_job("low", number, {})
        store.finish_training_job(job.name, TrainingStatus.COMPLETED, objective)
    assert [j.number for j in store.list_training_jobs("low", sort_by="objective")] == [2, 3, 1]
    assert numbers(status=TrainingStatus.FAILED) == [2]
    assert numbers(status=TrainingStatus.STOPPED) == []
    # a failed objective sorts after every succeeded one, however good its value: inf read
    # from a log, a value printed before a crash, an early-stopped job's last value
    store.create_tuning_job("odd", DEFINITION)
    ends = [
        (TrainingStatus.COMPLETED, 0.5),
        (TrainingStatus.FAILED, math.inf),
        (TrainingStatus.FAILED, 0.99),
        (TrainingStatus.STOPPED, 0.95),
        (TrainingStatus.COMPLETED, 0.7),
    ]
    for number, (status, objective) in enumerate(ends, 1):
        job = store.create_training_job("odd", number, {})
        store.finish_training_job(job.name, status, objective)
    best_first = [j.number for j in store.list_training_jobs("odd", sort_by="objective")]
    assert best_first == [5, 1, 2, 3, 4]
    worst_first = store.list_training_jobs("odd", sort_by="objective", descending=False)
    assert [j.number for j in worst_first] == [1, 5, 4, 3, 2]
    assert numbers(sort_by="status") == [1, 3, 4, 5, 2, 6]  # Completed, Failed, Pending
    assert numbers(sort_by="name", descending=True) == [6, 5, 4, 3, 2, 1]
    assert numbers(sort_by="created", descending=True, limit=1) == [6]
    with pytest.raises(ValidationError, match=r"sort_by must be one of .*, got 'speed'"):
        store.list_training_jobs("t", sort_by="speed")
    with pytest.raises(ValidationError, match="limit must be >= 1 and offset >= 0, got limit=0"):
        store.list_training_jobs("t", limit=0)
    with pytest.raises(NotFoundError):
        store.list_training_jobs("nope", sort_by="objective")


def test_training_numbers_are_unique_within_a_tuning_job(store):
    store.create_tuning_job("t", DEFINITION)
    store.create_training_job("t", 1, {})
    with pytest.raises(Exception):  # noqa: B017 - the database refuses, whatever the driver
        store.create_training_job("t", 1, {})
    assert store.count_training_jobs("t") == 1


def test_metric_points_round_trip_exactly(store):
    store.create_tuning_job("t", DEFINITION)
    job = store.create_training_job("t", 1, {})
    values = [0.1, 1e-300, -2.5e10, math.inf, -math.inf, math.nan]
    points = [MetricPoint("m", v, i, 100.0 + i) for i, v in enumerate(values)]
    points.append(MetricPoint("other", 7.0, len(values), 200.0))
    assert store.add_metric_points(job.name, points) == 7
    got = store.metric_points(job.name, "m")
    assert [p.seq for p in got] == list(range(6))
    for p, want in zip(got, values, strict=True):
        assert (math.isnan(p.value) and math.isnan(want)) or p.value == want
    assert len(store.metric_points(job.name)) == 7
    last = [(p.name, p.value, p.seq, p.timestamp) for p in store.last_metric_points(job.name)]
    assert last == [("m", -2.5e10, 2, 102.0), ("other", 7.0, 6, 200.0)]  # finite ones only


def test_a_tuning_jobs_points_of_one_metric_come_in_one_read(store):
    store.create_tuning_job("t", DEFINITION)
    store.create_tuning_job("u", DEFINITION)
    first, second, silent = (store.create_training_job("t", n, {}) for n in (1, 2, 3))
    elsewhere = store.create_training_job("u", 1, {})
    store.add_metric_points(
        second.name, [MetricPoint("m", 2.0, 1, 1.0), MetricPoint("m", 1.0, 0, 0.0)]
    )
    store.add_metric_points(first.name, [MetricPoint("m", math.nan, 0, 0.0)])
    store.add_metric_points(first.name, [MetricPoint("other", 9.0, 1, 1.0)])
    store.add_metric_points(elsewhere.name, [MetricPoint("m", 5.0, 0, 0.0)])
    got = store.tuning_metric_points("t", "m")
    assert set(got) == {first.name, second.name}  # the silent job and tuning job u left out
    assert [p.value for p in got[second.name]] == [1.0, 2.0]  # in reported order
    assert got[second.name] == store.metric_points(second.name, "m")
    assert len(got[first.name]) == 1 and math.isnan(got[first.name][0].value)
    assert silent.name not in got
    with pytest.raises(NotFoundError):
        store.tuning_metric_points("nope", "m")


def test_stop_request_is_seen_by_another_store_on_the_same_database(store, database_url):
    store.create_tuning_job("t", DEFINITION)
    other = Store(database_url)
    other.request_stop("t")
    record = store.get_tuning_job("t")
    assert record.stop_requested and record.status is TuningStatus.STOPPING
    store.set_tuning_status("t", TuningStatus.STOPPED, "stopped on request")
    assert other.request_stop("t").status is TuningStatus.STOPPED  # no-op once ended
    other.close()


def test_a_stop_request_racing_the_create_is_not_lost(store, database_url):
    """The create commits after the stop's UPDATE looked for the job and before its read: the
    stop answered InProgress, was never recorded, and the job ran to its end."""
    from sqlalchemy import event
    from sqlalchemy.orm import Session

    other = Store(database_url)
    created = []

    def create_after(conn, cursor, statement, *args):
        if statement.lstrip().upper().startswith("UPDATE TUNING_JOBS") and not created:
            created.append(True)

    def commit_create(session):
        if created == [True]:  # after the stop's UPDATE ended, before it reads the job
            created.append("creating")  # the create's own commit comes here too
            store.create_tuning_job("t", DEFINITION)

    event.listen(other.engine, "after_cursor_execute", create_after)
    event.listen(Session, "after_commit", commit_create)
    try:
        answer = other.request_stop("t")
    finally:
        event.remove(Session, "after_commit", commit_create)
    assert len(created) == 2  # the race happened
    assert answer.stop_requested and answer.status is TuningStatus.STOPPING
    record = store.get_tuning_job("t")
    assert record.stop_requested and record.status is TuningStatus.STOPPING
    other.close()


def test_an_interrupted_tuning_job_is_reopened_once_and_leased_to_who_reopened_it(store):
    """Two resumes at once both reopened it, the second clearing the first's lease: two
    schedulers ran it."""
    store.create_tuning_job("t", DEFINITION)
    job = store.create_training_job("t", 1, {"lr": 0.1})
    store.finish_training_job(job.name, TrainingStatus.STOPPED, None, "stopped by the tuner")
    store.set_tuning_status("t", TuningStatus.STOPPED, "interrupted")
    args = ("interrupted", "stopped by the tuner", "run again")
    assert store.reopen_tuning_job("t", *args, owner="a", ttl=60)
    assert not store.reopen_tuning_job("t", *args, owner="b", ttl=60)
    record = store.get_tuning_job("t")
    assert record.status is TuningStatus.IN_PROGRESS and record.owner == "a"
    assert store.get_training_job(job.name).failure_reason == "run again"
    store.set_tuning_status("t", TuningStatus.STOPPED, "stopped on request")
    assert not store.reopen_tuning_job("t", *args, owner="b", ttl=60)  # not interrupted


def test_each_reopening_records_how_long_the_tuning_job_stood_interrupted(store):
    """Reports measure a run's time without those pauses (``TuningJob.active_seconds``): a
    comparison interrupted overnight and resumed showed the night as its wall time."""
    store.create_tuning_job("t", DEFINITION)
    args = ("interrupted", "stopped by the tuner", "run again")
    for _ in range(2):
        ended = store.set_tuning_status("t", TuningStatus.STOPPED, "interrupted").ended_at
        time.sleep(0.05)
        before = time.time()
        assert store.reopen_tuning_job("t", *args, owner="a", ttl=60)
        after = time.time()
        start, end = store.get_tuning_job("t").pauses[-1]
        assert start == ended and before <= end <= after
    record = store.get_tuning_job("t")
    assert len(record.pauses) == 2
    paused = sum(end - start for start, end in record.pauses)
    later = time.time()
    assert record.active_seconds(later) == pytest.approx(later - record.created_at - paused)
    first_end = record.pauses[0][0]  # the moment the first pause began: none of it counts
    assert record.active_seconds(first_end) == pytest.approx(first_end - record.created_at)


def test_a_stop_request_for_no_job_is_not_found(store):
    with pytest.raises(NotFoundError):
        store.request_stop("nope")


def test_a_stop_request_racing_the_end_does_not_undo_it(store, database_url):
    """The scheduler records the end between the request's look at the status and its write
    (a stop() wakes the scheduler before it writes): the end stands, not a Stopping forever."""
    from sqlalchemy import event

    store.create_tuning_job("t", DEFINITION)
    other = Store(database_url)
    ended = []

    def end_first(conn, cursor, statement, *args):
        if statement.lstrip().upper().startswith("UPDATE TUNING_JOBS") and not ended:
            ended.append(store.set_tuning_status("t", TuningStatus.STOPPED, "stopped on request"))

    event.listen(other.engine, "before_cursor_execute", end_first)
    other.request_stop("t")
    record = store.get_tuning_job("t")
    assert record.status is TuningStatus.STOPPED and record.ended_at is not None
    other.close()


def test_concurrent_writers_lose_nothing(store):
    store.create_tuning_job("t", DEFINITION)
    jobs = [store.create_training_job("t", n, {}) for n in range(1, 5)]

    def write(name):
        for i in range(25):
            store.add_metric_points(name, [MetricPoint("m", float(i), i, 0.0)])

    threads = [threading.Thread(target=write, args=(j.name,)) for j in jobs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(len(store.metric_points(j.name)) == 25 for j in jobs)


def test_bad_url_is_a_clear_error():
    with pytest.raises(ValidationError, match="storage must be a SQLAlchemy URL"):
        Store("not a url")


def test_claimable_tuning_jobs_come_oldest_first_and_those_being_stopped_on_their_own(store):
    for name in ("a", "b", "c"):
        store.create_tuning_job(name, DEFINITION)
    store.request_stop("b")
    assert store.claimable_tuning_jobs() == ["a", "b", "c"]
    assert store.claimable_tuning_jobs(stopping_only=True) == ["b"]
    assert store.claimable_tuning_jobs(limit=2) == ["a", "b"]
    assert store.claim_tuning_job("b", "x", ttl=30)
    assert store.claimable_tuning_jobs(stopping_only=True) == []


def test_claimable_tuning_jobs_created_in_the_same_instant_come_in_the_order_created(
    store, monkeypatch
):
    monkeypatch.setattr(time, "time", lambda: 1_000_000.0)  # one clock tick for all
    for name in ("z", "m", "a"):
        store.create_tuning_job(name, DEFINITION)
    monkeypatch.undo()
    assert store.claimable_tuning_jobs() == ["z", "m", "a"]


def test_leases_are_exclusive_until_they_expire(store, database_url):
    store.create_tuning_job("t", DEFINITION)
    other = Store(database_url)
    assert store.claimable_tuning_jobs() == ["t"]
    assert store.claim_tuning_job("t", "a", ttl=30)
    assert not other.claim_tuning_job("t", "b", ttl=30)
    assert store.claim_tuning_job("t", "a", ttl=30)  # the holder may claim again
    assert store.claimable_tuning_jobs() == []
    assert store.renew_lease("t", "a", ttl=0.2)
    time.sleep(0.3)
    assert store.claimable_tuning_jobs() == ["t"]
    assert other.claim_tuning_job("t", "b", ttl=30)
    assert not store.renew_lease("t", "a", ttl=30)
    assert store.get_tuning_job("t").owner == "b"
    other.release_tuning_job("t", "b")
    assert store.get_tuning_job("t").owner is None
    store.set_tuning_status("t", TuningStatus.COMPLETED, "done")
    assert not store.claim_tuning_job("t", "a", ttl=30)  # an ended job is never claimed
    other.close()


def test_racing_claims_give_one_winner(store, database_url):
    store.create_tuning_job("t", DEFINITION)
    stores = [Store(database_url) for _ in range(4)]
    wins = []
    barrier = threading.Barrier(4)

    def claim(i):
        barrier.wait()
        if stores[i].claim_tuning_job("t", f"owner-{i}", ttl=30):
            wins.append(i)

    threads = [threading.Thread(target=claim, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(wins) == 1
    assert store.get_tuning_job("t").owner == f"owner-{wins[0]}"
    for s in stores:
        s.close()


def test_many_processes_may_create_the_schema_at_once(database_url):
    import subprocess
    import sys

    code = "import sys; from tuner.storage import Store; Store(sys.argv[1]).list_tuning_jobs()"
    procs = [subprocess.Popen([sys.executable, "-c", code, database_url]) for _ in range(6)]
    assert [p.wait(60) for p in procs] == [0] * 6


def test_a_database_made_by_an_older_version_gains_the_new_columns(database_url):
    from sqlalchemy import text

    old = Store(database_url)
    old.create_tuning_job("t", DEFINITION)
    old.create_training_job("t", 1, {"lr": 0.1})
    old.create_training_job("t", 2, {"lr": 0.2})
    old.mark_started("t-002", "h", "/w")
    old.finish_training_job("t-002", TrainingStatus.COMPLETED, 0.5)
    with old.engine.begin() as connection:  # as the version before queue times and S3 made it
        connection.execute(text("ALTER TABLE training_jobs DROP COLUMN running_at"))
        connection.execute(text("ALTER TABLE training_jobs DROP COLUMN artifacts_uri"))
    old.close()
    new = Store(database_url)
    assert new.get_training_job("t-001").hyperparameters == {"lr": 0.1}  # nothing lost
    ended = new.get_training_job("t-002")  # its whole training was counted as queue time
    assert ended.queued_seconds == 0.0 and ended.duration == ended.ended_at - ended.started_at
    new.mark_started("t-001", "h", "/w")
    uuids = ",".join(f"GPU-00000000-0000-0000-0000-{i:012d}" for i in range(8))  # 327 characters
    assert new.mark_running("t-001", time.time(), uuids).gpus == uuids
    assert new.set_artifacts_uri("t-001", "s3://b/t/t-001/").artifacts_uri == "s3://b/t/t-001/"
    new.close()


def test_queue_and_training_time_are_apart(store):
    store.create_tuning_job("t", DEFINITION)
    store.create_training_job("t", 1, {"lr": 0.1})
    store.create_training_job("t", 2, {"lr": 0.2})
    started = store.mark_started("t-001", "h", "/w").started_at
    store.mark_running("t-001", started + 5.0, "1")
    done = store.finish_training_job("t-001", TrainingStatus.COMPLETED, 0.5, began_at=started + 5)
    assert done.gpus == "1" and done.queued_seconds == pytest.approx(5.0)
    assert done.duration == pytest.approx(done.ended_at - started - 5.0)
    store.mark_started("t-002", "h", "/w")  # cancelled while it waited in the queue
    never = store.finish_training_job("t-002", TrainingStatus.STOPPED)
    assert never.duration == 0.0 and never.queued_seconds == pytest.approx(
        never.ended_at - never.started_at
    )
