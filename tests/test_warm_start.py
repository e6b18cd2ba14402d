"""Warm start: children read their parents from the same store, each strategy uses them, and
bad parents are refused before anything is stored (tuner.warm_start)."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import fake_command
from tuner import HyperparameterTuner, TrainingStatus, TuningJobDefinition, ValidationError
from tuner.errors import TunerError
from tuner.scheduler import Scheduler
from tuner.storage import Store
from tuner.warm_start import TRANSFER_FIRST, WarmStartConfig, map_configuration, resolve

METRICS = [{"Name": "accuracy", "Regex": r"accuracy=([0-9.]+)"}]
X = {"type": "continuous", "min_value": 0.0, "max_value": 1.0}
Y = {"type": "continuous", "min_value": 0.0, "max_value": 1.0}


def job(tmp_path: Path, **overrides: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "job_definition": {
            "command": fake_command(),
            "static_hyperparameters": {"epochs": 2},
            "output_path": str(tmp_path / "runs"),
        },
        "objective_metric_name": "accuracy",
        "metric_definitions": METRICS,
        "hyperparameter_ranges": {"x": X, "y": Y},
        "strategy": "Random",
        "max_jobs": 6,
        "max_parallel_jobs": 2,
        "random_seed": 1,
    }
    data.update(overrides)
    return data


def run(tmp_path: Path, name: str, **overrides: Any) -> HyperparameterTuner:
    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    data = job(tmp_path, name=name, **overrides)
    return HyperparameterTuner.from_definition(data, storage=url).fit(progress=False)


def names(tmp_path: Path) -> list[str]:
    return sorted(t.name for t in Store(f"sqlite:///{tmp_path / 'db.sqlite'}").list_tuning_jobs())


def key(config: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(sorted(config.items()))


@pytest.mark.parametrize("strategy", ["Bayesian", "TPE", "Random"])
def test_identical_parents_are_observations_and_not_jobs_of_the_child(tmp_path, strategy):
    parent = run(tmp_path, "parent")
    narrow = {"x": {**X, "max_value": 0.5}, "y": Y}  # a narrowed range drops what lies outside
    child = run(
        tmp_path,
        "child",
        strategy=strategy,
        hyperparameter_ranges=narrow,
        max_jobs=3,
        max_parallel_jobs=1,
        warm_start_config={"parents": ["parent"], "type": "IdenticalDataAndAlgorithm"},
    )
    inside = [j for j in parent.training_jobs() if j.hyperparameters["x"] <= 0.5]
    d = child.describe()
    assert d["warm_start"] == {
        "type": "IdenticalDataAndAlgorithm",
        "parents": [
            {
                "name": "parent",
                "succeeded": 6,
                "used": len(inside),
                "dropped": 6 - len(inside),
                "best": parent.best_training_job().objective,
            }
        ],
        "observations": len(inside),
        "first_suggestions": 0,
        "prior_observations": 0,
    }
    jobs = child.training_jobs()
    assert len(jobs) == 3 and d["status"] == "Completed"  # parents' jobs use no max_jobs
    assert d["best_training_job"]["tuning_job_name"] == "child"
    assert not {key(j.hyperparameters) for j in jobs} & {key(j.hyperparameters) for j in inside}


def test_the_bayesian_child_models_its_parents_from_its_first_suggestion(tmp_path):
    run(tmp_path, "parent", max_jobs=8)
    definition = TuningJobDefinition.parse(
        job(
            tmp_path,
            name="child",
            strategy="Bayesian",
            warm_start_config={"parents": ["parent"], "type": "IdenticalDataAndAlgorithm"},
        )
    )
    store = Store(f"sqlite:///{tmp_path / 'db.sqlite'}")
    warm = resolve(store, definition)
    assert warm is not None and len(warm.observations) == 8
    store.create_tuning_job("child", definition.to_json(), warm_start=warm.to_json())
    scheduler = Scheduler(definition, "child", store)
    scheduler._replay()
    assert scheduler.strategy.describe()["observations"] == 8
    # More observations than n_initial_points: the first suggestion comes from the model, not
    # from the space-filling design a cold start with the same seed begins with.
    cold = Scheduler(definition.model_copy(update={"warm_start_config": None}), "cold", store)
    assert scheduler.strategy.ask(1) != cold.strategy.ask(1)


def test_grid_skips_the_configurations_an_identical_parent_ran(tmp_path):
    grid = {"strategy": "Grid", "strategy_options": {"points_per_continuous": 3}}
    ranges = {"x": X}  # a grid of three: 0, 0.5, 1
    warm = {"parents": ["parent"], "type": "IdenticalDataAndAlgorithm"}
    parent = run(tmp_path, "parent", hyperparameter_ranges=ranges, max_jobs=2, **grid)
    child = run(
        tmp_path, "child", hyperparameter_ranges=ranges, max_jobs=3, warm_start_config=warm, **grid
    )
    ran = {j.hyperparameters["x"] for j in parent.training_jobs()}
    rest = [j.hyperparameters["x"] for j in child.training_jobs()]
    assert len(ran) == 2 and len(rest) == 1 and ran | set(rest) == {0.0, 0.5, 1.0}
    assert child.describe()["status_reason"] == "the search space is exhausted after 1 jobs"
    warm["parents"] = ["parent", "child"]
    grandchild = run(
        tmp_path, "grandchild", hyperparameter_ranges=ranges, warm_start_config=warm, **grid
    )
    assert grandchild.training_jobs() == []
    assert "exhausted before any training job ran" in grandchild.describe()["status_reason"]


@pytest.mark.parametrize(
    ("strategy", "options", "priors"),
    [("Random", {}, 0), ("TPE", {}, 0), ("Bayesian", {"engine": "skopt"}, 0), ("Bayesian", {}, 8)],
)
def test_transfer_learning_runs_the_parents_best_mapped_configurations_first(
    tmp_path, strategy, options, priors
):
    # only a strategy that models a prior keeps one (the native Bayesian engine); describe
    # counted 8 prior observations for Random, which reads none (QA)
    parent = run(tmp_path, "parent", max_jobs=8)
    child = run(
        tmp_path,
        "child",
        strategy=strategy,
        strategy_options=options,
        job_definition={
            "command": fake_command(),
            "static_hyperparameters": {"epochs": 3},  # static hyperparameters may differ
            "output_path": str(tmp_path / "runs"),
        },
        hyperparameter_ranges={  # y removed, x narrowed, z added
            "x": {**X, "max_value": 0.25},
            "z": {"type": "integer", "min_value": 1, "max_value": 5},
        },
        max_jobs=5,
        max_parallel_jobs=1,
        warm_start_config={"parents": ["parent"], "type": "TransferLearning"},
    )
    best = sorted(parent.training_jobs(), key=lambda j: -(j.objective or 0))
    expected = []
    for j in best:
        mapped = {"x": min(j.hyperparameters["x"], 0.25), "z": 3}  # clipped; the middle of 1..5
        if mapped not in expected:
            expected.append(mapped)
    first = [j.hyperparameters for j in child.training_jobs()][: len(expected[:TRANSFER_FIRST])]
    assert first == expected[:TRANSFER_FIRST]
    d = child.describe()
    assert d["warm_start"]["first_suggestions"] == len(first)
    assert d["warm_start"]["observations"] == 0  # nothing of another problem taken as exact
    assert d["warm_start"]["prior_observations"] == priors
    from tuner.reports import build
    from tuner.reports.render import tables

    report = build(child.store, ["parent", "child"])
    assert [w["run"] for w in report["warm_starts"]] == ["child"]
    _, rows = dict(tables(report))["Warm start"]
    row = ["child", "TransferLearning", "parent (8 of 8)", "0", str(len(first)), str(priors)]
    assert rows == [row]
    assert len(child.training_jobs()) == 5


def test_a_bayesian_child_models_transfer_parents_as_a_prior_trusting_only_their_shape():
    """Prior losses shifted by a constant give the same suggestions: their level is not
    trusted; without the prior the first suggestion is the cold start's."""
    import numpy as np

    from tuner.parameters import parameter_from_dict
    from tuner.space import SearchSpace
    from tuner.strategies import make_strategy

    space = SearchSpace({"x": parameter_from_dict(X), "y": parameter_from_dict(Y)})
    rng = np.random.default_rng(0)
    prior = [
        ({"x": float(a), "y": float(b)}, 1 - (a - 0.3) ** 2 - (b - 0.6) ** 2)
        for a, b in rng.random((12, 2))
    ]

    def first(shift: float | None) -> dict[str, float]:
        strategy = make_strategy("Bayesian", space, maximize=True, seed=5)
        if shift is not None:
            strategy.warm_start([], [], [(c, v + shift) for c, v in prior])
            assert strategy.describe()["observations"] == 0  # not its own results
        return strategy.ask(1)[0]

    assert first(0.0) == first(-100.0) != first(None)


