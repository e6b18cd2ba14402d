"""Grid search: every combination of the ranges' grid values, in an order shuffled by the seed.

Categorical ranges contribute all their values, integer ranges all their integers (or
``points_per_continuous`` spread values when there are more), continuous ranges
``points_per_continuous`` values evenly spaced in their scaled space. The strategy is exhausted
when the grid is used up; the shuffled order makes a partial grid (``max_jobs`` smaller than the
grid) cover every range instead of the first values of the first parameter.
"""

from __future__ import annotations

import math

from tuner.errors import ValidationError
from tuner.parameters import CategoricalParameter, IntegerParameter
from tuner.space import Config, SearchSpace
from tuner.strategies.base import Strategy

MAX_GRID_SIZE = 1_000_000


class GridStrategy(Strategy):
    """Warm start: IdenticalDataAndAlgorithm only; configurations a parent ran are skipped."""

    name = "Grid"
    warm_start_types = ("IdenticalDataAndAlgorithm",)
    warm_start_refusal = (
        ": a grid's points are fixed, so another problem's results cannot steer it; with "
        "IdenticalDataAndAlgorithm it skips the configurations its parents ran"
    )

    def __init__(
        self,
        space: SearchSpace,
        maximize: bool = True,
        seed: int | None = None,
        points_per_continuous: int = 5,
    ) -> None:
        super().__init__(space, maximize, seed)
        if (
            isinstance(points_per_continuous, bool)
            or not isinstance(points_per_continuous, int)
            or not 1 <= points_per_continuous <= MAX_GRID_SIZE
        ):
            raise ValidationError(
                f"points_per_continuous must be an integer in 1..{MAX_GRID_SIZE}, "
                f"got {points_per_continuous!r}"
            )
        # Count before building anything: at most points_per_continuous values per range.
        bound = 1
        for _, rng in space:
            count = (
                len(rng.values)
                if isinstance(rng, CategoricalParameter)
                else min(points_per_continuous, rng.size())
                if isinstance(rng, IntegerParameter)
                else points_per_continuous
            )
            bound *= count
            if bound > MAX_GRID_SIZE:
                raise ValidationError(
                    f"a grid may hold at most {MAX_GRID_SIZE} configurations, this one has "
                    f"more (points_per_continuous={points_per_continuous}, ranges {space.names})"
                )
        self._axes = [rng.grid(points_per_continuous) for _, rng in space]
        size = math.prod(len(axis) for axis in self._axes)
        # Configurations are decoded from their index only when asked for.
        self._order = self.rng.permutation(size)
        self._next = 0

    @property
    def size(self) -> int:
        """How many configurations the grid holds."""
        return len(self._order)

    def _config(self, index: int) -> Config:
        values = []
        for axis in reversed(self._axes):  # the last range varies fastest, as in itertools
            index, position = divmod(index, len(axis))
            values.append(axis[position])
        return dict(zip(self.space.names, reversed(values), strict=True))

    def _propose(self, n: int) -> list[Config]:
        out: list[Config] = []
        while self._next < len(self._order) and len(out) < n:
            config = self._config(int(self._order[self._next]))
            self._next += 1
            if self.space.key(config) not in self._seen:
                out.append(config)
        if self._next >= len(self._order):
            self.exhausted = True
        return out

    def _fallback(self) -> Config | None:
        return None

    def _observe(self, config: Config, loss: float | None) -> None:
        pass
