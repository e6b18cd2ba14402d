"""Early stopping on real learning curves: our median rule and Hyperband against Optuna's pruners.

Two real training problems, trained in-process on the CPU, each with two objectives read from
the same training (one value per unit of resource: the k-th value is step k, as the tuner reads
a log):

- ``digits``: the quickstart's network (examples/train_digits_sgd.py: one hidden layer of 32,
  SGD with momentum and L2 on scikit-learn's digits, 70/30 split) for up to ``R`` epochs; the
  validation accuracy after each epoch, maximized. Curves rise and flatten; bad learning rates
  diverge (accuracy 0.1 from then on). ``digits-loss``: the same epochs' validation
  cross-entropy, minimized (a diverged network reads 10; chance is ln 10 = 2.3): less quantized
  than accuracy (one image is 0.0019 of it), and it turns up when a network grows overconfident.
- ``boosting``: gradient-boosted trees (scikit-learn, ``warm_start``) on scikit-learn's diabetes
  regression, 4 trees per step, up to ``R`` steps; the validation RMSE after each step,
  minimized. Curves fall and, with large learning rates or deep trees, turn up again (overfit).
  ``boosting-best``: the best validation RMSE so far (the model a script with early-stopping
  rounds keeps, as XGBoost's and LightGBM's do): curves that fall and flatten, never turn up.

Learning curves are cached per configuration: a configuration is trained once, lazily and only
as far as some arm asked (the model is kept and training resumed), deterministic for the
configuration (fixed data split and training seed), and every arm that meets the configuration
replays the same curve. Arms run in a simulated clock where a step costs one unit of compute
(one epoch, four trees) and ``--parallel`` jobs run at once. The budget B is the compute of
``--full-jobs`` full-budget jobs (``B = full_jobs * R``); each arm runs on to ``--horizon`` x B
so that the compute an arm needs to reach a target can be measured beyond B.

Arms: ``random`` (full budget), ``random+auto`` (median rule), ``hyperband`` (random sampler),
``hyperband-bayes`` (Bayesian sampler, BOHB-style), ``bayes`` (full budget), ``bayes+auto``,
all through our public strategy and stopping modules (``tuner.strategies``, ``tuner.stopping``)
the way the scheduler drives them; ``asha`` and ``asha-bayes``, Hyperband with one bracket
(``brackets: 1``), as extra arms; and Optuna's ``TPESampler`` with ``MedianPruner`` and with
``HyperbandPruner(min_resource, max_resource=R, reduction_factor=eta)`` (the same resources as
ours), their defaults otherwise, on the same curves and seeds. Best values count completed
(full-budget) jobs only.

Prints per problem: median over seeds of the best at compute B/3 and B; the median compute to
reach random's median best at B (the target), as a fraction of B and as a ratio to random's own
median compute to reach it (a seed that never did counts as infinite), and how many seeds
reached it within the horizon and within B/3; and in how many seeds each arm's best at B is at
least Optuna TPE + HyperbandPruner's (the goal's comparison is hyperband-bayes's).
``--max-resource``, ``--min-resource``, ``--eta`` and ``--brackets`` set R and Hyperband's
resources (default 27, 1, 3, all); ``--arms`` a subset of the arms (random, hyperband-bayes and
optuna-tpe+hyperband always run); ``--first-seed`` the seeds (held-out ones); ``--cache DIR``
keeps the curves in files so that later runs replay them.

``--fidelity N`` prints instead what every rung-based rule rests on: N random configurations
trained to R, and per rung r the rank correlation (Spearman) of the values at r with those at R,
and how many of the configurations in the best tenth at R are in the best 1/eta at r (the share
that one cut of successive halving at r keeps; a random cut keeps 1/eta of them).

    python bench/early_stopping.py [--problems digits boosting] [--seeds 10] [--parallel 2]
    python bench/early_stopping.py --max-resource 81 --min-resource 3 --problems digits-loss
    python bench/early_stopping.py --fidelity 200 [--max-resource 81]
    python bench/early_stopping.py --proposals --min-resource 1 3 --problems boosting-best

``--proposals`` prints instead how good the configurations each sampler proposes are: every
configuration model-based Hyperband (its model's and its random share) and Optuna TPE +
HyperbandPruner (after its random start-up) started in runs to B, trained to R (median, mean,
and share in the best tenth of 200 random configurations), which level the model was fitted on
with how many results, and in how many seeds the first's best at B is at least the second's.
"""