def test_an_added_parameter_takes_the_parents_static_value():
    from tuner.parameters import parameter_from_dict
    from tuner.space import SearchSpace

    space = SearchSpace(
        {
            "lr": parameter_from_dict(X),
            "epochs": parameter_from_dict({"type": "integer", "min_value": 1, "max_value": 10}),
            "opt": parameter_from_dict({"type": "categorical", "values": ["sgd", "adam"]}),
        }
    )
    parent = {"job_definition": {"static_hyperparameters": {"epochs": 30}}}
    assert map_configuration(space, {"lr": 1.5, "opt": "adam"}, parent) == {
        "lr": 1.0,
        "epochs": 10,
        "opt": "adam",
    }
    assert map_configuration(space, {"lr": 0.1, "opt": "rmsprop"}, parent) is None
    assert map_configuration(space, {"lr": 0.1}, {}) == {"lr": 0.1, "epochs": 6, "opt": "sgd"}


@pytest.mark.parametrize(
    ("child", "words"),
    [
        (
            {
                "job_definition": {
                    "command": fake_command(),
                    "static_hyperparameters": {"epochs": 3},
                }
            },
            [
                "IdenticalDataAndAlgorithm needs the same job_definition.static_hyperparameters",
                "{'epochs': '3'} here and {'epochs': '2'} in 'parent'",  # as argv words
                "TransferLearning allows that",
            ],
        ),
        ({"objective_type": "Minimize"}, ["same objective_type", "'Minimize' here"]),
        (
            {"hyperparameter_ranges": {"x": X}},
            ["same tuned hyperparameters", "['x'] here and ['x', 'y'] in 'parent'"],
        ),
        (
            {"warm_start_config": {"parents": ["parent", "ghost"], "type": "TransferLearning"}},
            ["every parent must be a tuning job in this store", "'ghost'"],
        ),
    ],
)
def test_bad_parents_are_refused_at_creation_and_nothing_is_stored(tmp_path, child, words):
    run(tmp_path, "parent", max_jobs=2)
    data = {"warm_start_config": {"parents": ["parent"], "type": "IdenticalDataAndAlgorithm"}}
    data.update(child)
    if "job_definition" in child:
        child["job_definition"]["output_path"] = str(tmp_path / "runs")
    with pytest.raises(ValidationError) as info:
        run(tmp_path, "child", **data)
    for word in words:
        assert word in str(info.value)
    assert names(tmp_path) == ["parent"]


