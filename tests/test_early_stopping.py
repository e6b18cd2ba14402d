"""Early stopping through the scheduler with real processes on the local launcher."""

from __future__ import annotations

import os
import statistics
import sys
import threading
import time
from pathlib import Path

import pytest

from tuner import ContinuousParameter, HyperparameterTuner, TrainingStatus, TuningStatus
from tuner.definition import TuningJobDefinition
from tuner.errors import ValidationError
from tuner.scheduler import Scheduler
from tuner.stopping import HyperbandRungs
from tuner.storage import Store
from tuner.strategies import RandomStrategy

CURVE = Path(__file__).parent / "jobs" / "curve_train.py"
METRICS = [{"Name": "accuracy", "Regex": r"validation: accuracy=([0-9.]+)"}]
RANGES = {"x": ContinuousParameter(0.0, 1.0)}


def job(tmp_path: Path, epochs: int, step_sleep: float = 0.1, exit_sleep: float = 0.0) -> dict:
    return {
        "command": [sys.executable, str(CURVE)],
        "static_hyperparameters": {
            "epochs": epochs,
            "step_sleep": step_sleep,
            "exit_sleep": exit_sleep,
        },
        "output_path": str(tmp_path / "runs"),
        "grace_period": 2.0,
    }


def pids(job_record) -> list[int]:
    return [int(p) for p in (Path(job_record.workdir) / "output" / "pid").read_text().split()]


def alive(pid: int) -> bool:
    """Whether the process still runs (a zombie, ended but not yet reaped, does not)."""
    try:
        os.kill(pid, 0)
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (ProcessLookupError, FileNotFoundError):
        return False
    return state != "Z"


def stopped_step(job_record) -> int | None:
    reason = job_record.failure_reason or ""
    prefix = "early stopping at step "
    return int(reason[len(prefix) :]) if reason.startswith(prefix) else None


def expected_median_stops(jobs, epochs: int, min_jobs: int = 3) -> dict[str, int]:
    """Where the median rule (warm-up 1 step) stops jobs run one at a time on flat curves.

    A job's running average is its x, so job i is stopped at the first step k >= 2 where its x
    is below the median x of the earlier jobs that reported step k (at least ``min_jobs``; a
    stopped job reported steps up to the one it was stopped at).
    """
    expected: dict[str, int] = {}
    reached: list[int] = []
    for i, j in enumerate(jobs):
        x, reached_i = j.hyperparameters["x"], epochs
        for k in range(2, epochs + 1):
            others = [jobs[e].hyperparameters["x"] for e in range(i) if reached[e] >= k]
            if len(others) >= min_jobs and x < statistics.median(others):
                expected[j.name], reached_i = k, k
                break
        reached.append(reached_i)
    return expected


def check_median_outcome(jobs, epochs: int) -> dict[str, int]:
    """Statuses, reasons and objectives of sequential jobs under the median rule; returns the
    jobs stopped and their steps."""
    expected = expected_median_stops(jobs, epochs)
    assert expected, "the seed should give at least one job to stop"
    assert {j.name: stopped_step(j) for j in jobs if j.status is TrainingStatus.STOPPED} == expected
    for j in jobs:
        if j.name in expected:
            assert j.failure_reason == f"early stopping at step {expected[j.name]}"
            assert j.objective == pytest.approx(j.hyperparameters["x"], abs=1e-6)  # last value
        else:
            assert j.status is TrainingStatus.COMPLETED, j.failure_reason
    return expected


def run_under_the_median_rule(definition: dict, storage: str) -> HyperparameterTuner:
    """8 Random jobs of ``definition``, one at a time, under the median rule (warm-up 1 step,
    3 jobs), run to the end."""
    tuner = HyperparameterTuner(
        definition,
        "accuracy",
        RANGES,
        METRICS,
        strategy="Random",
        random_seed=0,
        max_jobs=8,
        max_parallel_jobs=1,
        max_failed_jobs=1,
        early_stopping_type="Auto",
        early_stopping_options={"min_jobs": 3, "warmup_steps": 1},
        storage=storage,
    )
    tuner.fit()
    return tuner