from __future__ import annotations

import argparse
import functools
import heapq
import math
import os
import pickle
import platform
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from tuner.parameters import ContinuousParameter, IntegerParameter, Parameter
from tuner.space import Config, SearchSpace
from tuner.stopping import StoppingRule, stopping_rule_for, told_value
from tuner.strategies import make_strategy


@dataclass(frozen=True)
class Settings:
    """Resources of every arm: ``max_resource`` R (epochs, or steps of 4 trees), and
    Hyperband's ``min_resource``, ``eta`` and ``brackets`` (None: all), shared by Optuna's
    HyperbandPruner (which takes no bracket count)."""

    max_resource: int = 27
    min_resource: int = 1
    eta: int = 3
    brackets: int | None = None

    def hyperband(self, **extra: Any) -> dict[str, Any]:
        options = {
            "min_resource": self.min_resource,
            "max_resource": self.max_resource,
            "reduction_factor": self.eta,
            **extra,
        }
        if self.brackets is not None and "brackets" not in options:
            options["brackets"] = self.brackets
        return options


# Problems: a configuration's learning curve, trained lazily and cached.


class Curves:
    """Learning curves per configuration, extended on demand (see the module docstring).

    ``step`` returns a tuple of metrics (one training step, every metric read after it);
    ``load``/``save`` keep the curves (not the models) in a file: a configuration whose cached
    curve is too short is retrained from its start, which gives the same values again.
    """

    def __init__(
        self, make: Callable[[Config], Any], step: Callable[[Any], tuple[float, ...]]
    ) -> None:
        self._make, self._step = make, step
        self._models: dict[tuple[Any, ...], Any] = {}
        self._curves: dict[tuple[Any, ...], list[tuple[float, ...]]] = {}
        self.trained_steps = 0

    def value(self, config: Config, k: int) -> tuple[float, ...]:
        key = tuple(sorted(config.items()))
        curve = self._curves.setdefault(key, [])
        if len(curve) < k:
            if key not in self._models:  # from the start (a curve from the cache file)
                self._models[key] = self._make(config)
                curve.clear()
            while len(curve) < k:
                curve.append(self._step(self._models[key]))
                self.trained_steps += 1
        return curve[k - 1]

    def load(self, path: str) -> None:
        if os.path.exists(path):
            with open(path, "rb") as f:
                for key, curve in pickle.load(f).items():
                    if len(curve) > len(self._curves.get(key, ())) and key not in self._models:
                        self._curves[key] = curve

    def save(self, path: str) -> None:
        with open(path + ".tmp", "wb") as f:
            pickle.dump(self._curves, f)
        os.replace(path + ".tmp", path)


@dataclass
class Problem:
    """One objective (``metric``, an index into the curves' tuples) on shared curves."""

    name: str
    space: dict[str, Parameter]
    maximize: bool
    curves: Curves
    metric: int = 0

    def value(self, config: Config, k: int) -> float:
        return self.curves.value(config, k)[self.metric]


DIVERGED_LOSS = 10.0  # validation cross-entropy of a diverged network (chance is ln 10 = 2.3)


def validation_scores(
    proba: np.ndarray, y_val: np.ndarray, classes: np.ndarray
) -> tuple[float, float]:
    """Accuracy and cross-entropy (at most ``DIVERGED_LOSS``) of finite class probabilities
    ``proba`` (columns in the order of ``classes``) against the labels ``y_val``."""
    right = proba[np.arange(len(y_val)), np.searchsorted(classes, y_val)]
    loss = float(-np.mean(np.log(np.clip(right, 1e-15, 1.0))))
    accuracy = float(np.mean(classes[proba.argmax(axis=1)] == y_val))
    return accuracy, min(loss, DIVERGED_LOSS)


