"""Chaos run: a tuning job through the REST service while the service is SIGKILLed and restarted.

A Grid tuning job over one categorical ``case`` runs ``--jobs`` training jobs (4 at a time)
through ``tuner serve`` on SQLite, or on PostgreSQL with ``--postgres URL`` (a server the
benchmark may create databases on: each run gets a fresh one, dropped afterwards). The cases
cycle through jobs that succeed, fail with codes 1, 3 and 42, print their metric late, print no
metric, and run past ``max_runtime``; each runs ``--job-seconds`` (``max_runtime`` is twice
that), long enough for a job to span several lives of the service, so the kills land while the
tuning job runs. First a run without kills is the reference; then the same tuning job runs
while the service is SIGKILLed ``--kills`` times, each at a random moment of its life (0.1 to
1.5 s after it answered again), and restarted on the same store and folder each time. Printed:
jobs lost, jobs run twice, statuses or exit codes that differ from the reference, orphan
processes left, the longest time the tuning job's lease went without a heartbeat, and how many
kills were done and restarts came back. Goal: all zero, every kill done and every restart back
(exit status 1 otherwise).

    python bench/chaos.py                 # 40 jobs, 20 kills (about 5 minutes)
    python bench/chaos.py --postgres postgresql+psycopg://postgres@127.0.0.1:55432/postgres
    python bench/chaos.py --jobs 8 --kills 3 --job-seconds 3   # the small version the tests run
    python bench/chaos.py --keep /tmp/chaos-logs   # keep service.log and the jobs' folders
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import create_engine, text

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.ports import free_port
from bench.scratch_database import scratch_database

TOKEN = "chaos-token-0123456789"
KINDS = ["ok", "fail1", "late", "fail3", "nometric", "fail42", "slow", "ok2"]
JOB = """\
import os, sys, time
case = sys.argv[sys.argv.index("--case") + 1]
kind = case.split("-")[0]
with open(os.path.join(os.environ["CHAOS_STARTS"], case), "a") as f:
    f.write("start\\n")
time.sleep(float(os.environ["CHAOS_JOB_SECONDS"]))
if kind == "slow":
    time.sleep(600)
if kind == "late":
    time.sleep(1.0)
if kind != "nometric":
    print("score=%d" % (len(case) + sum(map(ord, case)) % 7), flush=True)
