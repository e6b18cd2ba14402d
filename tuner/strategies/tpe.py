"""Tree-structured Parzen Estimator search through Optuna's ``TPESampler``.

Numeric ranges are given to Optuna as their unit-cube coordinate (so Logarithmic and
ReverseLogarithmic scaling mean the same as for every other strategy), categorical ranges as the
index of their choice. Running configurations are visible to the sampler as running trials, and
``constant_liar`` keeps a batch from piling onto one point.
"""

from __future__ import annotations

import warnings
from typing import Any

import optuna
from optuna.distributions import BaseDistribution, CategoricalDistribution, FloatDistribution
from optuna.trial import TrialState

from tuner.errors import ValidationError
from tuner.parameters import CategoricalParameter
from tuner.space import Config, SearchSpace
from tuner.strategies.base import Strategy

optuna.logging.set_verbosity(optuna.logging.WARNING)


class TPEStrategy(Strategy):
    name = "TPE"

    def __init__(
        self,
        space: SearchSpace,
        maximize: bool = True,
        seed: int | None = None,
        n_startup_trials: int = 10,
    ) -> None:
        super().__init__(space, maximize, seed)
        if type(n_startup_trials) is not int or n_startup_trials < 0:
            raise ValidationError(
                f"n_startup_trials must be an integer >= 0, got {n_startup_trials!r}"
            )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # constant_liar is marked experimental
            sampler = optuna.samplers.TPESampler(
                seed=int(self.rng.integers(2**31 - 1)),
                n_startup_trials=n_startup_trials,
                constant_liar=True,
                multivariate=True,
            )
        self._study = optuna.create_study(direction="minimize", sampler=sampler)
        self._distributions: dict[str, BaseDistribution] = {
            name: CategoricalDistribution(list(range(len(rng.values))))
            if isinstance(rng, CategoricalParameter)
            else FloatDistribution(0.0, 1.0)
            for name, rng in space
        }
        self._running: dict[tuple[Any, ...], int] = {}

    def _to_config(self, params: dict[str, Any]) -> Config:
        config: Config = {}
        for name, rng in self.space:
            if isinstance(rng, CategoricalParameter):
                config[name] = rng.values[int(params[name])]
            else:
                config[name] = rng.from_unit(float(params[name]))
        return config

    def _to_params(self, config: Config) -> dict[str, Any]:
        return {
            name: rng.index(config[name])
            if isinstance(rng, CategoricalParameter)
            else rng.to_unit(config[name])
            for name, rng in self.space
        }

    def _propose(self, n: int) -> list[Config]:
        out = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for _ in range(n):
                trial = self._study.ask(self._distributions)
                config = self._to_config(trial.params)
                key = self.space.key(config)
                if key in self._running:  # the same configuration as a running trial: the base
                    self._study.tell(trial.number, state=TrialState.FAIL)  # class replaces it
                else:
                    self._running[key] = trial.number
                out.append(config)
        return out

    def _discard(self, config: Config) -> None:
        key = self.space.key(config)
        number = self._running.get(key)
        if number is not None and key not in self.pending:
            self._running.pop(key)
            self._study.tell(number, state=TrialState.FAIL)

    def _observe(self, config: Config, loss: float | None) -> None:
        number = self._running.pop(self.space.key(config), None)
        state = TrialState.COMPLETE if loss is not None else TrialState.FAIL
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if number is not None:
                self._study.tell(number, loss if loss is not None else None, state=state)
            else:
                self._study.add_trial(
                    optuna.trial.create_trial(
                        params=self._to_params(config),
                        distributions=self._distributions,
                        value=loss,
                        state=state,
                    )
                )
