import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tuner import (
    CategoricalParameter,
    ContinuousParameter,
    IntegerParameter,
    SearchSpace,
    ValidationError,
)

SPACE = SearchSpace(
    {
        "learning_rate": ContinuousParameter(1e-4, 1.0, "Logarithmic"),
        "momentum": ContinuousParameter(0.0, 0.99, "ReverseLogarithmic"),
        "batch_size": IntegerParameter(16, 512, "Logarithmic"),
        "layers": IntegerParameter(1, 6),
        "optimizer": CategoricalParameter(["sgd", "adam", 3]),
    }
)


def test_dimensions_one_per_numeric_and_one_hot_per_categorical():
    assert SPACE.dimensions == 4 + 3


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(0, 1), min_size=7, max_size=7))
def test_decode_then_encode_then_decode_is_stable(u):
    config = SPACE.decode(np.array(u))
    SPACE.validate(config)
    assert SPACE.decode(SPACE.encode(config)) == config


def test_points_outside_the_cube_are_clipped():
    config = SPACE.decode(np.array([-1, 2, -5, 9, 0, 0, 0]))
    assert config["learning_rate"] == pytest.approx(1e-4)
    assert config["momentum"] == pytest.approx(0.99)
    assert config["batch_size"] == 16
    assert config["layers"] == 6


def test_uniform_cube_gives_uniform_categories():
    rng = np.random.default_rng(0)
    choices = [SPACE.decode(u)["optimizer"] for u in SPACE.sample(rng, 3000)]
    for value in ("sgd", "adam", 3):
        assert 900 < choices.count(value) < 1100


def test_validate_names_missing_extra_and_out_of_range():
    good = SPACE.decode(np.full(7, 0.5))
    with pytest.raises(ValidationError, match=r"missing \['layers'\]"):
        SPACE.validate({k: v for k, v in good.items() if k != "layers"})
    with pytest.raises(ValidationError, match="layers=9 is outside its range"):
        SPACE.validate({**good, "layers": 9})


def test_size_and_grid():
    small = SearchSpace({"a": IntegerParameter(1, 3), "b": CategoricalParameter(["x", "y"])})
    assert small.size() == 6
    assert len(small.grid(5)) == 6
    assert SPACE.size() == float("inf")


@pytest.mark.parametrize(
    ("ranges", "message"),
    [
        ({}, "at least one parameter"),
        ({"-lr": ContinuousParameter(0, 1)}, "that do not start with '-'"),
        ({"lr": (0, 1)}, "must be a ContinuousParameter"),
    ],
)
def test_bad_spaces(ranges, message):
    with pytest.raises(ValidationError, match=message):
        SearchSpace(ranges)
