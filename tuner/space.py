"""One mapping of a whole search space to the unit cube and back, used by every strategy.

Continuous and integer ranges take one coordinate each (scaled by their scaling type, see
``tuner.parameters``); a categorical range with k choices takes k coordinates, one-hot, and
decodes to the choice with the largest coordinate (uniform coordinates give a uniform choice).

Round trip, for every valid configuration ``p``: ``decode(encode(p))`` gives back every integer
and categorical value exactly, and every continuous value within ``ROUND_TRIP_RTOL`` (relative
to the range's width). Exactness is not promised for continuous values: the scalings go through
``log``/``exp``, which are correct to about one unit in the last place, so a value can come back
one float away (``0.4164694320569505`` as ``0.4164694320569504``). Nothing in the tuner needs
more: strategies work on the encoded point, and stored configurations keep the decoded value.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from tuner.errors import ValidationError
from tuner.parameters import (
    CategoricalParameter,
    ContinuousParameter,
    IntegerParameter,
    Parameter,
)

Config = dict[str, Any]
ROUND_TRIP_RTOL = 1e-12


MAX_NAME_CHARS = 256


class SearchSpace:
    """An ordered mapping of hyperparameter names to ranges, with its unit-cube encoding."""

    def __init__(self, ranges: Mapping[str, Parameter]) -> None:
        if not ranges:
            raise ValidationError(
                "hyperparameter_ranges must name at least one parameter, got none"
            )
        self.ranges: dict[str, Parameter] = {}
        self._slices: dict[str, slice] = {}
        start = 0
        for name, rng in ranges.items():
            if (
                not isinstance(name, str)
                or not name
                or len(name) > MAX_NAME_CHARS
                or name.startswith("-")
                or "=" in name
                or "\x00" in name
            ):
                raise ValidationError(
                    f"hyperparameter names must be non-empty strings of at most {MAX_NAME_CHARS} "
                    f"characters that do not start with '-' or contain '=' or NUL, got {name!r:.80}"
                )
            if not isinstance(rng, ContinuousParameter | IntegerParameter | CategoricalParameter):
                raise ValidationError(
                    f"range of {name!r} must be a ContinuousParameter, IntegerParameter or "
                    f"CategoricalParameter, got {rng!r}"
                )
            width = len(rng.values) if isinstance(rng, CategoricalParameter) else 1
            self.ranges[name] = rng
            self._slices[name] = slice(start, start + width)
            start += width
        self.dimensions = start

    @property
    def names(self) -> list[str]:
        return list(self.ranges)

    def __iter__(self) -> Iterator[tuple[str, Parameter]]:
        return iter(self.ranges.items())

    def validate(self, config: Mapping[str, Any]) -> None:
        """Raise ``ValidationError`` unless ``config`` sets exactly this space's names in range."""
        missing = [n for n in self.ranges if n not in config]
        extra = [n for n in config if n not in self.ranges]
        if missing or extra:
            raise ValidationError(
                f"a configuration must set exactly {self.names}; missing {missing}, extra {extra}"
            )
        for name, rng in self.ranges.items():
            if not rng.contains(config[name]):
                raise ValidationError(
                    f"{name}={config[name]!r} is outside its range {rng.to_dict()}"
                )

    def encode(self, config: Mapping[str, Any]) -> np.ndarray:
        """The unit-cube point of a valid configuration."""
        u = np.zeros(self.dimensions)
        for name, rng in self.ranges.items():
            sl = self._slices[name]
            if isinstance(rng, CategoricalParameter):
                u[sl.start + rng.index(config[name])] = 1.0
            else:
                u[sl.start] = rng.to_unit(config[name])
        return u

    def decode(self, u: np.ndarray | list[float]) -> Config:
        """The configuration of a unit-cube point; coordinates outside [0, 1] are clipped."""
        point = np.clip(np.asarray(u, dtype=float), 0.0, 1.0)
        if point.shape != (self.dimensions,):
            raise ValidationError(
                f"a point of this space has {self.dimensions} coordinates, got shape {point.shape}"
            )
        config: Config = {}
        for name, rng in self.ranges.items():
            sl = self._slices[name]
            if isinstance(rng, CategoricalParameter):
                config[name] = rng.values[int(np.argmax(point[sl]))]
            else:
                config[name] = rng.from_unit(float(point[sl.start]))
        return config

    @property
    def is_continuous(self) -> bool:
        """Whether every range is continuous (every point of the cube is a configuration)."""
        return all(isinstance(r, ContinuousParameter) for r in self.ranges.values())

    def snap(self, points: np.ndarray) -> np.ndarray:
        """``encode(decode(p))`` for every row ``p`` of ``points`` at once: each point moved to
        the point of the configuration it decodes to (integers rounded, a categorical range's
        coordinates one-hot at their largest). Continuous coordinates are only clipped."""
        out = np.clip(np.array(points, dtype=float, ndmin=2), 0.0, 1.0)
        for name, rng in self.ranges.items():
            sl = self._slices[name]
            if isinstance(rng, IntegerParameter):
                out[:, sl.start] = rng.snap_units(out[:, sl.start])
            elif isinstance(rng, CategoricalParameter):
                chosen = np.argmax(out[:, sl], axis=1)
                out[:, sl] = 0.0
                out[np.arange(len(out)), sl.start + chosen] = 1.0
        return out

    def slice_of(self, name: str) -> slice:
        return self._slices[name]

    def key(self, config: Mapping[str, Any]) -> tuple[Any, ...]:
        """A hashable identity of a configuration (types kept: 1 and True differ; floats to 12
        significant digits, so 0.49999999999999994 from a log-scale round trip is 0.5)."""
        return tuple((type(v).__name__, _close(v)) for v in (config[n] for n in self.ranges))

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """``n`` points uniform in the unit cube (uniform over values after decoding)."""
        return rng.random((n, self.dimensions))

    def size(self) -> float:
        """The number of distinct configurations (``math.inf`` with a continuous range)."""
        total = 1.0
        for rng in self.ranges.values():
            if isinstance(rng, ContinuousParameter):
                return math.inf
            total *= rng.size() if isinstance(rng, IntegerParameter) else len(rng.values)
        return total

    def grid(self, points_per_continuous: int) -> list[Config]:
        """Every combination of the ranges' grid values, in lexicographic order."""
        axes = [rng.grid(points_per_continuous) for rng in self.ranges.values()]
        return [dict(zip(self.names, combo, strict=True)) for combo in itertools.product(*axes)]

    def to_dict(self) -> dict[str, dict[str, Any]]:
        return {name: rng.to_dict() for name, rng in self.ranges.items()}


def _close(value: Any) -> Any:
    return float(f"{value:.12g}") if isinstance(value, float) else value
