"""A service given many tuning jobs at once: memory and time with and without a bound.

Submits TUNING tuning jobs at once to ``tuner serve`` (each JOBS training jobs that sleep SLEEP s
and print a metric, one at a time), first with ``--max-running-tuning-jobs`` out of reach (the
reference: every tuning job gets a worker process at once, as before the bound existed), then
with it set to CAP, side by side in one run. Samples the service's process tree every 0.25 s:
worker processes alive and the resident memory of the service, its workers and their training
jobs together; times until every tuning job completed. Prints both and their ratios.

    python bench/service_capacity.py [--tuning-jobs 24] [--cap 8] [--jobs 2] [--sleep 1]
                                     [--strategy Bayesian]
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

from bench.api_load import TOKEN, start_server, stop_server
from tuner.storage import Store

HEADERS = {"Authorization": f"Bearer {TOKEN}"}
OUT_OF_REACH = 100_000


def definition(name: str, strategy: str, jobs: int, sleep: float) -> dict[str, object]:
    script = f"import time; time.sleep({sleep}); print('accuracy=0.5')"
    return {
        "name": name,
        "strategy": strategy,
        "objective_metric_name": "accuracy",
        "max_jobs": jobs,
        "max_parallel_jobs": 1,
        "metric_definitions": [{"Name": "accuracy", "Regex": "accuracy=([0-9.]+)"}],
        "hyperparameter_ranges": {"x": {"type": "continuous", "min_value": 0, "max_value": 1}},
        "job_definition": {"command": [sys.executable, "-c", script]},
    }


def tree(root: int) -> tuple[int, int]:
    """(worker processes, resident kB) of ``root`` and every process below it."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            parents[int(entry.name)] = int(fields[1])
    members, frontier = {root}, [root]
    while frontier:
        parent = frontier.pop()
        children = [pid for pid, ppid in parents.items() if ppid == parent]
        members.update(children)
        frontier.extend(children)
    workers = rss = 0
    for pid in members:
        try:
            status = Path(f"/proc/{pid}/status").read_text()
            workers += b"tuner-worker" in Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        rss += next(
            (int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:")), 0
        )
    return workers, rss


def measure(cap: int, args: argparse.Namespace) -> dict[str, float]:
    names = [f"t{i}" for i in range(args.tuning_jobs)]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        os.environ["TUNER_MAX_RUNNING_TUNING_JOBS"] = str(cap)
        process, base = start_server(folder)
        store = Store(f"sqlite:///{folder / 'tuner.db'}")
        peaks = {"workers": 0, "rss": 0}
        done = threading.Event()

        def sample() -> None:
            while not done.wait(0.25):
                workers, rss = tree(process.pid)
                peaks["workers"] = max(peaks["workers"], workers)
                peaks["rss"] = max(peaks["rss"], rss)

        sampler = threading.Thread(target=sample)
        try:
            began = time.monotonic()
            sampler.start()
            with httpx.Client(base_url=base, headers=HEADERS, timeout=60) as http:
                for name in names:
                    body = definition(name, args.strategy, args.jobs, args.sleep)
                    http.post("/tuning-jobs", json=body).raise_for_status()
            deadline = began + 900
            while not all(store.get_tuning_job(n).status.terminal for n in names):
                assert time.monotonic() < deadline, "the tuning jobs did not end in 15 min"
                time.sleep(0.25)
            seconds = time.monotonic() - began
            statuses = {store.get_tuning_job(n).status.value for n in names}
            assert statuses == {"Completed"}, statuses
        finally:
            done.set()
            sampler.join()
            store.close()
            stop_server(process)
    return {"workers": peaks["workers"], "mb": peaks["rss"] / 1024, "seconds": seconds}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tuning-jobs", type=int, default=24)
    parser.add_argument("--cap", type=int, default=8, help="--max-running-tuning-jobs")
    parser.add_argument("--jobs", type=int, default=2, help="training jobs per tuning job")
    parser.add_argument("--sleep", type=float, default=1.0, help="seconds per training job")
    parser.add_argument("--strategy", default="Bayesian")
    args = parser.parse_args()
    print(
        f"# {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
        f"{args.tuning_jobs} {args.strategy} tuning jobs of {args.jobs} jobs of {args.sleep:g} s"
    )
    reference, capped = measure(OUT_OF_REACH, args), measure(args.cap, args)
    print("| max running | peak workers | peak memory MB | seconds to complete all |")
    print("| --- | --- | --- | --- |")
    for label, r in (("no bound (reference)", reference), (str(args.cap), capped)):
        print(f"| {label} | {r['workers']:.0f} | {r['mb']:.0f} | {r['seconds']:.1f} |")
    print(
        f"bounded at {args.cap}: peak memory {capped['mb'] / reference['mb']:.2f}x the "
        f"reference's, time to complete all {capped['seconds'] / reference['seconds']:.2f}x"
    )


if __name__ == "__main__":
    main()
