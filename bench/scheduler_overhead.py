"""Scheduling overhead: 500 trivial jobs at 8 in parallel, through the tuner and through xargs.

Both runs start the same program (``/bin/echo``, which prints its arguments, so its log holds
the metric) with the same hyperparameter arguments, 8 at a time, in this one process run. The
tuner's run includes everything a user gets: random search, a SQLite store (WAL) with every job
and metric point committed, per-job folders and log files, log parsing, and the wrapper each
local job runs under (``exit_keeper.py``: a second, bare Python interpreter per job, so the
exit status outlives the tuner), which a third run, xargs starting the wrapper, measures alone.
A fourth run is the tuner again with every job on one (pretend) GPU shared by ``parallel`` jobs,
so each start and each scheduler pass goes through the host-wide GPU leases
(``tuner/launchers/host_leases.py``), in a lease directory of its own. A fifth is the tuner
with the machine-wide limit on local jobs set to ``parallel`` (``TUNER_MAX_LOCAL_JOBS``), so each
job holds a place lease and each scheduler pass reads them.

    python bench/scheduler_overhead.py [--jobs 500] [--parallel 8]
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import tempfile
import time
from pathlib import Path

from tuner import ContinuousParameter, HyperparameterTuner
from tuner.launchers.exit_keeper import EXIT_FILE
from tuner.launchers.host_leases import LEASE_DIR_ENV
from tuner.launchers.local import KEEPER_COMMAND
from tuner.launchers.local_limit import LIMIT_ENV

ECHO = "/bin/echo accuracy=0.5"


def run_tuner(
    workdir: Path, jobs: int, parallel: int, gpu: bool = False
) -> tuple[float, list[dict]]:
    """``gpu``: every job takes one of ``parallel`` slots of GPU "0" (leases, not a device)."""
    slots = {"gpus": ["0"], "gpus_per_job": 1, "jobs_per_gpu": parallel} if gpu else {}
    tuner = HyperparameterTuner(
        job_definition={"command": ECHO.split(), "output_path": str(workdir), **slots},
        objective_metric_name="accuracy",
        hyperparameter_ranges={"x": ContinuousParameter(0.0, 1.0)},
        metric_definitions=[{"Name": "accuracy", "Regex": r"accuracy=([0-9.]+)"}],
        strategy="Random",
        max_jobs=jobs,
        max_parallel_jobs=parallel,
        random_seed=0,
        storage=f"sqlite:///{workdir / 'tuner.db'}",
    )
    began = time.perf_counter()
    tuner.fit()
    elapsed = time.perf_counter() - began
    done = tuner.describe()["training_job_status_counters"]["Completed"]
    assert done == jobs, f"only {done} of {jobs} jobs completed"
    return elapsed, [j.hyperparameters for j in tuner.training_jobs()]


def run_xargs(command: list[str], lines: list[str], parallel: int) -> float:
    """xargs starting ``command`` followed by one line's words, per line."""
    began = time.perf_counter()
    subprocess.run(
        ["xargs", "-P", str(parallel), "-L", "1", *command],
        input="".join(line + "\n" for line in lines).encode(),
        stdout=subprocess.DEVNULL,
        check=True,
    )
    return time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=500)
    parser.add_argument("--parallel", type=int, default=8)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tuner_s, configs = run_tuner(Path(tmp), args.jobs, args.parallel)
        os.environ[LEASE_DIR_ENV] = f"{tmp}/leases"
        leased_s, _ = run_tuner(Path(tmp) / "gpu", args.jobs, args.parallel, gpu=True)
        os.environ[LIMIT_ENV] = str(args.parallel)
        placed_s, _ = run_tuner(Path(tmp) / "places", args.jobs, args.parallel)
        del os.environ[LIMIT_ENV]
        arguments = [f"--x {c['x']!r}" for c in configs]
        # The local launcher's wrapper started as it starts it, a status file per job.
        keeper_s = run_xargs(
            list(KEEPER_COMMAND),
            [f"{tmp}/{i}-{EXIT_FILE} {ECHO} {a}" for i, a in enumerate(arguments)],
            args.parallel,
        )
    xargs_s = run_xargs(ECHO.split(), arguments, args.parallel)
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    )
    print(f"{args.jobs} trivial jobs, {args.parallel} in parallel")
    for label, seconds in (
        (f"xargs -P {args.parallel}", xargs_s),
        ("xargs + the wrapper", keeper_s),
        ("tuner", tuner_s),
        ("tuner, GPU leases", leased_s),
        ("tuner, local places", placed_s),
    ):
        print(f"  {label:<20}: {seconds:6.2f} s  ({1000 * seconds / args.jobs:.2f} ms/job)")
    print(f"  ratio tuner / xargs: {tuner_s / xargs_s:.1f}x")
    print(f"  ratio tuner / (xargs + the wrapper): {tuner_s / keeper_s:.1f}x")
    per_job = 1000 * (tuner_s - xargs_s) / args.jobs
    wrapper = 1000 * (keeper_s - xargs_s) / args.jobs
    print(f"  tuner overhead: {per_job:.2f} ms per job, the wrapper's share {wrapper:.2f} ms")
    print(f"  ratio tuner with GPU leases / tuner: {leased_s / tuner_s:.2f}x")
    print(f"  ratio tuner with {LIMIT_ENV}={args.parallel} / tuner: {placed_s / tuner_s:.2f}x")


if __name__ == "__main__":
    main()