def test_a_parent_still_running_is_refused(tmp_path):
    store = Store(f"sqlite:///{tmp_path / 'db.sqlite'}")
    store.create_tuning_job("busy", TuningJobDefinition.parse(job(tmp_path)).to_json())
    warm = {"parents": ["busy"], "type": "IdenticalDataAndAlgorithm"}
    with pytest.raises(ValidationError, match=r"a parent must have ended .* 'busy' with status"):
        run(tmp_path, "child", warm_start_config=warm)
    assert names(tmp_path) == ["busy"]


def test_a_parent_without_a_succeeded_job_is_refused(tmp_path):
    failing = job(tmp_path)["job_definition"]
    failing["static_hyperparameters"] = {"epochs": 2, "exit_code": 3}
    run(tmp_path, "broken", job_definition=failing, max_jobs=1, max_parallel_jobs=1)
    warm = {"parents": ["broken"], "type": "TransferLearning"}
    with pytest.raises(ValidationError, match="at least one parent needs a training job whose"):
        run(tmp_path, "child", warm_start_config=warm)
    assert names(tmp_path) == ["broken"]


@pytest.mark.parametrize("kind", ["IdenticalDataAndAlgorithm", "TransferLearning"])
def test_resume_counts_the_parents_once(tmp_path, kind):
    """A child detached mid-run and resumed by another scheduler: the strategy holds the
    parents' observations once, and no first suggestion runs twice."""
    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    jd = {**job(tmp_path)["job_definition"], "static_hyperparameters": {"epochs": 2, "sleep": 0.3}}
    run(tmp_path, "parent", job_definition=jd, max_jobs=6)
    d = TuningJobDefinition.parse(
        job(
            tmp_path,
            name="child",
            job_definition=jd,
            strategy="Bayesian",
            max_jobs=5,
            max_parallel_jobs=1,
            warm_start_config={"parents": ["parent"], "type": kind},
        )
    )
    store = Store(url)
    warm = resolve(store, d)
    assert warm is not None
    store.create_tuning_job("child", d.to_json(), owner="first", ttl=30, warm_start=warm.to_json())
    detach = threading.Event()
    first = Scheduler(d, "child", store, owner="first", detach_event=detach)
    thread = threading.Thread(target=first.run)
    thread.start()
    deadline = time.monotonic() + 30
    while sum(j.status is TrainingStatus.COMPLETED for j in store.list_training_jobs("child")) < 2:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    detach.set()
    thread.join(10)
    assert store.claim_tuning_job("child", "second", ttl=30)
    second = Scheduler(d, "child", Store(url), owner="second")
    second.run()
    jobs = store.list_training_jobs("child")
    assert len(jobs) == 5
    configs = [key(j.hyperparameters) for j in jobs]
    assert len(set(configs)) == 5  # nothing ran again after the restart
    assert configs[: len(warm.first)] == [key(c) for c in warm.first]
    completed = sum(j.status is TrainingStatus.COMPLETED for j in jobs)
    told = len(warm.observations) + completed  # IdenticalDataAndAlgorithm: 6 + 5; else 0 + 5
    assert second.strategy.describe()["observations"] == told
    assert len(warm.observations) == (6 if kind == "IdenticalDataAndAlgorithm" else 0)


