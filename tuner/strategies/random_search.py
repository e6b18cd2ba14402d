"""Random search: independent uniform draws in the unit cube (so log ranges are log-uniform)."""

from __future__ import annotations

from tuner.space import Config
from tuner.strategies.base import Strategy


class RandomStrategy(Strategy):
    """Seeded random search; results do not change what it suggests. Warm start: it never
    suggests a configuration an identical parent ran, and runs a TransferLearning child's
    first suggestions before its draws."""

    name = "Random"

    def _propose(self, n: int) -> list[Config]:
        return [self.space.decode(u) for u in self.space.sample(self.rng, n)]

    def _observe(self, config: Config, loss: float | None) -> None:
        pass
