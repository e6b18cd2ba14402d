import argparse
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tuner import CategoricalParameter, ContinuousParameter, IntegerParameter, ValidationError
from tuner.parameters import ScalingType, argv_word, parameter_from_dict

BAD_RANGES = [
    (lambda: ContinuousParameter(0.5, 0.1), "min_value < max_value must hold, got min_value=0.5"),
    (lambda: ContinuousParameter(1, 1), "min_value < max_value must hold"),
    (lambda: ContinuousParameter(0, 1, "Logarithmic"), "Logarithmic scaling needs min_value > 0"),
    (lambda: ContinuousParameter(-1, 1, "Logarithmic"), "got min_value=-1"),
    (lambda: ContinuousParameter(0, 1, "ReverseLogarithmic"), "0 <= min_value < max_value < 1"),
    (lambda: ContinuousParameter(-0.1, 0.9, "ReverseLogarithmic"), "got min_value=-0.1"),
    (lambda: ContinuousParameter(0, 1, "Exponential"), "scaling_type must be one of"),
    (lambda: ContinuousParameter("a", 1), "min_value must be a number, got 'a'"),
    (lambda: ContinuousParameter(0, math.inf), "max_value must be finite"),
    (lambda: ContinuousParameter(True, 2), "must be a number, got True"),
    (lambda: IntegerParameter(1.5, 4), "min_value must be an integer, got 1.5"),
    (lambda: IntegerParameter(4, 4), "min_value < max_value must hold, got min_value=4"),
    (lambda: IntegerParameter(0, 8, "Logarithmic"), "needs min_value > 0"),
    (lambda: IntegerParameter(0, 8, "ReverseLogarithmic"), "only defined for continuous"),
    (lambda: CategoricalParameter([]), "at least one choice, got an empty list"),
    (lambda: CategoricalParameter("abc"), "values must be a list of choices, got 'abc'"),
    (lambda: CategoricalParameter([1, 1]), "distinct, got 1 twice"),
    (
        lambda: CategoricalParameter([1, "1"]),
        "as the training command receives them, got 1 and '1'",
    ),
    (lambda: CategoricalParameter(["x", True, "true"]), "got True and 'true' (both 'true')"),
    (lambda: CategoricalParameter([[1]]), "strings, numbers or booleans, got [1]"),
    (lambda: parameter_from_dict({"type": "float"}), "one of continuous, integer, categorical"),
    (
        lambda: parameter_from_dict({"type": "categorical", "values": [1], "value": 2}),
        "unknown key 'value' in a categorical range; its keys are type, values",
    ),
    (lambda: parameter_from_dict([0, 1]), "a range must be a mapping with a 'type', got [0, 1]"),
]


@pytest.mark.parametrize(("make", "message"), BAD_RANGES)
def test_bad_ranges_say_the_rule_and_the_value(make, message):
    with pytest.raises(ValidationError, match=None) as info:
        make()
    assert message in str(info.value)


def test_auto_scaling_rule():
    assert ContinuousParameter(1e-4, 1).scaling_type is ScalingType.LOGARITHMIC
    assert ContinuousParameter(0.1, 1).scaling_type is ScalingType.LINEAR
    assert ContinuousParameter(0, 1).scaling_type is ScalingType.LINEAR
    assert IntegerParameter(1, 1024).scaling_type is ScalingType.LOGARITHMIC


@pytest.mark.parametrize(
    "param",
    [
        ContinuousParameter(1e-4, 1.0, "Logarithmic"),
        ContinuousParameter(0.0, 0.999, "ReverseLogarithmic"),
        ContinuousParameter(-3.0, 5.0, "Linear"),
    ],
)
def test_continuous_round_trip_and_ends(param):
    assert param.from_unit(0.0) == pytest.approx(param.min_value)
    assert param.from_unit(1.0) == pytest.approx(param.max_value)
    for u in (0.1, 0.37, 0.5, 0.93):
        assert param.to_unit(param.from_unit(u)) == pytest.approx(u, abs=1e-9)


def test_a_range_type_and_scaling_are_matched_without_regard_to_case():
    """The one rule of every choice field of a definition (``maximize`` is ``Maximize``)."""
    spec = {"type": "Continuous", "min_value": 1e-3, "max_value": 1, "scaling_type": "logarithmic"}
    assert parameter_from_dict(spec).to_dict() == {
        "type": "continuous",
        "min_value": 1e-3,
        "max_value": 1,
        "scaling_type": "Logarithmic",
    }
    assert parameter_from_dict({"type": "CATEGORICAL", "values": ["a"]}).values == ("a",)
    assert IntegerParameter(1, 8, "LINEAR").scaling_type is ScalingType.LINEAR
    with pytest.raises(ValidationError, match="integer, categorical; got 'cont'"):
        parameter_from_dict({"type": "cont", "min_value": 0, "max_value": 1})


def test_log_scaling_is_uniform_in_log():
    p = ContinuousParameter(1e-4, 1.0, "Logarithmic")
    assert p.from_unit(0.5) == pytest.approx(1e-2)


