"""Chaos run: a tuning job through the REST service while the service is SIGKILLed and restarted.

A Grid tuning job over one categorical ``case`` runs ``--jobs`` training jobs (4 at a time)
through ``tuner serve`` on SQLite (or ``--postgres URL``). The cases cycle through jobs that
succeed, fail with codes 1, 3 and 42, print their metric late, print no metric, and run past
``max_runtime``. First a run without kills is the reference; then the same tuning job runs
while the service is SIGKILLed ``--kills`` times at random moments and restarted on the same
store and folder each time. Printed: jobs lost, jobs run twice, statuses or exit codes that
differ from the reference, orphan processes left, the longest time the tuning job's lease went
without a heartbeat, and how many restarts came back. Goal: all zero, every restart back.

    python bench/chaos.py                 # 40 jobs, 20 kills (a few minutes)
    python bench/chaos.py --jobs 8 --kills 3   # the small version the tests run
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import create_engine, text

TOKEN = "chaos-token-0123456789"
KINDS = ["ok", "fail1", "late", "fail3", "nometric", "fail42", "slow", "ok2"]
JOB = """\
import os, sys, time
case = sys.argv[sys.argv.index("--case") + 1]
kind = case.split("-")[0]
with open(os.path.join(os.environ["CHAOS_STARTS"], case), "a") as f:
    f.write("start\\n")
time.sleep(2.0)
if kind == "slow":
    time.sleep(60)
if kind == "late":
    time.sleep(1.0)
if kind != "nometric":
    print("score=%d" % (len(case) + sum(map(ord, case)) % 7), flush=True)
sys.exit({"fail1": 1, "fail3": 3, "fail42": 42}.get(kind, 0))
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Service:
    def __init__(self, url: str, runs: Path, port: int, starts: Path) -> None:
        self.url, self.runs, self.port, self.starts = url, runs, port, starts
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> bool:
        env = {
            **os.environ,
            "TUNER_API_TOKEN": TOKEN,
            "TUNER_DATABASE_URL": self.url,
            "CHAOS_STARTS": str(self.starts),
        }
        argv = [sys.executable, "-m", "tuner", "serve", "--port", str(self.port)]
        argv += ["--runs-dir", str(self.runs), "--lease-seconds", "2", "--log-level", "warning"]
        argv += ["--allow-program", sys.executable]
        log = open(self.runs.parent / "service.log", "ab")  # noqa: SIM115 - the child keeps it
        self.process = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"http://127.0.0.1:{self.port}/healthz", timeout=1).is_success:
                    return True
            except httpx.HTTPError:
                time.sleep(0.05)
        return False

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


def definition(script: Path, jobs: int) -> dict[str, Any]:
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
            "max_runtime": 5,
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


def run(database: str | None, folder: Path, jobs: int, kills: int, seed: int) -> dict[str, Any]:
    """One tuning job, SIGKILLed up to ``kills`` times, each at a random moment of the
    service's life (0.1 to 1 s after it came back) while the tuning job runs; what a reference
    compares."""
    folder.mkdir(parents=True)
    runs, starts = folder / "runs", folder / "starts"
    starts.mkdir()
    url = database or f"sqlite:///{folder / 'tuner.db'}"
    script = folder / "job.py"
    script.write_text(JOB)
    service = Service(url, runs, free_port(), starts)
    rng = random.Random(seed)
    engine = create_engine(url)
    came_back, longest_gap = 0, 0.0
    assert service.start(), (folder / "service.log").read_text()[-2000:]
    http = httpx.Client(
        base_url=f"http://127.0.0.1:{service.port}",
        headers={"Authorization": f"Bearer {TOKEN}"},
        timeout=30,
    )
    try:
        created = http.post("/tuning-jobs", json=definition(script, jobs))
        assert created.status_code == 201, created.text
        started, last_beat, last_lease = time.monotonic(), time.monotonic(), None
        up_since, pause, kills_done = started, rng.uniform(0.1, 1.0), 0
        deadline = started + 60 + jobs * 6
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
                up_since, pause = time.monotonic(), rng.uniform(0.1, 1.0)
            time.sleep(0.05)
        jobs_now = http.get("/tuning-jobs/chaos/training-jobs").json()
    finally:
        http.close()
        service.stop()
    items = jobs_now.get("items", jobs_now) if isinstance(jobs_now, dict) else jobs_now
    outcome = {j["hyperparameters"]["case"]: (j["status"], j.get("exit_code")) for j in items}
    twice = sum(1 for f in starts.iterdir() if len(f.read_text().split()) > 1)
    time.sleep(1)
    return {
        "outcome": outcome,
        "twice": twice,
        "orphans": orphans(runs),
        "came_back": came_back,
        "kills_done": kills_done,
        "longest_gap": longest_gap,
        "seconds": time.monotonic() - started,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=40)
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--postgres", help="a PostgreSQL URL (an empty database) instead of SQLite")
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args(argv)
    if args.postgres:
        parser.error("--postgres: give an empty database per run; not wired in this version")
    with tempfile.TemporaryDirectory(prefix="chaos-") as tmp:
        reference = run(None, Path(tmp) / "reference", args.jobs, 0, args.seed)
        chaos = run(None, Path(tmp) / "chaos", args.jobs, args.kills, args.seed)
    expected, got = reference["outcome"], chaos["outcome"]
    figures = {
        "jobs": args.jobs,
        "kills": args.kills,
        "kills_done": chaos["kills_done"],
        "restarts_back": chaos["came_back"],
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
    return 0 if bad == 0 and chaos["came_back"] == chaos["kills_done"] else 1


if __name__ == "__main__":
    sys.exit(main())
