"""Optimizer quality on real model tuning: scikit-learn models, 3-fold CV, bundled datasets.

Each problem tunes one scikit-learn model on a dataset shipped with scikit-learn (nothing is
downloaded), most over a mixed space: continuous and log ranges, integers, booleans and
categorical choices; three over continuous ranges only (the canonical SGD space among them),
where the Bayesian strategy's native engine takes more of its steps in its trust region. The
loss is 1 - mean 3-fold CV accuracy (classifiers) or 1 - mean 3-fold CV R^2 (regressors),
minimized. The CV split and the model's ``random_state`` are fixed and training
uses one BLAS thread, so a loss is a deterministic function of the configuration; it is cached
per configuration (contenders and seeds that meet a configuration again reuse it).

Several problems have wide flat regions, as real tuning does: decision trees on small data
(depth, leaf size and ``min_impurity_decrease`` leave the CV score identical over wide
regions; large ``min_impurity_decrease`` gives a one-leaf tree at chance level), an unscaled
network where most settings predict the majority class, an RBF SVM where large ``gamma`` gives
chance level, and an elastic net where large ``alpha`` predicts the mean (R^2 = 0).

Every space is written once (``Dim``) and translated for each contender, which runs as its users
would call it, asking a batch, evaluating it, then telling it: ours through
``tuner.strategies.make_strategy`` over a ``tuner.SearchSpace`` (booleans as categorical);
Optuna's ``TPESampler`` and ``GPSampler`` with their defaults (a batch is that many running
trials); scikit-optimize's ``Optimizer`` with ``gp_minimize``'s defaults (its own constant-liar
batches); and plain random search, uniform over the same space with numpy, independent of our
code (log ranges uniform in the log; log integers uniform in log over [lo, hi + 1), floored).

Score, per problem, 0-100, scale set by random search:

    score(run) = 100 * (R - best(run)) / (R - B)

where best(run) is the lowest loss the run found, B the lowest loss any contender found in any
run of that problem in this invocation (so 100 is reached by at least one run), and R the mean
loss of all the configurations random search evaluated on that problem in this invocation (the
expected loss of one random configuration, so 0 means "no better than one random guess").
Random search itself therefore scores high (its best of 128 draws); the figure to watch is the
difference between contenders. Per problem the table gives each contender's mean score over the
seeds and its standard error (and min-max), the winner (the highest mean as printed, to one
decimal; ties share the win), and whether ours-bayesian's mean is at least random's within the
spread: mean(ours-bayesian) >= mean(random) - sqrt(se(ours-bayesian)^2 + se(random)^2). Then
the overall mean score and the wins per contender, a ranking line, and the seconds per contender
(total, and the optimizer's share: time spent outside the objective).

    python bench/model_tuning.py [--problems tree-wine svm-cancer] [--contenders ours-bayesian
        random] [--seeds 5] [--first-seed 0] [--rounds 16] [--batch 8] [--jobs 1]

``random`` always runs (the scale needs it), added when not named. ``--jobs 2`` runs problems in
two processes. The ``tuner`` package is imported from ``PYTHONPATH`` like any other, so
``PYTHONPATH=/other/checkout python bench/model_tuning.py`` judges that checkout's engine.
"""

from __future__ import annotations

import argparse
import datetime
import math
import os
import platform
import statistics
import subprocess
import sys
import time
import warnings
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

warnings.filterwarnings("ignore")

Config = dict[str, Any]


@dataclass(frozen=True)
class Dim:
    """One hyperparameter: ``kind`` is float, int or cat (``choices``); ``log`` scales ranges."""

    name: str
    kind: str
    lo: float = 0.0
    hi: float = 1.0
    log: bool = False
    choices: tuple[Any, ...] = ()


def real(name: str, lo: float, hi: float, log: bool = False) -> Dim:
    return Dim(name, "float", lo, hi, log)


def integer(name: str, lo: int, hi: int, log: bool = False) -> Dim:
    return Dim(name, "int", lo, hi, log)


def cat(name: str, *choices: Any) -> Dim:
    return Dim(name, "cat", choices=tuple(choices))