def test_tuner_run_warm_starts_from_the_command_line(tmp_path, capsys):
    import yaml

    from tuner.cli import main

    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    config = tmp_path / "job.yaml"
    config.write_text(yaml.safe_dump(job(tmp_path, max_jobs=3)))
    assert main(["--storage", url, "run", str(config), "--name", "first", "--no-progress"]) == 0
    flags = ["--warm-start", "first", "--warm-start-type", "TransferLearning"]
    assert main(["--storage", url, "run", str(config), "--name", "next", *flags]) == 0
    assert "warm start TransferLearning from first (3 of 3)" in capsys.readouterr().out
    d = HyperparameterTuner.attach("next", storage=url).describe()
    assert d["definition"]["warm_start_config"] == {
        "parents": ["first"],
        "type": "TransferLearning",
    }
    both = ["--warm-start", "first", "next", "--warm-start-type", "TransferLearning"]
    assert main(["--storage", url, "run", str(config), "--name", "third", *both]) == 0
    assert "warm start TransferLearning from first (3 of 3), next (3 of 3)" in (
        capsys.readouterr().out
    )
    six = ["--warm-start", "first", "next", "third", "--warm-start", "a", "b", "c"]
    assert main(["--storage", url, "run", str(config), "--name", "fourth", *six]) == 2
    assert "at most 5" in capsys.readouterr().err


def test_the_transfer_example_parses():
    example = Path(__file__).resolve().parent.parent / "examples" / "digits_transfer.yaml"
    d = TuningJobDefinition.load(example)
    assert d.warm_start_config is not None and d.warm_start_config.type == "TransferLearning"


def test_the_prior_is_left_out_once_the_child_has_enough_results_of_its_own():
    import numpy as np

    from tuner.strategies.gp import GPSearch

    search = GPSearch(2, np.random.default_rng(0), n_initial_points=5)
    for a in np.linspace(0, 1, 6):
        search.add_prior(np.array([a, a]), 10.0 + a)
    assert search.prior_until == 6  # twice the dimensions plus two
    for i in range(5):
        search.tell(np.array([0.1 * i, 0.5]), float(i))
        assert len(search._points()[1]) == 6 + i + 1  # prior and own
    search.tell(np.array([0.9, 0.5]), 5.0)
    x, y = search._points()
    assert len(y) == 6 and x[:, 1].tolist() == [0.5] * 6  # own results only


