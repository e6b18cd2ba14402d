"""Bayesian optimisation with a Gaussian process, three engines behind one strategy.

All engines work on the unit cube of ``tuner.space`` (log ranges are already log there) and
minimise the loss; failed jobs are left out of the model.

``engine="native"`` (default, ``gp.py``): Sobol initial points (continued while every result
ties), a Matern 5/2 GP with MAP hyperparameters fitted incrementally, outlying losses
compressed, log expected improvement alternating with a trust-region step, constant liar for
batches and running jobs (the predicted mean inside the trust region); on integer and
categorical ranges every candidate is scored as the configuration it decodes to, and measured
ones are left out, so no suggestion repeats one (``SearchSpace.snap``). It is the fastest to
suggest (well under a second at 1,000 observations) and the best of the three on the problems of
``bench/optimizers.py`` (docs/benchmarks/optimizers.md).

``engine="skopt"``: scikit-optimize's ``Optimizer`` (random initial points, expected
improvement on 10,000 samples). Pending points are added to a copy of the model with a lie for
their value (the best loss seen so far, "cl_min", by default), so that a batch spreads out
instead of repeating one point (Ginsbourger, Le Riche and Carraro, 2010). Results are handed to
the GP in one go at the next ``ask``, so a burst of results costs one model fit.

``engine="optuna"`` hands the whole search to Optuna's ``GPSampler`` (needs torch) instead:
one study for the strategy's life, each suggestion one of its trials, running until its
result is told (a failed job is a failed trial), so batches and running jobs are treated the
way Optuna treats running trials; jobs resumed after a restart are enqueued as running trials.
With the same sampler seed it suggests exactly what Optuna used directly does
(tests/strategies). ``n_initial_points`` defaults to each engine's own: 5 for the native and
scikit-optimize engines, 10 (Optuna's ``n_startup_trials``) for Optuna.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
from skopt import Optimizer

from tuner.errors import ValidationError
from tuner.parameters import CategoricalParameter
from tuner.space import Config, SearchSpace
from tuner.strategies.base import Strategy
from tuner.strategies.gp import GPSearch

LIE_STRATEGIES = ("cl_min", "cl_mean", "cl_max")
ENGINES = ("native", "skopt", "optuna")
MAX_DIMENSIONS = 1000
ACQ_FUNCS = ("EI", "PI", "LCB", "gp_hedge")
WARM_EXPLOIT = 1  # native engine: exploiting suggestions after an identical warm start


class BayesianStrategy(Strategy):
    name = "Bayesian"

    def __init__(
        self,
        space: SearchSpace,
        maximize: bool = True,
        seed: int | None = None,
        n_initial_points: int | None = None,
        acq_func: str | None = None,
        lie: str = "cl_min",
        engine: str = "native",
    ) -> None:
        super().__init__(space, maximize, seed)
        if space.dimensions > MAX_DIMENSIONS:
            # A Gaussian process over thousands of one-hot dimensions learns nothing and its
            # set-up alone takes minutes: refused before anything is built.
            raise ValidationError(
                f"Bayesian search works in at most {MAX_DIMENSIONS} dimensions (a categorical "
                f"range counts one per value), got {space.dimensions}; use Random or TPE"
            )
        if n_initial_points is None:  # each engine's own default
            n_initial_points = 10 if engine == "optuna" else 5
        if type(n_initial_points) is not int or n_initial_points < 1:
            raise ValidationError(
                f"n_initial_points must be an integer >= 1, got {n_initial_points!r}"
            )
        if lie not in LIE_STRATEGIES:
            raise ValidationError(f"lie must be one of {LIE_STRATEGIES}, got {lie!r}")
        if engine not in ENGINES:
            raise ValidationError(f"engine must be one of {ENGINES}, got {engine!r}")
        self.lie = lie
        self.engine = engine
        self._optuna: Any = None
        self._dists: dict[str, Any] = {}
        self._trials: dict[tuple[Any, ...], Any] = {}  # running trials by configuration
        self._repeats: dict[tuple[Any, ...], Any] = {}
        self.n_initial_points = n_initial_points
        self._backlog: list[tuple[list[float], float]] = []
        if acq_func is not None and engine != "skopt":  # it would be ignored
            raise ValidationError(
                f"acq_func is an option of engine 'skopt' only (native: log expected improvement "
                f"with a trust region; optuna: its GP sampler's own), got acq_func={acq_func!r} "
                f"with engine {engine!r}"
            )
        acq_func = acq_func or "EI"
        if acq_func not in ACQ_FUNCS:
            raise ValidationError(f"acq_func must be one of {ACQ_FUNCS}, got {acq_func!r}")
        skopt_seed = int(self.rng.integers(2**31 - 1))  # drawn by every engine: same sequences
        # skopt's optimizer takes seconds to set up in many dimensions: only built when used.
        self._optimizer: Any = None
        if engine == "skopt":
            self._optimizer = Optimizer(
                dimensions=[(0.0, 1.0)] * space.dimensions,
                base_estimator="GP",
                n_initial_points=n_initial_points,
                initial_point_generator="random",
                acq_func=acq_func,
                acq_optimizer="sampling",
                random_state=skopt_seed,
            )
        self._native = GPSearch(
            space.dimensions,
            np.random.default_rng(self.rng.integers(2**63 - 1) if engine == "native" else 0),
            n_initial_points,
            lie,
            snap=None if space.is_continuous else space.snap,
            categories=[
                space.slice_of(name) for name, rng in space if isinstance(rng, CategoricalParameter)
            ],
        )

    def _propose(self, n: int) -> list[Config]:
        if self.engine == "optuna":
            return self._propose_optuna(n)
        if self.engine == "native":
            running = [np.asarray(self._point(c)) for c in self.pending.values()]
            return [self.space.decode(p) for p in self._native.ask(n, running)]
        self._flush()
        optimizer = self._optimizer
        pending = [self._point(c) for c in self.pending.values()]
        with warnings.catch_warnings():
            # skopt warns when it proposes a point it has seen; the base class replaces it.
            warnings.simplefilter("ignore")
            if pending and optimizer.yi:
                optimizer = optimizer.copy(random_state=int(self.rng.integers(2**31 - 1)))
                optimizer.tell(pending, [self._lie(optimizer.yi)] * len(pending))
            points = optimizer.ask(n_points=n, strategy=self.lie) if n > 1 else [optimizer.ask()]
        return [self.space.decode(np.asarray(p)) for p in points]

    def _study(self) -> Any:
        """The one Optuna study behind ``engine="optuna"``: every suggestion is one of its
        trials, running until its result is told (failed jobs are failed trials)."""
        if self._optuna is None:
            import optuna
            from optuna.distributions import FloatDistribution

            optuna.logging.set_verbosity(optuna.logging.ERROR)
            sampler = optuna.samplers.GPSampler(
                seed=int(self.rng.integers(2**31 - 1)), n_startup_trials=self.n_initial_points
            )
            self._optuna = optuna.create_study(sampler=sampler)
            self._dists = {
                f"u{i}": FloatDistribution(0.0, 1.0) for i in range(self.space.dimensions)
            }
        return self._optuna

    def _params(self, config: Config) -> dict[str, float]:
        return {f"u{i}": min(1.0, max(0.0, v)) for i, v in enumerate(self._point(config))}

    def _propose_optuna(self, n: int) -> list[Config]:
        """Ask the study; jobs resumed after a restart become running trials first, so the
        GP's own treatment of running trials spreads a batch out."""
        study = self._study()
        for key, config in self.pending.items():
            if key not in self._trials:
                study.enqueue_trial(self._params(config))
                self._trials[key] = study.ask(self._dists)
        out = []
        for _ in range(n):
            trial = study.ask(self._dists)
            config = self.space.decode(
                np.asarray([trial.params[f"u{i}"] for i in range(self.space.dimensions)])
            )
            key = self.space.key(config)
            if key in self._trials:  # a repeat: the base class will _discard it
                self._repeats[key] = trial
            else:
                self._trials[key] = trial
            out.append(config)
        return out

    def _discard(self, config: Config) -> None:
        if self.engine == "optuna":
            from optuna.trial import TrialState

            key = self.space.key(config)
            trial = self._repeats.pop(key, None) or self._trials.pop(key, None)
            if trial is not None:
                self._study().tell(trial, state=TrialState.FAIL)

    def _observe_optuna(self, config: Config, loss: float | None) -> None:
        from optuna.trial import TrialState, create_trial

        study = self._study()
        trial = self._trials.pop(self.space.key(config), None)
        if trial is not None:
            if loss is None:
                study.tell(trial, state=TrialState.FAIL)
            else:
                study.tell(trial, loss)
        elif loss is not None:  # a result from the store, never asked of this study
            study.add_trial(
                create_trial(params=self._params(config), distributions=self._dists, value=loss)
            )

    def _lie(self, losses: list[float]) -> float:
        if self.lie == "cl_min":
            return float(np.min(losses))
        if self.lie == "cl_max":
            return float(np.max(losses))
        return float(np.mean(losses))

    def _point(self, config: Config) -> list[float]:
        return [float(x) for x in self.space.encode(config)]

    def warm_start(
        self,
        observations: Sequence[tuple[Config, float]],
        first: Sequence[Config] = (),
        prior: Sequence[tuple[Config, float]] = (),
    ) -> None:
        """As every strategy; after exact observations of the same objective (an
        IdenticalDataAndAlgorithm parent's), the native engine's first ``WARM_EXPLOIT``
        model-based suggestions exploit: the parents explored already, so the child's first job
        is the model's best bet near their best (``gp.py``, ``exploit_next``)."""
        super().warm_start(observations, first, prior)
        if self.engine == "native" and observations:
            self._native.exploit_next = WARM_EXPLOIT
            self._native.inherited = len(self._native.y)

    @classmethod
    def models_prior(cls, options: dict[str, Any]) -> bool:
        """Only the native engine models a prior (``_prior``)."""
        return options.get("engine", "native") == "native"

    def _prior(self, config: Config, loss: float) -> None:
        """TransferLearning parents' results: the native engine models them as a prior (scaled
        apart from its own results, ``gp.py``); the other engines ignore them."""
        if self.engine == "native" and np.isfinite(loss):
            self._native.add_prior(np.asarray(self._point(config)), loss)

    def _observe(self, config: Config, loss: float | None) -> None:
        if self.engine == "optuna":
            self._observe_optuna(config, loss)
        elif self.engine == "native" and loss is not None:
            self._native.tell(np.asarray(self._point(config)), loss)
        elif loss is not None:
            self._backlog.append((self._point(config), loss))

    def _flush(self) -> None:
        """Hand the results told since the last ask to the GP at once: one fit, not one each."""
        if self._backlog:
            xs, ys = zip(*self._backlog, strict=True)
            self._backlog.clear()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                self._optimizer.tell(list(xs), list(ys))

    def describe(self) -> dict[str, Any]:
        if self.engine == "optuna":
            done = self._study().get_trials(deepcopy=False) if self._optuna else []
            return {"observations": sum(t.value is not None for t in done), "engine": "optuna"}
        if self.engine == "native":
            return {
                "observations": len(self._native.y),
                "engine": "native",
                "lie": self.lie,
                "restarts": self._native.restarts,
                "avoided_basins": len(self._native.avoided),
            }
        self._flush()
        return {"observations": len(self._optimizer.yi), "lie": self.lie}
