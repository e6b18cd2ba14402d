"""Hyperband's rung decisions: asynchronous successive halving in brackets.

Every job trains with ``resource = max_resource`` and reports one objective value per unit of
resource (one line per epoch), so step k is resource k. With ``r = min_resource``,
``R = max_resource`` and ``eta = reduction_factor``, rung i sits at resource ``r * eta**i``
(below R). Bracket s (0 <= s <= s_max = floor(log_eta(R / r))) judges jobs from rung s on,
but for the last, Hyperband's hedge: where s_max >= 1, bracket s_max runs every job at full
budget, also where R is not r times a power of eta and a rung sits just below R (R = 10: rungs
1, 3, 9; with s_max = 0, R < r * eta, the one bracket judges at rung r as ASHA does); job
number n belongs to the bracket at position n of a fixed cycle in which bracket s appears as
often as Hyperband would sample it (``ceil((s_max + 1) / (s_max - s + 1) * eta**(s_max - s))``
configurations), interleaved, so the assignment depends on the number alone. ``brackets``
keeps only the most aggressive brackets (``brackets=1`` is ASHA: every job judged from the
first rung); by default all ``s_max + 1`` are used, as Hyperband does.

A job reaching one of its bracket's rungs is compared with every value recorded at that rung
of its bracket (itself included, in arrival order): it goes on when it is among the best
``max(1, n // eta)`` of those n values, otherwise it is stopped there (ties go to the earlier
value). This is the asynchronous rule of ASHA: jobs are never paused, and a job that is judged
early against few others goes on. Decisions depend only on the order of reports (see
``tuner.stopping.base``).
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass

from tuner.errors import ValidationError
from tuner.space import Config
from tuner.stopping.base import StoppingRule, stop_reason

DEFAULT_REDUCTION_FACTOR = 3
SAMPLERS = ("Random", "Bayesian")  # how the Hyperband strategy picks configurations


@dataclass(frozen=True)
class RungResult:
    """A job's value when it reached a rung (minimization form)."""

    job: str
    config: Config
    loss: float


class HyperbandRungs(StoppingRule):
    """See the module docstring; ``results`` feeds model-based samplers."""

    def __init__(
        self,
        maximize: bool,
        min_resource: int,
        max_resource: int,
        reduction_factor: int = DEFAULT_REDUCTION_FACTOR,
        brackets: int | None = None,
    ) -> None:
        super().__init__(maximize)
        check_resources(min_resource, max_resource, reduction_factor)
        self.min_resource = min_resource
        self.max_resource = max_resource
        self.eta = reduction_factor
        self.s_max = max_halvings(min_resource, max_resource, reduction_factor)
        self.rungs = [min_resource * reduction_factor**i for i in range(self.s_max + 1)]
        self.rungs = [r for r in self.rungs if r < max_resource]
        if brackets is None:
            brackets = self.s_max + 1
        if isinstance(brackets, bool) or not isinstance(brackets, int):
            raise ValidationError(f"brackets must be an integer, got {brackets!r}")
        if not 1 <= brackets <= self.s_max + 1:
            raise ValidationError(
                f"brackets must be within 1..{self.s_max + 1} for min_resource={min_resource}, "
                f"max_resource={max_resource}, reduction_factor={reduction_factor}, "
                f"got {brackets}"
            )
        self.cycle = bracket_cycle(self.s_max, reduction_factor, brackets)
        self._values: dict[tuple[int, int], list[tuple[str, float]]] = {}  # -> (job, loss)
        self._ranked: dict[tuple[int, int], list[float]] = {}  # -> those losses, sorted (a
        # count over every value at each rung made a long tuning job quadratic)
        self.results: dict[int, list[RungResult]] = {}  # resource -> results there (all brackets)

    def bracket(self, number: int) -> int:
        """The bracket of training job ``number`` (1-based)."""
        return self.cycle[(number - 1) % len(self.cycle)]

    def _judge(self, job: str, number: int, config: Config, step: int, loss: float) -> str | None:
        if step in self.rungs or step == self.max_resource:
            self.results.setdefault(step, []).append(RungResult(job, dict(config), loss))
        if step not in self.rungs:
            return None
        bracket, rung = self.bracket(number), self.rungs.index(step)
        if rung < bracket or bracket == self.s_max > 0:  # the hedge (see the module docstring)
            return None
        values = self._values.setdefault((bracket, rung), [])
        ranked = self._ranked.setdefault((bracket, rung), [])
        values.append((job, loss))
        keep = max(1, len(values) // self.eta)
        better = bisect.bisect_right(ranked, loss)  # earlier values <= loss: ties, the earlier
        bisect.insort(ranked, loss)
        return None if better < keep else stop_reason(step)

    def _forget(self, job: str) -> None:
        """Its rung values no longer judge others (``results``, a model's data, keep them:
        they are true values of its configuration, and a model counts what it was told)."""
        for key, values in self._values.items():
            ranked = self._ranked[key]
            for _, loss in (v for v in values if v[0] == job):
                del ranked[bisect.bisect_left(ranked, loss)]
            self._values[key] = [(j, v) for j, v in values if j != job]


MAX_RESOURCE_RATIO = 100_000  # max_resource / min_resource: the brackets' cycle grows with it


def check_resources(min_resource: int, max_resource: int, reduction_factor: int) -> None:
    """Raise ``ValidationError`` unless 1 <= min_resource < max_resource <= min_resource *
    ``MAX_RESOURCE_RATIO`` and factor >= 2."""
    for name, value in (("min_resource", min_resource), ("max_resource", max_resource)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValidationError(f"Hyperband {name} must be an integer >= 1, got {value!r}")
    if min_resource >= max_resource:
        raise ValidationError(
            "Hyperband needs min_resource < max_resource, got "
            f"min_resource={min_resource}, max_resource={max_resource}"
        )
    if max_resource > min_resource * MAX_RESOURCE_RATIO:  # 1e15 epochs: a list of 2**49 brackets
        raise ValidationError(
            f"Hyperband needs max_resource <= {MAX_RESOURCE_RATIO:,} x min_resource, got "
            f"min_resource={min_resource}, max_resource={max_resource}"
        )
    if isinstance(reduction_factor, bool) or not isinstance(reduction_factor, int):
        raise ValidationError(f"reduction_factor must be an integer >= 2, got {reduction_factor!r}")
    if reduction_factor < 2:
        raise ValidationError(f"reduction_factor must be an integer >= 2, got {reduction_factor!r}")


def max_halvings(min_resource: int, max_resource: int, eta: int) -> int:
    """``floor(log_eta(max_resource / min_resource))``, computed without float slips."""
    s = 0
    while min_resource * eta ** (s + 1) <= max_resource:
        s += 1
    return s


def bracket_cycle(s_max: int, eta: int, brackets: int | None = None) -> list[int]:
    """Bracket ids in sampling order: bracket s (first rung s) as often as Hyperband samples it;
    only brackets ``0 .. brackets - 1`` when ``brackets`` is given."""
    slots: list[tuple[float, int]] = []
    for s in range(s_max + 1 if brackets is None else brackets):
        halvings = s_max - s
        count = math.ceil((s_max + 1) / (halvings + 1) * eta**halvings)
        slots += [((i + 0.5) / count, s) for i in range(count)]
    return [s for _, s in sorted(slots)]