@functools.cache
def digits_curves() -> Curves:
    """The digits network's (accuracy, cross-entropy) after each epoch, for both its problems."""
    from sklearn.datasets import load_digits
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.model_selection import train_test_split
    from sklearn.neural_network import MLPClassifier

    x, y = load_digits(return_X_y=True)
    x_train, x_val, y_train, y_val = train_test_split(
        x / 16.0, y, test_size=0.3, random_state=0, stratify=y
    )
    classes = np.unique(y)

    def make(c: Config) -> Any:
        return MLPClassifier(
            hidden_layer_sizes=(32,),
            solver="sgd",
            learning_rate_init=c["learning_rate"],
            momentum=c["momentum"],
            nesterovs_momentum=False,
            alpha=c["wd"],
            batch_size=64,
            random_state=0,
        )

    def step(model: Any) -> tuple[float, float]:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore", ConvergenceWarning)
            warnings.simplefilter("ignore", RuntimeWarning)
            model.partial_fit(x_train, y_train, classes=classes)
            proba = model.predict_proba(x_val)
        if not np.all(np.isfinite(proba)):
            return 0.1, DIVERGED_LOSS  # diverged: chance accuracy from then on
        return validation_scores(proba, y_val, classes)

    return Curves(make, step)


DIGITS_SPACE: dict[str, Parameter] = {
    "learning_rate": ContinuousParameter(1e-3, 2.0, "Logarithmic"),
    "momentum": ContinuousParameter(0.0, 0.99, "ReverseLogarithmic"),
    "wd": ContinuousParameter(1e-6, 0.1, "Logarithmic"),
}


def digits_problem() -> Problem:
    return Problem("digits", DIGITS_SPACE, True, digits_curves(), metric=0)


def digits_loss_problem() -> Problem:
    """The same network and curves, the validation cross-entropy as objective (minimized)."""
    return Problem("digits-loss", DIGITS_SPACE, False, digits_curves(), metric=1)


@functools.cache
def boosting_curves() -> Curves:
    """Boosting's (RMSE, best RMSE so far) after each step of 4 trees, for both its problems."""
    from sklearn.datasets import load_diabetes
    from sklearn.ensemble import GradientBoostingRegressor
    from sklearn.model_selection import train_test_split

    x, y = load_diabetes(return_X_y=True)
    x_train, x_val, y_train, y_val = train_test_split(x, y, test_size=0.3, random_state=0)

    def make(c: Config) -> Any:
        model = GradientBoostingRegressor(
            learning_rate=c["learning_rate"],
            max_depth=c["max_depth"],
            subsample=c["subsample"],
            min_samples_leaf=c["min_samples_leaf"],
            n_estimators=0,
            warm_start=True,
            random_state=0,
        )
        return {"model": model, "best": math.inf}

    def step(state: dict[str, Any]) -> tuple[float, float]:
        model = state["model"]
        model.n_estimators += 4
        model.fit(x_train, y_train)
        rmse = float(np.sqrt(np.mean((model.predict(x_val) - y_val) ** 2)))
        state["best"] = min(state["best"], rmse)
        return rmse, state["best"]

    return Curves(make, step)


BOOSTING_SPACE: dict[str, Parameter] = {
    "learning_rate": ContinuousParameter(0.005, 1.0, "Logarithmic"),
    "max_depth": IntegerParameter(1, 8),
    "subsample": ContinuousParameter(0.2, 1.0),
    "min_samples_leaf": IntegerParameter(1, 60, "Logarithmic"),
}


def boosting_problem() -> Problem:
    return Problem("boosting", BOOSTING_SPACE, False, boosting_curves(), metric=0)


def boosting_best_problem() -> Problem:
    """The same trees, reported as the best validation RMSE so far (the model a script with
    early-stopping rounds keeps): curves that fall and flatten, never turn up."""
    return Problem("boosting-best", BOOSTING_SPACE, False, boosting_curves(), metric=1)


PROBLEMS = {
    "digits": digits_problem,
    "digits-loss": digits_loss_problem,
    "boosting": boosting_problem,
    "boosting-best": boosting_best_problem,
}


# Arms: something that suggests configurations and decides stops, step by step.


