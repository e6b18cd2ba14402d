"""Warm start on the digits problem: warm-started children against cold starts, side by side.

The problem is the quickstart's (``examples/train_digits_sgd.py``): validation accuracy of a
one-hidden-layer network trained by SGD on scikit-learn's digits, over ``learning_rate``
(0.001-2, log), ``momentum`` (0-0.99, reverse log) and ``wd`` (1e-6-0.1, log), trained
in-process with a fixed seed on one BLAS thread (as ``bench/optimizers.py``). Every job runs
through our Bayesian strategy's ask/tell API, one at a time, and what a child takes from its
parents is computed by ``tuner.warm_start.take``, the function ``tuner`` itself uses.

(a) IdenticalDataAndAlgorithm: a parent runs ``--parent-jobs`` jobs at 10 epochs; a child with
    the same problem, warm-started from it, and a cold job with the child's seed, each run up
    to ``--child-jobs`` jobs; figure: jobs until each reaches the parent's best (goal: the
    warm child's median <= 3).
(b) TransferLearning: a parent tuned at 3 epochs (``--parent-epochs``), or with
    ``--parent-subset F`` on the first fraction F of the training images at 10 epochs
    (``--parent-jobs`` jobs), a cold job at 10 epochs (``--child-jobs`` jobs) and a child at
    10 epochs on all the images with a narrower learning-rate range (0.001-1: the parent's
    configurations are clipped into it); figure: jobs until each reaches the cold job's final
    best (goal: the child in fewer jobs than the cold job in >= 7 of 10
    seeds; a child that never does counts as a loss). ``--parent-without-wd``: the parent
    instead tunes learning_rate (0.001-2) and momentum at the child's fidelity (10 epochs, all
    images) with ``wd`` static at the training script's default, and the child adds ``wd``.

Both also print, apart from the goals, the same counts to within one validation image
(1/540 of accuracy, the objective's step): whether a target was missed by a hair or by far.

``--objective loss`` tunes every job (parents, children, cold starts) on the validation
cross-entropy instead (minimized; a diverged network scores ``DIVERGED_LOSS``): a continuous
objective with no plateau that most runs reach, so the targets do not come from the accuracy's
quantization; "within one step" is then within 1 % of the target.

``--rank-parents N`` runs neither: for each parent kind of ``PARENT_KINDS`` (epochs, fraction of
the training images) it prints how well the parent's objective ranks the child's (10 epochs on
all images) over N random configurations of the child's space, one table per seed: what a
parent kind should be chosen by, rather than by the child's wins.

    python bench/warm_start.py [--seeds 10] [--first-seed 0] [--parent-jobs 20] [--child-jobs 20]
        [--only a|b] [--parent-epochs 3 | --parent-subset 0.5 | --parent-without-wd]
        [--rank-parents 100]
        [--objective accuracy|loss]
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.early_stopping import DIVERGED_LOSS, validation_scores
from bench.optimizers import _digits
from tuner import ContinuousParameter, SearchSpace
from tuner.space import Config
from tuner.strategies import make_strategy
from tuner.warm_start import IDENTICAL, TRANSFER, ParentResults, WarmStart, take

INF = float("inf")
_CACHE: dict[tuple[int, float, float, float, float], tuple[float, float]] = {}


def space(max_learning_rate: float = 2.0, with_wd: bool = True) -> SearchSpace:
    ranges = {
        "learning_rate": ContinuousParameter(0.001, max_learning_rate, "Logarithmic"),
        "momentum": ContinuousParameter(0.0, 0.99, "ReverseLogarithmic"),
    }
    if with_wd:
        ranges["wd"] = ContinuousParameter(0.000001, 0.1, "Logarithmic")
    return SearchSpace(ranges)


DEFAULT_WD = 1e-4  # the training script's default --wd (examples/train_digits_sgd.py)


OBJECTIVES = ("accuracy", "loss")  # validation accuracy (maximized) or cross-entropy (minimized)


def measure(config: Config, epochs: int, subset: float = 1.0) -> tuple[float, float]:
    """Validation accuracy and cross-entropy after ``epochs`` epochs on the first ``subset``
    fraction of the training images (0 and ``DIVERGED_LOSS`` when training diverged);
    cached, as training is deterministic."""
    key = (epochs, subset, config["learning_rate"], config["momentum"], config["wd"])
    if key not in _CACHE:
        from sklearn.neural_network import MLPClassifier

        x_train, x_val, y_train, y_val = _digits()
        n = round(subset * len(y_train))  # the split is shuffled and stratified: any prefix
        x_train, y_train = x_train[:n], y_train[:n]
        model = MLPClassifier(
            hidden_layer_sizes=(32,),
            solver="sgd",
            learning_rate_init=config["learning_rate"],
            momentum=config["momentum"],
            nesterovs_momentum=False,
            alpha=config["wd"],
            batch_size=64,
            random_state=0,
        )
        classes = np.unique(y_val)
        with np.errstate(all="ignore"), threadpool_limits(1, user_api="blas"):
            for _ in range(epochs):
                model.partial_fit(x_train, y_train, classes=classes)
            proba = model.predict_proba(x_val)
        ok = np.all(np.isfinite(proba))
        _CACHE[key] = validation_scores(proba, y_val, classes) if ok else (0.0, DIVERGED_LOSS)
    return _CACHE[key]


def evaluate(
    config: Config, epochs: int, subset: float = 1.0, objective: str = "accuracy"
) -> float:
    """The objective's value for ``config`` (see ``measure``)."""
    accuracy, loss = measure(config, epochs, subset)
    return accuracy if objective == "accuracy" else loss