@dataclass
class Problem:
    """A model, a dataset and a space; ``loss(config)`` is cached by configuration."""

    name: str
    description: str
    space: list[Dim]
    build: Callable[[Config], Any]  # the estimator for a configuration
    data: Callable[[], tuple[np.ndarray, np.ndarray]]
    classify: bool
    cache: dict[tuple[Any, ...], float] = field(default_factory=dict)

    def loss(self, config: Config) -> float:
        key = tuple((d.name, type(config[d.name]).__name__, config[d.name]) for d in self.space)
        if key not in self.cache:
            self.cache[key] = cv_loss(self.build(config), *self.data(), self.classify)
        return self.cache[key]


def cv_loss(model: Any, x: np.ndarray, y: np.ndarray, classify: bool) -> float:
    """1 - mean 3-fold CV accuracy (or R^2) on a fixed split; a failed or non-finite fit is 1."""
    from sklearn.model_selection import KFold, StratifiedKFold, cross_val_score

    folds = (StratifiedKFold if classify else KFold)(3, shuffle=True, random_state=0)
    with np.errstate(all="ignore"), threadpool_limits(1):
        try:
            scores = cross_val_score(model, x, y, cv=folds, error_score=np.nan)
        except (ValueError, FloatingPointError, OverflowError):
            return 1.0
    score = float(np.mean(scores))
    return 1.0 - score if math.isfinite(score) else 1.0


_DATA: dict[str, tuple[np.ndarray, np.ndarray]] = {}


def dataset(name: str) -> Callable[[], tuple[np.ndarray, np.ndarray]]:
    def load() -> tuple[np.ndarray, np.ndarray]:
        if name not in _DATA:
            import sklearn.datasets as ds

            x, y = getattr(ds, f"load_{name}")(return_X_y=True)
            _DATA[name] = (np.asarray(x, dtype=float), np.asarray(y))
        return _DATA[name]

    return load


def _scaled(model: Any, scale: bool = True) -> Any:
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    return make_pipeline(StandardScaler(), model) if scale else model


def _tree(c: Config) -> Any:
    from sklearn.tree import DecisionTreeClassifier

    return DecisionTreeClassifier(
        max_depth=c["max_depth"],
        min_samples_leaf=c["min_samples_leaf"],
        min_impurity_decrease=c["min_impurity_decrease"],
        criterion=c["criterion"],
        max_features=c["max_features"],
        random_state=0,
    )


def _tree_regressor(c: Config) -> Any:
    from sklearn.tree import DecisionTreeRegressor

    return DecisionTreeRegressor(
        max_depth=c["max_depth"],
        min_samples_split=c["min_samples_split"],
        min_samples_leaf=c["min_samples_leaf"],
        ccp_alpha=c["ccp_alpha"],
        splitter=c["splitter"],
        random_state=0,
    )


def _extra_trees(c: Config) -> Any:
    from sklearn.ensemble import ExtraTreesClassifier

    return ExtraTreesClassifier(
        n_estimators=c["n_estimators"],
        max_depth=c["max_depth"],
        max_features=c["max_features"],
        min_samples_leaf=c["min_samples_leaf"],
        bootstrap=c["bootstrap"],
        criterion=c["criterion"],
        random_state=0,
        n_jobs=1,
    )


def _mlp(c: Config) -> Any:
    from sklearn.neural_network import MLPClassifier

    return _scaled(
        MLPClassifier(
            hidden_layer_sizes=(c["hidden"],),
            activation=c["activation"],
            solver=c["solver"],
            learning_rate_init=c["learning_rate_init"],
            alpha=c["alpha"],
            max_iter=15,
            batch_size=64,
            random_state=0,
        ),
        c["scale"],
    )


def _svm(c: Config) -> Any:
    from sklearn.svm import SVC

    return _scaled(
        SVC(
            C=c["C"],
            gamma=c["gamma"],
            kernel=c["kernel"],
            shrinking=c["shrinking"],
            max_iter=20000,
        ),
        c["scale"],
    )


