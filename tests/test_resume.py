"""Resuming a tuning job: re-attach to live jobs, re-run lost ones, leases between processes."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import pytest

from tests.conftest import fake_command
from tests.test_scheduler import max_overlap
from tuner import HyperparameterTuner, TrainingStatus, TuningJobDefinition, TuningStatus
from tuner.errors import LauncherUnavailable, ValidationError
from tuner.launchers import LocalLauncher
from tuner.scheduler import INTERRUPTED, Scheduler
from tuner.storage import Store


def definition(tmp_path: Path, sleep: float, job: dict | None = None, **kw) -> TuningJobDefinition:
    return TuningJobDefinition.parse(
        {
            "name": "resume",
            "strategy": "Random",
            "random_seed": 0,
            "objective_metric_name": "accuracy",
            "metric_definitions": [{"Name": "accuracy", "Regex": r"accuracy=([0-9.]+)"}],
            "hyperparameter_ranges": {"x": {"type": "continuous", "min_value": 0, "max_value": 1}},
            "job_definition": {
                "command": fake_command(),
                "static_hyperparameters": {"sleep": sleep, "epochs": 3},
                "output_path": str(tmp_path / "runs"),
                **(job or {}),
            },
            **kw,
        }
    )


def wait_for(predicate, timeout=30.0):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.05)


def runs_per_job(store: Store) -> dict[str, int]:
    out = {}
    for job in store.list_training_jobs("resume"):
        runs = Path(job.workdir) / "output" / "runs.txt"
        out[job.name] = len(runs.read_text().split()) if runs.exists() else 0
    return out


def run_one_job_unwatched(store: Store, d: TuningJobDefinition) -> Path:
    """Start the tuning job's one training job, detach its tuner once the job runs, and wait
    for the job to end by itself (its wrapper keeps its exit status); its folder."""
    store.create_tuning_job("resume", d.to_json(), owner="first", ttl=30)
    detach = threading.Event()
    first = Scheduler(d, "resume", store, owner="first", detach_event=detach)
    thread = threading.Thread(target=first.run)
    thread.start()
    wait_for(
        lambda: [j.running_at is not None for j in store.list_training_jobs("resume")] == [True]
    )
    detach.set()
    thread.join(10)
    workdir = Path(store.list_training_jobs("resume")[0].workdir or "")
    wait_for(lambda: (workdir / "exit_code").exists())
    return workdir


def leave_running(store: Store, d: TuningJobDefinition, jobs: int, printed: bool = False) -> None:
    """Run the tuning job until ``jobs`` training jobs run (each has printed, with
    ``printed``), then detach its tuner: the jobs run on, unwatched."""
    store.create_tuning_job("resume", d.to_json(), owner="first", ttl=30)
    detach = threading.Event()
    first = Scheduler(d, "resume", store, owner="first", detach_event=detach)
    thread = threading.Thread(target=first.run)
    thread.start()
    running = [True] * jobs
    wait_for(
        lambda: [j.running_at is not None for j in store.list_training_jobs("resume")] == running
    )
    if printed:
        wait_for(
            lambda: all(store.metric_points(j.name) for j in store.list_training_jobs("resume"))
        )
    detach.set()
    thread.join(10)


def test_a_new_scheduler_reattaches_to_running_jobs(tmp_path, database_url):
    store = Store(database_url)
    d = definition(tmp_path, sleep=1.5, max_jobs=5, max_parallel_jobs=2)
    store.create_tuning_job("resume", d.to_json(), owner="first", ttl=30)
    detach = threading.Event()
    first = Scheduler(d, "resume", store, owner="first", detach_event=detach)
    thread = threading.Thread(target=first.run)
    thread.start()
    in_progress = [TrainingStatus.IN_PROGRESS]
    wait_for(lambda: [j.status for j in store.list_training_jobs("resume")] == in_progress * 2)
    time.sleep(0.8)  # the jobs have printed some metrics
    detach.set()
    thread.join(10)
    assert store.get_tuning_job("resume").owner is None  # released on detach
    assert store.claim_tuning_job("resume", "second", ttl=30)
    second = Scheduler(d, "resume", Store(database_url), owner="second")
    record = second.run()

    assert record.status is TuningStatus.COMPLETED
    jobs = store.list_training_jobs("resume")
    assert len(jobs) == 5 and all(j.status is TrainingStatus.COMPLETED for j in jobs)
    assert set(runs_per_job(store).values()) == {1}  # nothing ran twice
    for job in jobs[:2]:  # the re-attached ones: every epoch stored once
        assert [p.seq for p in store.metric_points(job.name)] == [0, 1, 2]
    own = []
    for job in jobs:
        t = json.loads((Path(job.workdir) / "output" / "times.json").read_text())
        own.append((t["start"], t["end"]))
    assert max_overlap(own) <= 2


def test_jobs_that_cannot_be_reattached_are_rerun_without_using_the_budget(tmp_path, sqlite_url):
    store = Store(sqlite_url)
    d = definition(tmp_path, sleep=0.0, max_jobs=3, max_parallel_jobs=1)
    store.create_tuning_job("resume", d.to_json())
    lost = store.create_training_job("resume", 1, {"x": 0.25})
    store.mark_started(lost.name, "local:999999999:1:gone", str(tmp_path / "gone"))
    never_started = store.create_training_job("resume", 2, {"x": 0.75})
    Scheduler(d, "resume", store).run()

    jobs = {j.name: j for j in store.list_training_jobs("resume")}
    assert jobs[lost.name].status is TrainingStatus.STOPPED
    assert jobs[lost.name].failure_reason == INTERRUPTED
    assert jobs[never_started.name].status is TrainingStatus.COMPLETED
    completed = [j for j in jobs.values() if j.status is TrainingStatus.COMPLETED]
    assert len(completed) == 3  # max_jobs counts the jobs that ran, not the lost one
    assert {"x": 0.25} in [j.hyperparameters for j in completed]  # the lost one ran again


def test_a_job_that_ran_past_max_runtime_unwatched_fails_as_timed_out(tmp_path, sqlite_url):
    """Watched, the job would have been stopped at max_runtime; it ran past it and exited 0
    while no tuner watched, so the tuner that re-attaches judges it by the same rule."""
    store = Store(sqlite_url)
    # The launcher counts max_runtime from the launch; the tuner detaches once the job's
    # program runs, which a loaded machine takes a while to start: 2 s leave room for both
    # (CI's 1 s did not).
    d = definition(tmp_path, sleep=3.5, max_jobs=1, max_parallel_jobs=1, job={"max_runtime": 2})
    run_one_job_unwatched(store, d)  # the tuner went away before the limit: nobody stopped it
    assert store.claim_tuning_job("resume", "second", ttl=30)
    Scheduler(d, "resume", Store(sqlite_url), owner="second").run()
    job = store.list_training_jobs("resume")[0]
    assert job.status is TrainingStatus.FAILED and job.exit_code == 0
    reason = job.failure_reason or ""
    assert reason.startswith("exceeded max_runtime=2s: it ran 3.") or reason.startswith(
        "exceeded max_runtime=2s: it ran 4."
    ), reason
    assert reason.endswith("s and ended by itself before the tuner could stop it"), reason


def test_a_job_that_ended_unwatched_keeps_its_own_end_time(tmp_path, sqlite_url):
    """The job ended while no tuner watched it; the tuner that re-attaches later records when it
    ended (its wrapper's), so its duration and compute leave out the time nobody watched."""
    store = Store(sqlite_url)
    # 2 s: the job must outlast the detach, which a loaded machine makes late (see above)
    d = definition(tmp_path, sleep=2.0, max_jobs=1, max_parallel_jobs=1)
    ended = (run_one_job_unwatched(store, d) / "exit_code").stat().st_mtime
    time.sleep(2.0)  # nobody watches
    assert store.claim_tuning_job("resume", "second", ttl=30)
    Scheduler(d, "resume", Store(sqlite_url), owner="second").run()
    job = store.list_training_jobs("resume")[0]
    assert job.status is TrainingStatus.COMPLETED
    assert job.ended_at == pytest.approx(ended, abs=1e-3)
    assert job.running_at is not None and 2.0 <= job.ended_at - job.running_at < 3.5


def test_a_scheduler_that_lost_its_lease_leaves_the_jobs_alone(tmp_path, sqlite_url):
    store = Store(sqlite_url)
    d = definition(tmp_path, sleep=3.0, max_jobs=2, max_parallel_jobs=1)
    store.create_tuning_job("resume", d.to_json(), owner="a", ttl=0.3)
    first = Scheduler(d, "resume", store, owner="a", lease_seconds=0.3)
    thread = threading.Thread(target=first.run)
    thread.start()
    wait_for(lambda: store.count_training_jobs("resume") == 1)
    # another process takes the lease: possible only once it has expired, so pretend it has
    with store.engine.begin() as conn:
        conn.exec_driver_sql("UPDATE tuning_jobs SET lease_expires = 0")
    assert store.claim_tuning_job("resume", "b", ttl=30)
    thread.join(10)
    assert not thread.is_alive()
    job = store.list_training_jobs("resume")[0]
    assert job.status is TrainingStatus.IN_PROGRESS  # not stopped: it is b's now
    record = Scheduler(d, "resume", store, owner="b").run()
    assert record.status is TuningStatus.COMPLETED
    assert set(runs_per_job(store).values()) == {1}


@pytest.mark.parametrize(
    "lost", ["nothing", "handle file", "handle file, and the job ended meanwhile"]
)
def test_a_job_started_but_never_recorded_as_started_is_adopted_not_rerun(
    tmp_path, sqlite_url, lost
):
    from tuner.launchers import LocalLauncher
    from tuner.launchers.tracked import HANDLE_FILE

    store = Store(sqlite_url)
    d = definition(tmp_path, 1.0, {"max_runtime": 30}, max_jobs=1, max_parallel_jobs=1)
    store.create_tuning_job("resume", d.to_json())
    job = store.create_training_job("resume", 1, {"x": 0.5})
    dead_tuner = Scheduler(d, "resume", store)
    spec = dead_tuner._spec(job)
    handle = dead_tuner.launcher.start(spec)  # started; then the tuner "died"
    if lost != "nothing":  # it died before it could write the handle file
        (spec.workdir / HANDLE_FILE).unlink()
    if "ended" in lost:
        wait_for(lambda: not dead_tuner.launcher.poll(handle).running)
    Scheduler(d, "resume", store).run()
    ended = store.get_training_job(job.name)
    # it ended before the resume found it: its start was taken for the machine's boot, so it
    # "ran" for the uptime and Failed past max_runtime, its result lost
    assert ended.status is TrainingStatus.COMPLETED, ended.failure_reason
    assert ended.duration is not None and 0.5 < ended.duration < 30
    assert set(runs_per_job(store).values()) == {1}
    assert isinstance(dead_tuner.launcher, LocalLauncher)


def test_the_loser_of_two_concurrent_resumes_names_the_winner(tmp_path, sqlite_url):
    """Both read the dead owner's record; the loser's refusal named that dead owner."""
    from tuner import HyperparameterTuner, ValidationError

    store = Store(sqlite_url)
    d = definition(tmp_path, sleep=0.1, max_jobs=1)
    store.create_tuning_job("resume", d.to_json(), owner="dead", ttl=0.01)
    time.sleep(0.05)  # the dead owner's lease runs out
    loser = HyperparameterTuner.attach("resume", storage=sqlite_url)
    claim = loser.store.claim_tuning_job

    def winner_first(name: str, owner: str, ttl: float, replacing: str | None = None) -> bool:
        assert store.claim_tuning_job(name, "winner", 30)  # the other resume, a moment sooner
        return claim(name, owner, ttl, replacing)

    loser.store.claim_tuning_job = winner_first  # type: ignore[method-assign]
    with pytest.raises(ValidationError, match="is being run by 'winner'"):
        loser.resume()


def test_a_training_job_is_recorded_only_under_the_lease(sqlite_url):
    """The create renews the lease in its own transaction: a process that lost the tuning job
    records nothing (its number would collide with the new owner's)."""
    from tuner.errors import LeaseLost

    store = Store(sqlite_url)
    store.create_tuning_job("leased", {"objective_metric_name": "a"}, owner="b", ttl=30)
    with pytest.raises(LeaseLost, match="another process took over tuning job leased"):
        store.create_training_job("leased", 1, {"x": 0.5}, lease=("a", 30))
    assert store.count_training_jobs("leased") == 0
    job = store.create_training_job("leased", 1, {"x": 0.5}, lease=("b", 30))
    assert job.number == 1


@pytest.mark.parametrize("stall", ["before the create", "after the create"])
def test_a_store_stall_past_the_lease_hands_the_tuning_job_over_whole(tmp_path, sqlite_url, stall):
    """A database stall longer than the lease while recording a training job, and another
    process takes the tuning job over meanwhile: the first one failed the tuning job with an
    IntegrityError (both numbered a job 2) and left jobs it had started unrecorded. Now it
    leaves without starting anything; the new owner runs every job, each once."""
    d = definition(tmp_path, sleep=0.2, max_jobs=3, max_parallel_jobs=1)
    store = Store(sqlite_url)
    store.create_tuning_job("resume", d.to_json(), owner="a", ttl=30)
    first_store = Store(sqlite_url)
    create = first_store.create_training_job

    def stalled(name, number, config, lease=None):
        if number == 2 and stall == "after the create":
            job = create(name, number, config, lease=lease)
        if number == 2:  # the stall: the lease runs out and another process takes over
            with store.engine.begin() as conn:
                conn.exec_driver_sql("UPDATE tuning_jobs SET lease_expires = 0")
            assert store.claim_tuning_job("resume", "b", ttl=30)
            time.sleep(0.2)  # longer than a third of the lease
            if stall == "after the create":
                return job
        return create(name, number, config, lease=lease)

    first_store.create_training_job = stalled  # type: ignore[method-assign]
    record = Scheduler(d, "resume", first_store, owner="a", lease_seconds=0.3).run()
    assert record.status is TuningStatus.IN_PROGRESS and record.owner == "b"
    jobs = store.list_training_jobs("resume")
    assert [j.number for j in jobs if j.handle] == [1]  # job 2, if recorded, was not started
    record = Scheduler(d, "resume", Store(sqlite_url), owner="b").run()
    assert record.status is TuningStatus.COMPLETED, record.failure_reason
    assert sorted(j.number for j in store.list_training_jobs("resume")) == [1, 2, 3]
    assert set(runs_per_job(store).values()) == {1}


@pytest.mark.parametrize("printed", [False, True])
def test_jobs_killed_together_with_their_tuner_run_again(tmp_path, sqlite_url, printed):
    """A reboot, or kill -9 of every process: the jobs' wrappers died too and kept no exit
    status. The resume recorded each as Failed ("its exit status could not be read"), used up
    max_jobs and, with a first wave of five, failed the tuning job ("no training job succeeded
    after 5 attempts"). Now they are interrupted and run again, the budget kept."""
    import os
    import signal

    store = Store(sqlite_url)
    d = definition(tmp_path, sleep=3.0, max_jobs=3, max_parallel_jobs=2)
    leave_running(store, d, 2, printed)
    for job in store.list_training_jobs("resume"):  # each job with its wrapper: its whole group
        pid = int((job.handle or "").split(":")[1])
        os.killpg(pid, signal.SIGKILL)
    assert store.claim_tuning_job("resume", "second", ttl=30)
    record = Scheduler(d, "resume", Store(sqlite_url), owner="second").run()
    assert record.status is TuningStatus.COMPLETED, record.failure_reason
    jobs = store.list_training_jobs("resume")
    assert [j.status for j in jobs[:2]] == [TrainingStatus.STOPPED] * 2
    assert {j.failure_reason for j in jobs[:2]} == {INTERRUPTED}
    assert [j.status for j in jobs[2:]] == [TrainingStatus.COMPLETED] * 3


@pytest.mark.parametrize("lease", ["expired", "expiring"])
def test_stop_from_python_ends_a_tuning_job_whose_process_died(tmp_path, sqlite_url, lease):
    """attach(...).stop() on a tuning job whose `fit()` process was killed only asked for the
    stop: nobody carried it out, wait() timed out "still Stopping" and the training jobs ran on.
    Now it takes the job over as `tuner stop` does (at once, or in wait() once the lease ends)."""
    from tuner import HyperparameterTuner

    store = Store(sqlite_url)
    d = definition(tmp_path, sleep=5.0, max_jobs=4, max_parallel_jobs=2)
    leave_running(store, d, 2)
    tuner = HyperparameterTuner.attach("resume", storage=sqlite_url)  # before the 1.5 s start
    expires = 0 if lease == "expired" else time.time() + 1.5
    with store.engine.begin() as conn:  # its process died holding the lease
        conn.exec_driver_sql(f"UPDATE tuning_jobs SET owner = 'dead', lease_expires = {expires}")
    began = time.monotonic()
    described = tuner.stop()
    if lease == "expiring":
        assert described["status"] == "Stopping"
        described = tuner.wait(timeout=30)
    assert described["status"] == "Stopped"
    assert time.monotonic() - began < 15  # the jobs were stopped, not waited out
    jobs = store.list_training_jobs("resume")
    assert len(jobs) == 2 and all(j.status is TrainingStatus.STOPPED for j in jobs)


class _EngineAway(LocalLauncher):
    """A local launcher whose engine does not answer for its first ``away`` starts or adopts
    (the real failures are tested with each launcher: test_docker, test_slurm)."""

    def __init__(self, starts: int = 0, adopts: int = 0) -> None:
        super().__init__()
        self.starts, self.adopts = starts, adopts

    def start(self, spec):
        if self.starts:
            self.starts -= 1
            raise LauncherUnavailable("the engine did not answer")
        return super().start(spec)

    def adopt(self, handle, spec, gpus=None):
        if self.adopts:
            self.adopts -= 1
            raise LauncherUnavailable("the engine did not answer")
        return super().adopt(handle, spec, gpus)


def test_a_start_the_engine_did_not_answer_runs_again_without_using_the_budget(
    tmp_path, sqlite_url, monkeypatch
):
    """A Docker engine restarting while a job starts crashed the tuner (requests'
    ConnectionError) and failed the tuning job, one job left Pending for good."""
    from tuner import scheduler

    monkeypatch.setattr(scheduler, "LAUNCH_RETRY_SECONDS", 0.5)
    d = definition(tmp_path, sleep=0.0, max_jobs=3, max_parallel_jobs=2)
    store = Store(sqlite_url)
    store.create_tuning_job("resume", d.to_json())
    began = time.monotonic()
    record = Scheduler(d, "resume", store, launcher=_EngineAway(starts=2)).run()
    assert time.monotonic() - began >= 1.0  # each refusal paused launching (not a tight loop)
    assert record.status is TuningStatus.COMPLETED, record.failure_reason
    jobs = store.list_training_jobs("resume")
    not_started = [j for j in jobs if j.status is TrainingStatus.STOPPED]
    assert len(not_started) == 2
    assert {j.failure_reason for j in not_started} == {"not started: the engine did not answer"}
    assert sum(j.status is TrainingStatus.COMPLETED for j in jobs) == 3  # the budget kept
    assert not_started[0].hyperparameters in [j.hyperparameters for j in jobs[2:]]  # rerun


def test_a_resume_the_engine_did_not_answer_leaves_the_tuning_job_as_it_was(tmp_path, sqlite_url):
    """slurmctld restarting while `tuner resume` re-attached: the tuning job was recorded
    Failed (internal error) and its jobs, which ran on, stayed InProgress for ever."""
    from tuner.errors import LauncherUnavailable

    store = Store(sqlite_url)
    # 2 s: the job must outlast the detach, which a loaded machine makes late (see above)
    d = definition(tmp_path, sleep=2.0, max_jobs=1, max_parallel_jobs=1)
    run_one_job_unwatched(store, d)
    assert store.claim_tuning_job("resume", "second", ttl=30)
    away = Scheduler(d, "resume", Store(sqlite_url), owner="second", launcher=_EngineAway(adopts=1))
    with pytest.raises(LauncherUnavailable, match="was left as it was: resume it once"):
        away.run()
    assert store.get_tuning_job("resume").status is TuningStatus.IN_PROGRESS
    assert store.list_training_jobs("resume")[0].status is TrainingStatus.IN_PROGRESS
    record = Scheduler(d, "resume", Store(sqlite_url), owner="second").run()  # it answers
    assert record.status is TuningStatus.COMPLETED
    assert store.list_training_jobs("resume")[0].status is TrainingStatus.COMPLETED


def test_a_job_recorded_not_started_does_not_use_the_budget_after_a_restart(tmp_path, sqlite_url):
    """A job the launcher could not start (its engine did not answer), then the tuner died:
    the resume counted it against max_jobs, and the tuning job ended a job short."""
    from tuner.scheduler import NOT_STARTED

    store = Store(sqlite_url)
    d = definition(tmp_path, sleep=0.0, max_jobs=2, max_parallel_jobs=1)
    store.create_tuning_job("resume", d.to_json())
    job = store.create_training_job("resume", 1, {"x": 0.5})
    store.finish_training_job(
        job.name, TrainingStatus.STOPPED, failure_reason=f"{NOT_STARTED}the engine did not answer"
    )
    record = Scheduler(d, "resume", store).run()
    assert record.status is TuningStatus.COMPLETED
    jobs = store.list_training_jobs("resume")
    assert sum(j.status is TrainingStatus.COMPLETED for j in jobs) == 2
    # and its configuration ran, as it would have without the restart (it was replaced by a
    # new one: the configuration was lost)
    assert jobs[1].hyperparameters == {"x": 0.5}


@pytest.mark.parametrize("outside", [True, False], ids=["from-outside", "tuner-died"])
def test_a_job_ended_from_outside_runs_again_after_a_restart(tmp_path, sqlite_url, outside):
    from tuner.scheduler import ENDED_OUTSIDE

    store = Store(sqlite_url)
    d = definition(tmp_path, sleep=0.0, max_jobs=2, max_parallel_jobs=1)
    store.create_tuning_job("resume", d.to_json())
    job = store.create_training_job("resume", 1, {"x": 0.123})
    reason = f"{ENDED_OUTSIDE}its container got SIGTERM" if outside else INTERRUPTED
    store.finish_training_job(job.name, TrainingStatus.STOPPED, failure_reason=reason)
    assert Scheduler(d, "resume", store).run().status is TuningStatus.COMPLETED
    jobs = store.list_training_jobs("resume")
    assert [j.status for j in jobs[1:]] == [TrainingStatus.COMPLETED] * 2
    assert jobs[1].hyperparameters == {"x": 0.123}


def test_waiting_on_a_stop_its_dead_process_left_starts_nothing(tmp_path, sqlite_url):
    """wait() carrying out the stop of a tuning job whose process died with a job Pending
    launched that job only to kill it (a real container or submission elsewhere), and raised
    "still Stopping after 1s" though the job had ended Stopped."""
    from tuner import HyperparameterTuner
    from tuner.scheduler import NEVER_STARTED

    store = Store(sqlite_url)
    d = definition(tmp_path, sleep=1.0, max_jobs=2)
    store.create_tuning_job("resume", d.to_json(), owner="dead", ttl=0.01)
    pending = store.create_training_job("resume", 1, {"x": 0.5})  # then its process died
    store.request_stop("resume")
    time.sleep(0.05)  # its lease runs out
    described = HyperparameterTuner.attach("resume", storage=sqlite_url).wait(timeout=1)
    assert described["status"] == "Stopped"
    job = store.get_training_job(pending.name)
    assert job.status is TrainingStatus.STOPPED and job.failure_reason == NEVER_STARTED
    assert job.handle is None and job.workdir is None  # never launched


def test_a_definition_an_older_version_stored_is_read_resumed_and_stopped(tmp_path, sqlite_url):
    """Older versions took a grace period of 5000 s, 200,000 failed jobs and 300-character
    metric names, since refused: their tuning jobs could not be described, attached, resumed
    or stopped (every tool re-checked the stored definition and exited 2)."""
    import subprocess
    import sys

    old = definition(tmp_path, 0.0, max_jobs=2).to_json()
    old["job_definition"]["grace_period"] = 5000.0
    old["max_failed_jobs"] = 200_000
    old["metric_definitions"].append({"Name": "m" * 300, "Regex": "m=([0-9.]+)"})
    with pytest.raises(ValidationError, match="less than or equal to 3600, got 5000"):
        TuningJobDefinition.parse(old)
    store = Store(sqlite_url)
    store.create_tuning_job("resume", old)  # as the older version stored it, then died
    store.create_tuning_job("other", {**old, "name": "other"})
    tuner = HyperparameterTuner.attach("resume", storage=sqlite_url)
    assert tuner.definition.job_definition.grace_period == 5000.0
    assert tuner.definition.max_failed_jobs == 200_000
    env = {"TUNER_DATABASE_URL": sqlite_url, "PATH": os.environ["PATH"]}

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "tuner", *args]
        return subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)

    described = cli("describe", "resume", "--json")
    assert described.returncode == 0, described.stderr
    stopped = cli("stop", "other")
    assert stopped.returncode == 0, stopped.stderr
    assert store.get_tuning_job("other").status is TuningStatus.STOPPED
    resumed = cli("resume", "resume")
    assert resumed.returncode == 0, resumed.stderr
    assert store.get_tuning_job("resume").status is TuningStatus.COMPLETED
    assert len(store.list_training_jobs("resume")) == 2


@pytest.mark.parametrize(
    "change",
    [
        lambda d: d["job_definition"]["static_hyperparameters"].update({"-v": 1}),
        lambda d: d["job_definition"].update(command=[]),
        lambda d: d.update(warm_start_config={"parents": [], "type": "TransferLearning"}),
    ],
    ids=["static-name", "empty-command", "no-parents"],
)
def test_a_stored_definition_breaking_a_rule_of_a_nested_part_is_one_clear_error(
    tmp_path, sqlite_url, change
):
    """Kept as a mapping, the nested part crashed its reader (AttributeError): ``tuner
    describe`` printed a traceback and a service could not start (its scan raised)."""
    from tuner.service import TuningService

    old = definition(tmp_path, 0.0, max_jobs=2).to_json()
    change(old)
    store = Store(sqlite_url)
    store.create_tuning_job("resume", old)
    with pytest.raises(ValidationError, match="'resume' was stored with a definition this version"):
        TuningJobDefinition.from_store(old, "resume")
    service = TuningService(store, tmp_path / "service-runs")
    assert service.scan() == []  # not taken over, named in the log; the service goes on