def test_random_never_repeats_a_configuration_an_identical_parent_ran(tmp_path):
    ranges = {
        "layers": {"type": "integer", "min_value": 1, "max_value": 4},
        "opt": {"type": "categorical", "values": ["sgd", "adam"]},
    }  # 8 configurations
    parent = run(tmp_path, "parent", hyperparameter_ranges=ranges, max_jobs=5)
    warm = {"parents": ["parent"], "type": "IdenticalDataAndAlgorithm"}
    child = run(tmp_path, "child", hyperparameter_ranges=ranges, max_jobs=8, warm_start_config=warm)
    ran = {key(j.hyperparameters) for j in parent.training_jobs()}
    rest = [key(j.hyperparameters) for j in child.training_jobs()]
    assert len(ran) == 5 and len(rest) == 3 and not ran & set(rest)
    assert child.describe()["status_reason"] == "the search space is exhausted after 3 jobs"


def test_hyperband_refuses_warm_start_when_the_definition_is_parsed(tmp_path):
    data = job(
        tmp_path,
        strategy="Hyperband",
        warm_start_config={"parents": ["p"], "type": "IdenticalDataAndAlgorithm"},
    )
    with pytest.raises(ValidationError) as info:
        TuningJobDefinition.parse(data)
    assert "warm_start_config.type: strategy 'Hyperband' takes no warm start" in str(info.value)
    assert "got 'IdenticalDataAndAlgorithm'" in str(info.value)


def test_an_identical_child_first_exploits_near_the_parents_best():
    """After exact observations from a parent, the native engine's first model-based
    suggestion minimises the predicted mean in the trust region around the best observation:
    on a smooth bowl it lands nearer the minimum than the best observation, and inside the
    region. A TransferLearning prior, or results told the ordinary way, do not do this."""
    import numpy as np

    from tuner.parameters import parameter_from_dict
    from tuner.space import SearchSpace
    from tuner.strategies import make_strategy
    from tuner.strategies.bayesian import WARM_EXPLOIT, BayesianStrategy

    space = SearchSpace({"x": parameter_from_dict(X), "y": parameter_from_dict(Y)})
    centre = np.array([0.31, 0.62])

    def bowl(c: dict[str, float]) -> float:
        return -float(np.sum((np.array([c["x"], c["y"]]) - centre) ** 2))

    rng = np.random.default_rng(3)
    observations = [
        ({"x": float(a), "y": float(b)}, bowl({"x": a, "y": b})) for a, b in rng.random((16, 2))
    ]
    best_config, best = max(observations, key=lambda o: o[1])

    child = make_strategy("Bayesian", space, maximize=True, seed=7)
    child.warm_start(observations)
    assert child._native.exploit_next == WARM_EXPLOIT == 1
    (first,) = child.ask(1)
    assert child._native.exploit_next == 0  # then the usual alternation
    assert bowl(first) > best  # the model's best bet beats the best observation
    steps = np.abs(np.array([first["x"] - best_config["x"], first["y"] - best_config["y"]]))
    assert np.all(steps <= 0.25 + 1e-12)  # inside the trust region (half-width <= 0.25)

    told = make_strategy("Bayesian", space, maximize=True, seed=7)
    for config, value in observations:
        told.tell(config, value)
    assert told._native.exploit_next == 0
    transfer = make_strategy("Bayesian", space, maximize=True, seed=7)
    transfer.warm_start([], [], observations)
    assert transfer._native.exploit_next == 0
    skopt = BayesianStrategy(space, maximize=True, seed=7, engine="skopt")
    skopt.warm_start(observations)
    assert skopt._native.exploit_next == 0 and skopt.ask(1)  # other engines: as before


def test_identical_static_values_are_compared_as_the_command_receives_them(tmp_path):
    """SageMaker's request shape sends every static value as text: ``"2"`` is the parent's
    ``2`` on argv, so the child is not refused (it was, naming '2' and 2)."""
    run(tmp_path, "parent", max_jobs=2)
    static = {"epochs": "2"}
    child = run(
        tmp_path,
        "child",
        max_jobs=1,
        max_parallel_jobs=1,
        job_definition={**job(tmp_path)["job_definition"], "static_hyperparameters": static},
        warm_start_config={"parents": ["parent"], "type": "IdenticalDataAndAlgorithm"},
    )
    assert child.describe()["warm_start"]["observations"] == 2