def _elastic_net(c: Config) -> Any:
    from sklearn.linear_model import ElasticNet
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import PolynomialFeatures, StandardScaler

    return make_pipeline(
        PolynomialFeatures(c["degree"], include_bias=False),
        StandardScaler(),
        ElasticNet(
            alpha=c["alpha"],
            l1_ratio=c["l1_ratio"],
            positive=c["positive"],
            selection=c["selection"],
            max_iter=300,
            random_state=0,
        ),
    )


def _knn(c: Config) -> Any:
    from sklearn.neighbors import KNeighborsClassifier

    return _scaled(
        KNeighborsClassifier(n_neighbors=c["n_neighbors"], weights=c["weights"], p=c["p"]),
        c["scale"],
    )


def _boosting(c: Config) -> Any:
    from sklearn.ensemble import GradientBoostingRegressor

    return GradientBoostingRegressor(
        n_estimators=c["n_estimators"],
        learning_rate=c["learning_rate"],
        max_depth=c["max_depth"],
        subsample=c["subsample"],
        max_features=c["max_features"],
        random_state=0,
    )


def _sgd_mlp(c: Config) -> Any:
    from sklearn.neural_network import MLPClassifier

    return _scaled(
        MLPClassifier(
            hidden_layer_sizes=(32,),
            solver="sgd",
            learning_rate_init=c["learning_rate"],
            momentum=c["momentum"],
            alpha=c["wd"],
            max_iter=5,
            batch_size=32,
            random_state=0,
        )
    )


def _rbf_svm(c: Config) -> Any:
    from sklearn.svm import SVC

    return _scaled(SVC(C=c["C"], gamma=c["gamma"], max_iter=20000))


def _boosting_continuous(c: Config) -> Any:
    from sklearn.ensemble import GradientBoostingRegressor

    return GradientBoostingRegressor(
        n_estimators=15,
        max_depth=3,
        learning_rate=c["learning_rate"],
        subsample=c["subsample"],
        max_features=c["max_features"],
        min_weight_fraction_leaf=c["min_weight_fraction_leaf"],
        random_state=0,
    )


TREE_SPACE = [
    integer("max_depth", 1, 30),
    integer("min_samples_leaf", 1, 60),
    real("min_impurity_decrease", 0.0, 0.5),
    cat("criterion", "gini", "entropy"),
    cat("max_features", "sqrt", "log2", 1.0),
]