def test_median_rule_stops_jobs_below_the_median_and_ends_their_processes(tmp_path, sqlite_url):
    # stops come at step 2 or 3, SIGTERM up to ~0.7 s later (a stop decided on two lines read
    # at once waits 0.5 s); 15 steps of 0.1 s, not 12, leave a loaded machine 0.3 s more
    # before a job to stop ends by itself (then Completed)
    epochs = 15
    tuner = run_under_the_median_rule(job(tmp_path, epochs=epochs), sqlite_url)
    jobs = tuner.training_jobs()
    assert len(jobs) == 8  # stopped jobs count towards max_jobs, not max_failed_jobs
    stopped = check_median_outcome(jobs, epochs=epochs)
    for j in jobs:
        if j.name in stopped:
            assert (Path(j.workdir) / "output" / "terminated").exists()  # SIGTERM, not SIGKILL
        assert not any(alive(pid) for pid in pids(j))  # no orphans
    frame = tuner.analytics().dataframe().set_index("TrainingJobName")
    for j in jobs:  # steps run: all of them, or from the stop on (a line may land before SIGTERM)
        steps = frame.loc[j.name, "StepsRun"]
        assert steps == epochs if j.name not in stopped else stopped[j.name] <= steps < epochs
    description = tuner.describe()
    assert description["status"] == "Completed"
    assert description["early_stopping_type"] == "Auto"
    assert description["stopped_early"] == len(stopped)
    assert description["training_job_status_counters"]["Stopped"] == len(stopped)
    assert description["training_job_status_counters"]["Failed"] == 0
    from tuner.cli import summary  # QA: the text said only "Stopped N"

    assert f"  early stopping: Auto, {len(stopped)} stopped early\n" in summary(tuner)


def test_a_value_printed_in_the_grace_period_is_stored_but_not_the_objective(tmp_path, sqlite_url):
    # each job prints accuracy 0.999999 when SIGTERM comes: the stopped jobs' objective stays
    # their value at the step the rule judged, as the reason says, however fast they ended
    definition = job(tmp_path, epochs=15)
    definition["static_hyperparameters"]["term_value"] = 0.999999
    jobs = run_under_the_median_rule(definition, sqlite_url).training_jobs()
    stopped = check_median_outcome(jobs, epochs=15)  # objective: x, the value at the step
    store = Store(sqlite_url)
    for j in jobs:
        values = [p.value for p in store.metric_points(j.name, "accuracy")]
        if j.name in stopped:
            assert values[-1] == pytest.approx(0.999999)  # stored: nothing read is lost
            assert values[stopped[j.name] - 1] == pytest.approx(j.objective)
        else:
            assert 0.999999 not in values


class RecordingRandom(RandomStrategy):
    """Random search that remembers what it was told."""

    def __init__(self, *args, **kw) -> None:
        super().__init__(*args, **kw)
        self.told: list[tuple[float, float | None]] = []

    def _observe(self, config, loss):
        self.told.append((config["x"], None if loss is None else -loss))


def test_a_stopped_job_is_told_no_better_than_the_worst_full_result(tmp_path, sqlite_url):
    d = TuningJobDefinition.parse(
        {
            "name": "told",
            "strategy": "Random",
            "random_seed": 0,
            "early_stopping_type": "Auto",
            "objective_metric_name": "accuracy",
            "metric_definitions": METRICS,
            "hyperparameter_ranges": {"x": {"type": "continuous", "min_value": 0, "max_value": 1}},
            "job_definition": job(tmp_path, epochs=12),
            "max_jobs": 8,
        }
    )
    store = Store(sqlite_url)
    store.create_tuning_job("told", d.to_json())
    strategy = RecordingRandom(d.space(), True, 0)
    Scheduler(d, "told", store, strategy=strategy).run()
    jobs = {round(j.hyperparameters["x"], 6): j for j in store.list_training_jobs("told")}
    worst, clipped = None, 0
    assert len(strategy.told) == 8
    for x, value in strategy.told:  # in the order the jobs ended (one at a time)
        j = jobs[round(x, 6)]
        if j.status is TrainingStatus.COMPLETED:
            assert value == j.objective
            worst = value if worst is None else min(worst, value)
        else:  # stopped early: its last value, made no better than the worst full result
            assert j.failure_reason.startswith("early stopping at step")
            assert value == pytest.approx(min(j.objective, worst))
            clipped += value < j.objective
    assert clipped >= 1, "the seed should stop a job whose last value beats the worst full one"


def hyperband_definition(tmp_path: Path, **kw) -> TuningJobDefinition:
    return TuningJobDefinition.parse(
        {
            "name": "hb",
            "strategy": "Hyperband",
            "strategy_config": {"min_resource": 1, "max_resource": 9, "reduction_factor": 3},
            "random_seed": 3,
            "objective_metric_name": "accuracy",
            "metric_definitions": METRICS,
            "hyperparameter_ranges": {"x": {"type": "continuous", "min_value": 0, "max_value": 1}},
            "job_definition": job(tmp_path, epochs=9, step_sleep=0.15),
            **kw,
        }
    )


