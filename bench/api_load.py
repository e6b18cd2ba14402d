"""REST service under load: concurrent clients listing and describing while tuning jobs run.

Starts ``tuner serve`` on 127.0.0.1 (SQLite in a temporary folder), submits a tuning job whose
training jobs keep running during the measurement, then runs CLIENTS concurrent keep-alive
clients for SECONDS per phase: first against ``/healthz`` (the reference: no database), then
alternating ``GET /tuning-jobs`` and ``GET /tuning-jobs/{name}``. Prints requests/s and p50/p99
latency of each phase, and the ratios of the second against the first. Loopback only; bounded
in time.

    python bench/api_load.py [--clients 8] [--seconds 10]
"""

from __future__ import annotations

import argparse
import os
import platform
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np

TOKEN = "bench-token"


def random_definition(
    name: str, command: list[str], max_jobs: int, max_parallel_jobs: int
) -> dict[str, Any]:
    """A Random tuning job of ``command`` (which prints ``accuracy=...``) over one range, as the
    service benchmarks submit it."""
    return {
        "name": name,
        "strategy": "Random",
        "objective_metric_name": "accuracy",
        "max_jobs": max_jobs,
        "max_parallel_jobs": max_parallel_jobs,
        "metric_definitions": [{"Name": "accuracy", "Regex": "accuracy=([0-9.]+)"}],
        "hyperparameter_ranges": {"x": {"type": "continuous", "min_value": 0, "max_value": 1}},
        "job_definition": {"command": command},
    }


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(
    folder: Path, database_url: str | None = None
) -> tuple[subprocess.Popen[bytes], str]:
    """``tuner serve`` on a free loopback port, its runs under ``folder`` and its store at
    ``database_url`` (default: SQLite in ``folder``); returns the process and its base URL once
    /healthz answers."""
    port = free_port()
    env = {
        **os.environ,
        "TUNER_API_TOKEN": TOKEN,
        "TUNER_DATABASE_URL": database_url or f"sqlite:///{folder / 'tuner.db'}",
    }
    command = [sys.executable, "-m", "tuner", "serve", "--port", str(port)]
    process = subprocess.Popen(
        [*command, "--runs-dir", str(folder / "runs"), "--log-level", "warning"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                return process, url
        except httpx.HTTPError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError("the service did not start")
        time.sleep(0.1)


def stop_server(process: subprocess.Popen[bytes]) -> None:
    """Ctrl-C a ``start_server`` service and wait for it (killed after 60 s)."""
    process.send_signal(signal.SIGINT)
    try:
        process.wait(60)
    except subprocess.TimeoutExpired:
        process.kill()


def load(url: str, paths: list[str], clients: int, seconds: float) -> tuple[float, np.ndarray]:
    latencies: list[float] = []
    lock = threading.Lock()
    stop_at = time.monotonic() + seconds

    def client() -> None:
        mine = []
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {TOKEN}"}) as http:
            i = 0
            while time.monotonic() < stop_at:
                began = time.perf_counter()
                response = http.get(paths[i % len(paths)])
                mine.append(time.perf_counter() - began)
                response.raise_for_status()
                i += 1
        with lock:
            latencies.extend(mine)

    threads = [threading.Thread(target=client) for _ in range(clients)]
    began = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return len(latencies) / (time.monotonic() - began), np.array(latencies) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=10.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        process, url = start_server(Path(tmp))
        try:
            job = [sys.executable, "-c", "import time; time.sleep(0.5); print('accuracy=0.5')"]
            definition = random_definition("load", job, max_jobs=500, max_parallel_jobs=4)
            headers = {"Authorization": f"Bearer {TOKEN}"}
            httpx.post(f"{url}/tuning-jobs", json=definition, headers=headers).raise_for_status()
            time.sleep(2)  # some training jobs exist and run
            reference = load(url, ["/healthz"], args.clients, args.seconds)
            measured = load(url, ["/tuning-jobs", "/tuning-jobs/load"], args.clients, args.seconds)
            jobs = len(httpx.get(f"{url}/tuning-jobs/load/training-jobs", headers=headers).json())
        finally:
            process.send_signal(signal.SIGTERM)
            process.wait(30)
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    )
    print(
        f"{args.clients} clients, {args.seconds:g} s per phase, loopback; "
        f"a tuning job ran 4 training jobs at a time ({jobs} recorded by the end)"
    )
    rows = [("GET /healthz (reference)", reference), ("list + describe", measured)]
    for label, (rate, ms) in rows:
        print(
            f"  {label:26} {rate:8.1f} req/s   p50 {np.percentile(ms, 50):7.1f} ms   "
            f"p99 {np.percentile(ms, 99):7.1f} ms"
        )
    (r_rate, r_ms), (m_rate, m_ms) = reference, measured
    print(
        f"  ratio list+describe/healthz: throughput {m_rate / r_rate:.2f}x, "
        f"p50 {np.percentile(m_ms, 50) / np.percentile(r_ms, 50):.2f}x, "
        f"p99 {np.percentile(m_ms, 99) / np.percentile(r_ms, 99):.2f}x"
    )


if __name__ == "__main__":
    main()
