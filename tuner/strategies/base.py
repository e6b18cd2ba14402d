"""The ask/tell interface every search strategy implements.

Contract:
- ``ask(n)`` returns up to ``n`` configurations, distinct from each other and from every
  configuration already asked or told. Fewer than ``n`` (possibly none) means the space or the
  strategy is exhausted (``exhausted`` is then true).
- ``tell(config, value)`` reports the objective of a configuration (``None`` or a non-finite
  value for a failed job). A configuration that was never asked is accepted too: that is how a
  strategy is rebuilt from stored results.
- The same seed and the same sequence of asks and tells give the same suggestions.
- Values are given in the user's direction; strategies minimize ``loss = -value`` when
  maximizing.
- Warm start (``tuner.warm_start``): ``warm_start(observations, first, prior)`` comes before
  any other call. By default ``observations`` (exact results of the same objective, from
  IdenticalDataAndAlgorithm parents) are told like the strategy's own, so a model-based
  strategy fits them and no strategy suggests one of them again; ``first`` configurations
  (TransferLearning) are suggested before the strategy's own, skipping any already asked or
  told; ``prior`` results (TransferLearning: a related problem's) are ignored by default, and a
  strategy that can use them without taking them as its own results says how (Bayesian) and
  says so in ``models_prior`` (a warm start keeps no prior for one that does not).
  ``warm_start_types`` lists the types a strategy takes (the definition refuses others, with
  ``warm_start_refusal`` saying why).

Subclasses implement ``_propose(n)`` (candidate configurations) and ``_observe`` (a result);
this base class removes duplicates, keeps track of pending configurations and of the direction.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from tuner.errors import ValidationError
from tuner.parameters import CategoricalParameter, IntegerParameter
from tuner.space import Config, SearchSpace

MAX_FALLBACK_DRAWS = 1000
MAX_ENUMERATED = 1_000_000  # a finite space up to this size is walked whole once draws fail


class Strategy(ABC):
    """A search strategy over one search space, for one objective direction."""

    name: ClassVar[str]
    warm_start_types: ClassVar[tuple[str, ...]] = ("IdenticalDataAndAlgorithm", "TransferLearning")
    warm_start_refusal: ClassVar[str] = ""

    @classmethod
    def models_prior(cls, options: dict[str, Any]) -> bool:
        """Whether the strategy built with ``options`` models ``prior`` results (``_prior``)."""
        return False

    def __init__(self, space: SearchSpace, maximize: bool = True, seed: int | None = None) -> None:
        self.space = space
        self.maximize = maximize
        self.seed = seed
        self.rng = np.random.default_rng(seed)
        self._seen: set[tuple[Any, ...]] = set()
        self.pending: dict[tuple[Any, ...], Config] = {}
        self.exhausted = False
        self._first: list[Config] = []
        self._unseen_order: np.ndarray | None = None  # see _fallback
        self._unseen_next = 0

    def warm_start(
        self,
        observations: Sequence[tuple[Config, float]],
        first: Sequence[Config] = (),
        prior: Sequence[tuple[Config, float]] = (),
    ) -> None:
        """Parents' results, before anything else is asked or told (see the contract)."""
        for config, value in prior:
            self.space.validate(config)
            self._prior(config, -float(value) if self.maximize else float(value))
        for config, value in observations:
            self.tell(config, value)
        for config in first:
            self.space.validate(config)
            self._first.append(dict(config))

    def ask(self, n: int) -> list[Config]:
        """Up to ``n`` new, distinct configurations (see the module contract)."""
        if not isinstance(n, int) or n < 1:
            raise ValidationError(f"ask(n) needs n >= 1, got {n!r}")
        accepted: list[Config] = []
        while self._first and len(accepted) < n:
            queued = self._first.pop(0)
            if self.space.key(queued) not in self._seen:
                self._seen.add(self.space.key(queued))
                self.pending[self.space.key(queued)] = queued
                accepted.append(queued)
        if len(accepted) == n:
            return accepted
        for candidate in self._propose(n - len(accepted)):
            config: Config | None = candidate
            if self.space.key(candidate) in self._seen:
                self._discard(candidate)
                config = self._fallback()
            if config is None:
                break
            key = self.space.key(config)
            self._seen.add(key)
            self.pending[key] = config
            accepted.append(config)
            if len(accepted) == n:
                break
        if len(accepted) < n and len(self._seen) >= self.space.size():
            self.exhausted = True
        if not accepted:
            self.exhausted = True
        return accepted

    def tell(self, config: Config, value: float | None) -> None:
        """Record the objective of ``config``; ``None``/``nan``/``inf`` mark a failed job."""
        self.space.validate(config)
        key = self.space.key(config)
        self.pending.pop(key, None)
        self._seen.add(key)
        loss: float | None = None
        if value is not None and math.isfinite(value):
            loss = -float(value) if self.maximize else float(value)
        self._observe(config, loss)

    def mark_pending(self, config: Config) -> None:
        """Treat ``config`` as asked and still running (a job resumed after a restart)."""
        key = self.space.key(config)
        self._seen.add(key)
        self.pending[key] = config

    def describe(self) -> dict[str, Any]:
        """What the strategy says of its own state (plain, JSON-able; e.g. the Bayesian
        strategy's ``restarts``); the scheduler records it after each ask, for ``describe``."""
        return {}

    def _prior(self, config: Config, loss: float) -> None:
        """A related problem's result in minimization form (hook; ignored by default)."""

    def _fallback(self) -> Config | None:
        """A configuration not seen yet, or None when the space is used up. Random draws
        first, at least as many as configurations seen (a strategy rebuilt from its seed on
        resume draws again what it had drawn); once they find none on a finite space of at
        most ``MAX_ENUMERATED`` configurations, its configurations in a random order, skipping
        those seen. Draws alone ended Random and Hyperband jobs "exhausted" with
        configurations never run: on a resumed job (more draws needed than configurations
        seen) and on a nearly used-up space (the rare values of a log-scaled integer range)."""
        if self._unseen_order is None:
            for _ in range(MAX_FALLBACK_DRAWS + len(self._seen)):
                config = self.space.decode(self.space.sample(self.rng, 1)[0])
                if self.space.key(config) not in self._seen:
                    return config
            size = self.space.size()
            if size > MAX_ENUMERATED:
                return None
            self._unseen_order = self.rng.permutation(int(size))
        while self._unseen_next < len(self._unseen_order):
            config = self._configuration(int(self._unseen_order[self._unseen_next]))
            self._unseen_next += 1
            if self.space.key(config) not in self._seen:
                return config
        return None

    def _configuration(self, index: int) -> Config:
        """The ``index``-th configuration of a finite space (the last range varies fastest)."""
        values: dict[str, Any] = {}
        for name, rng in reversed(list(self.space)):
            if isinstance(rng, CategoricalParameter):
                index, position = divmod(index, len(rng.values))
                values[name] = rng.values[position]
            elif isinstance(rng, IntegerParameter):
                index, position = divmod(index, rng.size())
                values[name] = rng.min_value + position
        return {name: values[name] for name in self.space.names}

    def _discard(self, config: Config) -> None:
        """A proposed configuration was dropped as a duplicate (hook for stateful samplers)."""

    @abstractmethod
    def _propose(self, n: int) -> list[Config]:
        """Up to ``n`` candidates; duplicates are replaced by the base class."""

    @abstractmethod
    def _observe(self, config: Config, loss: float | None) -> None:
        """A result in minimization form; ``loss is None`` for a failed job."""
