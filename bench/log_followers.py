"""What idle log followers cost the REST service: CPU while clients follow a silent job.

Starts ``tuner serve`` on 127.0.0.1 (SQLite in a temporary folder), submits a tuning job whose
one training job prints nothing for a long while, then measures the service's CPU time (its
own process and its tuning job's worker, from ``/proc``) over SECONDS with no follower (the
reference) and with FOLLOWERS clients streaming ``GET /training-jobs/{name}/logs?follow=true``.
Prints CPU seconds per second of each phase and the difference per follower. Linux, loopback
only, bounded in time.

    python bench/log_followers.py [--followers 100] [--seconds 10]
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.api_load import TOKEN, random_definition, start_server, stop_server

TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pids: list[int]) -> float:
    """User and system CPU time of processes ``pids`` so far (0 for one that is gone)."""
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])
    return total / TICKS


def service_pids(service: int) -> list[int]:
    """The service and its children (the tuning job's worker), not the training job."""
    children = Path(f"/proc/{service}/task/{service}/children").read_text().split()
    return [service, *map(int, children)]


def measure(pids: list[int], seconds: float) -> float:
    """CPU seconds per wall second of ``pids`` over ``seconds``."""
    began, used = time.monotonic(), cpu_seconds(pids)
    time.sleep(seconds)
    return (cpu_seconds(pids) - used) / (time.monotonic() - began)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--followers", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=10.0)
    args = parser.parse_args()
    headers = {"Authorization": f"Bearer {TOKEN}"}
    silent = [sys.executable, "-c", "import time; time.sleep(600); print('accuracy=0.5')"]
    definition = random_definition("followed", silent, max_jobs=1, max_parallel_jobs=1)
    with tempfile.TemporaryDirectory() as tmp:
        process, url = start_server(Path(tmp))
        leaving = threading.Event()
        try:
            httpx.post(f"{url}/tuning-jobs", json=definition, headers=headers).raise_for_status()
            path = f"{url}/training-jobs/followed-001/logs"
            while httpx.get(path, headers=headers).status_code != 200:
                time.sleep(0.2)
            time.sleep(3)  # the worker's start-up is over
            pids = service_pids(process.pid)
            reference = measure(pids, args.seconds)
            opened = threading.Semaphore(0)

            def follow() -> None:
                with (
                    httpx.Client(headers=headers, timeout=None) as http,
                    http.stream("GET", path, params={"follow": "true"}) as response,
                ):
                    opened.release()
                    for _ in response.iter_bytes():
                        if leaving.is_set():
                            return

            readers = [threading.Thread(target=follow, daemon=True) for _ in range(args.followers)]
            for reader in readers:
                reader.start()
            for _ in readers:
                opened.acquire(timeout=60)
            time.sleep(2)
            followed = measure(pids, args.seconds)
        finally:
            leaving.set()
            httpx.post(f"{url}/tuning-jobs/followed/stop", headers=headers)
            stop_server(process)
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    )
    print(f"{args.seconds:g} s per phase, loopback, one silent training job")
    print(f"  no follower (reference)  {reference:6.3f} CPU s/s")
    print(f"  {args.followers:4d} idle followers     {followed:6.3f} CPU s/s")
    extra = (followed - reference) / args.followers
    print(
        f"  ratio {followed / max(reference, 1e-3):.1f}x the reference; "
        f"{extra * 1000:.2f} ms of CPU per follower per second"
    )


if __name__ == "__main__":
    main()
