"""Hyperparameter ranges with SageMaker's scaling types.

Each range validates itself on construction and raises ``ValidationError`` naming the rule and
the value that broke it. A range maps its values to ``[0, 1]`` (``to_unit``) and back
(``from_unit``) according to its scaling type; ``tuner.space`` assembles these into one mapping
of a whole search space.

Scaling types:
- ``Linear``: uniform in the value.
- ``Logarithmic``: uniform in ``log(value)``; needs ``min_value > 0``.
- ``ReverseLogarithmic``: uniform in ``-log(1 - value)``, dense near 1 (momentum, decay rates);
  needs ``0 <= min_value < max_value < 1``. Continuous ranges only.
- ``Auto``: ``Logarithmic`` when ``min_value > 0`` and ``max_value / min_value >= 100``,
  otherwise ``Linear`` (a fixed, documented rule, so the same range always scales the same way).
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from enum import StrEnum
from typing import Any

import numpy as np

from tuner.choices import canonical
from tuner.errors import ValidationError

AUTO_LOG_RATIO = 100.0
MAX_INTEGER_MAGNITUDE = 2**53  # every integer up to here is exact as a float (and in numpy)


class ScalingType(StrEnum):
    AUTO = "Auto"
    LINEAR = "Linear"
    LOGARITHMIC = "Logarithmic"
    REVERSE_LOGARITHMIC = "ReverseLogarithmic"


def _scaling(value: str | ScalingType) -> ScalingType:
    try:
        return ScalingType(canonical(value, list(ScalingType)))
    except ValueError:
        allowed = ", ".join(s.value for s in ScalingType)
        raise ValidationError(f"scaling_type must be one of {allowed}; got {value!r}") from None


def _number(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValidationError(f"{name} must be a number, got {value!r}")
    try:
        number = float(value)
    except OverflowError:  # an int beyond a float's range (about 1.8e308)
        number = math.inf
    if not math.isfinite(number):
        raise ValidationError(f"{name} must be finite, got {value!r:.80}")
    return number


def _resolve_scaling(scaling: ScalingType, lo: float, hi: float) -> ScalingType:
    if scaling is ScalingType.AUTO:
        if lo > 0 and hi / lo >= AUTO_LOG_RATIO:
            return ScalingType.LOGARITHMIC
        return ScalingType.LINEAR
    if scaling is ScalingType.LOGARITHMIC and lo <= 0:
        raise ValidationError(f"Logarithmic scaling needs min_value > 0, got min_value={lo:g}")
    if scaling is ScalingType.REVERSE_LOGARITHMIC and not (0 <= lo < hi < 1):
        raise ValidationError(
            "ReverseLogarithmic scaling needs 0 <= min_value < max_value < 1, "
            f"got min_value={lo:g}, max_value={hi:g}"
        )
    return scaling


def _forward(scaling: ScalingType, x: float) -> float:
    if scaling is ScalingType.LOGARITHMIC:
        return math.log(x)
    if scaling is ScalingType.REVERSE_LOGARITHMIC:
        return -math.log1p(-x)
    return x


def _backward(scaling: ScalingType, t: float) -> float:
    if scaling is ScalingType.LOGARITHMIC:
        return math.exp(t)
    if scaling is ScalingType.REVERSE_LOGARITHMIC:
        return -math.expm1(-t)
    return t


GRID_DIGITS = 12  # significant digits of a continuous range's grid values


def _clip01(u: float) -> float:
    return min(1.0, max(0.0, float(u)))


@dataclass(frozen=True, init=False)
class ContinuousParameter:
    """A real-valued range ``[min_value, max_value]``."""

    min_value: float
    max_value: float
    scaling_type: ScalingType

    def __init__(
        self, min_value: float, max_value: float, scaling_type: str | ScalingType = "Auto"
    ) -> None:
        lo = _number("min_value", plain(min_value))
        hi = _number("max_value", plain(max_value))
        if not lo < hi:
            raise ValidationError(
                f"min_value < max_value must hold, got min_value={lo:g}, max_value={hi:g}"
            )
        if not math.isfinite(hi - lo):
            # The width overflows to inf, and every sample would be max_value: refuse.
            raise ValidationError(
                "max_value - min_value must be a finite float (at most 1.7e308), "
                f"got min_value={lo:g}, max_value={hi:g}"
            )
        scaling = _resolve_scaling(_scaling(scaling_type), lo, hi)
        if not _forward(scaling, lo) < _forward(scaling, hi):
            raise ValidationError(
                f"the range is too narrow for {scaling.value} scaling (its scaled bounds are "
                f"equal), got min_value={lo!r}, max_value={hi!r}"
            )
        object.__setattr__(self, "min_value", lo)
        object.__setattr__(self, "max_value", hi)
        object.__setattr__(self, "scaling_type", scaling)

    @property
    def is_log(self) -> bool:
        return self.scaling_type is ScalingType.LOGARITHMIC

    def to_unit(self, value: float) -> float:
        s = self.scaling_type
        lo, hi = _forward(s, self.min_value), _forward(s, self.max_value)
        x = min(self.max_value, max(self.min_value, float(value)))
        return _clip01((_forward(s, x) - lo) / (hi - lo))

    def from_unit(self, u: float) -> float:
        """The value at ``u`` of the scaled range; 0 and 1 are the bounds exactly (a log round
        trip gave 1.0000000000000004e-06 for 1e-06)."""
        u = _clip01(u)
        if u in (0.0, 1.0):
            return self.max_value if u else self.min_value
        s = self.scaling_type
        lo, hi = _forward(s, self.min_value), _forward(s, self.max_value)
        x = _backward(s, lo + u * (hi - lo))
        return min(self.max_value, max(self.min_value, x))

    def contains(self, value: Any) -> bool:
        return (
            isinstance(value, int | float)
            and not isinstance(value, bool)
            and self.min_value <= value <= self.max_value
        )

    def grid(self, points: int) -> list[float]:
        """``points`` values evenly spaced in the scaled space, ends included, each to
        ``GRID_DIGITS`` significant digits (0.001, not 0.0010000000000000002)."""
        if points == 1:
            return [self._tidy(self.from_unit(0.5))]
        return [self._tidy(self.from_unit(i / (points - 1))) for i in range(points)]

    def _tidy(self, x: float) -> float:
        return min(self.max_value, max(self.min_value, float(f"{x:.{GRID_DIGITS}g}")))

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": "continuous",
            "min_value": self.min_value,
            "max_value": self.max_value,
            "scaling_type": self.scaling_type.value,
        }


@dataclass(frozen=True, init=False)
class IntegerParameter:
    """An integer range ``min_value..max_value``, both ends included.

    Every integer gets an equal share of the unit interval under Linear scaling (the interval
    ``[min_value - 0.5, max_value + 0.5]`` is mapped), and a share proportional to its
    log-width under Logarithmic scaling. ReverseLogarithmic is not defined for integers.
    """

    min_value: int
    max_value: int
    scaling_type: ScalingType

    def __init__(
        self, min_value: int, max_value: int, scaling_type: str | ScalingType = "Auto"
    ) -> None:
        min_value, max_value = plain(min_value), plain(max_value)
        pair: tuple[tuple[str, Any], ...] = (("min_value", min_value), ("max_value", max_value))
        for name, v in pair:
            whole_float = isinstance(v, float) and v.is_integer()
            if isinstance(v, bool) or not (isinstance(v, int) or whole_float):
                raise ValidationError(f"{name} must be an integer, got {v!r}")
            if abs(v) > MAX_INTEGER_MAGNITUDE:
                raise ValidationError(
                    f"{name} must lie within +-2**53 ({MAX_INTEGER_MAGNITUDE}), got {v!r:.40}"
                )
        lo, hi = int(min_value), int(max_value)
        if not lo < hi:
            raise ValidationError(
                f"min_value < max_value must hold, got min_value={lo}, max_value={hi}"
            )
        scaling = _scaling(scaling_type)
        if scaling is ScalingType.REVERSE_LOGARITHMIC:
            raise ValidationError(
                "ReverseLogarithmic scaling is only defined for continuous ranges, "
                f"got an integer range {lo}..{hi}"
            )
        object.__setattr__(self, "min_value", lo)
        object.__setattr__(self, "max_value", hi)
        object.__setattr__(self, "scaling_type", _resolve_scaling(scaling, lo, hi))

    @property
    def is_log(self) -> bool:
        return self.scaling_type is ScalingType.LOGARITHMIC

    def _edges(self) -> tuple[float, float]:
        if self.is_log:
            # Half-integer edges in log space, kept above zero.
            lo = max(self.min_value - 0.5, self.min_value / 2)
            return math.log(lo), math.log(self.max_value + 0.5)
        return self.min_value - 0.5, self.max_value + 0.5

    def to_unit(self, value: int) -> float:
        lo, hi = self._edges()
        x = min(self.max_value, max(self.min_value, value))
        t = math.log(x) if self.is_log else float(x)
        return _clip01((t - lo) / (hi - lo))

    def from_unit(self, u: float) -> int:
        lo, hi = self._edges()
        t = lo + _clip01(u) * (hi - lo)
        x = math.exp(t) if self.is_log else t
        return int(min(self.max_value, max(self.min_value, round(x))))

    def snap_units(self, u: np.ndarray) -> np.ndarray:
        """``to_unit(from_unit(v))`` for every ``v`` of ``u`` at once: each coordinate moved to
        the point of the integer it decodes to."""
        lo, hi = self._edges()
        t = lo + np.clip(u, 0.0, 1.0) * (hi - lo)
        x = np.clip(np.rint(np.exp(t) if self.is_log else t), self.min_value, self.max_value)
        return np.clip(((np.log(x) if self.is_log else x) - lo) / (hi - lo), 0.0, 1.0)

    def contains(self, value: Any) -> bool:
        return (
            isinstance(value, int)
            and not isinstance(value, bool)
            and self.min_value <= value <= self.max_value
        )

    def size(self) -> int:
        return self.max_value - self.min_value + 1

    def grid(self, points: int) -> list[int]:
        """All integers when there are at most ``points``, else ``points`` distinct values
        spread evenly in the scaled space (the middle one for 1), ends included: a value that
        would round onto its neighbour moves to the next free integer."""
        if self.size() <= points:
            return list(range(self.min_value, self.max_value + 1))
        if points == 1:
            return [self.from_unit(0.5)]
        values: list[int] = []
        for i in range(points):
            lowest = values[-1] + 1 if values else self.min_value
            highest = self.max_value - (points - 1 - i)  # room for the values still to come
            values.append(min(highest, max(lowest, self.from_unit(i / (points - 1)))))
        return values

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": "integer",
            "min_value": self.min_value,
            "max_value": self.max_value,
            "scaling_type": self.scaling_type.value,
        }


def plain(value: Any) -> Any:
    """``value`` as the JSON-like data it stands for, containers walked: NumPy scalars
    (``np.int64(3)``, ``np.float32``, ``np.bool_``) made the Python numbers they hold, paths
    (``pathlib.Path``, any ``os.PathLike``) their text, tuples lists. What a Python caller
    naturally passes (``command=(sys.executable, HERE / "train.py")``) is accepted as what it
    is, as ``subprocess`` accepts it."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