def maximized(objective: str) -> bool:
    return objective == "accuracy"


def tune(
    s: SearchSpace,
    epochs: int,
    jobs: int,
    seed: int,
    warm: WarmStart | None = None,
    subset: float = 1.0,
    objective: str = "accuracy",
    static: Config | None = None,
) -> list[tuple[Config, float]]:
    """``jobs`` sequential jobs of the Bayesian strategy, warm-started when ``warm`` is given;
    ``static`` values complete each configuration for training (not tuned, not returned)."""
    strategy = make_strategy("Bayesian", s, maximize=maximized(objective), seed=seed)
    if warm is not None:
        strategy.warm_start(warm.observations, warm.first, warm.prior)
    out = []
    for _ in range(jobs):
        (config,) = strategy.ask(1)
        value = evaluate({**(static or {}), **config}, epochs, subset, objective)
        strategy.tell(config, value)
        out.append((config, value))
    return out


def jobs_to(
    results: list[tuple[Config, float]], target: float, objective: str = "accuracy"
) -> float:
    """1-based number of jobs until a result is at least as good as ``target`` (inf: never)."""
    sign = 1.0 if maximized(objective) else -1.0
    for i, (_, value) in enumerate(results, 1):
        if sign * (value - target) >= -1e-12:
            return i
    return INF


def best_of(results: list[tuple[Config, float]], objective: str = "accuracy") -> float:
    values = [v for _, v in results]
    return max(values) if maximized(objective) else min(values)


def median(values: list[float]) -> float:
    return statistics.median(values)


def ratio(warm: float, cold: float, budget: int) -> str:
    """warm / cold; with a median past the budget, the bound that budget gives."""
    if cold == INF:
        return "inf" if warm == INF else f"< {warm / budget:.3g}"
    if warm == INF:
        return f"> {budget / cold:.3g}"
    return f"{warm / cold:.2f}"


def shown(value: float) -> str:
    return ">budget" if value == INF else f"{value:g}"


def near(target: float, objective: str = "accuracy") -> float:
    """A target one step easier: one validation image of accuracy; 1 % of a loss."""
    return target - 1.0 / len(_digits()[3]) if maximized(objective) else target * 1.01


