"""The ``tuner`` command, run as a real process."""

from __future__ import annotations

import json
import os
import random
import re
import signal
import string
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from tests.conftest import fake_command
from tuner.storage import Store
from tuner.summary import STOPPED_BY_SIGNAL


def definition(tmp_path: Path, **overrides) -> dict:
    d = {
        "strategy": "Random",
        "random_seed": 1,
        "objective_metric_name": "accuracy",
        "max_jobs": 4,
        "max_parallel_jobs": 2,
        "metric_definitions": [
            {"Name": "accuracy", "Regex": r"validation: loss=\S+ accuracy=([0-9.]+)"},
            {"Name": "loss", "Regex": r"validation: loss=([0-9.]+)"},
        ],
        "hyperparameter_ranges": {
            "x": {"type": "continuous", "min_value": 0.0, "max_value": 1.0},
            "y": {"type": "continuous", "min_value": 0.0, "max_value": 1.0},
        },
        "job_definition": {"command": fake_command(), "output_path": str(tmp_path / "runs")},
    }
    d.update(overrides)
    return d


def write(tmp_path: Path, data: dict, name: str = "job.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data))
    return path


def tuner(
    tmp_path: Path, *args: str, env: dict[str, str] | None = None, **kw
) -> subprocess.CompletedProcess[str]:
    """``python -m tuner ARGS`` on the store in ``tmp_path``; ``env`` adds variables."""
    env = {**os.environ, "TUNER_DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite'}", **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "tuner", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        cwd=tmp_path,
        **kw,
    )


def test_describe_escapes_control_characters_in_the_table(tmp_path):
    """A categorical value (from any client, REST included) with an escape sequence reached
    the terminal of whoever ran describe, and one with a line break split its row."""
    ranges = {
        "x": {"type": "continuous", "min_value": 0.0, "max_value": 1.0},
        "c": {"type": "categorical", "values": ["\x1b[31mRED\x1b[0m", "a\nb"]},
    }
    data = definition(tmp_path, max_jobs=4, hyperparameter_ranges=ranges)
    run = tuner(tmp_path, "run", str(write(tmp_path, data)), "--name", "esc")
    assert run.returncode == 0, run.stderr
    table = tuner(tmp_path, "describe", "esc", "--top", "4").stdout
    assert "\x1b" not in table and "\\x1b[31mRED\\x1b[0m" in table and "a\\nb" in table
    rows = [line for line in table.splitlines() if re.match(r"^ +esc-00\d ", line)]
    assert len(rows) == 4 and all(("\\x1b" in r) != ("a\\nb" in r) for r in rows)


def test_no_progress_bar_when_stderr_is_not_a_terminal(tmp_path):
    data = definition(tmp_path, max_jobs=1, max_parallel_jobs=1)
    result = tuner(tmp_path, "run", str(write(tmp_path, data)), "--name", "piped")
    assert result.returncode == 0, result.stderr
    assert "job/s" not in result.stderr and "1/1" not in result.stderr


def test_run_list_describe_export(tmp_path):
    spec = str(write(tmp_path, definition(tmp_path)))
    result = tuner(tmp_path, "run", spec, "--name", "cli-1", "--progress")
    assert result.returncode == 0, result.stderr
    assert "Tuning job cli-1: Completed (all max_jobs=4 jobs ended)" in result.stdout
    assert "best: cli-1-00" in result.stdout
    assert "4/4" in result.stderr  # the progress bar

    listed = tuner(tmp_path, "list")
    assert listed.returncode == 0 and "cli-1" in listed.stdout and "Completed" in listed.stdout

    described = json.loads(tuner(tmp_path, "describe", "cli-1", "--json").stdout)
    assert described["training_job_status_counters"]["Completed"] == 4
    top = tuner(tmp_path, "describe", "cli-1", "--top", "2").stdout
    assert "top 2:" in top and len(re.findall(r"^ +cli-1-00\d ", top, re.M)) == 2
    everything = tuner(tmp_path, "describe", "cli-1", "--top", "10").stdout
    assert "top 4:" in everything
    for how in ([], ["--json"]):  # --json ignored a bad --top
        refused = tuner(tmp_path, "describe", "cli-1", "--top", "-1", *how)
        assert refused.returncode == 2
        assert "argument --top: must be a whole number >= 0; got '-1'" in refused.stderr
    none = tuner(tmp_path, "describe", "cli-1", "--top", "0")  # a TypeError before
    assert none.returncode == 0 and "top" not in none.stdout and "Completed" in none.stdout

    exported = tuner(tmp_path, "export", "cli-1", "--csv", str(tmp_path / "jobs.csv"))
    assert exported.returncode == 0
    assert (tmp_path / "jobs.csv").read_text().count("cli-1-") == 4
    piped = tuner(tmp_path, "export", "cli-1", "--csv", "-")  # a file named "-" before
    assert piped.returncode == 0 and not (tmp_path / "-").exists()
    assert piped.stdout == (tmp_path / "jobs.csv").read_text()
    folder = tuner(tmp_path, "export", "cli-1", "--csv", str(tmp_path))  # IsADirectoryError
    assert folder.returncode == 2 and f"cannot write CSV {tmp_path}" in folder.stderr
    under_a_file = tuner(tmp_path, "export", "cli-1", "--csv", str(tmp_path / "jobs.csv" / "x"))
    assert under_a_file.returncode == 2  # it said "File exists"
    assert f"{tmp_path / 'jobs.csv'} is a file, not a folder" in under_a_file.stderr
    twice = tuner(tmp_path, "report", "cli-1", "cli-1", "--out", str(tmp_path / "r"))
    assert twice.returncode == 2  # every job would count twice
    assert "a report names each tuning job once, got 'cli-1' twice" in twice.stderr
    bogus = tuner(tmp_path, "--storage", "bogus://x", "list")  # a traceback before
    assert bogus.returncode == 2 and "no database dialect is named 'bogus'" in bogus.stderr


def test_reports_default_folders_and_a_locale_without_utf8(tmp_path):
    """QA: ``tuner report A B`` wrote into A's own report folder, replacing it; under LC_ALL=C
    with UTF-8 mode off, ``report`` crashed after an empty report.html and ``describe`` with a
    traceback, on a categorical value outside ASCII."""
    ranges = {"c": {"type": "categorical", "values": ["héllo", "日本"]}}
    spec = str(write(tmp_path, definition(tmp_path, max_jobs=2, hyperparameter_ranges=ranges)))
    for name in ("one", "two"):
        assert tuner(tmp_path, "run", spec, "--name", name).returncode == 0
    c_locale = {"LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0"}
    alone = tuner(tmp_path, "report", "one", env=c_locale)
    assert alone.returncode == 0, alone.stderr
    both = tuner(tmp_path, "report", "one", "two", env=c_locale)
    assert both.returncode == 0, both.stderr
    reports = tmp_path / "tuner-runs" / "reports"
    assert sorted(p.name for p in reports.iterdir()) == ["one", "one+two"]
    assert "two" not in (reports / "one" / "report.md").read_text(encoding="utf-8")
    page = (reports / "one+two" / "report.html").read_text(encoding="utf-8")
    assert "héllo" in page or "日本" in page
    described = tuner(tmp_path, "describe", "one", "--top", "2", env=c_locale)
    assert described.returncode == 0, described.stderr
    assert "\\xe9" in described.stdout or "\\u65e5" in described.stdout  # shown escaped


def test_a_long_comparison_gets_a_short_default_folder():
    from tuner.cli import report_folder_name

    assert report_folder_name(["a"]) == "a"
    names = [f"tuning-job-{i:02d}-" + "x" * 40 for i in range(20)]
    folder = report_folder_name(names)
    assert folder.startswith(names[0] + "+19-more-") and len(folder) < 100
    assert folder != report_folder_name([*names[:-1], "other"])


def wait_until_two_started(tmp_path: Path, name: str, files: str = "*/output/argv.json") -> None:
    """Wait (30 s at most) until two training jobs of tuning job ``name`` have begun: each
    writes one of ``files`` in its folder."""
    deadline = time.monotonic() + 30
    while len(list((tmp_path / "runs" / name).glob(files))) < 2:
        assert time.monotonic() < deadline
        time.sleep(0.1)


def start_long_run(
    tmp_path: Path, name: str, max_jobs: int, stubborn: bool = False, grace: float = 2, **pipes
) -> subprocess.Popen:
    """``tuner run`` in the background, its jobs sleeping for a minute (``stubborn``: they
    ignore SIGTERM, so stopping them takes the ``grace`` period)."""
    data = definition(tmp_path, max_jobs=max_jobs, max_parallel_jobs=2)
    data["job_definition"]["static_hyperparameters"] = {"sleep": 60}
    pipes.setdefault("env", {**os.environ, **db_env(tmp_path)})
    if stubborn:
        data["job_definition"]["static_hyperparameters"]["ignore_sigterm"] = "true"
        data["job_definition"]["grace_period"] = grace
    command = [sys.executable, "-m", "tuner", "run", str(write(tmp_path, data)), "--name", name]
    return subprocess.Popen([*command, "--no-progress"], cwd=tmp_path, text=True, **pipes)


def db_env(tmp_path: Path) -> dict[str, str]:
    return {"TUNER_DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite'}"}


def test_stop_from_another_process(tmp_path):
    run = start_long_run(tmp_path, "long", 4, stdout=subprocess.PIPE)
    deadline = time.monotonic() + 30
    while "InProgress" not in tuner(tmp_path, "list").stdout:
        assert time.monotonic() < deadline
        time.sleep(0.2)
    time.sleep(0.5)
    asked = tuner(tmp_path, "stop", "long", "--no-wait")  # only asks
    assert asked.returncode == 0 and "long: Stopping" in asked.stdout
    stopped = tuner(tmp_path, "stop", "long")  # waits until its process has stopped it
    assert stopped.returncode == 0 and "long: Stopped" in stopped.stdout
    out, _ = run.communicate(timeout=30)
    assert run.returncode == 0
    assert "Tuning job long: Stopped (stopped on request)" in out


@pytest.mark.parametrize("holder", ["this-machine", "another-machine"])
def test_stop_takes_over_a_tuning_job_whose_process_died(tmp_path, holder):
    """``tuner run`` killed: ``stop`` stops its jobs itself (they ran on, orphaned, and the
    tuning job stayed Stopping until someone ran ``resume``): at once, as the lease names a
    process of this machine that has ended; a holder on another machine, whose end cannot be
    told, it waits out."""
    # a lease waited out is 4 s, or (this machine's) 60 s: long past a `tuner stop` under load
    env = {"TUNER_LEASE_SECONDS": "4" if holder == "another-machine" else "60"}
    run = start_long_run(tmp_path, "dead", 2, env={**os.environ, **env, **db_env(tmp_path)})
    wait_until_two_started(tmp_path, "dead")
    run.send_signal(signal.SIGKILL)  # its training jobs run on
    run.wait(10)
    if holder == "another-machine":
        store = Store(db_env(tmp_path)["TUNER_DATABASE_URL"])
        with store.engine.begin() as conn:
            conn.exec_driver_sql("UPDATE tuning_jobs SET owner = 'elsewhere:1:abcdef:1:1:0badf00d'")
        store.close()
    began = time.monotonic()
    stopped = tuner(tmp_path, "stop", "dead", env=env)
    assert stopped.returncode == 0, stopped.stderr
    assert "dead: Stopped" in stopped.stdout
    assert ("lease expires" in stopped.stderr) == (holder == "another-machine")
    if holder == "this-machine":
        assert time.monotonic() - began < 20  # within the lease (40 s or more of it left)
    described = json.loads(tuner(tmp_path, "describe", "dead", "--json").stdout)
    assert described["training_job_status_counters"]["InProgress"] == 0
    assert described["training_job_status_counters"]["Stopped"] == 2
    pids = [p.read_text().split() for p in (tmp_path / "runs" / "dead").glob("*/output/runs.txt")]
    assert len(pids) == 2 and all(len(p) == 1 for p in pids)  # none ran twice
    assert not any(Path(f"/proc/{p[0]}").exists() for p in pids)  # gone, not orphaned


def test_ctrl_c_while_stop_waits_leaves_the_stop_standing(tmp_path):
    """Ctrl-C of a waiting ``tuner stop`` said "running training jobs were stopped" (the
    generic message), though that process had stopped nothing: the stop asked stands, and the
    run's own process carries it out."""
    run = start_long_run(tmp_path, "slow", 2, stubborn=True, grace=8, stdout=subprocess.PIPE)
    wait_until_two_started(tmp_path, "slow")
    env = {**os.environ, **db_env(tmp_path)}
    stop = subprocess.Popen(
        [sys.executable, "-m", "tuner", "stop", "slow"],
        cwd=tmp_path,
        env=env,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    store = Store(db_env(tmp_path)["TUNER_DATABASE_URL"])
    deadline = time.monotonic() + 30
    while store.get_tuning_job("slow").status.value != "Stopping":  # asked: now it waits
        assert time.monotonic() < deadline
        time.sleep(0.1)
    time.sleep(0.5)
    stop.send_signal(signal.SIGINT)
    out, err = stop.communicate(timeout=30)
    assert stop.returncode == 130, err
    assert "tuner stop: interrupted while waiting; the stop of slow stands" in err
    assert "training jobs were stopped" not in err and out == ""
    run.communicate(timeout=60)
    assert run.returncode == 0
    assert store.get_tuning_job("slow").status.value == "Stopped"
    store.close()


def test_ctrl_c_of_a_verb_that_starts_no_jobs_says_only_interrupted(monkeypatch, capsys):
    from tuner import cli

    def interrupted(_args: object) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "cmd_list", interrupted)
    assert cli.main(["list"]) == 130
    assert capsys.readouterr().err == "tuner: interrupted\n"


def test_stop_with_a_bad_setting_says_so_at_once_and_takes_nothing_over(tmp_path):
    """``tuner stop`` of a tuning job whose process died, with TUNER_MAX_LOCAL_JOBS=0: the
    take-over's launcher refused the setting, the refusal was taken for "another process took
    it", and the stop waited for ever, silently. Now the rule and the value, exit 2, the tuning
    job still the dead process's; a stop with a good setting then stops it."""
    run = start_long_run(tmp_path, "dead", 2)
    wait_until_two_started(tmp_path, "dead")
    run.send_signal(signal.SIGKILL)  # its training jobs run on
    run.wait(10)
    store = Store(db_env(tmp_path)["TUNER_DATABASE_URL"])
    owner = store.get_tuning_job("dead").owner
    for bad in ("0", "1.5"):
        refused = tuner(tmp_path, "stop", "dead", env={"TUNER_MAX_LOCAL_JOBS": bad})
        assert refused.returncode == 2
        assert f"TUNER_MAX_LOCAL_JOBS must be a whole number from 1 to 1,000,000; got '{bad}'" in (
            refused.stderr
        )
        assert store.get_tuning_job("dead").owner == owner  # not taken over
    resumed = tuner(tmp_path, "resume", "dead", env={"TUNER_MAX_LOCAL_JOBS": "0"})
    assert resumed.returncode == 2 and "got '0'" in resumed.stderr
    assert store.get_tuning_job("dead").owner == owner
    store.close()
    stopped = tuner(tmp_path, "stop", "dead")
    assert stopped.returncode == 0 and "dead: Stopped" in stopped.stdout


def test_a_run_whose_tuning_job_was_taken_over_says_so(tmp_path):
    """A stalled ``tuner run`` whose lease another process took printed an InProgress summary
    and exited 0, as if it had finished."""
    from tuner.storage import Store

    env = {**os.environ, **db_env(tmp_path), "TUNER_LEASE_SECONDS": "2"}
    run = start_long_run(tmp_path, "stall", 2, env=env, stderr=subprocess.PIPE)
    wait_until_two_started(tmp_path, "stall")
    run.send_signal(signal.SIGSTOP)  # stalls past its lease
    store = Store(db_env(tmp_path)["TUNER_DATABASE_URL"])
    deadline = time.monotonic() + 40
    while not store.claim_tuning_job("stall", "another-process", ttl=60):
        assert time.monotonic() < deadline
        time.sleep(0.2)
    run.send_signal(signal.SIGCONT)
    _, err = run.communicate(timeout=60)
    assert run.returncode == 3, err
    assert "tuning job 'stall' was taken over by another process" in err
    for pids in (tmp_path / "runs" / "stall").glob("*/output/runs.txt"):  # left running
        os.kill(int(pids.read_text().split()[0]), signal.SIGKILL)


@pytest.mark.parametrize(
    "signals",
    [[signal.SIGINT], [signal.SIGTERM], [signal.SIGINT, signal.SIGINT, signal.SIGTERM]],
    ids=["ctrl-c", "sigterm", "ctrl-c-thrice"],
)
def test_ctrl_c_stops_running_jobs_and_records_it(tmp_path, signals):
    """SIGTERM (``timeout``, ``docker stop``) is a Ctrl-C; a second signal while stopping
    waits for the jobs instead of leaving them orphaned and the tuning job InProgress."""
    run = start_long_run(tmp_path, "intr", 2, stubborn=len(signals) > 1, stderr=subprocess.PIPE)
    wait_until_two_started(tmp_path, "intr")
    time.sleep(0.3)  # the jobs' own signal handlers are set
    for number in signals:
        run.send_signal(number)
        time.sleep(0.2)
    _, err = run.communicate(timeout=30)
    assert run.returncode == 130
    assert "running training jobs were stopped" in err
    assert ("already stopping" in err) == (len(signals) > 1)
    described = json.loads(tuner(tmp_path, "describe", "intr", "--json").stdout)
    assert described["status"] == "Stopped"
    assert described["training_job_status_counters"]["InProgress"] == 0


def test_a_run_started_ignoring_ctrl_c_keeps_ignoring_it(tmp_path):
    """A shell script's background ``tuner run`` starts with SIGINT ignored (so a Ctrl-C meant
    for the foreground job leaves it be); it set its own handler half a second in, and from
    then on such a Ctrl-C stopped it. SIGTERM still stops it."""
    run = start_long_run(
        tmp_path,
        "bg",
        2,
        stderr=subprocess.PIPE,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
    )
    wait_until_two_started(tmp_path, "bg")
    run.send_signal(signal.SIGINT)
    time.sleep(1.0)
    assert run.poll() is None  # still running
    run.send_signal(signal.SIGTERM)
    _, err = run.communicate(timeout=30)
    assert run.returncode == 130, err
    described = json.loads(tuner(tmp_path, "describe", "bg", "--json").stdout)
    assert described["status"] == "Stopped"


def test_a_second_sigterm_as_the_run_ends_does_not_change_its_exit_code(tmp_path):
    """A supervisor repeating SIGTERM: the second came after the jobs had stopped, while the
    process was exiting, with the default handler back, and it exited 143 instead of 130."""
    run = start_long_run(tmp_path, "twice", 2, stderr=subprocess.PIPE)
    wait_until_two_started(tmp_path, "twice")
    time.sleep(0.3)
    run.send_signal(signal.SIGTERM)
    for _ in range(20):  # through the stop and the exit, until the process is gone
        time.sleep(0.05)
        if run.poll() is not None:
            break
        run.send_signal(signal.SIGTERM)
    _, err = run.communicate(timeout=30)
    assert run.returncode == 130, err
    assert "running training jobs were stopped" in err


def test_a_run_stopped_by_ctrl_c_is_resumed_without_using_up_max_jobs(tmp_path):
    """`tuner resume` refused it ("has ended (Stopped)") and so did running the file again:
    the rest of max_jobs could never run, e.g. after the end of a Slurm allocation."""
    marker = tmp_path / "resumed"
    script = tmp_path / "slow_once.py"
    script.write_text(
        "import pathlib, time\n"
        f"while not pathlib.Path({str(marker)!r}).exists():\n"
        "    time.sleep(0.1)\n"
        "print('validation: loss=0.1 accuracy=0.5')\n"
    )
    data = definition(tmp_path, max_jobs=3, max_parallel_jobs=2)
    data["job_definition"]["command"] = [sys.executable, str(script)]
    env = {**os.environ, **db_env(tmp_path)}
    command = [sys.executable, "-m", "tuner", "run", str(write(tmp_path, data)), "--name", "cut"]
    run = subprocess.Popen(
        [*command, "--no-progress"], cwd=tmp_path, env=env, stderr=subprocess.PIPE, text=True
    )
    wait_until_two_started(tmp_path, "cut", "*/log.txt")
    time.sleep(0.3)
    run.send_signal(signal.SIGINT)
    _, err = run.communicate(timeout=30)
    assert run.returncode == 130 and "`tuner resume cut` continues it" in err
    marker.touch()
    resumed = tuner(tmp_path, "resume", "cut", "--no-progress")
    assert resumed.returncode == 0, resumed.stderr
    described = json.loads(tuner(tmp_path, "describe", "cut", "--json").stdout)
    assert described["status"] == "Completed"
    counters = described["training_job_status_counters"]
    assert counters["Completed"] == 3 and counters["Stopped"] == 2  # the two stopped, run again
    jobs = Store(db_env(tmp_path)["TUNER_DATABASE_URL"]).list_training_jobs("cut")
    reasons = [j.failure_reason for j in jobs if j.status.value == "Stopped"]
    assert reasons == [STOPPED_BY_SIGNAL] * 2  # not "its tuner ended ... not re-attached"
    again = tuner(tmp_path, "resume", "cut", "--no-progress")
    assert again.returncode == 2 and "has ended (Completed): all max_jobs=3 jobs ended" in (
        again.stderr
    )


def test_resume_after_the_tuner_was_killed_reattaches_and_finishes(tmp_path):
    """At once: the lease's holder is a process of this machine that has ended (it had to wait
    out the lease). A holder another machine's, whose end cannot be told, is waited out."""
    data = definition(tmp_path, max_jobs=3, max_parallel_jobs=2)
    data["job_definition"]["static_hyperparameters"] = {"sleep": 3, "epochs": 3}
    env = {
        **os.environ,
        "TUNER_DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite'}",
        "TUNER_LEASE_SECONDS": "8",
    }
    command = [sys.executable, "-m", "tuner", "run", str(write(tmp_path, data)), "--name", "kill"]
    run = subprocess.Popen([*command, "--no-progress"], cwd=tmp_path, env=env)
    wait_until_two_started(tmp_path, "kill")
    run.send_signal(signal.SIGKILL)  # its two training jobs run on
    run.wait(10)
    resume = [sys.executable, "-m", "tuner", "resume", "kill", "--no-progress"]
    store = Store(env["TUNER_DATABASE_URL"])
    killed = store.get_tuning_job("kill").owner
    elsewhere = "another-host:4242:abcdef:99:4026531836:0badf00d"
    with store.engine.begin() as conn:  # its lease, 8 s, could run out while resume starts
        conn.exec_driver_sql(
            "UPDATE tuning_jobs SET owner = ?, lease_expires = ?", (elsewhere, time.time() + 3600)
        )
    early = subprocess.run(resume, cwd=tmp_path, env=env, capture_output=True, text=True)
    assert early.returncode == 2 and "its lease has not expired" in early.stderr
    with store.engine.begin() as conn:
        conn.exec_driver_sql("UPDATE tuning_jobs SET owner = ?", (killed,))
    store.close()
    done = subprocess.run(resume, cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "Tuning job kill: Completed (all max_jobs=3 jobs ended)" in done.stdout
    runs = [p.read_text().split() for p in (tmp_path / "runs" / "kill").glob("*/output/runs.txt")]
    assert len(runs) == 3 and all(len(r) == 1 for r in runs)  # re-attached, none run twice
    again = subprocess.run(resume, cwd=tmp_path, env=env, capture_output=True, text=True)
    assert again.returncode == 2 and "tuning job kill has ended (Completed)" in again.stderr


def test_check_metrics_shows_what_the_regexes_extract(tmp_path):
    log = tmp_path / "sample.log"
    log.write_bytes(
        b"epoch 1 [===>   ]\repoch 1 [======]\r\n"
        b"\x1b[32m[Epoch 0] validation: loss=0.5000 accuracy=0.700000\x1b[0m\n"
        b"\xff garbage\n[Epoch 1] validation: loss=0.2500 accuracy=0.900000\n"
    )
    config = write(tmp_path, definition(tmp_path))
    result = tuner(tmp_path, "check-metrics", "--log", str(log), "--config", str(config))
    assert result.returncode == 0, result.stderr
    assert "accuracy (objective): 2 values [0.7, 0.9] last=0.9" in result.stdout
    assert "loss: 2 values [0.5, 0.25]" in result.stdout
    assert "objective accuracy (Last) = 0.9" in result.stdout


def test_check_metrics_reads_a_log_from_a_pipe(tmp_path):
    """It read the log a second time to time each regex: from a pipe that pass read nothing."""
    config = write(tmp_path, definition(tmp_path))
    log = "[Epoch 0] validation: loss=0.5 accuracy=0.7\r\n" * 3
    command = ["check-metrics", "--log", "/dev/stdin", "--config", str(config)]
    result = tuner(tmp_path, *command, input=log)
    assert result.returncode == 0, result.stderr
    assert "/dev/stdin: 3 lines, 6 metric values" in result.stdout
    assert "is slow" not in result.stdout


def test_check_metrics_takes_a_comparison_spec(tmp_path):
    """The README's quickstart is a comparison spec: it was refused as a tuning job definition
    ('max_jobs: required', 'seeds: Extra inputs are not permitted')."""
    log = tmp_path / "sample.log"
    log.write_text("epoch 1 validation: loss=0.4 accuracy=0.91\n")
    spec = Path(__file__).parent.parent / "examples" / "quickstart.yaml"
    result = tuner(tmp_path, "check-metrics", "--log", str(log), "--config", str(spec))
    assert result.returncode == 0, result.stderr
    assert "validation-accuracy (objective): 1 values [0.91]" in result.stdout
    assert "validation-loss: 1 values [0.4]" in result.stdout


def test_check_metrics_says_how_many_values_were_not_finite(tmp_path):
    """It listed -inf, then printed a min over the finite values alone, unmarked."""
    log = tmp_path / "sample.log"
    log.write_text("score=0.5\nscore=-inf\nscore=nan\nscore=2\n")
    metrics = [{"Name": "score", "Regex": r"score=(\S+)"}]
    config = write(
        tmp_path, definition(tmp_path, objective_metric_name="score", metric_definitions=metrics)
    )
    result = tuner(tmp_path, "check-metrics", "--log", str(log), "--config", str(config))
    assert (
        "score (objective): 4 values [0.5, -inf, nan ...] last=2 min=0.5 max=2 (2 not finite)"
        in (result.stdout)
    )


@pytest.mark.parametrize("last", ["nan", "inf"])
def test_check_metrics_fails_a_log_whose_objective_is_not_finite(tmp_path, last):
    """It printed 'objective score (Last) = nan' and exited 0; such a job ends Failed."""
    log = tmp_path / "sample.log"
    log.write_text(f"score=0.5\nscore={last}\n" + "score=N/A\n" * 30)
    metrics = [{"Name": "score", "Regex": r"score=(\S+)"}]
    config = write(
        tmp_path, definition(tmp_path, objective_metric_name="score", metric_definitions=metrics)
    )
    result = tuner(tmp_path, "check-metrics", "--log", str(log), "--config", str(config))
    assert result.returncode == 1
    assert f"a training job with this log would fail: its objective is {last}" in result.stdout
    assert result.stdout.count("captured 'N/A', not a number") == 10
    assert "... 20 more captures that are not numbers" in result.stdout


def test_check_metrics_says_a_regex_matched_when_it_captured_no_number(tmp_path):
    """It printed "no match for ..." above the lines the regex had matched."""
    log = tmp_path / "sample.log"
    log.write_text("score=N/A\nscore=none\n")
    metrics = [{"Name": "score", "Regex": r"score=(\S+)"}]
    config = write(
        tmp_path, definition(tmp_path, objective_metric_name="score", metric_definitions=metrics)
    )
    result = tuner(tmp_path, "check-metrics", "--log", str(log), "--config", str(config))
    assert "no match" not in result.stdout
    assert (
        "score (objective): matched, but never captured a number (the last capture: 'none'"
        in result.stdout
    )


def test_check_metrics_warns_when_the_objective_is_missing(tmp_path):
    log = tmp_path / "sample.log"
    log.write_text("training: accuracy=0.5\n")
    config = write(tmp_path, definition(tmp_path))
    result = tuner(tmp_path, "check-metrics", "--log", str(log), "--config", str(config))
    assert result.returncode == 1
    assert "accuracy (objective): no match" in result.stdout
    assert "a training job with this log would fail" in result.stdout


@pytest.mark.parametrize(
    ("regex", "reason"),
    [
        (r"validation: loss=(\S+) accuracy=\1", r"invalid escape sequence: \1"),
        (r"accuracy=(?=0)([0-9.]+)", "invalid perl operator: (?="),
    ],
)
def test_check_metrics_says_which_regex_re2_refuses_and_why(tmp_path, regex, reason):
    log = tmp_path / "sample.log"
    log.write_text("[Epoch 0] validation: loss=0.5 accuracy=0.5\n")
    metrics = [{"Name": "accuracy", "Regex": regex}]
    config = write(tmp_path, definition(tmp_path, metric_definitions=metrics))
    result = tuner(tmp_path, "check-metrics", "--log", str(log), "--config", str(config))
    assert result.returncode == 2
    assert result.stderr == (
        "tuner: error: invalid tuning job definition:\n"
        "  metric_definitions: Regex of metric 'accuracy' must be valid RE2 syntax (linear-time "
        f"engine: no backreferences, no lookaround), got {regex!r}: {reason}\n"
    )


def test_check_metrics_flags_a_regex_slower_than_asked(tmp_path):
    """Regexes too large for RE2's fast path are refused at creation (test_metrics); what is
    accepted runs at tens of ns per byte, so the flag is shown here with a budget the user
    tightened (--slow-per-mb), on 100 KB of log."""
    rng = random.Random(0)
    letters = string.ascii_lowercase + string.digits + " =."
    noise = ["".join(rng.choice(letters) for _ in range(100)) for _ in range(1000)]
    log = tmp_path / "sample.log"
    log.write_text("\n".join([*noise, "[Epoch 0] validation: loss=0.5 accuracy=0.5"]) + "\n")
    slow = r"(?:\w{1,9}\W{0,3}){1,13}acc=([0-9.]+)"
    metrics = [
        {"Name": "accuracy", "Regex": r"validation: loss=\S+ accuracy=([0-9.]+)"},
        {"Name": "slow", "Regex": slow},
    ]
    config = write(tmp_path, definition(tmp_path, metric_definitions=metrics))
    check = ["check-metrics", "--log", str(log), "--config", str(config)]
    result = tuner(tmp_path, *check)
    assert result.returncode == 0, result.stderr
    assert "is slow" not in result.stdout  # well within the default 1 s per MB
    result = tuner(tmp_path, *check, "--slow-per-mb", "1e-9")
    assert result.returncode == 0, result.stderr  # slow is a warning: the objective is there
    flagged = [line for line in result.stdout.splitlines() if "is slow" in line]
    assert len(flagged) == 2, result.stdout
    assert re.fullmatch(
        f"  slow: regex {re.escape(repr(slow))} is slow: [0-9]+[.][0-9]{{2}} s for this log "
        "[(]more than 1e-09 s per MB[)]; simplify it",
        flagged[1],
    ), flagged[1]
    assert "accuracy (objective): 1 values [0.5]" in result.stdout
    for bad in ("-1", "nan", "0"):  # each flagged every regex as slow, exit 0
        refused = tuner(tmp_path, *check, "--slow-per-mb", bad)
        assert refused.returncode == 2
        assert f"--slow-per-mb: must be a number of seconds > 0; got '{bad}'" in refused.stderr


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"max_jobs": 2, "max_parallel_jobs": 5}, "max_parallel_jobs <= max_jobs must hold"),
        ({"strategy": "Hillclimb"}, "strategy must be one of"),
        ({"max_job": 3}, "max_job: Extra inputs are not permitted"),
        (
            {
                "hyperparameter_ranges": {
                    "n": {"type": "integer", "min_value": 1, "max_value": 9, "stepp": 2}
                }
            },
            "n: unknown key 'stepp' in an integer range; its keys are type, min_value",
        ),
        (
            {
                "hyperparameter_ranges": {
                    "x": {"type": "continuous", "min_vaule": 0.1, "max_value": 1.0}
                }
            },
            "x: unknown key 'min_vaule' in a continuous range",
        ),
        (
            {"warm_start_config": {"parents": [f"p{i}" for i in range(6)], "type": "Identical"}},
            "warm_start_config.parents: List should have at most 5 items",
        ),
    ],
)
def test_bad_definitions_exit_2_and_keep_earlier_jobs(tmp_path, overrides, message):
    first = write(tmp_path, definition(tmp_path, max_jobs=1, max_parallel_jobs=1))
    assert tuner(tmp_path, "run", str(first), "--name", "kept", "--no-progress").returncode == 0
    bad = write(tmp_path, definition(tmp_path, **overrides), "bad.yaml")
    result = tuner(tmp_path, "run", str(bad))
    assert result.returncode == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr
    assert "kept" in tuner(tmp_path, "list").stdout


