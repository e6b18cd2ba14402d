"""Hyperband: configurations from a pluggable sampler, judged at rungs by successive halving.

The strategy samples; its ``rungs`` (``tuner.stopping.hyperband.HyperbandRungs``) decide which
running jobs stop at which rung, and the scheduler consults them as it consults any stopping
rule. ``sampler="Random"`` (default) draws uniformly in the unit cube. ``sampler="Bayesian"``
fits the Bayesian strategy's Gaussian process, as BOHB does, on the values recorded at the
highest resource level (a rung, or ``max_resource``) that holds at least ``min_points``
results (default: the number of dimensions + 2), with the running configurations as busy points;
a fraction ``random_fraction`` of suggestions stays random, and so is every suggestion until
some level has enough results. The model is kept while its level stays the highest with enough
results (told only the new ones), so its alternating global and trust-region steps run.

Results told through ``tell`` are not used: a value at 3 epochs and one at 27 are never mixed,
only values at one resource level go into one model.
"""

from __future__ import annotations

from tuner.errors import ValidationError
from tuner.space import Config, SearchSpace
from tuner.stopping.hyperband import DEFAULT_REDUCTION_FACTOR, SAMPLERS, HyperbandRungs
from tuner.strategies.base import Strategy
from tuner.strategies.bayesian import BayesianStrategy


class HyperbandStrategy(Strategy):
    """Warm start is refused: its models are per resource level (rung), and parents' final
    results carry no rung values to fit them with."""

    name = "Hyperband"
    warm_start_types = ()
    warm_start_refusal = (
        ": its sampler models the results of one rung, which parents do not provide; "
        "use Bayesian or TPE to warm-start"
    )

    def __init__(
        self,
        space: SearchSpace,
        maximize: bool = True,
        seed: int | None = None,
        min_resource: int = 1,
        max_resource: int = 27,
        reduction_factor: int = DEFAULT_REDUCTION_FACTOR,
        brackets: int | None = None,
        sampler: str = "Random",
        min_points: int | None = None,
        random_fraction: float = 1 / 3,
    ) -> None:
        super().__init__(space, maximize, seed)
        if sampler not in SAMPLERS:
            raise ValidationError(f"Hyperband sampler must be one of {SAMPLERS}, got {sampler!r}")
        if min_points is None:
            min_points = space.dimensions + 2
        if isinstance(min_points, bool) or not isinstance(min_points, int) or min_points < 2:
            raise ValidationError(f"min_points must be an integer >= 2, got {min_points!r}")
        if not 0 <= random_fraction <= 1:
            raise ValidationError(f"random_fraction must be within [0, 1], got {random_fraction!r}")
        self.rungs = HyperbandRungs(
            maximize, min_resource, max_resource, reduction_factor, brackets
        )
        self.sampler = sampler
        self.min_points = min_points
        self.random_fraction = random_fraction
        self.model_level: int | None = None  # the resource the last model was fitted at
        self._model_at_level: BayesianStrategy | None = None  # kept while its level is the top
        self._told = 0  # results of ``model_level`` told to it so far
        self.model_suggestions = 0  # made by the kept model since its level became the top
        # Who proposed each configuration: "random", or "model@<level>/<results there>".
        self.suggested_by: dict[tuple[object, ...], str] = {}

    def _propose(self, n: int) -> list[Config]:
        out: list[Config] = []
        model = self._model() if self.sampler == "Bayesian" else None
        for _ in range(n):
            if model is not None and self.rng.random() >= self.random_fraction:
                asked = model.ask(1)
                if asked:
                    out.append(asked[0])  # ask() has marked it pending in the model
                    self.model_suggestions += 1
                    level = self.model_level
                    self.suggested_by[self.space.key(asked[0])] = (
                        f"model@{level}/{len(self.rungs.results.get(level or 0, ()))}"
                    )
                    continue
            out.append(self.space.decode(self.space.sample(self.rng, 1)[0]))
        return out

    def _model(self) -> BayesianStrategy | None:
        """The GP of the highest resource level with enough results, or None. One model is
        kept per level and told that level's new results, so its own alternation of global and
        trust-region steps runs as in the Bayesian strategy; a new one starts when a higher
        level fills."""
        levels = [r for r, results in self.rungs.results.items() if len(results) >= self.min_points]
        if not levels:
            return None
        level = max(levels)
        if self._model_at_level is None or level != self.model_level:
            self.model_level, self._told, self.model_suggestions = level, 0, 0
            self._model_at_level = BayesianStrategy(
                self.space,
                maximize=False,
                seed=int(self.rng.integers(2**31 - 1)),
                n_initial_points=1,
            )
        model = self._model_at_level
        results = self.rungs.results[level]
        for result in results[self._told :]:
            model.tell(result.config, result.loss)
        self._told = len(results)
        model.pending = dict(self.pending)  # busy points: what runs now, nothing else
        return model

    def _observe(self, config: Config, loss: float | None) -> None:
        pass

    def describe(self) -> dict[str, object]:
        return {
            "sampler": self.sampler,
            "model_level": self.model_level,
            "model_suggestions": self.model_suggestions,
            "model": self._model_at_level.describe() if self._model_at_level else None,
            "results_per_level": {r: len(v) for r, v in sorted(self.rungs.results.items())},
        }