def argv_word(value: Any) -> str:
    """A hyperparameter value as one argv word, as every launcher passes it: floats in full
    precision (``repr``), booleans as ``true``/``false``, anything else as ``str``. A negative
    float is written without an exponent (``-0.000082``, not ``-8.2e-05``): argparse takes a
    word that starts with ``-`` for an option unless it looks like ``-5`` or ``-0.5``, so the
    job would fail with "expected one argument"."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        word = repr(value)
        if value < 0 and "e" in word:
            word = format(Decimal(word), "f")  # exact: the same float reads back
        return word
    return str(value)


@dataclass(frozen=True, init=False)
class CategoricalParameter:
    """A choice among distinct values that keep their types (``[32, 64]`` stays integers).

    Values are strings (without NUL bytes), finite numbers or booleans. Checking and looking
    up values takes time linear in their number (a dict keyed by type and value).
    """

    values: tuple[Any, ...]
    _positions: dict[tuple[type, Any], int] = field(repr=False, compare=False)

    def __init__(self, values: Sequence[Any]) -> None:
        if isinstance(values, str | bytes) or not isinstance(values, Sequence):
            raise ValidationError(f"values must be a list of choices, got {values!r}")
        if len(values) == 0:
            raise ValidationError("values must hold at least one choice, got an empty list")
        values = [plain(v) for v in values]
        positions: dict[tuple[type, Any], int] = {}
        for i, v in enumerate(values):
            if not isinstance(v, str | int | float | bool):
                raise ValidationError(
                    f"categorical values must be strings, numbers or booleans, got {v!r:.80}"
                )
            if isinstance(v, float) and not math.isfinite(v):
                raise ValidationError(f"categorical values must be finite numbers, got {v!r}")
            if isinstance(v, str) and "\x00" in v:
                raise ValidationError(f"categorical values cannot hold a NUL byte, got {v!r:.80}")
            if positions.setdefault(_key(v), i) != i:
                raise ValidationError(f"categorical values must be distinct, got {v!r:.80} twice")
        words: dict[str, Any] = {}
        for v in values:  # distinct values the training command could not tell apart
            if (other := words.setdefault(argv_word(v), v)) is not v:
                raise ValidationError(
                    "categorical values must differ as the training command receives them, got "
                    f"{other!r:.80} and {v!r:.80} (both {argv_word(v)!r:.80})"
                )
        object.__setattr__(self, "values", tuple(values))
        object.__setattr__(self, "_positions", positions)

    def index(self, value: Any) -> int:
        try:
            return self._positions[_key(value)]
        except (KeyError, TypeError):
            raise ValidationError(
                f"{value!r:.80} is not one of the choices {list(self.values)!r:.200}"
            ) from None

    def contains(self, value: Any) -> bool:
        try:
            return _key(value) in self._positions
        except TypeError:  # unhashable
            return False

    def grid(self, points: int) -> list[Any]:
        return list(self.values)

    def to_dict(self) -> dict[str, Any]:
        return {"type": "categorical", "values": list(self.values)}


def _key(value: Any) -> tuple[type, Any]:
    """Values are one choice when type and value are equal (``1``, ``1.0``, ``True`` differ)."""
    return (type(value), value)


Parameter = ContinuousParameter | IntegerParameter | CategoricalParameter


KEYS = {
    "continuous": ("type", "min_value", "max_value", "scaling_type"),
    "integer": ("type", "min_value", "max_value", "scaling_type"),
    "categorical": ("type", "values"),
}


def parameter_from_dict(spec: dict[str, Any]) -> Parameter:
    """Build a range from ``to_dict()`` output (or the equivalent YAML/JSON mapping).

    ``type`` and ``scaling_type`` are matched without regard to case (``tuner.choices``).
    Raises ``ValidationError`` for an unknown type, a key its type does not have (a misspelt
    ``stepp`` or ``min_vaule`` is refused, naming the key, rather than ignored) or a bad value.
    """
    if not isinstance(spec, dict):
        raise ValidationError(f"a range must be a mapping with a 'type', got {spec!r:.80}")
    kind = canonical(spec.get("type"), KEYS)
    if kind not in KEYS:
        raise ValidationError(
            f"parameter type must be one of continuous, integer, categorical; got {kind!r}"
        )
    unknown = [k for k in spec if k not in KEYS[kind]]
    if unknown:
        names = ", ".join(repr(k) for k in unknown)
        plural = "s" if len(unknown) > 1 else ""
        article = "an" if kind == "integer" else "a"
        raise ValidationError(
            f"unknown key{plural} {names} in {article} {kind} range; "
            f"its keys are {', '.join(KEYS[kind])}"
        )
    if kind == "continuous":
        return ContinuousParameter(
            spec.get("min_value"),  # type: ignore[arg-type]
            spec.get("max_value"),  # type: ignore[arg-type]
            spec.get("scaling_type", "Auto"),
        )
    if kind == "integer":
        return IntegerParameter(
            spec.get("min_value"),  # type: ignore[arg-type]
            spec.get("max_value"),  # type: ignore[arg-type]
            spec.get("scaling_type", "Auto"),
        )
    return CategoricalParameter(spec.get("values"))  # type: ignore[arg-type]