def test_missing_files_and_names_are_clear_errors(tmp_path):
    result = tuner(tmp_path, "run", "nope.yaml")
    assert result.returncode == 2 and "cannot read tuning job definition nope.yaml" in result.stderr
    result = tuner(tmp_path, "describe", "ghost")
    assert result.returncode == 2 and "no tuning job named 'ghost'" in result.stderr
    (tmp_path / "broken.yaml").write_text("max_jobs: [\n")
    result = tuner(tmp_path, "run", "broken.yaml")
    assert result.returncode == 2 and "is not valid YAML" in result.stderr
    (tmp_path / "empty.yaml").write_text("\n")
    (tmp_path / "binary.yaml").write_bytes(b"max_jobs: 3\n\xff\xfe\x00")
    (tmp_path / "list.yaml").write_text("- max_jobs: 3\n")
    (tmp_path / "comments.yaml").write_text("# max_jobs: 3\n")  # it named no file
    (tmp_path / "twice.yaml").write_text("max_jobs: 3\nmax_jobs: 4\n")
    for command in ("run", "compare"):
        for name, message in (
            ("empty.yaml", "empty.yaml is empty: a {what} is a YAML or JSON mapping"),
            ("binary.yaml", "binary.yaml is not UTF-8 text (invalid start byte at byte 12)"),
            ("list.yaml", "list.yaml holds [{{'max_jobs': 3}}]: a {what} is a YAML or JSON"),
            ("comments.yaml", "comments.yaml holds None: a {what} is a YAML or JSON mapping"),
            ("twice.yaml", 'in "twice.yaml", line 2'),  # was "<unicode string>"
        ):
            what = "tuning job definition" if command == "run" else "comparison spec"
            result = tuner(tmp_path, command, name)
            assert result.returncode == 2, result.stderr
            assert message.format(what=what) in result.stderr and "Traceback" not in result.stderr