PROBLEMS = {
    p.name: p
    for p in [
        Problem(
            "tree-wine",
            "decision tree, wine (178 x 13); flat: depth, leaves, impurity threshold",
            TREE_SPACE,
            _tree,
            dataset("wine"),
            True,
        ),
        Problem(
            "tree-cancer",
            "decision tree, breast cancer (569 x 30); flat: depth, leaves, impurity threshold",
            TREE_SPACE,
            _tree,
            dataset("breast_cancer"),
            True,
        ),
        Problem(
            "tree-diabetes",
            "regression tree, diabetes (442 x 10); flat: depth, splits, pruning",
            [
                integer("max_depth", 1, 20),
                integer("min_samples_split", 2, 100),
                integer("min_samples_leaf", 1, 50),
                real("ccp_alpha", 0.0, 500.0),
                cat("splitter", "best", "random"),
            ],
            _tree_regressor,
            dataset("diabetes"),
            False,
        ),
        Problem(
            "extra-trees-wine",
            "extra trees (3-15 trees), wine",
            [
                integer("n_estimators", 3, 15),
                integer("max_depth", 1, 20),
                real("max_features", 0.05, 1.0),
                integer("min_samples_leaf", 1, 30),
                cat("bootstrap", True, False),
                cat("criterion", "gini", "entropy"),
            ],
            _extra_trees,
            dataset("wine"),
            True,
        ),
        Problem(
            "mlp-wine",
            "one-layer MLP, 15 epochs, wine; flat: unscaled or diverged runs are at chance level",
            [
                integer("hidden", 4, 64, log=True),
                cat("activation", "relu", "tanh", "logistic"),
                cat("solver", "sgd", "adam"),
                real("learning_rate_init", 1e-5, 1.0, log=True),
                real("alpha", 1e-6, 10.0, log=True),
                cat("scale", True, False),
            ],
            _mlp,
            dataset("wine"),
            True,
        ),
        Problem(
            "svm-cancer",
            "SVC, breast cancer; flat: large gamma or unscaled features give the majority class",
            [
                real("C", 1e-3, 1e3, log=True),
                real("gamma", 1e-5, 10.0, log=True),
                cat("kernel", "rbf", "sigmoid"),
                cat("shrinking", True, False),
                cat("scale", True, False),
            ],
            _svm,
            dataset("breast_cancer"),
            True,
        ),
        Problem(
            "elastic-net-diabetes",
            "polynomial features + elastic net, diabetes; flat: large alpha predicts the mean",
            [
                real("alpha", 1e-4, 100.0, log=True),
                real("l1_ratio", 0.0, 1.0),
                integer("degree", 1, 3),
                cat("positive", False, True),
                cat("selection", "cyclic", "random"),
            ],
            _elastic_net,
            dataset("diabetes"),
            False,
        ),
        Problem(
            "knn-wine",
            "k nearest neighbours, wine",
            [
                integer("n_neighbors", 1, 60, log=True),
                cat("weights", "uniform", "distance"),
                integer("p", 1, 3),
                cat("scale", True, False),
            ],
            _knn,
            dataset("wine"),
            True,
        ),
        Problem(
            "boosting-diabetes",
            "gradient boosting (5-25 trees), diabetes",
            [
                integer("n_estimators", 5, 25),
                real("learning_rate", 1e-3, 1.0, log=True),
                integer("max_depth", 1, 4),
                real("subsample", 0.3, 1.0),
                cat("max_features", 1.0, "sqrt"),
            ],
            _boosting,
            dataset("diabetes"),
            False,
        ),
        Problem(
            "sgd-mlp-digits",
            "one-layer MLP trained by SGD for 5 epochs, digits: learning rate, momentum, weight "
            "decay (the canonical space, all continuous); flat: runs that diverge or hardly move",
            [
                real("learning_rate", 1e-4, 1.0, log=True),
                real("momentum", 0.0, 0.99),
                real("wd", 1e-6, 1.0, log=True),
            ],
            _sgd_mlp,
            dataset("digits"),
            True,
        ),
        Problem(
            "rbf-svm-cancer",
            "RBF SVC, breast cancer, all continuous; flat: large gamma gives the majority class",
            [real("C", 1e-3, 1e3, log=True), real("gamma", 1e-5, 10.0, log=True)],
            _rbf_svm,
            dataset("breast_cancer"),
            True,
        ),
        Problem(
            "boosting-diabetes-continuous",
            "gradient boosting (15 trees of depth 3), diabetes, all continuous; flat: heavy leaves",
            [
                real("learning_rate", 1e-3, 1.0, log=True),
                real("subsample", 0.3, 1.0),
                real("max_features", 0.1, 1.0),
                real("min_weight_fraction_leaf", 0.0, 0.5),
            ],
            _boosting_continuous,
            dataset("diabetes"),
            False,
        ),
    ]
}


# --- contenders: each returns the losses of its evaluations, in order -------------------------

Runner = Callable[[Problem, int, int, int], list[float]]


def _plain(value: Any) -> Any:
    """numpy scalars as Python ones (the cache key and the models want plain values)."""
    return value.item() if isinstance(value, np.generic) else value


def ours(strategy: str, **options: Any) -> Runner:
    def run(problem: Problem, rounds: int, batch: int, seed: int) -> list[float]:
        from tuner import SearchSpace
        from tuner.parameters import CategoricalParameter, ContinuousParameter, IntegerParameter
        from tuner.strategies import make_strategy

        ranges: dict[str, Any] = {}
        for d in problem.space:
            scaling = "Logarithmic" if d.log else "Linear"
            if d.kind == "float":
                ranges[d.name] = ContinuousParameter(d.lo, d.hi, scaling)
            elif d.kind == "int":
                ranges[d.name] = IntegerParameter(int(d.lo), int(d.hi), scaling)
            else:
                ranges[d.name] = CategoricalParameter(list(d.choices))
        s = make_strategy(strategy, SearchSpace(ranges), maximize=False, seed=seed, options=options)
        losses: list[float] = []
        for _ in range(rounds):
            configs = s.ask(batch)
            if not configs:
                break
            values = [problem.loss(c) for c in configs]
            for config, value in zip(configs, values, strict=True):
                s.tell(config, value)
            losses += values
        return losses

    return run