def identical(
    seed: int, parent_jobs: int, child_jobs: int, objective: str = "accuracy"
) -> tuple[float, ...]:
    """Parent's best; jobs until the warm child and the cold job reach it; the same to within
    one step (``near``)."""
    s, o = space(), objective
    parent = tune(s, 10, parent_jobs, seed, objective=o)
    best = best_of(parent, o)
    warm = take(IDENTICAL, s, maximized(o), [ParentResults("parent", {}, parent)])
    child = tune(s, 10, child_jobs, seed + 1000, warm, objective=o)
    cold = tune(s, 10, child_jobs, seed + 1000, objective=o)
    easier = near(best, o)
    return (
        best,
        jobs_to(child, best, o),
        jobs_to(cold, best, o),
        jobs_to(child, easier, o),
        jobs_to(cold, easier, o),
    )


EQUAL_JOBS = (3, 5, 10, 20)  # job counts at which (b) also compares child and cold bests


def transfer_figures(
    cold: list[tuple[Config, float]], child: list[tuple[Config, float]], objective: str
) -> tuple[float, ...]:
    """Cold job's final best; jobs until the cold job and the child reach it; the child's best;
    jobs until the cold job and the child reach it to within one step (``near``); then, for
    each k of ``EQUAL_JOBS`` within the budget, 1 / 0 / -1 when the child's best after k jobs
    is better than / equal to / worse than the cold job's after k."""
    o = objective
    target = best_of(cold, o)
    easier = near(target, o)
    sign = 1.0 if maximized(o) else -1.0
    equal_jobs = []
    for k in EQUAL_JOBS:
        if k <= min(len(cold), len(child)):
            gap = sign * (best_of(child[:k], o) - best_of(cold[:k], o))
            equal_jobs.append(0.0 if abs(gap) <= 1e-12 else math.copysign(1.0, gap))
    return (
        target,
        jobs_to(cold, target, o),
        jobs_to(child, target, o),
        best_of(child, o),
        jobs_to(cold, easier, o),
        jobs_to(child, easier, o),
        *equal_jobs,
    )


def transfer(
    seed: int,
    parent_jobs: int,
    child_jobs: int,
    parent_epochs: int = 3,
    subset: float = 1.0,
    objective: str = "accuracy",
) -> tuple[float, ...]:
    """``transfer_figures`` of a cold job and a child of a parent at ``parent_epochs`` epochs
    on the first ``subset`` fraction of the training images."""
    o = objective
    static = {"epochs": parent_epochs, "subset": subset}
    parent_definition = {"job_definition": {"static_hyperparameters": static}}
    parent = tune(space(), parent_epochs, parent_jobs, seed, subset=subset, objective=o)
    return child_against_cold(seed, parent, parent_definition, child_jobs, o)


def transfer_added(
    seed: int, parent_jobs: int, child_jobs: int, objective: str = "accuracy"
) -> tuple[float, ...]:
    """As ``transfer``, with a parent of the same fidelity (10 epochs, all images) that tuned
    learning_rate (0.001-2) and momentum with ``wd`` static at the script's default; the child
    adds ``wd`` as a range (its parent's configurations are mapped at the static value)."""
    o = objective
    static = {"wd": DEFAULT_WD}
    parent_definition = {"job_definition": {"static_hyperparameters": static}}
    parent = tune(space(with_wd=False), 10, parent_jobs, seed, objective=o, static=static)
    return child_against_cold(seed, parent, parent_definition, child_jobs, o)


def child_against_cold(
    seed: int,
    parent: list[tuple[Config, float]],
    parent_definition: dict[str, Any],
    child_jobs: int,
    objective: str,
) -> tuple[float, ...]:
    """``transfer_figures`` of a cold job and a TransferLearning child of ``parent``, both at
    10 epochs on all images with learning_rate narrowed to <= 1, seed ``seed + 1000``."""
    o = objective
    s = space(max_learning_rate=1.0)
    cold = tune(s, 10, child_jobs, seed + 1000, objective=o)
    warm = take(TRANSFER, s, maximized(o), [ParentResults("parent", parent_definition, parent)])
    child = tune(s, 10, child_jobs, seed + 1000, warm, objective=o)
    return transfer_figures(cold, child, o)


PARENT_KINDS = [
    (3, 1.0),
    (5, 1.0),
    (7, 1.0),
    (10, 0.25),
    (10, 0.5),
    (20, 0.25),
    (15, 0.5),
    (20, 0.5),
]