class Arm:
    """One contender: ``start`` a job, ``report`` its steps (True: stop it), ``end`` it;
    ``started`` keeps every configuration started, in order."""

    started: list[Config]

    def start(self) -> tuple[int, Config] | None:
        raise NotImplementedError

    def report(self, job: int, step: int, value: float) -> bool:
        raise NotImplementedError

    def end(self, job: int, completed: bool, last: float) -> None:
        raise NotImplementedError


class OursArm(Arm):
    """Our strategy and stopping rule, told what the scheduler tells them."""

    def __init__(
        self, problem: Problem, seed: int, strategy: str, options: dict[str, Any], auto: bool
    ) -> None:
        self.space = SearchSpace(problem.space)
        self.maximize = problem.maximize
        self.strategy = make_strategy(strategy, self.space, problem.maximize, seed, options)
        self.rule: StoppingRule | None = stopping_rule_for(
            "Auto" if auto else "Off", {}, problem.maximize, self.strategy
        )
        self.configs: dict[int, Config] = {}
        self.started = []
        self.number = 0
        self.worst: float | None = None

    def start(self) -> tuple[int, Config] | None:
        asked = self.strategy.ask(1)
        if not asked:
            return None
        self.number += 1
        self.configs[self.number] = asked[0]
        self.started.append(asked[0])
        return self.number, asked[0]

    def report(self, job: int, step: int, value: float) -> bool:
        if self.rule is None:
            return False
        return self.rule.report(f"j{job}", job, self.configs[job], step, value) is not None

    def end(self, job: int, completed: bool, last: float) -> None:
        config = self.configs.pop(job)
        if completed:
            if self.worst is None or (last < self.worst if self.maximize else last > self.worst):
                self.worst = last
            self.strategy.tell(config, last)
        else:
            self.strategy.tell(config, told_value(last, self.worst, self.maximize))


class OptunaArm(Arm):
    """Optuna's TPE sampler with a pruner, through its ask/tell interface."""

    def __init__(self, problem: Problem, seed: int, pruner: str, settings: Settings) -> None:
        import optuna

        optuna.logging.set_verbosity(optuna.logging.ERROR)
        pruners = {
            "median": optuna.pruners.MedianPruner(),
            "hyperband": optuna.pruners.HyperbandPruner(
                min_resource=settings.min_resource,
                max_resource=settings.max_resource,
                reduction_factor=settings.eta,
            ),
        }
        # A fixed name: HyperbandPruner assigns brackets by a hash of the study's name and the
        # trial's number, and the default name is random (runs would differ from each other).
        self.study = optuna.create_study(
            study_name=f"bench-{problem.name}-{seed}",
            direction="maximize" if problem.maximize else "minimize",
            sampler=optuna.samplers.TPESampler(seed=seed),
            pruner=pruners[pruner],
        )
        self.dists = {name: _distribution(p) for name, p in problem.space.items()}
        self.trials: dict[int, Any] = {}
        self.started = []

    def start(self) -> tuple[int, Config] | None:
        trial = self.study.ask(self.dists)
        self.trials[trial.number] = trial
        self.started.append(dict(trial.params))
        return trial.number, dict(trial.params)

    def report(self, job: int, step: int, value: float) -> bool:
        trial = self.trials[job]
        trial.report(value, step)
        return bool(trial.should_prune())

    def end(self, job: int, completed: bool, last: float) -> None:
        from optuna.trial import TrialState

        trial = self.trials.pop(job)
        if completed:
            self.study.tell(trial, last)
        else:
            self.study.tell(trial, state=TrialState.PRUNED)


def _distribution(p: Parameter) -> Any:
    from optuna.distributions import FloatDistribution, IntDistribution

    d = p.to_dict()
    log = d.get("scaling_type") == "Logarithmic"
    if d["type"] == "integer":
        return IntDistribution(int(d["min_value"]), int(d["max_value"]), log=log)
    return FloatDistribution(float(d["min_value"]), float(d["max_value"]), log=log)


