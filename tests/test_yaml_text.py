"""YAML definitions read as YAML 1.2 (``tuner.yaml_text``): what users write means what it says."""

from __future__ import annotations

import pytest

from tuner import ValidationError
from tuner.definition import TuningJobDefinition
from tuner.yaml_text import load

JOB = """
strategy: Random
objective_metric_name: score
max_jobs: 4
early_stopping_type: Off
metric_definitions: [{Name: score, Regex: "score=([0-9.]+)"}]
hyperparameter_ranges:
  learning_rate: {type: continuous, min_value: 1e-3, max_value: 1.0, scaling_type: Logarithmic}
  country: {type: categorical, values: [NO, SE, on, yes]}
job_definition: {command: [python, train.py], static_hyperparameters: {use_bn: off}}
"""


def test_yaml_1_1_booleans_are_text_and_exponents_are_numbers(tmp_path):
    """``Off`` was read as False and refused (SageMaker's own value); ``NO``/``on`` reached
    argv as false/true; ``1e-3`` was text, refused as not a number."""
    path = tmp_path / "job.yaml"
    path.write_text(JOB)
    d = TuningJobDefinition.load(path)
    assert d.early_stopping_type == "Off"
    assert d.hyperparameter_ranges["learning_rate"]["min_value"] == 0.001
    assert d.hyperparameter_ranges["country"]["values"] == ["NO", "SE", "on", "yes"]
    assert d.job_definition.static_hyperparameters == {"use_bn": "off"}


def test_plain_scalars_follow_the_yaml_1_2_core_schema():
    doc = "[true, False, TRUE, 4, -1E5, .5, 1., .inf, -.Inf, 1_000, '1e-3', y, 0.1e+2, 1e3x]"
    numbers = [True, False, True, 4, -1e5, 0.5, 1.0, float("inf"), float("-inf")]
    assert load(doc)[:-1] == [*numbers, "1_000", "1e-3", "y", 10.0]
    assert load(doc)[-1] == "1e3x"


def test_a_key_given_twice_is_refused_with_its_line(tmp_path):
    """The last ``max_jobs`` silently won before, and a second range replaced the first."""
    path = tmp_path / "job.yaml"
    path.write_text(JOB + "max_jobs: 8\n")
    with pytest.raises(ValidationError, match=r"the key 'max_jobs' is given twice(.|\n)*line 11"):
        TuningJobDefinition.load(path)
    merged = load("base: &b {x: 1, y: 2}\nother:\n  <<: *b\n  x: 3\n")  # merge keys override
    assert merged["other"] == {"x": 3, "y": 2}


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("010", 10),  # YAML 1.1: octal 8, so [016, 032, 064] trained on 14, 26, 52
        ("[016, 032, 064]", [16, 32, 64]),
        ("0o10", 8),
        ("0x1F", 31),
        ("-5", -5),
        ("+7", 7),
        ("1:30", "1:30"),  # YAML 1.1: 90 (base 60), so max_tuning_runtime: 1:30 was 90 s
        ("1_000", "1_000"),  # YAML 1.1: 1000
        ("2024-01-01", "2024-01-01"),  # YAML 1.1: a date, then refused as no static value
        ("007.5", 7.5),
        ("=", "="),
    ],
)
def test_integers_and_dates_are_read_as_yaml_1_2_reads_them(text, value):
    assert load(f"a: {text}") == {"a": value}


def test_aliases_that_expand_to_a_billion_values_are_refused_at_once(tmp_path):
    """Nine levels of ten aliases hung `tuner run` (every alias was expanded first)."""
    lines = ["l0: &l0 [" + ", ".join(["x"] * 10) + "]"]
    lines += [f"l{k}: &l{k} [" + ", ".join([f"*l{k - 1}"] * 10) + "]" for k in range(1, 9)]
    path = tmp_path / "bomb.yaml"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ValidationError, match="expands to more than 1,000,000 values"):
        TuningJobDefinition.load(path)