def test_reverse_log_is_dense_near_one():
    p = ContinuousParameter(0.0, 0.999, "ReverseLogarithmic")
    assert p.from_unit(0.5) == pytest.approx(1 - math.sqrt(0.001), rel=1e-6)
    assert p.from_unit(0.9) > 0.99


def test_integer_values_get_equal_shares_under_linear_scaling():
    p = IntegerParameter(1, 4, "Linear")
    counts = {v: 0 for v in range(1, 5)}
    for i in range(4000):
        counts[p.from_unit((i + 0.5) / 4000)] += 1
    assert set(counts.values()) == {1000}
    assert all(p.from_unit(p.to_unit(v)) == v for v in range(1, 5))


def test_categorical_values_keep_their_types():
    p = CategoricalParameter([32, "sgd", 0.5, True])
    assert p.values == (32, "sgd", 0.5, True)
    assert p.to_dict()["values"] == [32, "sgd", 0.5, True]
    # 1 and True are different choices
    assert CategoricalParameter([1, True]).index(True) == 1


def test_integer_grids_give_as_many_distinct_values_as_asked():
    """A log-scaled integer grid lost values that rounded onto each other ([1, 3, 8, 20] for
    5), and one point on an integer range divided by zero."""
    assert IntegerParameter(1, 20, "Logarithmic").grid(5) == [1, 2, 3, 8, 20]
    for lo, hi, scaling in [(1, 100, "Logarithmic"), (1, 1000, "Logarithmic"), (-5, 50, "Linear")]:
        for points in range(2, 12):
            values = IntegerParameter(lo, hi, scaling).grid(points)
            assert len(values) == points and values == sorted(set(values))
            assert values[0] == lo and values[-1] == hi
    assert IntegerParameter(1, 10).grid(1) == [6] and IntegerParameter(1, 3).grid(1) == [2]


def test_log_ranges_give_their_bounds_exactly_and_grids_tidy_values():
    """from_unit(0) gave 1.0000000000000004e-06 for 1e-06; a decade grid gave
    0.0010000000000000002, and these reached the job's argv."""
    assert ContinuousParameter(1e-6, 1.0, "Logarithmic").from_unit(0.0) == 1e-6
    assert ContinuousParameter(1e-6, 0.1, "Logarithmic").from_unit(1.0) == 0.1
    assert ContinuousParameter(1e-4, 1.0, "Logarithmic").grid(5) == [1e-4, 1e-3, 1e-2, 0.1, 1.0]
    assert ContinuousParameter(0.0, 0.3, "Linear").grid(4) == [0.0, 0.1, 0.2, 0.3]


def test_a_range_too_narrow_for_its_scaling_is_refused():
    """Two bounds whose logarithms are equal divided by zero in to_unit."""
    with pytest.raises(ValidationError, match="too narrow for Logarithmic scaling"):
        ContinuousParameter(1e300, math.nextafter(1e300, 2e300), "Logarithmic")


def test_numpy_numbers_are_taken_as_the_numbers_they_hold():
    """np.int64(1) was refused as "not an integer" (and as a categorical value, and as
    max_jobs), while np.float64 passed: values computed with NumPy must work."""
    import numpy as np

    from tuner import TuningJobDefinition

    assert IntegerParameter(np.int64(1), np.int32(5)).to_dict()["min_value"] == 1
    assert ContinuousParameter(np.float32(0.5), np.int64(2)).max_value == 2.0
    choices = CategoricalParameter([np.int64(1), np.float64(0.5), np.bool_(True), np.str_("a")])
    assert [type(v) for v in choices.values] == [int, float, bool, str]
    definition = TuningJobDefinition.parse(
        {
            "objective_metric_name": "a",
            "metric_definitions": [{"Name": "a", "Regex": "a=([0-9.]+)"}],
            "hyperparameter_ranges": {"n": IntegerParameter(np.int64(1), np.int64(5)).to_dict()},
            "job_definition": {"command": ["train"], "max_runtime": np.float32(60)},
            "max_jobs": np.int64(4),
            "max_parallel_jobs": np.int8(2),
            "random_seed": np.uint32(7),
        }
    )
    assert (definition.max_jobs, definition.max_parallel_jobs, definition.random_seed) == (4, 2, 7)
    assert type(definition.max_jobs) is int
    with pytest.raises(ValidationError, match="max_jobs"):  # a fraction stays refused
        TuningJobDefinition.parse({**definition.to_json(), "max_jobs": np.float64(2.5)})


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_argparse_reads_every_float_word_back_as_the_same_float(value: float) -> None:
    """``--x -8.2e-05`` was taken by argparse for an option: the job failed with 'expected
    one argument' (a range [-1e-4, 1e-4] failed 4 jobs of 6)."""
    parser = argparse.ArgumentParser(exit_on_error=False)
    parser.add_argument("--x", type=float)
    assert parser.parse_args(["--x", argv_word(value)]).x == value