def optuna_run(sampler_name: str) -> Runner:
    def run(problem: Problem, rounds: int, batch: int, seed: int) -> list[float]:
        import optuna
        from optuna.distributions import (
            BaseDistribution,
            CategoricalDistribution,
            FloatDistribution,
            IntDistribution,
        )

        optuna.logging.set_verbosity(optuna.logging.ERROR)
        sampler = (
            optuna.samplers.GPSampler(seed=seed)
            if sampler_name == "gp"
            else optuna.samplers.TPESampler(seed=seed)
        )
        study = optuna.create_study(sampler=sampler)
        dists: dict[str, BaseDistribution] = {}
        for d in problem.space:
            if d.kind == "float":
                dists[d.name] = FloatDistribution(d.lo, d.hi, log=d.log)
            elif d.kind == "int":
                dists[d.name] = IntDistribution(int(d.lo), int(d.hi), log=d.log)
            else:
                dists[d.name] = CategoricalDistribution(d.choices)
        losses: list[float] = []
        for _ in range(rounds):
            trials = [study.ask(dists) for _ in range(batch)]  # a batch of running trials
            values = [problem.loss({k: _plain(v) for k, v in t.params.items()}) for t in trials]
            for trial, value in zip(trials, values, strict=True):
                study.tell(trial, value)
            losses += values
        return losses

    return run


def skopt_gp(problem: Problem, rounds: int, batch: int, seed: int) -> list[float]:
    from skopt import Optimizer
    from skopt.space import Categorical, Integer, Real

    dims: list[Any] = []
    for d in problem.space:
        prior = "log-uniform" if d.log else "uniform"
        if d.kind == "float":
            dims.append(Real(d.lo, d.hi, prior=prior, name=d.name))
        elif d.kind == "int":
            dims.append(Integer(int(d.lo), int(d.hi), prior=prior, name=d.name))
        else:  # choices by label, mapped back: skopt turns mixed-type choices into numpy types
            dims.append(Categorical([repr(v) for v in d.choices], name=d.name))

    def config(x: list[Any]) -> Config:
        c = {}
        for d, v in zip(problem.space, x, strict=True):
            c[d.name] = (
                d.choices[[repr(u) for u in d.choices].index(v)] if d.kind == "cat" else _plain(v)
            )
        return c

    opt = Optimizer(
        dims,
        base_estimator="GP",
        acq_func="gp_hedge",
        acq_optimizer="auto",
        n_initial_points=10,
        random_state=seed,
    )
    losses: list[float] = []
    for _ in range(rounds):
        xs = opt.ask(n_points=batch) if batch > 1 else [opt.ask()]
        values = [problem.loss(config(x)) for x in xs]
        opt.tell(xs, values)
        losses += values
    return losses


def random_search(problem: Problem, rounds: int, batch: int, seed: int) -> list[float]:
    """Uniform over the space with numpy's generator (independent of the tuner's code)."""
    rng = np.random.default_rng(seed)

    def draw(d: Dim) -> Any:
        if d.kind == "cat":
            return d.choices[int(rng.integers(len(d.choices)))]
        if d.kind == "int":
            if d.log:
                v = math.floor(math.exp(rng.uniform(math.log(d.lo), math.log(d.hi + 1))))
                return int(min(d.hi, max(d.lo, v)))
            return int(rng.integers(int(d.lo), int(d.hi) + 1))
        if d.log:
            return float(math.exp(rng.uniform(math.log(d.lo), math.log(d.hi))))
        return float(rng.uniform(d.lo, d.hi))

    return [problem.loss({d.name: draw(d) for d in problem.space}) for _ in range(rounds * batch)]


