"""Optimizer quality: our strategies against scikit-optimize and Optuna used directly.

Each contender minimises standard test functions at equal budgets, over several seeds and batch
sizes (``max_parallel_jobs`` as a strategy sees it: ask a batch, evaluate, tell the batch).
Ours run through the public ask/tell API (``tuner.strategies.make_strategy`` over a
``SearchSpace``); the libraries run as their users would call them: scikit-optimize's
``Optimizer`` with ``gp_minimize``'s defaults (batches by its own constant liar), Optuna's
``GPSampler`` and ``TPESampler`` with their defaults (batches of running trials), and plain
uniform random search.

Prints, per problem and batch size: the median best regret after 10, 20, 30 and 50
evaluations, the median number of evaluations to reach the problem's target regret (">N" when a
run never did), and the ratios of ours against each library measured in the same run.

    python bench/optimizers.py [--problems branin hartmann6 digits] [--seeds 5] [--batches 1 2 8]
        [--per-seed]  (also: runs still above the target regret at the budget, seed by seed)
    python bench/optimizers.py --claim [--seeds 5]

``digits`` is a real problem: the validation error of a one-hidden-layer network trained by SGD
on scikit-learn's digits images (the quickstart's training job, in-process, fixed seed) over
log10 learning_rate in [-4, 0], momentum in [0, 0.99] and log10 wd in [-6, -2]; a diverged run
scores an error of 1; training uses one BLAS thread. Its "minimum" is 0, so its regret is the
error itself. ``--claim`` measures the classic SageMaker claim on it: the Bayesian strategy with
30 jobs, 2 in parallel, against random search with 120 jobs, 8 in parallel, seed by seed.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import statistics
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from threadpoolctl import threadpool_limits

warnings.filterwarnings("ignore")


@dataclass
class Problem:
    name: str
    bounds: list[tuple[float, float]]
    minimum: float
    target: float  # regret that counts as "reached"
    f: Callable[[np.ndarray], float]


def branin(x: np.ndarray) -> float:
    a, b, c = 1.0, 5.1 / (4 * math.pi**2), 5 / math.pi
    r, s, t = 6.0, 10.0, 1 / (8 * math.pi)
    return float(a * (x[1] - b * x[0] ** 2 + c * x[0] - r) ** 2 + s * (1 - t) * math.cos(x[0]) + s)


_A6 = np.array(
    [
        [10, 3, 17, 3.5, 1.7, 8],
        [0.05, 10, 17, 0.1, 8, 14],
        [3, 3.5, 1.7, 10, 17, 8],
        [17, 8, 0.05, 10, 0.1, 14],
    ]
)
_P6 = 1e-4 * np.array(
    [
        [1312, 1696, 5569, 124, 8283, 5886],
        [2329, 4135, 8307, 3736, 1004, 9991],
        [2348, 1451, 3522, 2883, 3047, 6650],
        [4047, 8828, 8732, 5743, 1091, 381],
    ]
)
_A3 = np.array([[3.0, 10, 30], [0.1, 10, 35], [3.0, 10, 30], [0.1, 10, 35]])
_P3 = 1e-4 * np.array(
    [[3689, 1170, 2673], [4699, 4387, 7470], [1091, 8732, 5547], [381, 5743, 8828]]
)
_ALPHA = np.array([1.0, 1.2, 3.0, 3.2])


def hartmann6(x: np.ndarray) -> float:
    return float(-np.sum(_ALPHA * np.exp(-np.sum(_A6 * (x - _P6) ** 2, axis=1))))


def hartmann3(x: np.ndarray) -> float:
    return float(-np.sum(_ALPHA * np.exp(-np.sum(_A3 * (x - _P3) ** 2, axis=1))))


def six_hump_camel(x: np.ndarray) -> float:
    a, b = x
    return float((4 - 2.1 * a**2 + a**4 / 3) * a**2 + a * b + (-4 + 4 * b**2) * b**2)


def digits_error(x: np.ndarray) -> float:
    """Validation error of the quickstart's network on the digits (see the module docstring)."""
    from sklearn.neural_network import MLPClassifier

    data = _digits()
    model = MLPClassifier(
        hidden_layer_sizes=(32,),
        solver="sgd",
        learning_rate_init=10 ** float(x[0]),
        momentum=float(x[1]),
        nesterovs_momentum=False,
        alpha=10 ** float(x[2]),
        batch_size=64,
        random_state=0,
    )
    classes = np.unique(data[2])
    # One BLAS thread: the same arithmetic on any machine, and 4x faster than two threads on
    # the 2-core development machine at these matrix sizes.
    with np.errstate(all="ignore"), threadpool_limits(1, user_api="blas"):
        for _ in range(10):
            model.partial_fit(data[0], data[2], classes=classes)
        proba = model.predict_proba(data[1])
    if not np.all(np.isfinite(proba)):
        return 1.0
    return float(np.mean(classes[proba.argmax(axis=1)] != data[3]))