Make = Callable[[Problem, int, Settings], Arm]
ARMS: dict[str, Make] = {
    "random": lambda p, s, r: OursArm(p, s, "Random", {}, False),
    "random+auto": lambda p, s, r: OursArm(p, s, "Random", {}, True),
    "hyperband": lambda p, s, r: OursArm(p, s, "Hyperband", r.hyperband(), False),
    "hyperband-bayes": lambda p, s, r: OursArm(
        p, s, "Hyperband", r.hyperband(sampler="Bayesian"), False
    ),
    "asha": lambda p, s, r: OursArm(p, s, "Hyperband", r.hyperband(brackets=1), False),
    "asha-bayes": lambda p, s, r: OursArm(
        p, s, "Hyperband", r.hyperband(brackets=1, sampler="Bayesian"), False
    ),
    "bayes": lambda p, s, r: OursArm(p, s, "Bayesian", {}, False),
    "bayes+auto": lambda p, s, r: OursArm(p, s, "Bayesian", {}, True),
    "optuna-tpe+median": lambda p, s, r: OptunaArm(p, s, "median", r),
    "optuna-tpe+hyperband": lambda p, s, r: OptunaArm(p, s, "hyperband", r),
}
RUNG_ARMS = ("hyperband", "hyperband-bayes", "asha", "asha-bayes", "optuna-tpe+hyperband")


def arm_variants(arms: list[str], settings: list[Settings]) -> list[tuple[str, str, Settings]]:
    """(label, arm, settings) to run: ``random`` always (the target is its), the rung-based arms
    once per settings (labelled ``arm r=min_resource`` when there are several), others once."""
    out = []
    for arm in ARMS:
        if arm not in arms and arm != "random":
            continue
        if arm in RUNG_ARMS and len(settings) > 1:
            out += [(f"{arm} r={s.min_resource}", arm, s) for s in settings]
        else:
            out.append((arm, arm, settings[0]))
    return out


# The simulated run: a clock in units of compute, ``parallel`` jobs at once.


@dataclass
class Trace:
    """Best completed value against compute used, after each ended job."""

    maximize: bool
    points: list[tuple[float, float]] = field(default_factory=list)  # (compute, best)
    best: float | None = None

    def completed(self, compute: float, value: float) -> None:
        if self.best is None or (value > self.best if self.maximize else value < self.best):
            self.best = value
            self.points.append((compute, value))

    def best_at(self, compute: float) -> float | None:
        hits = [b for c, b in self.points if c <= compute]
        return hits[-1] if hits else None

    def compute_to(self, target: float) -> float | None:
        for c, b in self.points:
            if (b >= target) if self.maximize else (b <= target):
                return c
        return None


def simulate(problem: Problem, arm: Arm, budget: int, parallel: int, max_resource: int) -> Trace:
    trace = Trace(problem.maximize)
    events: list[tuple[int, int, int]] = []  # (time of the step's report, job, step)
    configs: dict[int, Config] = {}
    compute, clock, exhausted = 0, 0, False
    while True:
        while len(configs) < parallel and compute < budget and not exhausted:
            started = arm.start()
            if started is None:
                exhausted = True
                break
            job, config = started
            configs[job] = config
            heapq.heappush(events, (clock + 1, job, 1))
        if not events or compute >= budget:
            return trace
        clock, job, step = heapq.heappop(events)
        compute += 1
        value = problem.value(configs[job], step)
        stop = arm.report(job, step, value)
        if step == max_resource:
            del configs[job]
            arm.end(job, True, value)
            trace.completed(compute, value)
        elif stop:
            del configs[job]
            arm.end(job, False, value)
        else:
            heapq.heappush(events, (clock + 1, job, step + 1))


