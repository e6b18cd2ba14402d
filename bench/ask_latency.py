"""Time for one suggestion after 30, 100, 200 and 400 observations in 6 dimensions, per strategy.

Each strategy is told N results of a 6-dimensional test function (Hartmann-6 on the unit cube)
at random points (drawn apart from the strategy's own seed: drawn with it, Random's first ask
walked past every told point, and the reference was that walk), optionally asked for
``--pending`` K points left running (as jobs of a tuning job with K + 1 in parallel), then
asked for one point, told its result, and asked again; the figure is the mean of those asks
(for the Bayesian strategy this includes fitting its Gaussian process to the new results).
Random search is the reference measured side by side in the same run.

    python bench/ask_latency.py [--observations 30 100 200 400 1000] [--pending K]
                                [--strategies ...]

A strategy may carry options: ``Bayesian:engine=optuna``.
"""

from __future__ import annotations

import argparse
import os
import platform
import time

import numpy as np
from optimizers import hartmann6  # bench/ is this script's folder

from tuner import ContinuousParameter, SearchSpace
from tuner.strategies import make_strategy

SPACE = SearchSpace({f"x{i}": ContinuousParameter(0.0, 1.0, "Linear") for i in range(6)})


def ask_seconds(spec: str, observations: int, pending: int = 0, seed: int = 0) -> float:
    name, _, opts = spec.partition(":")
    options = dict(o.split("=", 1) for o in opts.split(",") if o)
    strategy = make_strategy(name, SPACE, maximize=False, seed=seed, options=options)
    rng = np.random.default_rng([seed, 1])  # not the strategy's own draws
    for u in SPACE.sample(rng, observations):
        config = SPACE.decode(u)
        strategy.tell(config, hartmann6(SPACE.encode(config)))
    if pending:
        strategy.ask(pending)  # left running: every later ask keeps away from them
    times = []
    for _ in range(2):
        began = time.perf_counter()
        (config,) = strategy.ask(1)
        times.append(time.perf_counter() - began)
        strategy.tell(config, hartmann6(SPACE.encode(config)))
    return float(np.mean(times))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--observations", type=int, nargs="+", default=[30, 100, 200, 400, 1000])
    parser.add_argument("--pending", type=int, default=0, help="points left running")
    parser.add_argument(
        "--strategies",
        nargs="+",
        default=["Random", "TPE", "Bayesian", "Bayesian:engine=optuna", "Bayesian:engine=skopt"],
    )
    args = parser.parse_args()
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    )
    print(
        "seconds per suggestion in 6 dimensions, "
        f"{args.pending} pending (ratio against Random in this run)"
    )
    header = "".join(f"{n:>22}" for n in args.observations)
    print(f"{'strategy':22}{header}")
    reference = {n: ask_seconds("Random", n, args.pending) for n in args.observations}
    for name in args.strategies:
        cells = []
        for n in args.observations:
            seconds = reference[n] if name == "Random" else ask_seconds(name, n, args.pending)
            cells.append(f"{seconds:10.4f} s ({seconds / reference[n]:7.0f}x)")
        print(f"{name:22}" + "".join(f"{c:>22}" for c in cells))


if __name__ == "__main__":
    main()