CONTENDERS: dict[str, Runner] = {
    "ours-bayesian": ours("Bayesian"),
    "ours-tpe": ours("TPE"),
    "ours-random": ours("Random"),
    "optuna-tpe": optuna_run("tpe"),
    "optuna-gp": optuna_run("gp"),
    "skopt-gp": skopt_gp,
    "random": random_search,
}


# --- running and scoring -----------------------------------------------------------------------


@dataclass
class Outcome:
    """One problem's runs: per contender, the losses of each seed's run, and the seconds."""

    problem: str
    losses: dict[str, list[list[float]]]
    seconds: dict[str, float]
    objective_seconds: dict[str, float]


def run_problem(
    name: str, contenders: list[str], seeds: list[int], rounds: int, batch: int
) -> Outcome:
    import optuna  # imported before any clock starts: no contender pays for imports
    import sklearn.model_selection
    import skopt

    import tuner.strategies

    del optuna, skopt, sklearn, tuner
    problem = PROBLEMS[name]
    losses: dict[str, list[list[float]]] = {}
    seconds: dict[str, float] = {}
    in_objective: dict[str, float] = {}
    spent = [0.0]
    plain_loss = problem.loss

    def timed_loss(config: Config) -> float:
        began = time.perf_counter()
        try:
            return plain_loss(config)
        finally:
            spent[0] += time.perf_counter() - began

    problem.loss = timed_loss  # type: ignore[method-assign]
    try:
        for contender in contenders:
            spent[0] = 0.0
            began = time.perf_counter()
            losses[contender] = [CONTENDERS[contender](problem, rounds, batch, s) for s in seeds]
            seconds[contender] = time.perf_counter() - began
            in_objective[contender] = spent[0]
            print(f"  {name} {contender}: {seconds[contender]:.0f} s", file=sys.stderr, flush=True)
    finally:
        problem.loss = plain_loss  # type: ignore[method-assign]
    return Outcome(name, losses, seconds, in_objective)


@dataclass
class Scores:
    """Per contender, the score of each seed's run on one problem (see the module docstring)."""

    problem: str
    runs: dict[str, list[float]]
    best: float
    random_mean: float

    def mean(self, contender: str) -> float:
        return statistics.fmean(self.runs[contender])

    def se(self, contender: str) -> float:
        r = self.runs[contender]
        return statistics.stdev(r) / math.sqrt(len(r)) if len(r) > 1 else 0.0

    def winners(self) -> list[str]:
        top = max(round(self.mean(c), 1) for c in self.runs)
        return [c for c in self.runs if round(self.mean(c), 1) == top]

    def at_least(self, contender: str, reference: str = "random") -> bool:
        """Mean at least the reference's, within the standard error of their difference."""
        spread = math.hypot(self.se(contender), self.se(reference))
        return self.mean(contender) >= self.mean(reference) - spread


def score(outcome: Outcome) -> Scores:
    finals = {c: [min(run) for run in runs] for c, runs in outcome.losses.items()}
    best = min(min(f) for f in finals.values())
    random_mean = statistics.fmean(v for run in outcome.losses["random"] for v in run)
    width = random_mean - best
    runs = {
        c: [100.0 * (random_mean - f) / width if width > 0 else 100.0 for f in fs]
        for c, fs in finals.items()
    }
    return Scores(outcome.problem, runs, best, random_mean)