def median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def run_problem(
    name: str,
    seeds: list[int],
    full_jobs: int,
    parallel: int,
    horizon: float,
    settings: Settings | list[Settings],
    arms: list[str],
    after_seed: Callable[[], None] | None = None,
) -> dict[str, Any]:
    """Every arm on every seed; ``settings`` (several: the rung-based arms once per settings,
    which must share ``max_resource``); ``after_seed`` called after each seed."""
    problem = PROBLEMS[name]()
    settings = settings if isinstance(settings, list) else [settings]
    r = settings[0].max_resource
    budget = full_jobs * r
    variants = arm_variants(arms, settings)
    traces: dict[str, list[Trace]] = {label: [] for label, _, _ in variants}
    seconds: dict[str, float] = dict.fromkeys(traces, 0.0)
    done = 0
    try:
        for seed in seeds:
            for label, arm, arm_settings in variants:
                began = time.perf_counter()
                contender = ARMS[arm](problem, seed, arm_settings)
                run = simulate(problem, contender, int(budget * horizon), parallel, r)
                traces[label].append(run)
                seconds[label] += time.perf_counter() - began
            done += 1
            if after_seed is not None:
                after_seed()
            print(f"  {name}: seed {seed} done", file=sys.stderr, flush=True)
    except KeyboardInterrupt:  # SIGINT: report the seeds done so far
        print(f"  {name}: interrupted after {done} seeds", file=sys.stderr, flush=True)
        if not done:
            raise
        traces = {label: runs[:done] for label, runs in traces.items()}
    seeds = seeds[:done]
    finals = [b for t in traces["random"] if (b := t.best_at(budget)) is not None]
    target = statistics.median(finals)
    rows = []
    references = {label: t for label, t in traces.items() if label.startswith("optuna-tpe+hyp")}
    for arm, runs in traces.items():
        # Compared with Optuna's HyperbandPruner on the same resources (the first one if none).
        suffix = arm.split(" ")[1:]
        reference = next(
            (t for label, t in references.items() if label.split(" ")[1:] == suffix),
            next(iter(references.values()), None),
        )
        reach = [t.compute_to(target) for t in runs]  # within the horizon
        reached = [r for r in reach if r is not None]
        ours = [t.best_at(budget) for t in runs]
        third = [b for t in runs if (b := t.best_at(budget / 3)) is not None]
        full = [b for t in runs if (b := t.best_at(budget)) is not None]
        # A seed that never reached the target counts as needing more than the budget.
        to_target = median([r if r is not None else math.inf for r in reach])
        rows.append(
            {
                "arm": arm,
                "best_third": median(third),
                "best_full": median(full),
                "to_target": to_target,
                "reached": len(reached),
                "by_third": sum(r <= budget / 3 for r in reached),
                "wins": None
                if reference is None
                else wins(ours, [t.best_at(budget) for t in reference], problem.maximize),
                "seconds": seconds[arm],
            }
        )
    return {
        "problem": name,
        "maximize": problem.maximize,
        "target": target,
        "budget": budget,
        "rows": rows,
        "seeds": len(seeds),
        "first_seed": seeds[0],
        "trained_steps": problem.curves.trained_steps,
    }


def wins(ours: list[float | None], theirs: list[float | None], maximize: bool) -> int:
    """In how many seeds our best is at least theirs (a seed with no best of theirs: ours)."""
    return sum(
        a is not None and (b is None or (a >= b if maximize else a <= b))
        for a, b in zip(ours, theirs, strict=True)
    )


def print_result(result: dict[str, Any]) -> None:
    b = result["budget"]
    kind = "max" if result["maximize"] else "min"
    print(
        f"\n{result['problem']} ({kind}), seeds {result['first_seed']}-"
        f"{result['first_seed'] + result['seeds'] - 1}, budget B = {b} steps, "
        f"target = random's median best "
        f"{result['target']:.4f}; {result['trained_steps']} steps trained for all arms"
    )
    print(
        f"{'arm':>26} {'best@B/3':>9} {'best@B':>8} {'to target (xB)':>15} "
        f"{'vs random':>10} {'reached':>8} {'by B/3':>7} {'>= optuna-hb':>13} {'sim s':>6}"
    )
    reference = next(r["to_target"] for r in result["rows"] if r["arm"] == "random")
    for r in result["rows"]:
        inf = math.isinf(r["to_target"])
        to = "never" if inf else f"{r['to_target'] / b:.2f}"
        ratio = "-" if inf or math.isinf(reference) else f"{r['to_target'] / reference:.2f}"
        third = "-" if r["best_third"] is None else f"{r['best_third']:.4f}"
        full = "-" if r["best_full"] is None else f"{r['best_full']:.4f}"
        n = result["seeds"]
        wins_text = "-" if r["wins"] is None else str(r["wins"])
        print(
            f"{r['arm']:>26} {third:>9} {full:>8} {to:>15} {ratio:>10} "
            f"{r['reached']:>3}/{n:<4} {r['by_third']:>3}/{n:<3} {wins_text:>8}/{n:<4} "
            f"{r['seconds']:>6.1f}"
        )


