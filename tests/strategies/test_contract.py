"""One contract, run on every strategy (see tuner/strategies/base.py)."""

import math

import numpy as np
import pytest

from tuner import (
    CategoricalParameter,
    ContinuousParameter,
    IntegerParameter,
    SearchSpace,
    ValidationError,
)
from tuner.strategies import STRATEGIES, make_strategy

ALL = sorted(STRATEGIES)
SPACE = SearchSpace(
    {
        "learning_rate": ContinuousParameter(1e-4, 1.0, "Logarithmic"),
        "momentum": ContinuousParameter(0.0, 0.99, "ReverseLogarithmic"),
        "layers": IntegerParameter(1, 8),
        "optimizer": CategoricalParameter(["sgd", "adam"]),
    }
)


def score(c):
    """Best near learning_rate=1e-2, momentum=0.9, sgd; bigger is better."""
    return (
        -((math.log10(c["learning_rate"]) + 2) ** 2)
        - 10 * (c["momentum"] - 0.9) ** 2
        - 0.05 * abs(c["layers"] - 4)
        + (0.5 if c["optimizer"] == "sgd" else 0.0)
    )


def run(strategy, rounds, batch, f=score, sign=1.0):
    history = []
    for _ in range(rounds):
        for config in strategy.ask(batch):
            value = sign * f(config)
            strategy.tell(config, value)
            history.append((config, value))
    return history


@pytest.mark.parametrize("name", ALL)
def test_batches_are_distinct_and_in_range(name):
    strategy = make_strategy(name, SPACE, seed=1)
    seen = set()
    for _ in range(4):
        batch = strategy.ask(5)
        assert len(batch) == 5
        for config in batch:
            SPACE.validate(config)
            key = SPACE.key(config)
            assert key not in seen
            seen.add(key)
        for config in batch:
            strategy.tell(config, score(config))


@pytest.mark.parametrize("name", ALL)
def test_pending_points_are_never_suggested_twice(name):
    strategy = make_strategy(name, SPACE, seed=2)
    run(strategy, rounds=12, batch=1)
    pending = strategy.ask(4) + strategy.ask(4)  # no results told in between
    assert len({SPACE.key(c) for c in pending}) == 8


@pytest.mark.parametrize("name", ALL)
def test_same_seed_same_results_same_suggestions(name):
    a = run(make_strategy(name, SPACE, seed=7), rounds=14, batch=2)
    b = run(make_strategy(name, SPACE, seed=7), rounds=14, batch=2)
    assert [c for c, _ in a] == [c for c, _ in b]


@pytest.mark.parametrize("name", ALL)
def test_small_discrete_space_is_exhausted_without_duplicates(name):
    space = SearchSpace({"a": IntegerParameter(1, 3), "b": CategoricalParameter([True, False])})
    strategy = make_strategy(name, space, seed=0)
    got = []
    while not strategy.exhausted:
        batch = strategy.ask(4)
        for config in batch:
            strategy.tell(config, float(config["a"]))
        got += batch
        assert len(got) <= 6
    assert sorted((c["a"], c["b"]) for c in got) == sorted(
        (a, b) for a in (1, 2, 3) for b in (True, False)
    )
    assert strategy.ask(1) == []


