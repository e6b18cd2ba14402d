"""The Slurm launcher on a real single-node cluster (``.ci/slurm.sh``: 2 fake GPUs of 4 shards
each, 8 CPUs), proven from Slurm's own records (``scontrol show job``): the GPUs it assigned,
when each job was submitted, started and ended."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.conftest import fake_command
from tests.test_scheduler import max_overlap
from tuner import TrainingStatus, TuningJobDefinition
from tuner.errors import LaunchError, ValidationError
from tuner.launchers import LaunchSpec
from tuner.launchers.slurm import (
    SlurmLauncher,
    _epoch,
    _exit_code,
    _expand_indices,
    _fields,
    sbatch_resources,
)
from tuner.launchers.tracked import HANDLE_FILE
from tuner.reports import build
from tuner.reports.render import arm_table
from tuner.scheduler import Scheduler
from tuner.storage import Store

pytestmark = pytest.mark.usefixtures("slurm")


def definition(tmp_path: Path, name: str, command: list[str] | None = None, **kw):
    job = {
        "command": command or fake_command(),
        "static_hyperparameters": {"sleep": 2.0, "epochs": 2},
        "output_path": str(tmp_path / "runs"),
        "launcher": "slurm",
        **kw.pop("job", {}),
    }
    return TuningJobDefinition.parse(
        {
            "name": name,
            "strategy": "Random",
            "random_seed": 0,
            "objective_metric_name": "accuracy",
            "metric_definitions": [{"Name": "accuracy", "Regex": r"accuracy=([0-9.]+)"}],
            "hyperparameter_ranges": {"x": {"type": "continuous", "min_value": 0, "max_value": 1}},
            "job_definition": job,
            **kw,
        }
    )


def run(d: TuningJobDefinition, store: Store) -> None:
    store.create_tuning_job(d.name or "", d.to_json())
    Scheduler(d, d.name or "", store, poll_interval=0.1).run()


def slurm_records(tmp_path: Path) -> dict[str, dict[str, str]]:
    """The jobs Slurm knows whose logs are under ``tmp_path`` (this test's), by job name; each
    name must appear once: no job was submitted twice."""
    out = subprocess.run(
        ["scontrol", "-o", "-d", "show", "job"], capture_output=True, text=True, check=True
    ).stdout
    records: dict[str, dict[str, str]] = {}
    for line in out.splitlines():
        if line.startswith("JobId="):
            record = _fields(line)
            if not record.get("StdOut", "").startswith(str(tmp_path)):
                continue
            assert record["JobName"] not in records, f"{record['JobName']} was submitted twice"
            records[record["JobName"]] = record
    return records


class GresWatcher:
    """Samples Slurm's record of running jobs (``scontrol -d``) while a test runs: the GPU
    indices it gave each job (Slurm drops them from the record once a job ends)."""

    def __init__(self) -> None:
        self.seen: dict[str, set[str]] = {}
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def __enter__(self) -> GresWatcher:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join(10)

    def _watch(self) -> None:
        while not self._done.wait(0.1):
            out = subprocess.run(
                ["scontrol", "-o", "-d", "show", "job"], capture_output=True, text=True
            ).stdout
            for line in out.splitlines():
                match = re.search(r"JobName=(\S+).* GRES=(\S+)\(IDX:([^)]*)\)", line)
                if match:
                    self.seen.setdefault(match[1], set()).add(f"{match[2]}:{match[3]}")


def window(record: dict[str, str], begin: str) -> tuple[float, float]:
    start, end = _epoch(record[begin]), _epoch(record["EndTime"])
    assert start is not None and end is not None
    return start, end


def test_gpus_queue_time_and_limits_from_slurms_records(tmp_path, sqlite_url):
    """3 in parallel on a cluster of 2 GPUs: one job always waits in Slurm's queue."""
    store = Store(sqlite_url)
    d = definition(tmp_path, "gpus", max_jobs=5, max_parallel_jobs=3, job={"gpus_per_job": 1})
    with GresWatcher() as watcher:
        run(d, store)
    jobs = store.list_training_jobs("gpus")
    assert [j.status for j in jobs] == [TrainingStatus.COMPLETED] * 5
    records = slurm_records(tmp_path)
    mine = {j.name: records[j.name] for j in jobs}
    for job in jobs:
        record = mine[job.name]
        assert record["JobState"] == "COMPLETED" and record["ExitCode"] == "0:0"
        assert "gres/gpu=1" in record["TRES"] or "gres:gpu:1" in record["TresPerNode"]
        assert job.gpus in ("0", "1")  # what the store says Slurm gave it
        assert watcher.seen[job.name] == {f"gpu:1:{job.gpus}"}
    running = [window(r, "StartTime") for r in mine.values()]
    submitted = [window(r, "SubmitTime") for r in mine.values()]
    assert max_overlap(running) <= 2  # two GPUs
    assert max_overlap(submitted) <= 3  # max_parallel_jobs counts queued jobs too
    for a, b in ((a, b) for a in jobs for b in jobs if a.number < b.number):
        (s1, e1), (s2, e2) = window(mine[a.name], "StartTime"), window(mine[b.name], "StartTime")
        if s1 < e2 and s2 < e1:
            assert a.gpus != b.gpus, f"{a.name} and {b.name} ran on one GPU at once"
    queued = [j.queued_seconds or 0.0 for j in jobs]
    assert max(queued) > 1.0  # a third job waited for a GPU
    for job in jobs:  # training time excludes the queue
        assert job.duration is not None and job.duration < 10
        assert job.running_at is not None and job.started_at is not None
    data = build(store, ["gpus"])
    assert data["arms"][0]["queued_hours"] * 3600 == pytest.approx(sum(queued), abs=0.01)
    head, rows = arm_table(data)
    assert rows[0][head.index("queued hours")] != "0"


def test_a_quarter_of_a_gpu_per_trial(tmp_path, sqlite_url):
    script = tmp_path / "show_gpu.py"
    script.write_text(
        "import os, sys, time\n"
        "print('gpu', os.environ['CUDA_VISIBLE_DEVICES'], os.environ['TUNER_GPU_FRACTION'])\n"
        "time.sleep(3)\nprint('accuracy=0.5')\n"
    )
    store = Store(sqlite_url)
    d = definition(
        tmp_path,
        "shared",
        command=[sys.executable, str(script)],
        max_jobs=4,
        max_parallel_jobs=4,
        job={"gpus_per_job": 0.25, "slurm_shards_per_gpu": 4, "static_hyperparameters": {}},
    )
    with GresWatcher() as watcher:
        run(d, store)
    jobs = store.list_training_jobs("shared")
    assert all(j.status is TrainingStatus.COMPLETED for j in jobs), [j.failure_reason for j in jobs]
    records = slurm_records(tmp_path)
    mine = [records[j.name] for j in jobs]
    assert all(watcher.seen[j.name] <= {"shard:1:0", "shard:1:1"} for j in jobs)
    assert max_overlap([window(r, "StartTime") for r in mine]) == 4  # 4 trials on 2 GPUs at once
    for job in jobs:
        log = (Path(job.workdir or "") / "log.txt").read_text()
        assert log.split()[0:1] == ["gpu"] and log.split()[2] == "0.25"


def test_a_new_scheduler_reattaches_instead_of_submitting_again(tmp_path, sqlite_url):
    store = Store(sqlite_url)
    d = definition(
        tmp_path,
        "again",
        max_jobs=4,
        max_parallel_jobs=2,
        job={"static_hyperparameters": {"sleep": 3.0}},
    )
    store.create_tuning_job("again", d.to_json())
    detach = threading.Event()
    first = Scheduler(d, "again", store, poll_interval=0.1, detach_event=detach)
    thread = threading.Thread(target=first.run)
    thread.start()
    deadline = time.monotonic() + 60
    while store.count_training_jobs("again") < 2:
        assert time.monotonic() < deadline
        time.sleep(0.1)
    detach.set()  # the first tuner goes away; its Slurm jobs run on
    thread.join(30)
    # and a job whose submission was never recorded (killed right after sbatch returned)
    pending = store.create_training_job("again", 3, {"x": 0.25})
    spec = first._spec(pending)
    SlurmLauncher().start(spec)
    (spec.workdir / HANDLE_FILE).unlink()

    Scheduler(d, "again", store, poll_interval=0.1).run()
    jobs = store.list_training_jobs("again")
    assert [j.status for j in jobs] == [TrainingStatus.COMPLETED] * 4
    records = slurm_records(tmp_path)  # asserts that no name was submitted twice
    assert {j.name for j in jobs} <= set(records)


def test_a_job_that_aged_out_of_slurm_is_taken_from_its_log(tmp_path):
    spec = LaunchSpec(name="old", argv=["true"], workdir=tmp_path / "old")
    spec.workdir.mkdir()
    (spec.workdir / "log.txt").write_text("accuracy=0.7\n")
    launcher = SlurmLauncher()
    assert launcher.adopt("slurm:987654:old", spec)  # no such job in scontrol any more
    status = launcher.poll("slurm:987654:old")
    assert not status.running and status.exit_code is None  # killed: no status was kept
    assert launcher.read_logs("slurm:987654:old") == b"accuracy=0.7\n"
    assert not SlurmLauncher().adopt("slurm:987655:gone", LaunchSpec("gone", ["true"], tmp_path))


@pytest.mark.parametrize(("kept", "code"), [("0", 0), ("3", 3), ("143", -15)])
def test_an_aged_out_job_without_accounting_ends_as_its_script_kept(tmp_path, kept, code):
    """Without sacct, a job Slurm forgot (a tuner down past MinJobAge) was always Failed."""
    spec = LaunchSpec(name="old", argv=["true"], workdir=tmp_path / "old")
    spec.workdir.mkdir()
    (spec.workdir / "log.txt").write_text("accuracy=0.7\n")
    (spec.workdir / "exit_code").write_text(f"{kept}\n")
    launcher = SlurmLauncher()
    assert launcher.adopt("slurm:987656:old", spec)
    status = launcher.poll("slurm:987656:old")
    assert not status.running and status.exit_code == code and status.note is None
    assert status.ended_at == (spec.workdir / "exit_code").stat().st_mtime


def test_the_job_script_keeps_the_status_and_refuses_a_missing_folder(tmp_path):
    """Slurm ran a job whose working directory was missing in /tmp, and it could succeed."""
    launcher = SlurmLauncher(poll_interval=0.1)
    ok = LaunchSpec(
        "ok",
        [sys.executable, "-c", "import os; print(os.getcwd())"],
        tmp_path / "ok",
        shared_dir=tmp_path / "shared",
    )
    missing = LaunchSpec("missing", ["true"], tmp_path / "missing", cwd=tmp_path / "no-such")
    handles = [launcher.start(ok), launcher.start(missing)]
    ended = {h: _wait(launcher, h) for h in handles}
    assert ended[handles[0]].exit_code == 0
    assert (ok.workdir / "exit_code").read_text() == "0\n"
    assert (ok.workdir / "log.txt").read_text().strip() == str(ok.workdir)
    assert (tmp_path / "shared").is_dir()  # TUNER_SHARED_DIR is made, as README says
    assert ended[handles[1]].exit_code == 1
    log = (missing.workdir / "log.txt").read_text()
    assert f"tuner: cannot run in working_directory '{tmp_path / 'no-such'}'" in log


def test_a_job_cancelled_in_the_queue_fails_naming_it(tmp_path):
    """A job scancelled before it started ended 0:0 and failed as 'objective never reported'."""
    launcher = SlurmLauncher(poll_interval=0.1, sbatch_options=["--begin=now+3600"])
    handle = launcher.start(LaunchSpec("queued", ["true"], tmp_path / "queued"))
    subprocess.run(["scancel", handle.split(":")[1]], check=True)
    status = _wait(launcher, handle)
    assert status.exit_code is None and status.began_at is None
    assert status.note == "Slurm ended it before it started in state CANCELLED (exit code 0)"


def test_a_job_slurm_will_never_run_fails_naming_the_reason(tmp_path):
    """64 CPUs on the 8-CPU partition: sbatch took it and it pended for ever, the tuning job
    with it, with nothing said."""
    launcher = SlurmLauncher(
        poll_interval=0.1, sbatch_options=["--cpus-per-task=64"], unrunnable_patience=1.0
    )
    handle = launcher.start(LaunchSpec("huge", ["true"], tmp_path / "huge"))
    status = _wait(launcher, handle)
    assert status.exit_code is None and status.began_at is None
    assert status.note == (
        "Slurm would not run it: pending with reason PartitionConfig (its request exceeds what "
        "the partition's nodes or limits allow) for 1 s; cancelled"
    )
    (record,) = launcher._show(handle.split(":")[1]) or [{"JobState": "CANCELLED"}]
    assert record["JobState"] == "CANCELLED"


def test_more_gpus_than_any_node_has_is_refused_naming_the_setting(tmp_path):
    """sbatch's own refusal ("Requested node configuration is not available") named neither
    the GPUs asked for nor the setting they came from."""
    launcher = SlurmLauncher(poll_interval=0.1, cpus_per_job=1.5, memory="100M")
    with pytest.raises(LaunchError) as refused:
        launcher.start(LaunchSpec("greedy", ["true"], tmp_path / "greedy", gpus_per_job=3))
    assert str(refused.value).startswith(
        "sbatch refused job greedy (it asked for --gres=gpu:3 from gpus_per_job=3, "
        "--cpus-per-task=2, --mem=100M): "
    )
    assert "Requested node configuration is not available" in str(refused.value)


def _wait(launcher: SlurmLauncher, handle: str, timeout: float = 60):
    deadline = time.monotonic() + timeout
    while (status := launcher.poll(handle)).running:
        assert time.monotonic() < deadline, f"{handle} did not end"
        time.sleep(0.1)
    return status


def test_an_image_runs_through_the_container_command(tmp_path, sqlite_url):
    runtime = tmp_path / "fake_runtime.py"  # stands in for apptainer exec IMAGE ARGV...
    runtime.write_text(
        "import os, sys\nprint('image', sys.argv[1], flush=True)\n"
        "os.execv(sys.argv[2], sys.argv[2:])\n"
    )
    store = Store(sqlite_url)
    d = definition(
        tmp_path,
        "image",
        max_jobs=1,
        job={
            "image": "resnet:1",
            "container_command": [sys.executable, str(runtime)],
            "static_hyperparameters": {"sleep": 0.0},
        },
    )
    run(d, store)
    (job,) = store.list_training_jobs("image")
    assert job.status is TrainingStatus.COMPLETED, job.failure_reason
    assert (Path(job.workdir or "") / "log.txt").read_text().startswith("image resnet:1\n")


def test_an_output_path_with_a_percent_sign_keeps_its_log(tmp_path, sqlite_url):
    """``out 100%j dir``: sbatch expanded ``%j`` in ``--output``, could not open the log, and
    every job failed "killed by signal 53" with no log (a QA helper)."""
    store = Store(sqlite_url)
    d = definition(tmp_path, "percent", max_jobs=1, job={"output_path": str(tmp_path / "o 1%j")})
    run(d, store)
    (job,) = store.list_training_jobs("percent")
    assert job.status is TrainingStatus.COMPLETED, job.failure_reason
    assert "%j" in (job.workdir or "") and (Path(job.workdir or "") / "log.txt").exists()


def test_slurm_options_the_tuner_sets_itself_are_refused():
    """``--error=...`` took the metrics away from the log; ``--export=NONE`` dropped
    TUNER_OUTPUT_DIR and the job's environment, silently (a QA helper)."""
    for option in ("--error=/tmp/e-%j.txt", "--export=NONE", "--array=0-1", "--output=x"):
        with pytest.raises(
            ValidationError, match=f"slurm_options must not set {option.split('=')[0]}"
        ):
            definition(Path("/tmp"), "own", max_jobs=1, job={"slurm_options": [option]})
    definition(
        Path("/tmp"), "own", max_jobs=1, job={"slurm_options": ["--qos=high", "--exclusive"]}
    )


def test_a_job_slurm_requeues_is_cancelled_and_its_configuration_runs_again(tmp_path, sqlite_url):
    """Preemption, a failed node or ``scontrol requeue`` put a running job back in the queue:
    the tuner read its truncated log again (steps counted twice), counted its time in the queue
    as training, and failed it as over ``max_runtime`` once it ran again (a QA helper). Now
    it is cancelled and its configuration runs again as a new training job, budget kept."""
    from tuner.summary import ENDED_OUTSIDE

    store = Store(sqlite_url)
    d = definition(
        tmp_path,
        "requeue",
        max_jobs=1,
        job={"static_hyperparameters": {"sleep": 1.5, "epochs": 4}, "max_runtime": 60},
    )
    runner = threading.Thread(target=run, args=(d, store))
    runner.start()
    deadline = time.monotonic() + 60
    while not any(r.get("JobState") == "RUNNING" for r in slurm_records(tmp_path).values()):
        assert time.monotonic() < deadline
        time.sleep(0.2)
    (first,) = slurm_records(tmp_path).values()
    subprocess.run(["scontrol", "requeue", first["JobId"]], check=True)
    runner.join(120)
    assert not runner.is_alive()
    jobs = store.list_training_jobs("requeue")
    assert [j.status for j in jobs] == [TrainingStatus.STOPPED, TrainingStatus.COMPLETED]
    assert (jobs[0].failure_reason or "").startswith(f"{ENDED_OUTSIDE}Slurm requeued it")
    assert jobs[0].hyperparameters == jobs[1].hyperparameters  # the same configuration
    shown = subprocess.run(
        ["scontrol", "-o", "show", "job", first["JobId"]], capture_output=True, text=True
    ).stdout
    assert "JobState=CANCELLED" in shown or not shown  # never ran again


def test_slurm_text_helpers():
    assert sbatch_resources(0, None) == []
    assert sbatch_resources(2, None) == ["--gres=gpu:2"]
    assert sbatch_resources(0.5, 4) == ["--gres=shard:2"]
    with pytest.raises(Exception, match="needs slurm_shards_per_gpu"):
        sbatch_resources(0.25, None)
    with pytest.raises(Exception, match=r"whole number of shards, got 1\.5"):
        sbatch_resources(0.5, 3)
    assert _expand_indices("0,2-3") == ["0", "2", "3"]
    assert _exit_code("3:0", "FAILED") == 3 and _exit_code("0:15", "CANCELLED") == -15
    assert _exit_code("0:125", "OUT_OF_MEMORY") == -9  # the memory limit's kill is SIGKILL
    assert _exit_code("143:0", "FAILED") == -15  # the job script's status for a SIGTERM
    assert _exit_code("", "FAILED") is None
    record = _fields("JobId=7 JobName=a Command=/x.sh --lr 0.1 WorkDir=/w")
    assert record["JobId"] == "7" and record["Command"] == "/x.sh --lr 0.1"
    # hyperparameter values shaped like fields (a QA helper: a running job read as ended,
    # one read as running until Slurm forgot it, an exit code 0 read as 1)
    forged = _fields(
        "JobId=8 JobState=RUNNING ExitCode=0:0 Command=/x.sh --tag JobState=COMPLETED "
        "--e ExitCode=1:0 --o StdOut=/forged WorkDir=/w StdOut=/w/log.txt Power="
    )
    assert forged["JobState"] == "RUNNING" and forged["ExitCode"] == "0:0"
    assert forged["StdOut"] == "/w/log.txt" and forged["WorkDir"] == "/w"
    with pytest.raises(Exception, match="slurm_options must be long sbatch options"):
        SlurmLauncher(sbatch_options=["-p debug"])


def test_early_stopping_cancels_slurm_jobs(tmp_path, sqlite_url):
    from tests.test_early_stopping import CURVE, check_median_outcome

    d = definition(
        tmp_path,
        "median",
        command=[sys.executable, str(CURVE)],
        job={"static_hyperparameters": {"epochs": 12, "step_sleep": 0.3}, "grace_period": 2.0},
        metric_definitions=[{"Name": "accuracy", "Regex": r"validation: accuracy=([0-9.]+)"}],
        max_jobs=7,
        early_stopping_type="Auto",
    )
    store = Store(sqlite_url)
    run(d, store)
    jobs = store.list_training_jobs("median")
    check_median_outcome(jobs, epochs=12)
    queue = subprocess.run(["squeue", "-h", "-o", "%j"], capture_output=True, text=True)
    assert not set(queue.stdout.split()) & {j.name for j in jobs}  # none left running


def test_a_controller_that_does_not_answer_is_unavailable_not_an_error(
    tmp_path, slurm_conf, monkeypatch
):
    """slurmctld restarting while `tuner resume` re-attached: scontrol's "Unable to contact
    slurm controller" was a LaunchError, and the tuning job was recorded Failed. It is now
    LauncherUnavailable (the scheduler leaves the tuning job as it was); other refusals stay
    LaunchError."""
    from tuner.errors import LaunchError, LauncherUnavailable

    conf = Path(slurm_conf).read_text()
    dead = re.sub(r"(?m)^SlurmctldPort=.*$", "SlurmctldPort=1", conf)
    dead = re.sub(r"(?m)^MessageTimeout=.*\n", "", dead) + "MessageTimeout=1\n"
    (tmp_path / "slurm.conf").write_text(dead)
    monkeypatch.setenv("SLURM_CONF", str(tmp_path / "slurm.conf"))
    spec = LaunchSpec("away", ["true"], tmp_path / "away")
    with pytest.raises(LauncherUnavailable, match="Unable to contact slurm controller"):
        SlurmLauncher().adopt("slurm:12345:away", spec)
    with pytest.raises(LauncherUnavailable, match="sbatch refused job away"):
        SlurmLauncher().start(spec)
    monkeypatch.setenv("SLURM_CONF", slurm_conf)
    with pytest.raises(LaunchError, match="sbatch refused") as refused:
        SlurmLauncher(partition="no-such-partition").start(spec)
    assert not isinstance(refused.value, LauncherUnavailable)


def test_an_sbatch_that_timed_out_is_cancelled_by_name_and_fails(tmp_path, monkeypatch):
    """sbatch "Socket timed out": slurmctld may have queued the job all the same. Taken as
    not started, its configuration ran again under another name beside the queued one."""
    from tuner.errors import LaunchError, LauncherUnavailable

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "calls"
    for name, body in {
        "sbatch": 'echo "sbatch: error: Batch job submission failed: Socket timed out on '
        'send/recv operation" >&2; exit 1',
        "scancel": "",
    }.items():
        (bin_dir / name).write_text(f'#!/bin/sh\necho "{name} $*" >> {calls}\n{body}\n')
        (bin_dir / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    spec = LaunchSpec("slow-1", ["true"], tmp_path / "slow-1")
    with pytest.raises(LaunchError, match="sbatch did not answer for job slow-1") as failed:
        SlurmLauncher().start(spec)
    assert not isinstance(failed.value, LauncherUnavailable)
    assert "scancel --name=slow-1" in calls.read_text()