def fidelity(name: str, n: int, settings: Settings) -> None:
    """Print how well each rung ranks configurations as R does (see the module docstring)."""
    from scipy.stats import spearmanr

    problem = PROBLEMS[name]()
    space = SearchSpace(problem.space)
    configs = [space.decode(u) for u in space.sample(np.random.default_rng(0), n)]
    sign = -1.0 if problem.maximize else 1.0
    r, eta = settings.max_resource, settings.eta
    losses = np.array([[sign * problem.value(c, k) for k in range(1, r + 1)] for c in configs])
    best_tenth = losses[:, r - 1] <= np.quantile(losses[:, r - 1], 0.1)
    print(
        f"\n{name}: {n} random configurations trained to R = {r}, "
        f"{best_tenth.sum()} in the best tenth there"
    )
    print(f"{'rung':>5} {'Spearman':>9} {'best tenth kept by a 1/' + str(eta) + ' cut':>28}")
    rung = settings.min_resource
    while rung < r:
        at = losses[:, rung - 1]
        kept = at <= np.quantile(at, 1 / eta)
        rho = spearmanr(at, losses[:, r - 1]).statistic
        share = (kept & best_tenth).sum() / best_tenth.sum()
        print(f"{rung:>5} {rho:>9.3f} {share:>28.2f}")
        rung *= eta


OPTUNA_STARTUP = 10  # TPESampler's default n_startup_trials: random suggestions first