def test_run_with_hyperband_shows_jobs_stopped_early(tmp_path):
    curve = Path(__file__).parent / "jobs" / "curve_train.py"
    data = definition(
        tmp_path,
        strategy="Hyperband",
        strategy_config={"min_resource": 1, "max_resource": 9},
        max_jobs=6,
        metric_definitions=[{"Name": "accuracy", "Regex": r"validation: accuracy=([0-9.]+)"}],
        hyperparameter_ranges={"x": {"type": "continuous", "min_value": 0.0, "max_value": 1.0}},
        job_definition={
            "command": [sys.executable, str(curve)],
            "static_hyperparameters": {"epochs": 9, "step_sleep": 0.1},
            "output_path": str(tmp_path / "runs"),
        },
    )
    result = tuner(tmp_path, "run", str(write(tmp_path, data)), "--name", "hb", "--progress")
    assert result.returncode == 0, result.stderr
    described = json.loads(tuner(tmp_path, "describe", "hb", "--json").stdout)
    stopped = described["stopped_early"]
    assert stopped == described["training_job_status_counters"]["Stopped"] >= 1
    assert f"{stopped} stopped early" in result.stderr  # the progress bar


@pytest.mark.parametrize("name", ["../escape", ""])  # "" was replaced by a generated name
def test_a_bad_name_flag_is_refused_like_a_bad_name_in_the_file(tmp_path, name):
    data = definition(tmp_path, max_jobs=1, max_parallel_jobs=1)
    result = tuner(tmp_path, "run", str(write(tmp_path, data)), "--name", name)
    assert result.returncode == 2
    assert "name: String should match pattern" in result.stderr and f"{name!r}" in result.stderr
    assert not (tmp_path / "escape").exists() and not (tmp_path / "runs").exists()
    listed = tuner(tmp_path, "list")  # nothing stored: no store, or only the header
    assert "holds no tuning job" in listed.stderr or listed.stdout.count("\n") == 1


