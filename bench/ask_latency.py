"""Time for one suggestion after 30, 100, 200 and 400 observations in 6 dimensions, per strategy.

Each strategy is told N results of a 6-dimensional test function (Hartmann-6 on the unit cube)
at random points, then asked for one point, told its result, and asked again; the figure is the
mean of those asks (for the Bayesian strategy this includes fitting its Gaussian process to the
new results). Random search is the reference measured side by side in the same run.

    python bench/ask_latency.py [--observations 30 100 200 400] [--strategies ...]
"""

from __future__ import annotations

import argparse
import os
import platform
import time

import numpy as np

from tuner import ContinuousParameter, SearchSpace
from tuner.strategies import make_strategy

ALPHA = np.array([1.0, 1.2, 3.0, 3.2])
A = np.array(
    [
        [10, 3, 17, 3.5, 1.7, 8],
        [0.05, 10, 17, 0.1, 8, 14],
        [3, 3.5, 1.7, 10, 17, 8],
        [17, 8, 0.05, 10, 0.1, 14],
    ]
)
P = 1e-4 * np.array(
    [
        [1312, 1696, 5569, 124, 8283, 5886],
        [2329, 4135, 8307, 3736, 1004, 9991],
        [2348, 1451, 3522, 2883, 3047, 6650],
        [4047, 8828, 8732, 5743, 1091, 381],
    ]
)


def hartmann6(x: np.ndarray) -> float:
    """Hartmann-6 (minimum -3.32237 at a known point of the unit cube)."""
    return float(-np.sum(ALPHA * np.exp(-np.sum(A * (x - P) ** 2, axis=1))))


SPACE = SearchSpace({f"x{i}": ContinuousParameter(0.0, 1.0, "Linear") for i in range(6)})


def ask_seconds(name: str, observations: int, seed: int = 0) -> float:
    strategy = make_strategy(name, SPACE, maximize=False, seed=seed)
    rng = np.random.default_rng(seed)
    for u in SPACE.sample(rng, observations):
        config = SPACE.decode(u)
        strategy.tell(config, hartmann6(SPACE.encode(config)))
    times = []
    for _ in range(2):
        began = time.perf_counter()
        (config,) = strategy.ask(1)
        times.append(time.perf_counter() - began)
        strategy.tell(config, hartmann6(SPACE.encode(config)))
    return float(np.mean(times))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--observations", type=int, nargs="+", default=[30, 100, 200, 400])
    parser.add_argument("--strategies", nargs="+", default=["Random", "TPE", "Bayesian"])
    args = parser.parse_args()
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    )
    print("seconds per suggestion in 6 dimensions (ratio against Random in this run)")
    header = "".join(f"{n:>22}" for n in args.observations)
    print(f"{'strategy':10}{header}")
    reference = {n: ask_seconds("Random", n) for n in args.observations}
    for name in args.strategies:
        cells = []
        for n in args.observations:
            seconds = reference[n] if name == "Random" else ask_seconds(name, n)
            cells.append(f"{seconds:10.4f} s ({seconds / reference[n]:7.0f}x)")
        print(f"{name:10}" + "".join(f"{c:>22}" for c in cells))


if __name__ == "__main__":
    main()