def replayed_decisions(store: Store, name: str) -> dict[str, int]:
    """What Hyperband's rungs decide over the stored values, in the order they were read."""
    rungs = HyperbandRungs(True, 1, 9, 3)
    events = []
    jobs = store.list_training_jobs(name)
    for j in jobs:
        for p in store.metric_points(j.name, "accuracy"):
            events.append((p.timestamp, j.number, p.seq, j, p.value))
    steps: dict[str, int] = {}
    decided = {}
    for _, _, _, j, value in sorted(events, key=lambda e: e[:3]):
        steps[j.name] = steps.get(j.name, 0) + 1
        if rungs.report(j.name, j.number, j.hyperparameters, steps[j.name], value):
            decided[j.name] = steps[j.name]
    return decided


def check_hyperband_outcome(store: Store, name: str, max_jobs: int) -> None:
    jobs = store.list_training_jobs(name)
    assert len(jobs) == max_jobs
    decided = replayed_decisions(store, name)
    assert decided, "some configurations should be stopped at a rung"
    for j in jobs:
        assert pids(j) and len(pids(j)) == 1  # nothing ran twice
        assert not alive(pids(j)[0])
        if j.name in decided:
            assert j.status is TrainingStatus.STOPPED
            assert stopped_step(j) == decided[j.name] and decided[j.name] in (1, 3)
            values = [p.value for p in store.metric_points(j.name, "accuracy")]
            assert j.objective == values[decided[j.name] - 1]  # its value at the rung
        else:
            assert j.status is TrainingStatus.COMPLETED
            assert len(store.metric_points(j.name, "accuracy")) == 9  # max_resource epochs


def test_hyperband_stops_jobs_at_rungs_with_several_running(tmp_path, sqlite_url):
    store = Store(sqlite_url)
    d = hyperband_definition(tmp_path, max_jobs=9, max_parallel_jobs=3)
    store.create_tuning_job("hb", d.to_json())
    record = Scheduler(d, "hb", store).run()
    assert record.status is TuningStatus.COMPLETED
    check_hyperband_outcome(store, "hb", 9)
    state = store.get_tuning_job("hb").strategy_state  # what describe shows, after the last ask
    assert state is not None and state["sampler"] == "Random" and state["model_level"] is None
    assert sum(state["results_per_level"].values()) >= 1


def test_resume_mid_bracket_neither_stops_nor_promotes_twice(tmp_path, sqlite_url):
    store = Store(sqlite_url)
    d = hyperband_definition(tmp_path, max_jobs=9, max_parallel_jobs=3)
    store.create_tuning_job("hb", d.to_json(), owner="first", ttl=30)
    detach = threading.Event()
    first = Scheduler(d, "hb", store, owner="first", detach_event=detach)
    thread = threading.Thread(target=first.run)
    thread.start()
    deadline = time.monotonic() + 60
    while sum(j.status.terminal for j in store.list_training_jobs("hb")) < 2:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    detach.set()  # the tuner leaves mid-bracket with jobs still running
    thread.join(10)
    assert store.claim_tuning_job("hb", "second", ttl=30)
    record = Scheduler(d, "hb", Store(sqlite_url), owner="second").run()
    assert record.status is TuningStatus.COMPLETED
    check_hyperband_outcome(store, "hb", 9)


def test_a_huge_hyperband_resource_is_refused_not_run_out_of_memory(tmp_path, sqlite_url):
    """epochs 1e15 with reduction_factor 2 built a cycle of 2**49 brackets: MemoryError."""
    with pytest.raises(ValidationError, match=r"max_resource <= 100,000 x min_resource, got"):
        HyperparameterTuner(
            job(tmp_path, epochs=10**15),
            "accuracy",
            RANGES,
            METRICS,
            strategy="Hyperband",
            strategy_config={"reduction_factor": 2},
            storage=sqlite_url,
        )


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"strategy_config": {"min_resource": 12}}, "min_resource < max_resource"),
        ({"strategy_config": {"resource": "steps"}}, "resource 'steps' is not a hyperparameter"),
        ({"strategy_config": {"resource": "x"}}, "must be a static hyperparameter"),
        ({"strategy_config": {"sampler": "Grid"}}, "got sampler='Grid'"),
        ({"early_stopping_type": "Auto"}, "early_stopping_type must be 'Off'"),
        (  # it was taken, then overwritten by strategy_config's default (1)
            {"strategy_options": {"min_resource": 3}},
            r"min_resource belong in strategy_config .* got strategy_options=\{'min_resource': 3\}",
        ),
    ],
)
def test_bad_hyperband_configurations_are_refused_at_creation(
    tmp_path, sqlite_url, settings, message
):
    with pytest.raises(ValidationError, match=message):
        HyperparameterTuner(
            job(tmp_path, epochs=12),
            "accuracy",
            RANGES,
            METRICS,
            strategy="Hyperband",
            storage=sqlite_url,
            **settings,
        )
    assert not (tmp_path / "runs").exists()  # nothing was launched


