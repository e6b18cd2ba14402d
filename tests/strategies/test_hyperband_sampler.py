"""Hyperband's Bayesian sampler on scripted rung results: what it learns from stopped jobs."""

from __future__ import annotations

from tuner.parameters import ContinuousParameter
from tuner.space import SearchSpace
from tuner.strategies.hyperband import HyperbandStrategy

SPACE = SearchSpace({"x": ContinuousParameter(0.0, 1.0)})
BEST_X = 0.6


def final(x: float) -> float:
    """The loss at the full budget, minimized (no two configurations tie)."""
    return (x - BEST_X) ** 2 + 0.01 * x


def ended_jobs(strategy: HyperbandStrategy, jobs: list[tuple[float, int]]) -> None:
    """Jobs (x, highest level reached) that report their loss at each rung up to that level
    (the loss there is the final one plus a gap that closes with the level), then end. At each
    rung the worst report first, so the rule itself stops none of them: they end as scripted."""
    levels = [1, 3, 9]
    numbers = {x: n for n, (x, _) in enumerate(jobs, 1)}
    for level in levels:
        reaching = [x for x, top in jobs if top >= level]
        gap = {1: 1.0, 3: 0.5, 9: 0.0}[level]
        for x in sorted(reaching, key=final, reverse=True):
            loss = final(x) + gap
            assert (
                strategy.rungs.report(f"j{numbers[x]}", numbers[x], {"x": x}, level, loss) is None
            )
    for x, top in jobs:
        strategy.tell({"x": x}, final(x) + {1: 1.0, 3: 0.5, 9: 0.0}[top])


def scripted_search() -> list[tuple[float, int]]:
    """30 configurations evenly spread: those below 0.5 stopped at the first rung, the rest went
    on to rung 3, and the five nearest 0.6 to the full budget (9)."""
    xs = [(i + 0.5) / 30 for i in range(30)]
    good = sorted((x for x in xs if x >= 0.5), key=final)
    full = set(good[:5])
    return [(x, 9 if x in full else 3 if x >= 0.5 else 1) for x in xs]


def test_the_same_seed_and_results_give_the_same_model_suggestions():
    suggestions = []
    for _ in range(2):
        strategy = HyperbandStrategy(
            SPACE, maximize=False, seed=3, max_resource=9, sampler="Bayesian", random_fraction=0.0
        )
        ended_jobs(strategy, scripted_search())
        suggestions.append([strategy.ask(2) for _ in range(2)])
    assert suggestions[0] == suggestions[1]
    assert len({c["x"] for batch in suggestions[0] for c in batch}) == 4  # a batch spreads out


def test_one_model_is_kept_per_level_and_told_each_result_once():
    """The model of the top level lives across suggestions (so the Bayesian strategy's
    alternation of global and trust-region steps runs) and is told only new results; a higher
    level filling starts a new one."""
    strategy = HyperbandStrategy(
        SPACE, maximize=False, seed=3, max_resource=9, sampler="Bayesian", random_fraction=0.0
    )
    jobs = scripted_search()
    at_full = [x for x, top in jobs if top == 9]
    ended_jobs(strategy, [job for job in jobs if job[0] != at_full[-1]])  # 4 at level 9
    for _ in range(3):
        strategy.ask(1)
    described = strategy.describe()
    assert described["model_level"] == 9 and described["model_suggestions"] == 3
    assert described["model"]["observations"] == 4

    strategy.rungs.report("late", 99, {"x": at_full[-1]}, 9, final(at_full[-1]))
    strategy.ask(1)
    described = strategy.describe()
    assert described["model_suggestions"] == 4  # the same model, one more result
    assert described["model"]["observations"] == 5