def rank_parents(
    count: int,
    seed: int = 0,
    kinds: list[tuple[int, float]] = PARENT_KINDS,
    objective: str = "accuracy",
) -> list[tuple[float, float, int, int]]:
    """How well each parent kind (epochs, fraction of the training images) ranks the child's
    objective (10 epochs on all images) over ``count`` random configurations of the child's
    space; prints a table and returns, per kind: Spearman's rank correlation over all of them,
    the same within the child's top third (how it orders good configurations), how many of the
    child's top tenth are in the parent's top third, and of how many. The cost column is a
    parent job in child jobs (epochs x fraction / 10)."""
    from scipy.stats import spearmanr

    s = space(max_learning_rate=1.0)
    configs = [s.decode(p) for p in s.sample(np.random.default_rng(seed), count)]
    sign = 1.0 if maximized(objective) else -1.0  # sign * value: larger is better
    child = np.array([evaluate(c, 10, objective=objective) for c in configs])
    order = np.argsort(-sign * child, kind="stable")
    top_tenth, good = set(order[: max(1, count // 10)].tolist()), order[: max(3, count // 3)]
    print(
        f"{count} random configurations (seed {seed}); 10-epoch best {child[order[0]]:.4f}, "
        f"top tenth from {child[order[len(top_tenth) - 1]]:.4f}"
    )
    print(
        "| parent | cost (child jobs) | Spearman | Spearman within the 10-epoch top third "
        "| 10-epoch top tenth in parent's top third | 10-epoch values of the parent's best "
        "three |"
    )
    print("| --- | --- | --- | --- | --- | --- |")
    rows = []
    for epochs, subset in kinds:
        parent = np.array([evaluate(c, epochs, subset, objective) for c in configs])
        rho = float(spearmanr(parent, child).statistic)
        rho_good = float(spearmanr(parent[good], child[good]).statistic)
        ranked = np.argsort(-sign * parent, kind="stable")
        top_third = set(ranked[: max(1, count // 3)].tolist())
        found = len(top_tenth & top_third)
        rows.append((rho, rho_good, found, len(top_tenth)))
        best3 = ", ".join(f"{child[i]:.4f}" for i in ranked[:3])
        print(
            f"| {epochs} epochs on {subset:g} of the images | {epochs * subset / 10:.2f} | "
            f"{rho:.2f} | {rho_good:.2f} | {found} of {len(top_tenth)} | {best3} |",
            flush=True,
        )
    return rows


def run(name: str, seeds: range, one: Callable[[int], tuple[float, ...]]) -> list[tuple]:
    rows = []
    for seed in seeds:
        began = time.perf_counter()
        row = one(seed)
        rows.append(row)
        seconds = time.perf_counter() - began
        print(f"  {name} seed {seed}: {[shown(v) for v in row]} ({seconds:.0f} s)", flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--parent-jobs", type=int, default=20)
    parser.add_argument("--child-jobs", type=int, default=20)
    parser.add_argument(
        "--parent-epochs", type=int, help="(b)'s parent: 3, or 10 with --parent-subset (child: 10)"
    )
    parser.add_argument(
        "--parent-subset",
        type=float,
        default=1.0,
        help="(b)'s parent on this fraction of the training images (child: all)",
    )
    parser.add_argument(
        "--parent-without-wd",
        action="store_true",
        help="(b)'s parent at 10 epochs on all images, tuning learning_rate and momentum with "
        f"wd static at {DEFAULT_WD:g}; the child adds wd",
    )
    parser.add_argument("--only", choices=["a", "b"], help="run one of the two")
    parser.add_argument(
        "--rank-parents",
        type=int,
        metavar="N",
        help="only rank parent kinds against the child's objective over N random configurations",
    )
    parser.add_argument("--objective", choices=OBJECTIVES, default="accuracy")
    args = parser.parse_args()
    o = args.objective
    if args.parent_without_wd and (args.parent_epochs or args.parent_subset != 1.0):
        parser.error(
            "--parent-without-wd trains the parent at the child's fidelity (10 epochs, all "
            f"images), so it takes no --parent-epochs or --parent-subset, got "
            f"--parent-epochs {args.parent_epochs} --parent-subset {args.parent_subset:g}"
        )
    if args.rank_parents:
        for seed in range(args.first_seed, args.first_seed + args.seeds):
            rank_parents(args.rank_parents, seed, objective=o)
        return
    seeds = range(args.first_seed, args.first_seed + args.seeds)
    subset = args.parent_subset
    epochs = 10 if args.parent_without_wd else args.parent_epochs or (3 if subset == 1.0 else 10)
    jobs = (args.parent_jobs, args.child_jobs)
    print(
        f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"{time.strftime('%Y-%m-%d', time.gmtime())}; seeds {seeds.start}-{seeds.stop - 1}; "
        f"objective: validation {o}"
    )
    a = [] if args.only == "b" else run("(a)", seeds, lambda s: identical(s, *jobs, o))

    def one_b(s: int) -> tuple[float, ...]:
        if args.parent_without_wd:
            return transfer_added(s, *jobs, o)
        return transfer(s, *jobs, epochs, subset, o)

    b = [] if args.only == "a" else run("(b)", seeds, one_b)
    if a:
        report_identical(a, args.parent_jobs, args.child_jobs, o)
    if b:
        kind = "wd static" if args.parent_without_wd else ""
        report_transfer(b, epochs, subset, args.child_jobs, o, kind)


def step_name(objective: str) -> str:
    return "one image" if maximized(objective) else "1 %"


def report_identical(a: list[tuple], parent_jobs: int, budget: int, objective: str) -> None:
    warm_a, cold_a = median([r[1] for r in a]), median([r[2] for r in a])
    print(
        f"(a) IdenticalDataAndAlgorithm, jobs to the parent's best ({parent_jobs} jobs): "
        f"warm child median {shown(warm_a)}, cold median {shown(cold_a)}, ratio "
        f"{ratio(warm_a, cold_a, budget)}; warm <= 3: "
        f"{'met' if warm_a <= 3 else 'NOT met'}; per seed warm {[shown(r[1]) for r in a]}, "
        f"cold {[shown(r[2]) for r in a]}"
    )
    print(
        f"    to within {step_name(objective)} (not the goal): warm median "
        f"{shown(median([r[3] for r in a]))}"
        f", cold {shown(median([r[4] for r in a]))}; per seed warm {[shown(r[3]) for r in a]}, "
        f"cold {[shown(r[4]) for r in a]}"
    )


def report_transfer(
    b: list[tuple],
    parent_epochs: int,
    subset: float,
    budget: int,
    objective: str,
    kind: str = "",
) -> None:
    wins = sum(r[2] < r[1] for r in b)
    cold_b, warm_b = median([r[1] for r in b]), median([r[2] for r in b])
    data = "" if subset == 1.0 else f" on {subset:g} of the training images"
    data += f", {kind}" if kind else ""
    print(
        f"(b) TransferLearning (parent at {parent_epochs} epochs{data}), jobs to the cold job's "
        f"final best: "
        f"child median {shown(warm_b)}, cold median {shown(cold_b)}, ratio "
        f"{ratio(warm_b, cold_b, budget)}; child fewer in "
        f"{wins} of {len(b)} seeds ({'met' if wins >= 0.7 * len(b) else 'NOT met'}); per seed "
        f"child {[shown(r[2]) for r in b]}, cold {[shown(r[1]) for r in b]}"
    )
    for i, k in enumerate(EQUAL_JOBS[: len(b[0]) - 6]):
        signs = [r[6 + i] for r in b]
        print(
            f"    best after {k} jobs (not the goal): child better in {signs.count(1.0)} of "
            f"{len(b)} seeds, equal in {signs.count(0.0)}, worse in {signs.count(-1.0)}"
        )
    near = sum(r[5] < r[4] for r in b)
    print(
        f"    to within {step_name(objective)} (not the goal): child fewer in {near} of "
        f"{len(b)}, child "
        f"median {shown(median([r[5] for r in b]))}, cold {shown(median([r[4] for r in b]))}; "
        f"per seed child {[shown(r[5]) for r in b]}, cold {[shown(r[4]) for r in b]}"
    )


if __name__ == "__main__":
    main()