@pytest.mark.parametrize("batch", [1, 8])
def test_random_rebuilt_from_its_seed_after_many_jobs_goes_on_where_it_was(batch):
    """Resume rebuilds a strategy from its seed and tells it the stored results; Random then
    draws its earlier configurations again. With 1,000 fallback draws, a tuning job resumed
    after about 1,000 jobs was "exhausted" and ended Completed, its other jobs never run."""
    first = make_strategy("Random", SPACE, seed=5)
    history = run(first, rounds=1200 // batch, batch=batch)
    resumed = make_strategy("Random", SPACE, seed=5)
    for config, value in history:
        resumed.tell(config, value)
    assert resumed.ask(batch) == first.ask(batch)  # the draws it would have made next
    assert not resumed.exhausted


FINITE = SearchSpace({"i": IntegerParameter(1, 200), "c": CategoricalParameter(list("abcde"))})


@pytest.mark.parametrize("seed", range(3))
def test_random_uses_up_a_finite_space_whole(seed):
    """Draws alone missed the rare values of a log-scaled integer range (1..200 is
    Logarithmic by Auto): a job of max_jobs = the space's size ended "exhausted" with some of
    its configurations never run (3 of 500 on one seed)."""
    strategy = make_strategy("Random", FINITE, seed=seed)
    got = run(strategy, rounds=1000 // 8, batch=8, f=lambda c: float(c["i"]))
    assert len({FINITE.key(c) for c, _ in got}) == len(got) == 1000
    assert strategy.ask(1) == [] and strategy.exhausted


def test_random_rebuilt_after_half_of_a_finite_space_goes_on():
    """Rebuilt from its seed after 500 of 1,000 configurations, Random needed more draws to
    pass its earlier ones than it allowed, and ended "exhausted" at once."""
    first = make_strategy("Random", FINITE, seed=2)
    history = run(first, rounds=500 // 4, batch=4, f=lambda c: float(c["i"]))
    resumed = make_strategy("Random", FINITE, seed=2)
    for config, value in history:
        resumed.tell(config, value)
    more = run(resumed, rounds=500 // 4, batch=4, f=lambda c: float(c["i"]))
    keys = {FINITE.key(c) for c, _ in history + more}
    assert len(keys) == 1000 and not resumed.exhausted


@pytest.mark.parametrize("name", ALL)
def test_results_for_configs_never_asked_are_accepted(name):
    strategy = make_strategy(name, SPACE, seed=3)
    rng = np.random.default_rng(0)
    for u in SPACE.sample(rng, 12):
        config = SPACE.decode(u)
        strategy.tell(config, score(config))
    strategy.tell(SPACE.decode(SPACE.sample(rng, 1)[0]), None)  # a failed job
    assert len(strategy.ask(3)) == 3


@pytest.mark.parametrize("name", ["Bayesian", "TPE"])
@pytest.mark.parametrize("direction", ["Maximize", "Minimize"])
def test_model_based_search_beats_random_in_both_directions(name, direction):
    sign = 1.0 if direction == "Maximize" else -1.0
    best = {}
    for strategy_name in (name, "Random"):
        strategy = make_strategy(strategy_name, SPACE, maximize=sign > 0, seed=11)
        history = run(strategy, rounds=40, batch=1, sign=sign)
        best[strategy_name] = max(sign * v for _, v in history)
    assert best[name] > best["Random"]
    assert best[name] > 0.3


@pytest.mark.parametrize("engine", ["native", "skopt", "optuna"])
def test_bayesian_batch_spreads_out(engine):
    strategy = make_strategy("Bayesian", SPACE, seed=5, options={"engine": engine})
    run(strategy, rounds=12, batch=1)
    batch = strategy.ask(8)
    points = np.array([SPACE.encode(c) for c in batch])
    gaps = [np.linalg.norm(points[i] - points[j]) for i in range(8) for j in range(i)]
    assert min(gaps) > 1e-3


def test_grid_covers_the_grid_once():
    space = SearchSpace({"a": ContinuousParameter(0, 1), "b": CategoricalParameter(["x", "y"])})
    strategy = make_strategy("Grid", space, seed=0, options={"points_per_continuous": 3})
    configs = strategy.ask(100)
    assert len(configs) == 6
    assert sorted(c["a"] for c in configs) == [0, 0, 0.5, 0.5, 1, 1]
    assert strategy.exhausted


@pytest.mark.parametrize(
    ("name", "options", "message"),
    [
        ("Annealing", {}, "strategy must be one of"),
        ("Bayesian", {"n_initial_points": 0}, "n_initial_points must be an integer >= 1"),
        ("Bayesian", {"lie": "cl_best"}, "lie must be one of"),
        ("Bayesian", {"engine": "botorch"}, "engine must be one of"),
        ("Random", {"unknown": 1}, "Random takes the options \\[\\], got an unknown option"),
        ("Grid", {"points_per_continuous": 0}, "points_per_continuous must be an integer in 1"),
        ("Grid", {"points_per_continuous": -1}, "points_per_continuous must be an integer in 1"),
        ("Grid", {"points_per_continuous": 10**7}, "an integer in 1..1000000, got 10000000"),
        ("Grid", {"points_per_contnuous": 3}, "unknown option 'points_per_contnuous'"),
        ("Bayesian", {"engine": {"a": {"b": 1}}}, "engine must be a string, number, boolean"),
        ("Bayesian", {"n_initial_points": True}, "n_initial_points must be an integer >= 1"),
        ("Bayesian", {"acq_func": "LCB"}, "acq_func is an option of engine 'skopt' only"),
        ("Bayesian", {"acq_func": "PI", "engine": "optuna"}, "with engine 'optuna'"),
        ("Bayesian", {"acq_func": "UCB", "engine": "skopt"}, "acq_func must be one of"),
        ("TPE", {"n_startup_trials": "3"}, "n_startup_trials must be an integer >= 0, got '3'"),
        ("TPE", {"n_startup_trials": -1}, "n_startup_trials must be an integer >= 0"),
        ("TPE", {"n_startup_trials": 1.5}, "n_startup_trials must be an integer >= 0"),
        ("TPE", {"n_startup_trials": True}, "n_startup_trials must be an integer >= 0"),
    ],
)
def test_bad_strategy_settings(name, options, message):
    with pytest.raises(ValidationError, match=message):
        make_strategy(name, SPACE, options=options)


def test_ask_needs_a_positive_count():
    with pytest.raises(ValidationError, match="ask\\(n\\) needs n >= 1, got 0"):
        make_strategy("Random", SPACE).ask(0)


def test_the_optuna_engine_keeps_the_contract():
    options = {"engine": "optuna"}
    a = make_strategy("Bayesian", SPACE, seed=4, options=options)
    b = make_strategy("Bayesian", SPACE, seed=4, options=options)
    history_a, history_b = run(a, rounds=10, batch=2), run(b, rounds=10, batch=2)
    assert [c for c, _ in history_a] == [c for c, _ in history_b]
    keys = [SPACE.key(c) for c, _ in history_a]
    assert len(set(keys)) == len(keys)  # quality is bench/optimizers.py's business


def test_the_optuna_engine_is_optunas_gp_as_it_is():
    """With the same sampler seed, the same suggestions as Optuna's GPSampler used directly:
    the engine adds the tuner's contract and nothing of its own to the search."""
    import optuna
    from optuna.distributions import FloatDistribution

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    cube = SearchSpace({f"x{i}": ContinuousParameter(0.0, 1.0, "Linear") for i in range(3)})

    def f(x: list[float]) -> float:
        return sum((v - 0.3) ** 2 for v in x)

    ours = make_strategy("Bayesian", cube, maximize=False, seed=0, options={"engine": "optuna"})
    sampler_seed = np.random.default_rng(0)
    sampler_seed.integers(2**31 - 1)  # the first draw seeds the scikit-optimize engine
    study = optuna.create_study(
        sampler=optuna.samplers.GPSampler(seed=int(sampler_seed.integers(2**31 - 1)))
    )
    dists = {f"x{i}": FloatDistribution(0.0, 1.0) for i in range(3)}
    for _ in range(14):
        (config,) = ours.ask(1)
        mine = [config[f"x{i}"] for i in range(3)]
        trial = study.ask(dists)
        theirs = [trial.params[f"x{i}"] for i in range(3)]
        assert mine == pytest.approx(theirs, abs=1e-12)
        ours.tell(config, f(mine))
        study.tell(trial, f(theirs))


def test_the_optuna_engine_treats_resumed_jobs_as_running():
    strategy = make_strategy("Bayesian", SPACE, seed=1, options={"engine": "optuna"})
    for config, _ in run(make_strategy("Random", SPACE, seed=2), rounds=12, batch=1):
        strategy.tell(config, score(config))  # results from the store, never asked
    running = make_strategy("Random", SPACE, seed=3).ask(2)
    for config in running:
        strategy.mark_pending(config)  # jobs that survived a restart
    batch = strategy.ask(3)
    assert len({SPACE.key(c) for c in batch + running}) == 5
    study = strategy._study()
    assert sum(t.state.name == "RUNNING" for t in study.trials) == 5
    for config in running + batch:
        strategy.tell(config, score(config))
    assert all(t.state.name == "COMPLETE" for t in study.trials)


def test_grid_too_large_is_refused_before_it_is_built():
    """Three ranges of 200 points would be 8,000,000 configurations: refused by counting."""
    space = SearchSpace({n: ContinuousParameter(0, 1) for n in "abc"})
    with pytest.raises(ValidationError, match="at most 1000000 configurations"):
        make_strategy("Grid", space, options={"points_per_continuous": 200})


def test_tpe_leaves_no_trial_running_once_every_job_has_ended():
    """Two trials of one batch decoding to the same configuration left the second RUNNING for
    ever in Optuna's study: with constant liar, a phantom bad result at a real configuration."""
    from optuna.trial import TrialState

    space = SearchSpace({"n": IntegerParameter(1, 6), "c": CategoricalParameter(["a", "b", "c"])})
    strategy = make_strategy("TPE", space, seed=0, options={"n_startup_trials": 3})
    while configs := strategy.ask(4):
        for config in configs:
            strategy.tell(config, config["n"] + len(config["c"]))
        if strategy.exhausted:
            break
    states = [t.state for t in strategy._study.get_trials(deepcopy=False)]
    assert TrialState.RUNNING not in states
    assert states.count(TrialState.COMPLETE) == 18