def test_fidelity_finds_the_step_where_the_ranking_stops_crossing(tmp_path):
    curve = Path(__file__).parent / "jobs" / "curve_train.py"
    data = definition(
        tmp_path,
        max_jobs=12,
        max_parallel_jobs=4,
        metric_definitions=[{"Name": "accuracy", "Regex": r"validation: accuracy=([0-9.]+)"}],
        hyperparameter_ranges={"x": {"type": "continuous", "min_value": 0.0, "max_value": 1.0}},
        job_definition={
            "command": [sys.executable, str(curve)],
            "static_hyperparameters": {"epochs": 9, "step_sleep": 0.01, "cross_at": 3},
            "output_path": str(tmp_path / "runs"),
        },
    )
    assert tuner(tmp_path, "run", str(write(tmp_path, data)), "--name", "f").returncode == 0
    found = json.loads(tuner(tmp_path, "fidelity", "f", "--json").stdout)
    assert found["completed_jobs"] == 12
    by_step = {row["step"]: row for row in found["steps"]}
    assert list(by_step) == list(range(1, 10))
    assert by_step[1]["spearman"] == pytest.approx(-1.0) and by_step[1]["best_kept"] == 0.0
    assert by_step[3]["spearman"] == pytest.approx(1.0) and by_step[3]["best_kept"] == 1.0
    assert found["suggested_min_resource"] == 3
    text = tuner(tmp_path, "fidelity", "f").stdout
    assert "suggested min_resource: 3" in text
    assert "    3    12     1.000" in text and "-1.000" in text  # three decimals, not 0.65
    refused = tuner(tmp_path, "fidelity", "f", "--eta", "1")
    assert refused.returncode == 2 and "eta" in refused.stderr and "got 1" in refused.stderr
    data.update(max_jobs=4, max_parallel_jobs=4)
    assert tuner(tmp_path, "run", str(write(tmp_path, data)), "--name", "few").returncode == 0
    text = tuner(tmp_path, "fidelity", "few").stdout
    assert "too few completed jobs to tell: 4, at least 6 are needed" in text
    assert "would mostly stop" not in text


