"""What MLflow tracking costs the tuning loop, and how fast its thread delivers.

Starts ``mlflow server`` on 127.0.0.1 (SQLite store, in a temporary folder), records one
training job in a SQLite store of the tuner, and hands its tracker N metric points in batches
(as the scheduler does after each read of a log). Printed, side by side in one run:
- the scheduler's side: microseconds per point spent in ``tracker.points`` (putting work on
  the queue), against the store's own write of the same batches, which the loop does anyway;
- the delivery: points per second until the tracker has sent them all (one thread, the job's queued
  batches sent together), and that every point arrived.

    python bench/tracking_overhead.py [--points 20000] [--batch 10]
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from tuner.definition import TuningJobDefinition
from tuner.metrics import MetricPoint
from tuner.records import TuningStatus
from tuner.storage import Store
from tuner.tracking.mlflow_tracker import MlflowTracker


def start_server(folder: Path) -> tuple[subprocess.Popen[bytes], str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    argv = [
        str(Path(sys.executable).parent / "mlflow"), "server", "--host", "127.0.0.1",
        "--port", str(port), "--workers", "1",
        "--backend-store-uri", f"sqlite:///{folder / 'mlflow.db'}",
        "--artifacts-destination", str(folder / "artifacts"),
    ]  # fmt: skip
    log = open(folder / "server.log", "wb")  # noqa: SIM115 (the server's)
    server = subprocess.Popen(argv, stdout=log, stderr=log, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                return server, url
        except httpx.HTTPError:
            time.sleep(0.3)
    os.killpg(server.pid, signal.SIGTERM)
    raise SystemExit(f"mlflow server did not start; see {folder / 'server.log'}")


def main() -> None:
    args = argparse.ArgumentParser()
    args.add_argument("--points", type=int, default=20_000)
    args.add_argument("--batch", type=int, default=10)
    opts = args.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="tracking-bench-"))
    server, url = start_server(folder)
    try:
        run(url, folder, opts.points, opts.batch)
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(30)
        shutil.rmtree(folder, ignore_errors=True)


def run(url: str, folder: Path, n: int, batch: int) -> None:
    definition = TuningJobDefinition.parse(
        {
            "name": "bench",
            "job_definition": {"command": ["true"]},
            "objective_metric_name": "a",
            "hyperparameter_ranges": {"x": {"type": "continuous", "min_value": 0, "max_value": 1}},
            "metric_definitions": [{"Name": "a", "Regex": "a=([0-9.]+)"}],
            "strategy": "Random",
            "max_jobs": 1,
            "tracking_uri": url,
        }
    )
    store = Store(f"sqlite:///{folder / 'tuner.db'}")
    store.create_tuning_job("bench", definition.to_json(), None, 30)
    job = store.create_training_job("bench", 1, {"x": 0.5})
    job = store.mark_started(job.name, "none", str(folder / "job"))
    tracker = MlflowTracker(url, "bench", definition, store)
    tracker.start()
    tracker.job_started(job)
    now = time.time()
    points = [MetricPoint("a", i * 1e-4, i, now + i * 1e-3) for i in range(n)]
    batches = [points[i : i + batch] for i in range(0, n, batch)]

    other = store.create_training_job("bench", 2, {"x": 0.5})  # not started: never tracked
    began = time.perf_counter()
    for b in batches:
        store.add_metric_points(other.name, b)
    stored = time.perf_counter() - began
    began = time.perf_counter()
    for b in batches:
        tracker.points(job, b)
    queued = time.perf_counter() - began
    tracker.close(store.set_tuning_status("bench", TuningStatus.COMPLETED, "bench"))
    delivered = time.perf_counter() - began  # close returns once all is sent (and the end)
    held = len(tracker.client.get_metric_history(tracker._runs[job.name], "a"))

    load = os.getloadavg()[0]
    print(
        f"{platform.node()} ({os.cpu_count()} CPUs, load {load:.1f}): {n} points, {batch} a batch"
    )
    print(
        f"scheduler side: {queued / n * 1e6:.2f} us per point in tracker.points; "
        f"the store's write of the same batches {stored / n * 1e6:.1f} us per point "
        f"({stored / queued:.0f}x more)"
    )
    print(
        f"delivery: {n / delivered:.0f} points/s ({tracker.sent} calls), MLflow holds {held} "
        f"of {n}; dropped {sum(tracker.dropped.values())}, failed calls {tracker.errors}"
    )


if __name__ == "__main__":
    main()