sys.exit({"fail1": 1, "fail3": 3, "fail42": 42}.get(kind, 0))
"""


class Service:
    def __init__(self, url: str, runs: Path, port: int, starts: Path, job_seconds: float) -> None:
        self.url, self.runs, self.port, self.starts = url, runs, port, starts
        self.job_seconds = job_seconds
        self.process: subprocess.Popen[bytes] | None = None
        self.log = runs.parent / "service.log"
        self.ports_taken = 0  # restarts that found the port taken by another process

    def start(self) -> bool:
        """Start the service and wait until it answers; True when it does within 60 s. The
        port is chosen once, so between a kill and the restart another process on the machine
        may take it (an outgoing connection's ephemeral port): then the service exits with
        "address already in use" and is started again on a new port, counted in
        ``ports_taken``, not held against the service."""
        for _ in range(5):
            if self._start_once():
                return True
            if self.process is None or self.process.poll() is None or not self._port_was_taken():
                return False
            self.port, self.ports_taken = free_port(), self.ports_taken + 1
        return False

    def _start_once(self) -> bool:
        env = {
            **os.environ,
            "TUNER_API_TOKEN": TOKEN,
            "TUNER_DATABASE_URL": self.url,
            "CHAOS_STARTS": str(self.starts),
            "CHAOS_JOB_SECONDS": str(self.job_seconds),
        }
        argv = [sys.executable, "-m", "tuner", "serve", "--port", str(self.port)]
        argv += ["--runs-dir", str(self.runs), "--lease-seconds", "2", "--log-level", "warning"]
        argv += ["--allow-program", sys.executable]
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and self.process.poll() is None:
            try:
                if httpx.get(f"{self.url_base}/healthz", timeout=1).is_success:
                    return True
            except httpx.HTTPError:
                time.sleep(0.05)
        return False

    def _port_was_taken(self) -> bool:
        with open(self.log, "rb") as log:
            log.seek(max(0, log.seek(0, os.SEEK_END) - 4000))
            return b"address already in use" in log.read()

    @property
    def url_base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def kill(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait()

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.kill()


def definition(script: Path, jobs: int, job_seconds: float) -> dict[str, Any]:
    cases = [f"{KINDS[i % len(KINDS)]}-{i}" for i in range(jobs)]
    return {
        "name": "chaos",
        "strategy": "Grid",
        "random_seed": 0,
        "objective_metric_name": "score",
        "metric_definitions": [{"Name": "score", "Regex": r"score=([0-9]+)"}],
        "hyperparameter_ranges": {"case": {"type": "categorical", "values": cases}},
        "max_jobs": jobs,
        "max_parallel_jobs": 4,
        "max_failed_jobs": jobs,
        "job_definition": {
            "command": [sys.executable, str(script)],
            "max_runtime": 2 * job_seconds,
            "grace_period": 1,
        },
    }


def orphans(runs: Path) -> int:
    """Processes still running that carry a launch marker under ``runs``."""
    count = 0
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                env = (entry / "environ").read_bytes().split(b"\0")
            except OSError:
                continue
            if any(e.startswith(f"TUNER_LAUNCH_FOLDER={runs}".encode()) for e in env):
                count += 1
    return count


@contextmanager
def fresh_database(server: str | None, folder: Path) -> Iterator[str]:
    """A SQLite file in ``folder``, or a new database on the PostgreSQL ``server`` (dropped
    afterwards, even when the service left connections open)."""
    if server is None:
        yield f"sqlite:///{folder / 'tuner.db'}"
        return
    with scratch_database(server, "tuner_chaos") as url:
        yield url


def run(
    url: str, folder: Path, jobs: int, kills: int, seed: int, job_seconds: float
) -> dict[str, Any]:
    """One tuning job on the store at ``url``, SIGKILLed up to ``kills`` times, each at a
    random moment of the service's life (0.1 to 1.5 s after it came back) while the tuning job
    runs; what a reference compares."""
    runs, starts = folder / "runs", folder / "starts"
    starts.mkdir()
    script = folder / "job.py"
    script.write_text(JOB)
    service = Service(url, runs, free_port(), starts, job_seconds)
    rng = random.Random(seed)
    engine = create_engine(url)
    came_back, longest_gap = 0, 0.0
    assert service.start(), service.log.read_text()[-2000:]
    auth = {"Authorization": f"Bearer {TOKEN}"}  # the port may change at a restart
    try:
        created = httpx.post(
            f"{service.url_base}/tuning-jobs",
            json=definition(script, jobs, job_seconds),
            headers=auth,
            timeout=30,
        )
        assert created.status_code == 201, created.text
        started, last_beat, last_lease = time.monotonic(), time.monotonic(), None
        up_since, pause, kills_done = started, rng.uniform(0.1, 1.5), 0
        deadline = started + 60 + jobs * 3 * job_seconds
        while time.monotonic() < deadline:
            with engine.connect() as c:
                row = c.execute(
                    text("select status, lease_expires from tuning_jobs where name = 'chaos'")
                ).one()
            now = time.monotonic()
            longest_gap = max(longest_gap, now - last_beat)  # restarts included
            if row[1] != last_lease:
                last_lease, last_beat = row[1], now
            if row[0] not in ("InProgress", "Stopping"):
                break
            if kills_done < kills and now - up_since >= pause:  # a random moment of this life
                service.kill()
                kills_done += 1
                came_back += service.start()
                up_since, pause = time.monotonic(), rng.uniform(0.1, 1.5)
            time.sleep(0.05)
        jobs_now = httpx.get(
            f"{service.url_base}/tuning-jobs/chaos/training-jobs", headers=auth, timeout=30
        ).json()
    finally:
        service.stop()
        engine.dispose()
    items = jobs_now.get("items", jobs_now) if isinstance(jobs_now, dict) else jobs_now
    outcome = {j["hyperparameters"]["case"]: (j["status"], j.get("exit_code")) for j in items}
    twice = sum(1 for f in starts.iterdir() if len(f.read_text().split()) > 1)
    time.sleep(1)
    return {
        "outcome": outcome,
        "twice": twice,
        "orphans": orphans(runs),
        "came_back": came_back,
        "ports_taken": service.ports_taken,
        "kills_done": kills_done,
        "longest_gap": longest_gap,
        "seconds": time.monotonic() - started,
    }


@contextmanager
def _folder(keep: str | None) -> Iterator[str]:
    """``keep`` (created), or a temporary folder removed afterwards."""
    if keep is not None:
        Path(keep).mkdir(parents=True)
        yield keep
        return
    with tempfile.TemporaryDirectory(prefix="chaos-") as tmp:
        yield tmp


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=40)
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--job-seconds", type=float, default=10.0, help="each training job's run")
    parser.add_argument(
        "--postgres",
        help="a PostgreSQL server's URL instead of SQLite: each run creates and drops a database",
    )
    parser.add_argument("--json", help="also write the figures to this file")
    parser.add_argument(
        "--keep",
        metavar="DIR",
        help="keep both runs' folders (service.log, job folders) in DIR, which must not exist",
    )
    args = parser.parse_args(argv)
    if args.job_seconds < 2:
        parser.error(f"--job-seconds must be >= 2 (late jobs run 1 s more), got {args.job_seconds}")
    runs: dict[str, dict[str, Any]] = {}
    with _folder(args.keep) as tmp:
        for label, kills in (("reference", 0), ("chaos", args.kills)):
            folder = Path(tmp) / label
            folder.mkdir()
            with fresh_database(args.postgres, folder) as url:
                runs[label] = run(url, folder, args.jobs, kills, args.seed, args.job_seconds)
    reference, chaos = runs["reference"], runs["chaos"]
    expected, got = reference["outcome"], chaos["outcome"]
    figures = {
        "store": "postgresql" if args.postgres else "sqlite",
        "jobs": args.jobs,
        "kills": args.kills,
        "kills_done": chaos["kills_done"],
        "restarts_back": chaos["came_back"],
        "restarts_whose_port_another_process_took": chaos["ports_taken"],
        "jobs_lost": len(set(expected) - set(got)),
        "jobs_run_twice": chaos["twice"],
        "differing_status_or_exit_code": sum(
            1 for case in expected if case in got and got[case] != expected[case]
        ),
        "orphan_processes": chaos["orphans"] + reference["orphans"],
        "longest_seconds_without_heartbeat": round(chaos["longest_gap"], 2),
        "seconds_reference": round(reference["seconds"], 1),
        "seconds_with_kills": round(chaos["seconds"], 1),
        "reference_longest_seconds_without_heartbeat": round(reference["longest_gap"], 2),
    }
    for case in expected:
        if case in got and got[case] != expected[case]:
            print(f"  differs: {case}: reference {expected[case]}, chaos {got[case]}")
    for key, value in figures.items():
        print(f"{key}: {value}")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2))
    bad = (
        figures["jobs_lost"]
        + figures["jobs_run_twice"]
        + figures["differing_status_or_exit_code"]
        + figures["orphan_processes"]
    )
    if chaos["kills_done"] < args.kills:
        done = chaos["kills_done"]
        print(f"only {done} of {args.kills} kills landed before the tuning job ended")
    all_back = chaos["came_back"] == chaos["kills_done"] == args.kills
    return 0 if bad == 0 and all_back else 1


if __name__ == "__main__":
    sys.exit(main())