def test_storage_may_come_before_or_after_the_command(tmp_path):
    """As users type it: `tuner run job.yaml --storage URL`; given at both places, the one
    after the command wins."""
    job = write(tmp_path, definition(tmp_path, max_jobs=1, max_parallel_jobs=1))
    other = f"sqlite:///{tmp_path / 'other.db'}"
    ran = tuner(
        tmp_path, "run", str(job), "--name", "elsewhere", "--no-progress", "--storage", other
    )
    assert ran.returncode == 0, ran.stderr
    assert "elsewhere" not in tuner(tmp_path, "list").stdout  # not in $TUNER_DATABASE_URL's
    assert "elsewhere" in tuner(tmp_path, "list", "--storage", other).stdout
    assert "elsewhere" in tuner(tmp_path, "--storage", other, "describe", "elsewhere").stdout
    unused = f"sqlite:///{tmp_path / 'unused.db'}"
    both = tuner(tmp_path, "--storage", unused, "describe", "elsewhere", "--storage", other)
    assert both.returncode == 0 and "elsewhere" in both.stdout


def test_the_summary_prints_names_as_they_are(tmp_path, sqlite_url):
    """The best line printed {"\\u5b66\\u4e60\\u7387": ...} where the table below it read 学习率."""
    from tests.conftest import fake_command
    from tuner import CategoricalParameter, HyperparameterTuner
    from tuner.cli import summary

    tuner = HyperparameterTuner(
        {"command": fake_command(), "output_path": str(tmp_path / "runs")},
        "accuracy",
        {"学习率": CategoricalParameter(["β"])},
        [{"Name": "accuracy", "Regex": r"accuracy=([0-9.]+)"}],
        storage=sqlite_url,
        max_jobs=1,
    )
    tuner.fit()
    assert '{"学习率": "β"}' in summary(tuner)


