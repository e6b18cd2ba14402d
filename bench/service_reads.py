"""Reads against a busy service: how much a running tuning job slows while clients read.

For each place a service can run its tuning jobs (``TUNER_WORKERS``: ``thread``, in the
service's own interpreter, and ``process``, a worker process each), side by side in one run:
writes a tuning job of JOBS training jobs straight into a fresh SQLite store (read only: leased
to another process), starts ``tuner serve`` on it (127.0.0.1), submits a tuning job of trivial
training jobs (``echo accuracy=0.5``, 8 at a time), and counts the jobs it completes per second
over SECONDS, first with no reader, then while CLIENTS clients fetch the large tuning job's
report (``GET /tuning-jobs/{name}/report``) in a loop. Prints jobs/s alone and with readers,
their ratio, and the readers' requests/s. Bounded in time.

    python bench/service_reads.py [--jobs 3000] [--clients 4] [--seconds 15]
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.api_load import TOKEN, random_definition, start_server, stop_server
from bench.dashboard_load import NAME, fill
from tuner.storage import Store

HEADERS = {"Authorization": f"Bearer {TOKEN}"}
TRIVIAL = random_definition(
    "busy", [shutil.which("echo") or "/bin/echo", "accuracy=0.5"], 100_000, 8
)


def completed(store: Store) -> int:
    return sum(j.status.value == "Completed" for j in store.list_training_jobs("busy"))


def jobs_per_second(store: Store, seconds: float) -> float:
    first, began = completed(store), time.monotonic()
    time.sleep(seconds)
    return (completed(store) - first) / (time.monotonic() - began)


def read_in_a_loop(url: str, clients: int, until: threading.Event, counts: list[int]) -> None:
    def client(i: int) -> None:
        with httpx.Client(base_url=url, headers=HEADERS, timeout=120) as http:
            while not until.is_set():
                http.get(f"/tuning-jobs/{NAME}/report").raise_for_status()
                counts[i] += 1

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    until.wait()
    for t in threads:
        t.join()


def measure(workers: str, jobs: int, clients: int, seconds: float) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        url = f"sqlite:///{folder / 'tuner.db'}"
        fill(url, jobs)
        os.environ["TUNER_WORKERS"] = workers
        process, base = start_server(folder)
        store = Store(url)
        try:
            httpx.post(f"{base}/tuning-jobs", json=TRIVIAL, headers=HEADERS).raise_for_status()
            deadline = time.monotonic() + 60
            while completed(store) < 16:  # started and warm
                assert time.monotonic() < deadline, "the trivial jobs did not run"
                time.sleep(0.2)
            alone = jobs_per_second(store, seconds)
            until, counts = threading.Event(), [0] * clients
            readers = threading.Thread(target=read_in_a_loop, args=(base, clients, until, counts))
            began = time.monotonic()
            readers.start()
            time.sleep(1.0)  # the first reports under way
            loaded = jobs_per_second(store, seconds)
            until.set()
            readers.join()
            reads = sum(counts) / (time.monotonic() - began)
            httpx.post(f"{base}/tuning-jobs/busy/stop", headers=HEADERS).raise_for_status()
        finally:
            store.close()
            stop_server(process)
    return {"alone": alone, "loaded": loaded, "reads": reads}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=3000, help="training jobs of the read job")
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=15.0, help="each measurement")
    args = parser.parse_args()
    print(
        f"# {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
        f"{args.jobs} training jobs read, {args.clients} clients, {args.seconds:g} s windows"
    )
    results = {w: measure(w, args.jobs, args.clients, args.seconds) for w in ("thread", "process")}
    print("| workers | jobs/s alone | jobs/s while read | ratio | reports/s |")
    print("| --- | --- | --- | --- | --- |")
    for workers, r in results.items():
        ratio = r["loaded"] / r["alone"] if r["alone"] else float("nan")
        print(
            f"| {workers} | {r['alone']:.1f} | {r['loaded']:.1f} | {ratio:.2f}x "
            f"| {r['reads']:.2f} |"
        )
    thread, process = results["thread"], results["process"]
    if thread["loaded"]:
        print(
            f"while read, process workers complete {process['loaded'] / thread['loaded']:.1f}x "
            "the jobs per second of thread workers"
        )


if __name__ == "__main__":
    main()