def proposals(
    name: str,
    seeds: list[int],
    full_jobs: int,
    parallel: int,
    settings: Settings,
    reference_size: int = 200,
) -> None:
    """Print how good the configurations each sampler proposes are: model-based Hyperband's
    (the model's and its random share) and Optuna TPE + HyperbandPruner's (after its random
    start-up), each proposal trained to R, over ``seeds`` runs to B; and which resource level
    the model was fitted on, with how many results there."""
    problem = PROBLEMS[name]()
    r, budget = settings.max_resource, full_jobs * settings.max_resource
    space = SearchSpace(problem.space)
    draws = space.sample(np.random.default_rng(0), reference_size)
    reference = [space.decode(u) for u in draws]
    sign = 1.0 if problem.maximize else -1.0
    ref = np.array([problem.value(c, r) for c in reference])
    good = np.quantile(sign * ref, 0.9)  # the best tenth of random configurations at R
    groups: dict[str, list[float]] = {}
    levels: dict[int, list[int]] = {}
    first: list[int] = []
    bests: dict[str, list[float | None]] = {"ours": [], "optuna": []}
    for seed in seeds:
        ours = ARMS["hyperband-bayes"](problem, seed, settings)
        bests["ours"].append(simulate(problem, ours, budget, parallel, r).best_at(budget))
        assert isinstance(ours, OursArm)
        by = getattr(ours.strategy, "suggested_by", {})
        model_jobs = []
        for number, config in enumerate(ours.started, 1):
            source = by.get(space.key(config), "random")
            if source != "random":
                level, count = (int(x) for x in source[len("model@") :].split("/"))
                levels.setdefault(level, []).append(count)
                model_jobs.append(number)
                source = "model"
            groups.setdefault(f"hyperband-bayes {source}", []).append(problem.value(config, r))
        first.append(model_jobs[0] if model_jobs else 0)
        theirs = ARMS["optuna-tpe+hyperband"](problem, seed, settings)
        bests["optuna"].append(simulate(problem, theirs, budget, parallel, r).best_at(budget))
        for number, config in enumerate(theirs.started, 1):
            source = "start-up" if number <= OPTUNA_STARTUP else "tpe"
            groups.setdefault(f"optuna {source}", []).append(problem.value(config, r))
        print(f"  {name}: seed {seed} done", file=sys.stderr, flush=True)
    print(
        f"\n{name}, R = {r}, min_resource = {settings.min_resource}, seeds {seeds[0]}-{seeds[-1]}"
        f" to B = {budget}: final value (at R) of the configurations each sampler proposed"
    )
    print(f"{'proposed by':>24} {'n':>5} {'mean':>8} {'median':>8} {'in best tenth':>14}")
    rows = [(f"random reference ({reference_size})", list(ref)), *sorted(groups.items())]
    for label, values in rows:
        v = np.array(values)
        share = float(np.mean(sign * v >= good))
        print(f"{label:>24} {len(v):>5} {v.mean():>8.4f} {np.median(v):>8.4f} {share:>14.2f}")
    used = ", ".join(
        f"{level}: {len(c)} (results modelled: median {int(np.median(c))})"
        for level, c in sorted(levels.items())
    )
    print(f"model suggestions by the highest level modelled: {used or 'none'}")
    print(f"first model suggestion: job {sorted(first)} (median {statistics.median(first)})")
    won = wins(bests["ours"], bests["optuna"], problem.maximize)
    finals = {k: median([b for b in v if b is not None]) for k, v in bests.items()}
    print(
        f"best at B: hyperband-bayes >= Optuna TPE + HyperbandPruner in {won}/{len(seeds)} seeds"
        f" (medians {finals['ours']:.4f} and {finals['optuna']:.4f})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", nargs="+", default=list(PROBLEMS), choices=list(PROBLEMS))
    parser.add_argument("--arms", nargs="+", default=list(ARMS), choices=list(ARMS))
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--full-jobs", type=int, default=12, help="budget B in full-budget jobs")
    parser.add_argument("--parallel", type=int, default=2, help="jobs running at once")
    parser.add_argument("--horizon", type=float, default=2.0, help="run each arm to this x B")
    parser.add_argument("--max-resource", type=int, default=27, help="R: epochs (steps) per job")
    parser.add_argument(
        "--min-resource", type=int, nargs="+", default=[1], help="Hyperband's first rung(s)"
    )
    parser.add_argument("--eta", type=int, default=3, help="Hyperband's reduction factor")
    parser.add_argument("--brackets", type=int, help="Hyperband's brackets (default: all)")
    parser.add_argument(
        "--cache", metavar="DIR", help="keep learning curves in files here (made if missing)"
    )
    parser.add_argument(
        "--fidelity", type=int, metavar="N", help="rank agreement of rungs with R on N configs"
    )
    parser.add_argument(
        "--proposals", action="store_true", help="final values of what each sampler proposes"
    )
    args = parser.parse_args()
    settings = [Settings(args.max_resource, r, args.eta, args.brackets) for r in args.min_resource]
    seeds = list(range(args.first_seed, args.first_seed + args.seeds))
    print(
        f"{platform.node()} {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
        f"{time.strftime('%Y-%m-%d')}; seeds {seeds[0]}-{seeds[-1]}, R = {args.max_resource}, "
        f"min_resource = {args.min_resource}, eta = {args.eta}, "
        f"brackets = {args.brackets or 'all'}, {args.parallel} jobs at once, "
        f"B = {args.full_jobs} full jobs, horizon {args.horizon} B"
    )
    if args.cache:  # made now: a missing folder failed the first save, a seed's work lost
        os.makedirs(args.cache, exist_ok=True)
    with threadpool_limits(1):
        for name in args.problems:
            problem = PROBLEMS[name]()
            cache = args.cache and os.path.join(args.cache, f"{name.split('-')[0]}.pickle")
            if cache:
                problem.curves.load(cache)
            if args.fidelity:
                fidelity(name, args.fidelity, settings[0])
            elif args.proposals:
                for each in settings:
                    proposals(name, seeds, args.full_jobs, args.parallel, each)
            else:
                save = functools.partial(problem.curves.save, cache) if cache else None
                result = run_problem(
                    name,
                    seeds,
                    args.full_jobs,
                    args.parallel,
                    args.horizon,
                    settings,
                    args.arms,
                    save,
                )
                print_result(result)
            if cache:
                problem.curves.save(cache)


if __name__ == "__main__":
    main()