_DIGITS: list[np.ndarray] = []


def _digits() -> list[np.ndarray]:
    if not _DIGITS:
        from sklearn.datasets import load_digits
        from sklearn.model_selection import train_test_split

        x, y = load_digits(return_X_y=True)
        x_train, x_val, y_train, y_val = train_test_split(
            x / 16.0, y, test_size=0.3, random_state=0, stratify=y
        )
        _DIGITS.extend([x_train, x_val, y_train, y_val])
    return _DIGITS


PROBLEMS = {
    "branin": Problem("branin", [(-5, 10), (0, 15)], 0.397887, 0.01, branin),
    "hartmann6": Problem("hartmann6", [(0, 1)] * 6, -3.32237, 0.05, hartmann6),
    "hartmann3": Problem("hartmann3", [(0, 1)] * 3, -3.86278, 0.01, hartmann3),
    "camel": Problem("camel", [(-3, 3), (-2, 2)], -1.0316, 0.01, six_hump_camel),
    "digits": Problem("digits", [(-4, 0), (0, 0.99), (-6, -2)], 0.0, 0.03, digits_error),
}


def ours(strategy: str, **options: object) -> Callable[..., list[float]]:
    def run(problem: Problem, budget: int, batch: int, seed: int) -> list[float]:
        from tuner import ContinuousParameter, SearchSpace
        from tuner.strategies import make_strategy

        space = SearchSpace(
            {
                f"x{i}": ContinuousParameter(lo, hi, "Linear")
                for i, (lo, hi) in enumerate(problem.bounds)
            }
        )
        s = make_strategy(strategy, space, maximize=False, seed=seed, options=dict(options))
        values: list[float] = []
        while len(values) < budget:
            configs = s.ask(min(batch, budget - len(values)))
            results = [
                problem.f(np.array([c[f"x{i}"] for i in range(len(problem.bounds))]))
                for c in configs
            ]
            for config, value in zip(configs, results, strict=True):
                s.tell(config, value)
            values += results
        return values

    return run


def skopt_gp(problem: Problem, budget: int, batch: int, seed: int) -> list[float]:
    from skopt import Optimizer

    opt = Optimizer(
        problem.bounds,
        base_estimator="GP",
        acq_func="gp_hedge",
        acq_optimizer="auto",
        n_initial_points=10,
        random_state=seed,
    )
    values: list[float] = []
    while len(values) < budget:
        n = min(batch, budget - len(values))
        xs = opt.ask(n_points=n) if n > 1 else [opt.ask()]
        ys = [problem.f(np.array(x)) for x in xs]
        opt.tell(xs, ys)
        values += ys
    return values


def optuna_run(sampler_name: str) -> Callable[..., list[float]]:
    def run(problem: Problem, budget: int, batch: int, seed: int) -> list[float]:
        import optuna

        optuna.logging.set_verbosity(optuna.logging.ERROR)
        sampler = (
            optuna.samplers.GPSampler(seed=seed)
            if sampler_name == "gp"
            else optuna.samplers.TPESampler(seed=seed)
        )
        study = optuna.create_study(sampler=sampler)
        dists = {
            f"x{i}": optuna.distributions.FloatDistribution(lo, hi)
            for i, (lo, hi) in enumerate(problem.bounds)
        }
        values: list[float] = []
        while len(values) < budget:
            trials = [study.ask(dists) for _ in range(min(batch, budget - len(values)))]
            for trial in trials:
                y = problem.f(np.array([trial.params[f"x{i}"] for i in range(len(dists))]))
                study.tell(trial, y)
                values.append(y)
        return values

    return run


def random_search(problem: Problem, budget: int, batch: int, seed: int) -> list[float]:
    rng = np.random.default_rng(seed)
    lo, hi = np.array(problem.bounds).T
    return [problem.f(lo + rng.random(len(lo)) * (hi - lo)) for _ in range(budget)]


CONTENDERS: dict[str, Callable[..., list[float]]] = {
    "ours-bayesian": ours("Bayesian"),
    "ours-bo-skopt": ours("Bayesian", engine="skopt"),
    "ours-bo-optuna": ours("Bayesian", engine="optuna"),
    "ours-tpe": ours("TPE"),
    "ours-random": ours("Random"),
    "skopt-gp": skopt_gp,
    "optuna-gp": optuna_run("gp"),
    "optuna-tpe": optuna_run("tpe"),
    "random": random_search,
}