def _tuner_source() -> str:
    import tuner

    where = os.path.dirname(os.path.dirname(os.path.abspath(tuner.__file__)))
    try:
        commit = subprocess.run(
            ["git", "-C", where, "log", "-1", "--format=%h %s"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()[:70]
        dirty = subprocess.run(
            ["git", "-C", where, "status", "--porcelain", "tuner"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return where
    return f"{where} at {commit}{' (uncommitted changes in tuner/)' if dirty else ''}"


def print_problem(s: Scores, contenders: list[str]) -> None:
    """One problem's block: per contender mean +- standard error [min-max], winner, the check."""
    width = max(len(c) for c in contenders)
    print(
        f"\n{s.problem}: {PROBLEMS[s.problem].description}\n"
        f"  best loss {s.best:.4f}, mean random configuration {s.random_mean:.4f}"
    )
    winners = s.winners()
    for c in contenders:
        runs = s.runs[c]
        mark = "  winner" if c in winners else ""
        print(
            f"  {c:{width}} {s.mean(c):6.1f} +- {s.se(c):4.1f} "
            f"[{min(runs):6.1f} - {max(runs):6.1f}]{mark}"
        )
    if "ours-bayesian" in contenders:
        ok = s.at_least("ours-bayesian")
        print(f"  ours-bayesian >= random within the spread: {'yes' if ok else 'NO'}", flush=True)


def print_summary(outcomes: list[Outcome], scored: list[Scores], contenders: list[str]) -> None:
    """Overall mean score, shared wins and seconds per contender; the ranking; the check."""
    width = max(len(c) for c in contenders)
    wins = dict.fromkeys(contenders, 0.0)
    for s in scored:
        winners = s.winners()
        for c in winners:
            wins[c] += 1 / len(winners)
    overall = {c: statistics.fmean(s.mean(c) for s in scored) for c in contenders}
    print(
        f"\n{'overall':{width}} {'mean score':>10} {'wins':>6} {'seconds':>8} {'optimizer s':>11}"
    )
    for c in sorted(contenders, key=lambda c: -overall[c]):
        total = sum(o.seconds[c] for o in outcomes)
        optimizer = total - sum(o.objective_seconds[c] for o in outcomes)
        print(f"{c:{width}} {overall[c]:10.1f} {wins[c]:6.2f} {total:8.1f} {optimizer:11.1f}")
    ranking = " > ".join(
        f"{c} {overall[c]:.1f}" for c in sorted(contenders, key=lambda c: -overall[c])
    )
    print(f"ranking: {ranking}")
    if "ours-bayesian" in contenders:
        below = [s.problem for s in scored if not s.at_least("ours-bayesian")]
        print(
            f"ours-bayesian >= random within the spread on {len(scored) - len(below)} of "
            f"{len(scored)} problems" + (f"; below on {', '.join(below)}" if below else "")
        )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", nargs="+", default=list(PROBLEMS), choices=list(PROBLEMS))
    parser.add_argument(
        "--contenders", nargs="+", default=list(CONTENDERS), choices=list(CONTENDERS)
    )
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument(
        "--first-seed", type=int, default=0, help="seeds first..first+seeds-1 (held-out sets)"
    )
    parser.add_argument("--rounds", type=int, default=16)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--jobs", type=int, default=1, help="problems run in this many processes")
    args = parser.parse_args(argv)
    contenders = list(dict.fromkeys(args.contenders))
    if "random" not in contenders:
        contenders.append("random")  # the score's scale
    seeds = list(range(args.first_seed, args.first_seed + args.seeds))
    load = os.getloadavg() if hasattr(os, "getloadavg") else (math.nan,) * 3
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}, load average at start {load[0]:.2f} / {load[1]:.2f} / "
        f"{load[2]:.2f}\ndate: {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC\n"
        f"tuner: {_tuner_source()}\n"
        f"seeds {seeds[0]}-{seeds[-1]}, {args.rounds} rounds of batch {args.batch} "
        f"({args.rounds * args.batch} evaluations), problems: {', '.join(args.problems)}"
    )
    began = time.perf_counter()
    print(
        "\nscore 0-100 per problem: 100 = best loss any run found, 0 = mean loss of a random "
        f"configuration; mean over {len(seeds)} seeds +- standard error [min-max]"
    )
    work = [(p, contenders, seeds, args.rounds, args.batch) for p in args.problems]
    outcomes: list[Outcome] = []
    scored: list[Scores] = []
    with ProcessPoolExecutor(args.jobs) if args.jobs > 1 else nullcontext() as pool:
        done = (
            pool.map(run_problem, *zip(*work, strict=True))
            if pool
            else (run_problem(*w) for w in work)
        )
        for outcome in done:  # each problem's block as soon as it is done
            outcomes.append(outcome)
            scored.append(score(outcome))
            print_problem(scored[-1], contenders)
    print_summary(outcomes, scored, contenders)
    print(f"wall seconds: {time.perf_counter() - began:.0f} ({args.jobs} process(es))")


if __name__ == "__main__":
    main()
