"""Grid search: every combination of the ranges' grid values, in an order shuffled by the seed.

Categorical ranges contribute all their values, integer ranges all their integers (or
``points_per_continuous`` spread values when there are more), continuous ranges
``points_per_continuous`` values evenly spaced in their scaled space. The strategy is exhausted
when the grid is used up; the shuffled order makes a partial grid (``max_jobs`` smaller than the
grid) cover every range instead of the first values of the first parameter.
"""

from __future__ import annotations

from tuner.errors import ValidationError
from tuner.space import Config, SearchSpace
from tuner.strategies.base import Strategy

MAX_GRID_SIZE = 1_000_000


class GridStrategy(Strategy):
    name = "Grid"

    def __init__(
        self,
        space: SearchSpace,
        maximize: bool = True,
        seed: int | None = None,
        points_per_continuous: int = 5,
    ) -> None:
        super().__init__(space, maximize, seed)
        if not isinstance(points_per_continuous, int) or points_per_continuous < 1:
            raise ValidationError(
                f"points_per_continuous must be an integer >= 1, got {points_per_continuous!r}"
            )
        size = 1
        for _, rng in space:
            size *= len(rng.grid(points_per_continuous))
        if size > MAX_GRID_SIZE:
            raise ValidationError(
                f"a grid may hold at most {MAX_GRID_SIZE} configurations, this one has {size}"
            )
        grid = space.grid(points_per_continuous)
        order = self.rng.permutation(len(grid))
        self._queue = [grid[i] for i in order]

    def _propose(self, n: int) -> list[Config]:
        out: list[Config] = []
        while self._queue and len(out) < n:
            config = self._queue.pop(0)
            if self.space.key(config) not in self._seen:
                out.append(config)
        if not self._queue:
            self.exhausted = True
        return out

    def _fallback(self) -> Config | None:
        return None

    def _observe(self, config: Config, loss: float | None) -> None:
        pass