def summarize(problem: Problem, runs: list[list[float]], budget: int) -> dict[str, object]:
    regrets = [np.minimum.accumulate(np.array(v) - problem.minimum) for v in runs]
    at = {
        n: statistics.median(float(r[n - 1]) for r in regrets)
        for n in (10, 20, 30, 50)
        if n <= budget
    }
    hits = [
        int(np.argmax(r <= problem.target)) + 1 if (r <= problem.target).any() else math.inf
        for r in regrets
    ]
    above = [i for i, r in enumerate(regrets) if r[-1] > problem.target]
    return {"regret": at, "to_target": statistics.median(hits), "above": above}


def classic_claim(seeds: range, engine: str) -> None:
    """Bayesian 30 jobs / 2 parallel against random 120 jobs / 8 parallel on digits."""
    problem = PROBLEMS["digits"]
    won: list[bool] = []
    print(f"digits, Bayesian (engine {engine}) 30 jobs / 2 parallel vs Random 120 jobs / 8")
    for seed in seeds:
        began = time.perf_counter()
        bayes = min(ours("Bayesian", engine=engine)(problem, 30, 2, seed))
        rand = min(ours("Random")(problem, 120, 8, seed))
        won.append(bayes <= rand)
        print(
            f"  seed {seed}: best accuracy Bayesian {1 - bayes:.4f}, random {1 - rand:.4f} "
            f"({'Bayesian' if bayes <= rand else 'random'} at least as good; "
            f"{time.perf_counter() - began:.0f} s)"
        )
    print(f"  Bayesian reached random search's best in {sum(won)} of {len(seeds)} seeds")
    fives = [sum(won[i : i + 5]) for i in range(0, len(won) - 4, 5)]
    if len(fives) > 1:
        print(f"  per five seeds: {fives}; {sum(f >= 4 for f in fives)} of {len(fives)} at 4 or 5")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--problems", nargs="+", default=["branin", "hartmann6"], choices=sorted(PROBLEMS)
    )
    parser.add_argument(
        "--contenders", nargs="+", default=list(CONTENDERS), choices=sorted(CONTENDERS)
    )
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument(
        "--first-seed", type=int, default=0, help="seeds first..first+seeds-1 (held-out sets)"
    )
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 2, 8])
    parser.add_argument("--budget", type=int, default=50)
    parser.add_argument(
        "--per-seed",
        action="store_true",
        help="also print how many runs end above the target regret (stuck in a local basin)",
    )
    parser.add_argument("--claim", action="store_true", help="the classic claim on digits")
    parser.add_argument("--engine", default="native", help="the Bayesian engine for --claim")
    args = parser.parse_args()
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    )
    if args.claim:
        classic_claim(range(args.first_seed, args.first_seed + args.seeds), args.engine)
        return
    seeds = range(args.first_seed, args.first_seed + args.seeds)
    print(
        f"seeds {seeds.start}-{seeds.stop - 1}, budget {args.budget}; "
        "regret = best found - minimum (median)"
    )
    for name in args.problems:
        problem = PROBLEMS[name]
        for batch in args.batches:
            print(f"\n{name} (target regret {problem.target}), batch {batch}")
            print(
                f"  {'contender':14} {'@10':>10} {'@20':>10} {'@30':>10} {'@50':>10} "
                f"{'evals to target':>16} {'seconds':>8}"
            )
            results = {}
            for contender in args.contenders:
                began = time.perf_counter()
                runs = [CONTENDERS[contender](problem, args.budget, batch, seed) for seed in seeds]
                results[contender] = summarize(problem, runs, args.budget)
                r = results[contender]
                cells = "".join(f"{r['regret'].get(n, math.nan):10.4g} " for n in (10, 20, 30, 50))  # type: ignore[union-attr]
                hit = r["to_target"]
                hit_text = f">{args.budget}" if hit == math.inf else f"{hit:g}"
                print(f"  {contender:14} {cells}{hit_text:>16} {time.perf_counter() - began:8.1f}")
                if args.per_seed:
                    above = [seeds[i] for i in r["above"]]  # type: ignore[union-attr]
                    print(
                        f"  {'':14} above target at {args.budget}: {len(above)} of {len(seeds)} "
                        f"runs (seeds {' '.join(map(str, above)) or '-'}); final regrets "
                        + " ".join(f"{min(v) - problem.minimum:.3g}" for v in runs)
                    )
            mine = results.get("ours-bayesian")
            if mine:
                for other in ("skopt-gp", "optuna-gp", "optuna-tpe", "random"):
                    if other in results:
                        a = mine["regret"].get(50)  # type: ignore[union-attr]
                        b = results[other]["regret"].get(50)  # type: ignore[union-attr]
                        ratio = a / b if a is not None and b else math.nan
                        print(
                            f"  ours-bayesian / {other}: regret@50 ratio {ratio:.3g}, evals to "
                            f"target {mine['to_target']} vs {results[other]['to_target']}"
                        )


if __name__ == "__main__":
    main()