def test_an_identical_parent_of_a_range_retyped_between_integer_and_continuous_is_kept():
    """x retyped integer -> continuous: the parent's x=2 and the child's 2.0 were two
    configurations (the child re-ran all of the parent's, "4 of 4 used" said all the same);
    continuous -> integer: 2.0 was dropped as outside 0..4. 2.5 is no integer configuration."""
    from tuner import CategoricalParameter, ContinuousParameter, IntegerParameter
    from tuner.space import SearchSpace
    from tuner.warm_start import IDENTICAL, ParentResults, take

    y = CategoricalParameter([0.2, 0.6])
    ran = [({"x": 0, "y": 0.2}, 0.5), ({"x": 2, "y": 0.6}, 0.7)]
    continuous = SearchSpace({"x": ContinuousParameter(0, 4), "y": y})
    taken = take(IDENTICAL, continuous, True, [ParentResults("p", {}, ran)])
    assert [c for c, _ in taken.observations] == [{"x": 0.0, "y": 0.2}, {"x": 2.0, "y": 0.6}]
    assert {continuous.key(c) for c, _ in taken.observations} == {
        continuous.key({"x": 0.0, "y": 0.2}),
        continuous.key({"x": 2.0, "y": 0.6}),
    }
    floats = [({"x": 2.0, "y": 0.2}, 0.5), ({"x": 2.5, "y": 0.2}, 0.9)]
    integer = SearchSpace({"x": IntegerParameter(0, 4), "y": y})
    taken = take(IDENTICAL, integer, True, [ParentResults("p", {}, floats)])
    assert [c for c, _ in taken.observations] == [{"x": 2, "y": 0.2}]
    assert type(taken.observations[0][0]["x"]) is int
    assert (taken.parents[0].used, taken.parents[0].dropped) == (1, 1)


def test_sagemakers_helpers_make_children_of_a_fitted_tuner(tmp_path):
    """``identical_dataset_and_algorithm_tuner`` / ``transfer_learning_tuner``: a new tuner on
    the same store, this tuning job and the additional parents as its parents."""
    parent = run(tmp_path, "parent", max_jobs=3)
    run(tmp_path, "other", max_jobs=2, random_seed=2)
    identical = parent.identical_dataset_and_algorithm_tuner(additional_parents=["other", "parent"])
    assert identical.name is None and identical.definition.name is None
    assert identical.definition.warm_start_config == WarmStartConfig(
        parents=["parent", "other"], type="IdenticalDataAndAlgorithm"
    )
    identical.fit(progress=False)
    described = identical.describe()["warm_start"]
    assert [p["name"] for p in described["parents"]] == ["parent", "other"]
    assert described["observations"] == 5  # 3 + 2 parents' jobs, none of the child's
    assert len(identical.training_jobs()) == 3  # the parent's max_jobs, its own jobs only

    longer = {**job(tmp_path)["job_definition"], "static_hyperparameters": {"epochs": 3}}
    transfer = HyperparameterTuner.attach("parent", storage=parent.store.url)
    transfer = transfer.transfer_learning_tuner("other", job_definition=longer)
    assert transfer.definition.job_definition.static_hyperparameters == {"epochs": 3}
    assert transfer.definition.warm_start_config == WarmStartConfig(
        parents=["parent", "other"], type="TransferLearning"
    )
    transfer.fit(progress=False)
    assert transfer.describe()["warm_start"]["type"] == "TransferLearning"
    assert len(names(tmp_path)) == 4


def test_sagemakers_helpers_need_a_fitted_tuner_and_at_most_five_parents(tmp_path):
    unfitted = HyperparameterTuner.from_definition(
        job(tmp_path), storage=f"sqlite:///{tmp_path / 'db.sqlite'}"
    )
    with pytest.raises(TunerError, match=r"not been fitted yet: call fit\(\) first"):
        unfitted.identical_dataset_and_algorithm_tuner()
    parent = run(tmp_path, "parent", max_jobs=1, max_parallel_jobs=1)
    with pytest.raises(ValidationError, match="parents"):
        parent.transfer_learning_tuner([f"p{i}" for i in range(5)])
    with pytest.raises(ValidationError, match="additional_parents must be tuning job names, got 7"):
        parent.transfer_learning_tuner(7)  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="parents must be tuning job names"):
        parent.identical_dataset_and_algorithm_tuner(["no spaces allowed"])
    assert names(tmp_path) == ["parent"]
