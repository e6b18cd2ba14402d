"""Hyperband: configurations from a pluggable sampler, judged at rungs by successive halving.

The strategy samples; its ``rungs`` (``tuner.stopping.hyperband.HyperbandRungs``) decide which
running jobs stop at which rung, and the scheduler consults them as it consults any stopping
rule. ``sampler="Random"`` (default) draws uniformly in the unit cube. ``sampler="Bayesian"``
fits the Bayesian strategy's Gaussian process (its ``native`` engine, kept from one suggestion
to the next) on every configuration whose job has ended, ranked as successive halving ranks
them: by the highest resource level it reached (a rung, or ``max_resource``), then by its value
there, as Optuna's TPE orders pruned trials. A job stopped at a rung is never taken for better
than one that went further, and a value after 3 epochs is only compared with values after 3
epochs; the model is fitted on the ranks (as normal scores), not on values of different levels.
Running configurations are busy points. A fraction ``random_fraction`` of suggestions stays
random, and so is every suggestion until ``min_points`` jobs (default: the number of
dimensions + 2) have ended with a value at some level.

Results told through ``tell`` are not used (only to know which jobs ended): the rungs hold
every value at every level.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.stats import norm

from tuner.errors import ValidationError
from tuner.space import Config, SearchSpace
from tuner.stopping.hyperband import DEFAULT_REDUCTION_FACTOR, SAMPLERS, HyperbandRungs
from tuner.strategies.base import Strategy
from tuner.strategies.gp import GPSearch


class HyperbandStrategy(Strategy):
    """Warm start is refused: its model ranks jobs by the resource level (rung) they reached,
    and parents' final results carry no rung values to rank them with."""

    name = "Hyperband"
    warm_start_types = ()
    warm_start_refusal = (
        ": its sampler models the rungs jobs reached, which parents do not provide; "
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
        self.model_level: int | None = None  # the highest level in the last model
        self._model: GPSearch | None = None
        # Who proposed each configuration: "random", or "model@<top level>/<configs modelled>".
        self.suggested_by: dict[tuple[object, ...], str] = {}

    def _propose(self, n: int) -> list[Config]:
        ranked = self.ranked() if self.sampler == "Bayesian" else []
        use_model = len(ranked) >= self.min_points
        from_model = sum(use_model and self.rng.random() >= self.random_fraction for _ in range(n))
        out: list[Config] = []
        if from_model:
            model = self._gp()
            model.x = [np.asarray(self.space.encode(config), dtype=float) for config, _ in ranked]
            model.y = list(normal_scores(len(ranked)))
            busy = [np.asarray(self.space.encode(c), dtype=float) for c in self.pending.values()]
            self.model_level = max(level for _, level in ranked)
            for point in model.ask(from_model, busy):
                config = self.space.decode(point)
                self.suggested_by[self.space.key(config)] = (
                    f"model@{self.model_level}/{len(ranked)}"
                )
                out.append(config)
        while len(out) < n:
            out.append(self.space.decode(self.space.sample(self.rng, 1)[0]))
        return out

    def ranked(self) -> list[tuple[Config, int]]:
        """Every ended job's configuration with the highest level it reached, best first: a
        higher level ranks above a lower one, then the lower value (loss) there; running jobs
        are left out (their level is not final)."""
        best: dict[str, tuple[int, float, Config]] = {}
        for level, results in self.rungs.results.items():
            for result in results:
                if self.space.key(result.config) in self.pending:
                    continue
                if result.job not in best or level > best[result.job][0]:
                    best[result.job] = (level, result.loss, result.config)
        order = sorted(best.values(), key=lambda entry: (-entry[0], entry[1]))
        return [(config, level) for level, _, config in order]

    def _gp(self) -> GPSearch:
        """The one model, kept so that its fitted hyperparameters carry over and its
        suggestions alternate between expected improvement and its trust region."""
        if self._model is None:
            rng = np.random.default_rng(self.rng.integers(2**63 - 1))
            self._model = GPSearch(self.space.dimensions, rng, n_initial_points=1)
        return self._model

    def _observe(self, config: Config, loss: float | None) -> None:
        pass

    def describe(self) -> dict[str, Any]:
        return {
            "sampler": self.sampler,
            "model_level": self.model_level,
            "results_per_level": {r: len(v) for r, v in sorted(self.rungs.results.items())},
        }


def normal_scores(n: int) -> np.ndarray:
    """Scores for ranks 0..n-1 (best first), lowest best: standard normal quantiles."""
    return np.asarray(norm.ppf((np.arange(n) + 0.5) / n), dtype=float)