@pytest.mark.parametrize("epochs", [True, False, "nine", "9.5", 0, "inf"])
def test_hyperband_names_a_static_resource_that_is_not_a_whole_number(tmp_path, sqlite_url, epochs):
    """``epochs: True`` read as 1 and was refused as ``min_resource < max_resource``."""
    with pytest.raises(ValidationError, match=r"resource 'epochs' must be a whole number >= 1"):
        HyperparameterTuner(
            job(tmp_path, epochs=epochs),
            "accuracy",
            RANGES,
            METRICS,
            strategy="Hyperband",
            storage=sqlite_url,
        )


def test_hyperband_takes_a_static_resource_given_as_text(tmp_path, sqlite_url):
    """Static values reach the job as argv text (SageMaker's are all strings): "9" is 9."""
    tuner = HyperparameterTuner(
        job(tmp_path, epochs="9"),
        "accuracy",
        RANGES,
        METRICS,
        strategy="Hyperband",
        storage=sqlite_url,
    )
    assert tuner.definition.hyperband().max_resource == 9


def run_fast_jobs_under_the_median_rule(
    tmp_path: Path, store: Store, name: str, exit_sleep: float = 0.0, launcher=None
) -> list:
    """Six jobs of six steps printed at once (then ``exit_sleep`` seconds before each exits),
    one at a time, under the median rule from the first result; their records."""
    d = TuningJobDefinition.parse(
        {
            "name": name,
            "strategy": "Random",
            "random_seed": 0,
            "objective_metric_name": "accuracy",
            "metric_definitions": METRICS,
            "hyperparameter_ranges": {"x": {"type": "continuous", "min_value": 0, "max_value": 1}},
            "job_definition": job(tmp_path, epochs=6, step_sleep=0.0, exit_sleep=exit_sleep),
            "max_jobs": 6,
            "max_parallel_jobs": 1,
            "early_stopping_type": "Auto",
            "early_stopping_options": {"min_jobs": 1, "warmup_steps": 1},
        }
    )
    store.create_tuning_job(name, d.to_json())
    Scheduler(d, name, store, launcher=launcher, poll_interval=0.02).run()
    return store.list_training_jobs(name)


def test_a_job_that_ended_by_itself_before_its_stop_is_completed_not_stopped(tmp_path, sqlite_url):
    """A fast job printed all its steps and exited between a poll that saw it running and the
    reading of its log; the rule then stopped it 'at step 2', and its full-budget result was
    recorded Stopped (left out of the best job, counted as compute saved)."""
    from tuner.launchers import LocalLauncher
    from tuner.launchers.base import JobStatus

    class Racing(LocalLauncher):
        """Its second poll of each job (the first after the start) waits for the job's end,
        then says it still runs."""

        def __init__(self) -> None:
            super().__init__()
            self.polls: dict[str, int] = {}

        def poll(self, handle: str) -> JobStatus:
            self.polls[handle] = self.polls.get(handle, 0) + 1
            if self.polls[handle] == 2:
                while super().poll(handle).running:
                    time.sleep(0.01)
                return JobStatus(True)
            return super().poll(handle)

    store = Store(sqlite_url)
    jobs = run_fast_jobs_under_the_median_rule(tmp_path, store, "raced", launcher=Racing())
    assert expected_median_stops(jobs, epochs=6, min_jobs=1)  # the rule would stop some
    assert [j.status for j in jobs] == [TrainingStatus.COMPLETED] * 6
    assert all(len(store.metric_points(j.name, "accuracy")) == 6 for j in jobs)


@pytest.mark.parametrize("exit_sleep", [0.2, 3.0])
def test_a_stop_decided_on_a_burst_waits_for_a_job_that_is_exiting(
    tmp_path, sqlite_url, exit_sleep
):
    """QA: a job read whole at once (all its steps in one read) was still exiting when the rule
    stopped it 'at step 2': SIGTERM hit it on its way out (exit -15) and its full-budget result
    was recorded Stopped. A burst's stop now waits STOP_SETTLE_SECONDS; a job that is still
    running then (here: 3 s after its last line) is stopped as before."""
    from tuner.scheduler import STOP_SETTLE_SECONDS

    store = Store(sqlite_url)
    jobs = run_fast_jobs_under_the_median_rule(tmp_path, store, "burst", exit_sleep=exit_sleep)
    assert expected_median_stops(jobs, epochs=6, min_jobs=1)  # the rule would stop some
    if exit_sleep < STOP_SETTLE_SECONDS:
        assert [j.status for j in jobs] == [TrainingStatus.COMPLETED] * 6
    else:
        stopped = [j for j in jobs if j.status is TrainingStatus.STOPPED]
        assert stopped and all(j.duration is not None and j.duration < 2.5 for j in stopped)
        assert all(j.failure_reason.startswith("early stopping at step") for j in stopped)
