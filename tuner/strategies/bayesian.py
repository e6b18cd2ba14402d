"""Bayesian optimisation with a Gaussian process (scikit-optimize), batched by constant liar.

The GP works on the unit cube of ``tuner.space`` (log ranges are already log there). The first
``n_initial_points`` suggestions are random; after that each suggestion maximises the
acquisition function (expected improvement by default). When asked for several points, or while
earlier points are still running, the pending points are added to a copy of the model with a
lie for their value (the best loss seen so far, "cl_min", by default), so that a batch spreads
out instead of repeating one point (Ginsbourger, Le Riche and Carraro, 2010). Results are
handed to the GP in one go at the next ``ask``, so a burst of results costs one model fit.

``engine="optuna"`` uses Optuna's ``GPSampler`` (needs torch) for the model and the
acquisition instead, with the same initial random points and the same constant liar. The
default stays scikit-optimize: bench/optimizers.py has not shown either to be better yet.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from skopt import Optimizer

from tuner.errors import ValidationError
from tuner.space import Config, SearchSpace
from tuner.strategies.base import Strategy

LIE_STRATEGIES = ("cl_min", "cl_mean", "cl_max")
ENGINES = ("skopt", "optuna")


class BayesianStrategy(Strategy):
    name = "Bayesian"

    def __init__(
        self,
        space: SearchSpace,
        maximize: bool = True,
        seed: int | None = None,
        n_initial_points: int = 5,
        acq_func: str = "EI",
        lie: str = "cl_min",
        engine: str = "skopt",
    ) -> None:
        super().__init__(space, maximize, seed)
        if not isinstance(n_initial_points, int) or n_initial_points < 1:
            raise ValidationError(
                f"n_initial_points must be an integer >= 1, got {n_initial_points!r}"
            )
        if lie not in LIE_STRATEGIES:
            raise ValidationError(f"lie must be one of {LIE_STRATEGIES}, got {lie!r}")
        if engine not in ENGINES:
            raise ValidationError(f"engine must be one of {ENGINES}, got {engine!r}")
        self.lie = lie
        self.engine = engine
        self._gp_sampler: Any = None
        self.n_initial_points = n_initial_points
        self._backlog: list[tuple[list[float], float]] = []
        self._optimizer = Optimizer(
            dimensions=[(0.0, 1.0)] * space.dimensions,
            base_estimator="GP",
            n_initial_points=n_initial_points,
            initial_point_generator="random",
            acq_func=acq_func,
            acq_optimizer="sampling",
            random_state=int(self.rng.integers(2**31 - 1)),
        )

    def _propose(self, n: int) -> list[Config]:
        if self.engine == "optuna":
            return self._propose_optuna(n)
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

    def _propose_optuna(self, n: int) -> list[Config]:
        """Optuna's GP: the observations and lies for pending points go into a fresh
        in-memory study, which is asked one point at a time, each told its lie."""
        import optuna
        from optuna.distributions import BaseDistribution, FloatDistribution
        from optuna.trial import create_trial

        optuna.logging.set_verbosity(optuna.logging.ERROR)
        seen = self._optimizer.Xi + [x for x, _ in self._backlog]
        losses = self._optimizer.yi + [y for _, y in self._backlog]
        if len(seen) < self.n_initial_points:
            return [self.space.decode(u) for u in self.space.sample(self.rng, n)]
        dists: dict[str, BaseDistribution] = {
            f"u{i}": FloatDistribution(0.0, 1.0) for i in range(self.space.dimensions)
        }
        if self._gp_sampler is None:  # kept: it warm-starts its kernel fit from the last one
            self._gp_sampler = optuna.samplers.GPSampler(
                seed=int(self.rng.integers(2**31 - 1)), n_startup_trials=0
            )
        study = optuna.create_study(sampler=self._gp_sampler)

        def add(x: list[float], y: float) -> None:
            params = {f"u{i}": min(1.0, max(0.0, v)) for i, v in enumerate(x)}
            study.add_trial(create_trial(params=params, distributions=dists, value=y))

        lie = self._lie(losses)
        for x, y in zip(seen, losses, strict=True):
            add(x, y)
        for config in self.pending.values():
            add(self._point(config), lie)
        out = []
        for _ in range(n):
            trial = study.ask(dists)
            point = [trial.params[f"u{i}"] for i in range(self.space.dimensions)]
            study.tell(trial, lie)
            out.append(self.space.decode(np.asarray(point)))
        return out

    def _lie(self, losses: list[float]) -> float:
        if self.lie == "cl_min":
            return float(np.min(losses))
        if self.lie == "cl_max":
            return float(np.max(losses))
        return float(np.mean(losses))

    def _point(self, config: Config) -> list[float]:
        return [float(x) for x in self.space.encode(config)]

    def _observe(self, config: Config, loss: float | None) -> None:
        if loss is not None:
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
        self._flush()
        return {"observations": len(self._optimizer.yi), "lie": self.lie}