@pytest.mark.parametrize("number", [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_while_the_command_imports_is_no_traceback(tmp_path, number):
    """A Ctrl-C in the first half second of ``tuner run`` (its imports) printed a traceback,
    and a SIGTERM then killed it (143, no message). Here the signal is sent from inside the
    import of ``tuner.cli``, whenever that comes."""
    script = f"""
import os, signal, sys
class Interrupt:
    def find_spec(self, name, path=None, target=None):
        if name == "tuner.cli":
            os.kill(os.getpid(), {int(number)})
        return None
sys.meta_path.insert(0, Interrupt())
from tuner.entry import main
sys.argv = ["tuner", "--help"]
sys.exit(main())
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, cwd=tmp_path
    )
    assert done.returncode == 130, done.stderr
    assert done.stderr == "tuner: interrupted\n"


def test_importing_tuner_imports_nothing_heavy_until_a_name_is_used():
    script = """
import sys
import tuner
print("tuner.tuner" in sys.modules, "numpy" in sys.modules)
from tuner import HyperparameterTuner, ValidationError
print(HyperparameterTuner.__module__, ValidationError.__module__, "numpy" in sys.modules)
try:
    tuner.Nope
except AttributeError as exc:
    print(exc)
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.stdout.splitlines() == [
        "False False",
        "tuner.tuner tuner.errors True",
        "module 'tuner' has no attribute 'Nope'",
    ], done.stderr


def test_a_run_stopped_by_a_signal_leaves_a_library_callers_handlers_as_they_were():
    """The fix for a repeated SIGTERM (exit 143) first left SIGINT and SIGTERM ignored in the
    calling process, and in every training job it started later: only the ``tuner`` command's
    own exit ignores them now (``tuner.entry``)."""
    from types import SimpleNamespace

    from tuner.cli import _drive
    from tuner.scheduler import SIGNALLED

    interrupted: list[bool] = []
    stub = SimpleNamespace(
        name="stub",
        definition=SimpleNamespace(
            max_jobs=1,
            objective_metric_name="accuracy",
            maximize=True,
            job_definition=SimpleNamespace(grace_period=1.0),
        ),
        interrupt=lambda: interrupted.append(True),
        describe=lambda: {"status_reason": SIGNALLED},
    )

    def run(_bar: object) -> None:
        os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C during the run
        os.kill(os.getpid(), signal.SIGTERM)  # and a supervisor's SIGTERM after it

    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    code = _drive(stub, run, SimpleNamespace(progress=False))  # type: ignore[arg-type]
    assert code == 130 and interrupted == [True]
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before


def test_the_summary_shows_categorical_values_as_the_command_got_them(tmp_path, sqlite_url):
    """Choices 1 and 1.0 (two argv words, "1" and "1.0") were both shown as 1."""
    from tests.conftest import fake_command
    from tuner import CategoricalParameter, HyperparameterTuner
    from tuner.cli import summary

    tuner = HyperparameterTuner(
        {"command": fake_command(), "output_path": str(tmp_path / "runs")},
        "accuracy",
        {"width": CategoricalParameter([1, 1.0]), "flag": CategoricalParameter([True])},
        [{"Name": "accuracy", "Regex": r"accuracy=([0-9.]+)"}],
        strategy="Grid",
        storage=sqlite_url,
    )
    tuner.fit()
    rows = summary(tuner).split("  top 2:\n")[1].splitlines()[1:]
    assert sorted(row.split()[1:3] for row in rows) == [["1", "true"], ["1.0", "true"]]


def test_the_summary_table_labels_a_hyperparameter_named_as_one_of_its_columns(
    tmp_path, sqlite_url
):
    """QA: ranges named FinalObjectiveValue and TrainingJobName gave a header with each twice,
    as `tuner export` and reports label them: NAME (hyperparameter)."""
    from tests.conftest import fake_command
    from tuner import CategoricalParameter, HyperparameterTuner
    from tuner.cli import summary

    tuner = HyperparameterTuner(
        {"command": fake_command(), "output_path": str(tmp_path / "runs")},
        "accuracy",
        {"FinalObjectiveValue": CategoricalParameter(["a"]), "x": CategoricalParameter([0.5])},
        [{"Name": "accuracy", "Regex": r"accuracy=([0-9.]+)"}],
        storage=sqlite_url,
        max_jobs=1,
    )
    tuner.fit()
    header = summary(tuner).split("  top 1:\n")[1].splitlines()[0].split()
    assert header == [
        "TrainingJobName",
        "FinalObjectiveValue",
        "(hyperparameter)",
        "x",
        "FinalObjectiveValue",
        "TrainingElapsedTimeSeconds",
    ]
