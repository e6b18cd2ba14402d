"""Every door refuses the same bad definitions up front, naming field, rule and value.

One table of bad definitions is fed to the Python API (``HyperparameterTuner.from_definition``),
the YAML file of ``tuner run``, the REST service (our shape and, where the shape can say it,
SageMaker's request shape), on a real uvicorn server. Each must be refused before anything is
stored: the store and the service hold no tuning job afterwards.
"""

from __future__ import annotations

import copy
import json
import math
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from api.sagemaker import in_sagemaker_terms
from tests.api.conftest import Server, client, definition
from tuner import HyperparameterTuner, ValidationError
from tuner.cli import main
from tuner.storage import Store

Mutation = Callable[[dict[str, Any]], None]


def _set(path: str, value: Any) -> Mutation:
    """A change setting one field of a definition or a request (``a.b.0.c``: list items by
    index), making the objects on the way."""

    def mutate(d: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node: Any = d
        for part in parents:
            node = node[int(part)] if part.isdigit() else node.setdefault(part, {})
        node[last] = value

    return mutate


def _range(name: str, spec: dict[str, Any]) -> Mutation:
    def mutate(d: dict[str, Any]) -> None:
        d["hyperparameter_ranges"] = {name: spec}

    return mutate


def _nested(depth: int) -> dict[str, Any]:
    node: dict[str, Any] = {}
    for _ in range(depth):
        node = {"a": node}
    return node


# (id, mutation, words the refusal must contain, expressible in SageMaker's shape)
CASES: list[tuple[str, Mutation, list[str], bool]] = [
    (
        "static-dash",
        lambda d: d["job_definition"]["static_hyperparameters"].update({"-v": 1}),
        ["static hyperparameter names cannot start with '-'", "'-v'"],
        False,
    ),
    ("unknown-option", _set("strategy_options", {"bogus": 1}), ["unknown option 'bogus'"], False),
    (
        "bad-engine",
        lambda d: d.update(strategy="Bayesian", strategy_options={"engine": "bogus"}),
        ["engine must be one of", "'bogus'"],
        False,
    ),
    (
        "acq-func-ignored",
        lambda d: d.update(strategy="Bayesian", strategy_options={"acq_func": "LCB"}),
        ["acq_func is an option of engine 'skopt' only", "'LCB'"],
        False,
    ),
    (
        "tpe-startup",
        lambda d: d.update(strategy="TPE", strategy_options={"n_startup_trials": "3"}),
        ["n_startup_trials must be an integer >= 0", "'3'"],
        False,
    ),
    (
        "hyperband-options",
        lambda d: d.update(strategy="Hyperband", strategy_options={"min_resource": 2}),
        ["belong in strategy_config", "'min_resource': 2"],
        False,
    ),
    (
        "grid-points",
        lambda d: d.update(strategy="Grid", strategy_options={"points_per_continuous": -1}),
        ["points_per_continuous must be an integer in 1..1000000", "-1"],
        False,
    ),
    (
        "grid-huge",
        lambda d: d.update(strategy="Grid", strategy_options={"points_per_continuous": 10**7}),
        ["points_per_continuous", "10000000"],
        False,
    ),
    (
        "nested-options",
        lambda d: d.update(strategy="Bayesian", strategy_options={"lie": _nested(30)}),
        ["strategy_options.lie must be a string, number, boolean or null"],
        False,
    ),
    (  # 500 levels overflowed the recursion that reads a definition: a 500
        "nested-too-deep",
        lambda d: d["job_definition"].update(environment=_nested(100)),
        ["a tuning job definition nests objects and lists at most 64 deep"],
        False,
    ),
    ("seed", _set("random_seed", -1), ["random_seed", "greater than or equal to 0", "-1"], True),
    (
        "integer-huge",
        _range("x", {"type": "integer", "min_value": -(10**400), "max_value": 10**400}),
        ["min_value must lie within", "2**53"],
        True,
    ),
    (
        "categorical-nan",
        _range("x", {"type": "categorical", "values": [1.0, math.nan]}),
        ["categorical values must be finite", "nan"],
        False,  # SageMaker's categorical values are strings
    ),
    ("max-jobs-true", _set("max_jobs", True), ["max_jobs", "valid integer", "True"], False),
    ("max-jobs-text", _set("max_jobs", "4"), ["max_jobs", "valid integer", "'4'"], False),
    ("grace-true", _set("job_definition.grace_period", True), ["grace_period", "True"], False),
    (
        "continuous-huge",  # an int beyond a float's range: OverflowError, a 500 before
        _range("x", {"type": "continuous", "min_value": 0, "max_value": 10**400}),
        ["max_value must be finite"],
        True,
    ),
    (
        "surrogate-argument",  # stored and run before, then a 500 on every describe
        _set("job_definition.command", ["python", "train.py", "x\ud800"]),
        ["job_definition.command[2]", "encodable as UTF-8", "\\ud800"],
        True,
    ),
    (
        "surrogate-tag",
        _set("tags", {"team": "\udc00"}),
        ["tags.team", "encodable as UTF-8"],
        False,
    ),
    (
        "width-overflow",
        _range("x", {"type": "continuous", "min_value": -1.7e308, "max_value": 1.7e308}),
        ["max_value - min_value must be a finite float"],
        True,
    ),
    (
        "nul-name",
        _range("x\x00y", {"type": "continuous", "min_value": 0, "max_value": 1}),
        ["hyperparameter names", "NUL", "x\\x00y"],
        True,
    ),
    (
        "nul-environment-value",  # the refusal named the key only
        _set("job_definition.environment", {"A": "x\x00y"}),
        ["values cannot hold NUL", "'A': 'x\\x00y'"],
        False,
    ),
    (
        "nul-working-directory",  # accepted before; every job then failed to start
        _set("job_definition.working_directory", "/tmp/a\x00b"),
        ["working_directory must be a path without NUL", "'/tmp/a\\x00b'"],
        False,
    ),
    (
        "missing-working-directory",  # accepted before; every job then failed to start
        _set("job_definition.working_directory", "/nonexistent/qa-folder"),
        ["must be an existing folder for the local launcher", "'/nonexistent/qa-folder'"],
        False,
    ),
    (
        "s3-endpoint-without-scheme",  # boto3's ValueError crashed the shutdown
        _set("job_definition.s3_endpoint_url", "localhost:9000"),
        ["s3_endpoint_url must be an http:// or https:// URL", "'localhost:9000'"],
        False,
    ),
    (
        "slurm-partial-shards",  # stored, then an internal error at the first start
        _set(
            "job_definition",
            {
                "launcher": "slurm",
                "command": ["python"],
                "gpus_per_job": 0.5,
                "slurm_shards_per_gpu": 3,
            },
        ),
        ["must be a whole number of shards, got 1.5"],
        False,
    ),
    (
        "gpus-inf",
        _set("job_definition.gpus_per_job", math.inf),
        ["gpus_per_job", "finite number", "inf"],
        False,
    ),
    (
        "gpu-ids-two-in-one",  # "0,1" took slots of its own beside "0": one GPU, two names
        _set("job_definition.gpus", ["0,1"]),
        ["gpus must be GPU indices (0, 1, ...) or UUIDs", "'0,1'"],
        False,
    ),
    (
        "gpu-ids-one-twice",
        _set("job_definition.gpus", ["0", "00"]),
        ["gpus must name each GPU once", "['0', '00']"],
        False,
    ),
    (
        "target-nan",
        _set("target_objective_value", math.nan),
        ["target_objective_value", "nan"],
        True,
    ),
    ("max-jobs", _set("max_jobs", 10**9), ["max_jobs", "100000", "1000000000"], True),
    (
        "tuning-runtime",
        _set("max_tuning_runtime", -5),
        ["max_tuning_runtime", "greater than 0", "-5"],
        True,
    ),
    (
        "regex-backref",
        _set("metric_definitions", [{"Name": "accuracy", "Regex": r"(a)\1"}]),
        ["valid RE2 syntax", "backreferences"],
        True,
    ),
    (
        "regex-too-large",
        _set(
            "metric_definitions",
            [{"Name": "accuracy", "Regex": r"(?:\w{1,9}\W{0,3}){1,80}acc=([0-9.]+)"}],
        ),
        ["at most 1000 RE2 instructions", "got 5772"],
        True,
    ),
    (
        "metric-name-too-long",  # PostgreSQL's column took 256: the tuning job failed mid-run
        lambda d: d["metric_definitions"].append({"Name": "m" * 300, "Regex": "m=([0-9.]+)"}),
        ["a metric's Name must be at most 255 characters", "(300 characters)"],
        True,
    ),
    (
        "metric-name-nul",
        lambda d: d["metric_definitions"].append({"Name": "acc\x00nul", "Regex": "m=([0-9])"}),
        ["without NUL bytes", "'acc\\x00nul'"],
        True,
    ),
    (
        "tracking-uri-without-scheme",
        _set("tracking_uri", "localhost:5000"),
        ["tracking_uri must be an MLflow tracking URI", "'localhost:5000'"],
        False,
    ),
    (
        "warm-start-type",
        _set("warm_start_config", {"parents": ["p1"], "type": "Identical"}),
        [
            "warm_start_config.type",
            "'IdenticalDataAndAlgorithm' or 'TransferLearning'",
            "Identical",
        ],
        True,
    ),
    (
        "warm-start-no-parent",
        _set("warm_start_config", {"parents": [], "type": "TransferLearning"}),
        ["warm_start_config.parents", "at least 1 item", "[]"],
        True,
    ),
    (
        "warm-start-six-parents",
        _set(
            "warm_start_config",
            {"parents": [f"p{i}" for i in range(6)], "type": "TransferLearning"},
        ),
        ["warm_start_config.parents", "at most 5 items", "6"],
        True,
    ),
    (
        "warm-start-twice",
        _set("warm_start_config", {"parents": ["p1", "p2", "p1"], "type": "TransferLearning"}),
        ["warm_start_config.parents", "parents must be distinct", "['p1'] more than once"],
        True,
    ),
    (
        "warm-start-grid",
        lambda d: d.update(
            strategy="Grid", warm_start_config={"parents": ["p1"], "type": "TransferLearning"}
        ),
        [
            "warm_start_config.type",
            "'Grid' takes ['IdenticalDataAndAlgorithm']",
            "'TransferLearning'",
        ],
        True,
    ),
    (
        "warm-start-itself",
        _set("warm_start_config", {"parents": ["bad-one"], "type": "TransferLearning"}),
        ["cannot be its own parent", "'bad-one'"],
        True,
    ),
]
CASES += [  # stored, then every job failed at start (a QA helper)
    (
        "memory-text",
        _set("job_definition.memory", "abc"),
        ["memory must be a whole number with an optional unit k, m, g or t", "'abc'"],
        False,
    ),
    (
        "docker-memory-too-small",
        lambda d: d["job_definition"].update(
            launcher="docker", image="trainer:1", command=None, memory="4m"
        ),
        ["memory on Docker must be at least 6m", "'4m'"],
        False,
    ),
    (
        "slurm-options-export",
        lambda d: d["job_definition"].update(launcher="slurm", slurm_options=["--export=NONE"]),
        ["slurm_options must not set --export", "'--export=NONE'"],
        False,
    ),
]
CASES += [
    ("no-max-jobs", lambda d: d.pop("max_jobs"), ["max_jobs: required, missing"], False),
    (
        "grid-too-large-for-no-max-jobs",
        lambda d: d.update(
            strategy="Grid", strategy_options={"points_per_continuous": 400}, max_jobs=None
        ),
        ["max_jobs left out runs the whole grid", "at most 100000", "got 160000"],
        False,
    ),
    (  # it said "max_jobs: required, missing"
        "grid-too-large-to-build",
        lambda d: d.update(
            strategy="Grid", strategy_options={"points_per_continuous": 2000}, max_jobs=None
        ),
        ["a grid may hold at most 1000000 configurations"],
        False,
    ),
]
IDS = [c[0] for c in CASES]


def bad(mutation: Mutation) -> dict[str, Any]:
    d = copy.deepcopy(definition(name="bad-one"))
    mutation(d)
    return d


def to_sagemaker(d: dict[str, Any]) -> dict[str, Any]:
    """SageMaker's CreateHyperParameterTuningJob request for one of our definitions."""
    ranges: dict[str, list[dict[str, Any]]] = {}
    kinds = {"continuous": "ContinuousParameterRanges", "integer": "IntegerParameterRanges"}
    for name, spec in d["hyperparameter_ranges"].items():
        ranges.setdefault(kinds[spec["type"]], []).append(
            {"Name": name, "MinValue": str(spec["min_value"]), "MaxValue": str(spec["max_value"])}
        )
    config: dict[str, Any] = {
        "Strategy": d["strategy"],
        "RandomSeed": d["random_seed"],
        "HyperParameterTuningJobObjective": {
            "Type": "Maximize",
            "MetricName": d["objective_metric_name"],
        },
        "ResourceLimits": {
            "MaxNumberOfTrainingJobs": d["max_jobs"],
            "MaxParallelTrainingJobs": d["max_parallel_jobs"],
        },
        "ParameterRanges": ranges,
    }
    if "max_tuning_runtime" in d:
        config["ResourceLimits"]["MaxRuntimeInSeconds"] = d["max_tuning_runtime"]
    if "target_objective_value" in d:
        config["TuningJobCompletionCriteria"] = {
            "TargetObjectiveMetricValue": d["target_objective_value"]
        }
    warm = d.get("warm_start_config")
    extra = (
        {
            "WarmStartConfig": {
                "ParentHyperParameterTuningJobs": [
                    {"HyperParameterTuningJobName": p} for p in warm["parents"]
                ],
                "WarmStartType": warm["type"],
            }
        }
        if warm
        else {}
    )
    return {
        **extra,
        "HyperParameterTuningJobName": d["name"],
        "HyperParameterTuningJobConfig": config,
        "TrainingJobDefinition": {
            "AlgorithmSpecification": {
                "ContainerEntrypoint": d["job_definition"]["command"],
                "MetricDefinitions": d["metric_definitions"],
            },
            "StaticHyperParameters": {"epochs": "2"},
        },
    }


def post(http: httpx.Client, body: dict[str, Any]) -> httpx.Response:
    """POST as JSON that may spell NaN and Infinity, as Python's and JavaScript's encoders can."""
    content = json.dumps(body, allow_nan=True)
    return http.post("/tuning-jobs", content=content, headers={"content-type": "application/json"})


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    folder = tmp_path_factory.mktemp("bad-definitions")
    server = Server(f"sqlite:///{folder / 'tuner.db'}", folder / "runs").start()
    try:
        with client(server) as http:
            yield http
            stored = {job["name"] for job in http.get("/tuning-jobs").json()["items"]}
            refused = {"bad-one", "docker-one", "too-parallel"}
            assert not stored & refused, "a refused definition was stored"
            assert http.get("/healthz").status_code == 200
    finally:
        server.stop()


def test_the_good_definition_is_accepted_by_the_python_door(tmp_path: Path) -> None:
    tuner = HyperparameterTuner.from_definition(definition(), storage=f"sqlite:///{tmp_path}/t.db")
    assert tuner is not None


@pytest.mark.parametrize(("case", "mutation", "words", "sagemaker"), CASES, ids=IDS)
def test_python_door(
    tmp_path: Path, case: str, mutation: Mutation, words: list[str], sagemaker: bool
) -> None:
    url = f"sqlite:///{tmp_path}/t.db"
    with pytest.raises(ValidationError) as info:
        HyperparameterTuner.from_definition(bad(mutation), storage=url)
    for word in words:
        assert word in str(info.value)
    assert Store(url).list_tuning_jobs() == []


@pytest.mark.parametrize(("case", "mutation", "words", "sagemaker"), CASES, ids=IDS)
def test_yaml_door(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    case: str,
    mutation: Mutation,
    words: list[str],
    sagemaker: bool,
) -> None:
    config = tmp_path / "bad.yaml"
    config.write_text(yaml.safe_dump(bad(mutation)))
    url = f"sqlite:///{tmp_path}/t.db"
    assert main(["--storage", url, "run", str(config), "--no-progress"]) == 2
    err = capsys.readouterr().err
    for word in words:
        assert word in err
    assert Store(url).list_tuning_jobs() == []


@pytest.mark.parametrize(("case", "mutation", "words", "sagemaker"), CASES, ids=IDS)
def test_rest_door(
    service: httpx.Client, case: str, mutation: Mutation, words: list[str], sagemaker: bool
) -> None:
    response = post(service, bad(mutation))
    assert response.status_code == 400, response.text
    for word in words:
        assert word in response.json()["detail"]


@pytest.mark.parametrize(
    ("case", "mutation", "words", "sagemaker"),
    [c for c in CASES if c[3]],
    ids=[c[0] for c in CASES if c[3]],
)
def test_sagemaker_door(
    service: httpx.Client, case: str, mutation: Mutation, words: list[str], sagemaker: bool
) -> None:
    response = post(service, to_sagemaker(bad(mutation)))
    assert response.status_code == 400, response.text
    detail = response.json()["detail"]
    assert any(in_sagemaker_terms(word) in detail for word in words), detail
    assert not _OURS.search(detail), detail


@pytest.mark.parametrize(
    ("ranges", "words"),
    [
        (  # the integer range replaced the continuous one, silently
            {
                "ContinuousParameterRanges": [{"Name": "x", "MinValue": "0", "MaxValue": "1"}],
                "IntegerParameterRanges": [{"Name": "x", "MinValue": "1", "MaxValue": "5"}],
            },
            "IntegerParameterRanges[0].Name: each hyperparameter has one range, got a second "
            "range for 'x'",
        ),
        (
            {"CategoricalParameterRanges": [{"Name": "c", "Values": ["a"]}] * 2},
            "CategoricalParameterRanges[1].Name: each hyperparameter has one range",
        ),
        (  # it said 'must be a number'; a JSON 2.5 was cut to 2
            {"IntegerParameterRanges": [{"Name": "n", "MinValue": "1", "MaxValue": "2.5"}]},
            "IntegerParameterRanges[0].MaxValue must be an integer, got '2.5'",
        ),
        (
            {"IntegerParameterRanges": [{"Name": "n", "MinValue": 1, "MaxValue": 2.5}]},
            "IntegerParameterRanges[0].MaxValue must be an integer, got 2.5",
        ),
    ],
)
def test_sagemaker_ranges_are_one_per_name_and_integers_whole(
    service: httpx.Client, ranges: dict[str, Any], words: str
) -> None:
    request = to_sagemaker(definition(name="sm-ranges"))
    request["HyperParameterTuningJobConfig"]["ParameterRanges"] = ranges
    response = post(service, request)
    assert response.status_code == 400, response.text
    assert words in response.json()["detail"]


def _config(request: dict[str, Any]) -> dict[str, Any]:
    config: dict[str, Any] = request["HyperParameterTuningJobConfig"]
    return config


# (id, change to a good SageMaker request, words the refusal must contain): fields SageMaker
# does not have, and SageMaker features we lack, were silently dropped (the job ran without them)
SAGEMAKER_MISTAKES: list[tuple[str, Callable[[dict[str, Any]], None], list[str]]] = [
    (
        "misspelt-limit",
        lambda r: _config(r)["ResourceLimits"].update(MaxParalellTrainingJobs=4),
        [
            "HyperParameterTuningJobConfig.ResourceLimits.MaxParalellTrainingJobs: SageMaker "
            "has no such field",
            "did you mean 'MaxParallelTrainingJobs'?",
        ],
    ),
    (
        "misspelt-early-stopping",
        lambda r: _config(r).update(TrainingJobEarlyStopingType="Auto"),
        ["TrainingJobEarlyStopingType", "did you mean 'TrainingJobEarlyStoppingType'?"],
    ),
    (
        "misspelt-top-level",
        lambda r: r.update(WarmStartConfg={"WarmStartType": "TransferLearning"}),
        ["WarmStartConfg: SageMaker has no such field", "did you mean 'WarmStartConfig'?"],
    ),
    (
        "misspelt-range-field",
        lambda r: _config(r)["ParameterRanges"]["ContinuousParameterRanges"][0].update(
            Scaling="Logarithmic"
        ),
        ["ParameterRanges.ContinuousParameterRanges[0].Scaling: SageMaker has no such field"],
    ),
    (  # our own field names in a SageMaker request were "renamed" to the fields they mean
        "our-job-name-field",
        lambda r: r.update(name="x"),
        ["name: SageMaker has no such field"],
    ),
    (
        "misspelt-stopping-condition",
        lambda r: r["TrainingJobDefinition"].update(StoppingCondition={"MaxRuntimeInSecond": 9}),
        ["TrainingJobDefinition.StoppingCondition.MaxRuntimeInSecond", "'MaxRuntimeInSeconds'"],
    ),
    (
        "convergence-enabled",
        lambda r: _config(r).update(
            TuningJobCompletionCriteria={
                "ConvergenceDetected": {"CompleteOnConvergence": "Enabled"}
            }
        ),
        ["automatic convergence detection is not supported, got 'Enabled'"],
    ),
    (
        "convergence-misspelt-value",
        lambda r: _config(r).update(
            TuningJobCompletionCriteria={"ConvergenceDetected": {"CompleteOnConvergence": "Yes"}}
        ),
        ["CompleteOnConvergence must be 'Disabled' or 'Enabled', got 'Yes'"],
    ),
    (
        "warm-start-empty",
        lambda r: r.update(WarmStartConfig={}),
        ["WarmStartConfig.ParentHyperParameterTuningJobs must be a list"],
    ),
    (
        "algorithm-name",
        lambda r: r["TrainingJobDefinition"]["AlgorithmSpecification"].update(
            AlgorithmName="xgboost"
        ),
        ["AlgorithmName: SageMaker's algorithms are not available here"],
    ),
    (
        "auto-parameters",
        lambda r: _config(r)["ParameterRanges"].update(
            AutoParameters=[{"Name": "z", "ValueHint": "0.1"}]
        ),
        ["AutoParameters: automatic ranges are not supported"],
    ),
    (
        "several-definitions",
        lambda r: r.update(TrainingJobDefinitions=[r["TrainingJobDefinition"]]),
        ["several training job definitions in one tuning job are not supported"],
    ),
    ("bad-tags", lambda r: r.update(Tags=[{"Key": "team"}]), ['Tags must be a list of {"Key"']),
    (
        "tag-twice",
        lambda r: r.update(Tags=[{"Key": "a", "Value": "1"}, {"Key": "a", "Value": "2"}]),
        ["Tags must have distinct keys, got ['a'] more than once"],
    ),
    (
        "tag-key-a-list",
        lambda r: r.update(Tags=[{"Key": ["a"], "Value": "1"}]),
        ["Tags' keys must be strings, got [['a']]"],
    ),
    (
        "no-max-jobs-without-grid",
        lambda r: _config(r)["ResourceLimits"].pop("MaxNumberOfTrainingJobs"),
        ["HyperParameterTuningJobConfig.ResourceLimits.MaxNumberOfTrainingJobs: required, missing"],
    ),
]


@pytest.mark.parametrize(
    ("case", "change", "words"), SAGEMAKER_MISTAKES, ids=[c[0] for c in SAGEMAKER_MISTAKES]
)
def test_sagemaker_fields_it_does_not_have_or_we_lack_are_refused(
    service: httpx.Client, case: str, change: Callable[[dict[str, Any]], None], words: list[str]
) -> None:
    request = to_sagemaker(definition(name="bad-one"))
    change(request)
    response = post(service, request)
    assert response.status_code == 400, response.text
    for word in words:
        assert word in response.json()["detail"]


_X = "HyperParameterTuningJobConfig.ParameterRanges.ContinuousParameterRanges.0"
# Our definition's field names, none of which a SageMaker client sent.
_OURS = re.compile(
    r"\b(max_jobs|max_parallel_jobs|max_tuning_runtime|min_value|max_value|job_definition|"
    r"objective_metric_name|objective_type|random_seed|early_stopping_type|warm_start_config|"
    r"hyperparameter_ranges|metric_definitions|max_runtime)\b"
)


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (
            _set("HyperParameterTuningJobConfig.ResourceLimits.MaxNumberOfTrainingJobs", 0),
            "HyperParameterTuningJobConfig.ResourceLimits.MaxNumberOfTrainingJobs: Input should "
            "be greater than or equal to 1, got 0",
        ),
        (
            _set("HyperParameterTuningJobConfig.ResourceLimits.MaxParallelTrainingJobs", 9),
            "ResourceLimits.MaxParallelTrainingJobs <= ResourceLimits.MaxNumberOfTrainingJobs "
            "must hold, got ResourceLimits.MaxParallelTrainingJobs=9",
        ),
        (
            _set(f"{_X}.MinValue", "2"),
            "HyperParameterTuningJobConfig.ParameterRanges: x: MinValue < MaxValue must hold, "
            "got MinValue=2, MaxValue=1",
        ),
        (
            _set("TrainingJobDefinition.StoppingCondition.MaxRuntimeInSeconds", 0),
            "TrainingJobDefinition.StoppingCondition.MaxRuntimeInSeconds: Input should be "
            "greater than 0, got 0",
        ),
        (
            _set(
                "HyperParameterTuningJobConfig.HyperParameterTuningJobObjective.MetricName", "loss"
            ),
            "HyperParameterTuningJobObjective.MetricName must be one of the metric definitions "
            "['accuracy'], got 'loss'",
        ),
        (
            _set("HyperParameterTuningJobConfig.TrainingJobEarlyStoppingType", "Always"),
            "HyperParameterTuningJobConfig.TrainingJobEarlyStoppingType: Input should be 'Auto' "
            "or 'Off', got 'Always'",
        ),
        (
            _set(
                "WarmStartConfig", {"ParentHyperParameterTuningJobs": [], "WarmStartType": "Both"}
            ),
            "WarmStartConfig.WarmStartType: Input should be 'IdenticalDataAndAlgorithm' or "
            "'TransferLearning', got 'Both'",
        ),
    ],
)
def test_sagemaker_refusals_name_the_fields_of_the_request(
    service: httpx.Client, change: Callable[[dict[str, Any]], None], words: str
) -> None:
    """A SageMaker client is told which of its own fields broke which rule, not which field of
    our definition it was translated to (``max_jobs`` for ``MaxNumberOfTrainingJobs``)."""
    request = to_sagemaker(definition(name="bad-one"))
    change(request)
    response = post(service, request)
    assert response.status_code == 400, response.text
    detail = response.json()["detail"]
    assert words in detail
    assert not _OURS.search(detail), detail


def test_a_range_called_like_one_of_our_fields_keeps_its_name(service: httpx.Client) -> None:
    request = to_sagemaker(definition(name="bad-one"))
    _set(f"{_X}.Name", "max_value")(request)
    _set(f"{_X}.MinValue", "2")(request)
    response = post(service, request)
    assert response.status_code == 400, response.text
    assert "ParameterRanges: max_value: MinValue < MaxValue must hold" in response.json()["detail"]


@pytest.mark.parametrize(
    ("message", "renamed"),
    [
        (  # a value cut short has no closing quote: still the user's text
            "  job_definition.command: got ['--mode max_value --mode max_val",
            "  TrainingJobDefinition.AlgorithmSpecification.ContainerEntrypoint: got "
            "['--mode max_value --mode max_val",
        ),
        (  # a user's key with a hyphen keeps its name
            "  job_definition.environment.my-random_seed: Input should be a valid string, got 1",
            "  TrainingJobDefinition.Environment.my-random_seed: Input should be a valid string, "
            "got 1",
        ),
        (
            "  hyperparameter_ranges: c: values must hold at least one choice, got an empty list",
            "  HyperParameterTuningJobConfig.ParameterRanges: c: Values must hold at least one "
            "choice, got an empty list",
        ),
        (
            "  tags.a: Input should be a valid string, got 5",
            "  Tags.a: Input should be a valid string, got 5",
        ),
        (
            "max_parallel_jobs must be at most 100, got 101",
            "HyperParameterTuningJobConfig.ResourceLimits.MaxParallelTrainingJobs must be at "
            "most 100, got 101",
        ),
    ],
)
def test_in_sagemaker_terms_renames_only_our_fields(message: str, renamed: str) -> None:
    assert in_sagemaker_terms(message) == renamed


def test_in_sagemaker_terms_keeps_quoted_text_and_prose() -> None:
    message = (
        "invalid tuning job definition:\n  definition: got ['max_jobs'] in both\n"
        "  strategy: strategy must be one of ['Random'], got 'x'\n"
        "job_definition.docker_host: the service's own engine runs max_jobs"
    )
    assert in_sagemaker_terms(message) == (
        "invalid tuning job definition:\n  definition: got ['max_jobs'] in both\n"
        "  HyperParameterTuningJobConfig.Strategy: strategy must be one of ['Random'], got 'x'\n"
        "TrainingJobDefinition.docker_host: the service's own engine runs "
        "ResourceLimits.MaxNumberOfTrainingJobs"
    )


def test_a_definition_nested_600_deep_gets_a_400_not_a_500(service: httpx.Client) -> None:
    body = bad(lambda d: d["job_definition"].update(environment=_nested(600)))
    response = post(service, body)
    assert response.status_code == 400, response.text
    assert "nests objects and lists at most 64 deep" in response.json()["detail"]


def test_rest_client_cannot_pick_an_image_or_a_docker_engine(service: httpx.Client) -> None:
    """The test service allows one program and no image: Docker definitions are refused."""
    docker = {"launcher": "docker", "image": "evil:latest", "docker_host": "tcp://10.0.0.1:2375"}
    response = post(service, definition(name="docker-one", job_definition=docker))
    assert response.status_code == 400
    assert (
        "job_definition.image must be one of the images this service allows"
        in (response.json()["detail"])
    )
    assert "'evil:latest'" in response.json()["detail"]


def test_a_service_refuses_more_parallel_jobs_than_its_operator_allows(
    service: httpx.Client,
) -> None:
    """Each tuning job may run up to ``tuner serve --max-parallel-jobs`` training jobs at once
    (default 100): a client cannot start thousands of processes with one request."""
    body = definition(name="too-parallel", max_jobs=500, max_parallel_jobs=101)
    for request in (body, to_sagemaker(body)):
        response = post(service, request)
        assert response.status_code == 400, response.text
        detail = response.json()["detail"]
        assert "got 101" in detail
    assert "max_parallel_jobs must be at most 100" in post(service, body).json()["detail"]
    assert "ResourceLimits.MaxParallelTrainingJobs must be at most 100" in detail


def test_launch_policy_allows_what_the_operator_named() -> None:
    from tuner.definition import JobDefinition
    from tuner.launch_policy import LaunchPolicy

    job = JobDefinition(launcher="docker", image="trainer:1", docker_host="tcp://127.0.0.1:2375")
    with pytest.raises(ValidationError, match="docker_host must be one of the Docker engines"):
        LaunchPolicy().check(job)  # by default: any image, no engine of the client's choosing
    LaunchPolicy(images=["trainer:1"], docker_hosts=["tcp://127.0.0.1:2375"]).check(job)
    with pytest.raises(ValidationError, match="got 'trainer:1'"):
        LaunchPolicy(programs=["python"], docker_hosts=["tcp://127.0.0.1:2375"]).check(job)


@pytest.mark.parametrize(
    "name",
    [
        "LD_PRELOAD",
        "PATH",
        "PYTHONPATH",
        "BASH_ENV",
        "NODE_OPTIONS",
        "BASH_FUNC_echo%%",
        "LUA_INIT",
    ],
)
def test_an_allowed_program_cannot_be_made_to_run_other_code(name: str) -> None:
    """With programs allowed, a job's environment could point the allowed program at other
    code on the machine (a QA helper: LD_PRELOAD and PATH were accepted)."""
    from tuner.definition import JobDefinition
    from tuner.launch_policy import LaunchPolicy

    policy = LaunchPolicy(programs=["/opt/train.sh"], images=["trainer:1"])
    job = JobDefinition(command=["/opt/train.sh"], environment={name: "/tmp/x", "SEED": "1"})
    with pytest.raises(ValidationError, match=rf"other code .* got \[{re.escape(repr(name))}\]"):
        policy.check(job)
    LaunchPolicy().check(job)  # a service that allows any program has nothing to guard
    contained = JobDefinition(launcher="docker", image="trainer:1", environment={name: "/x"})
    policy.check(contained)  # inside an image, the image's own programs
    policy.check(JobDefinition(command=["/opt/train.sh"], environment={"SEED": "1"}))


def test_healthz_answers_while_a_catastrophic_regex_parses_a_log(service: httpx.Client) -> None:
    """``(a+)+$`` against long lines of ``a`` then ``!`` froze a backtracking service."""
    import sys
    import time

    script = "for _ in range(50): print('a' * 100000 + '!', flush=True)\nprint('accuracy=0.5')"
    body = definition(name="evil-regex", max_jobs=1, max_parallel_jobs=1)
    body["job_definition"] = {"command": [sys.executable, "-c", script]}
    body["metric_definitions"].append({"Name": "evil", "Regex": r"(a+)+$"})
    assert post(service, body).status_code == 201
    slowest, deadline = 0.0, time.monotonic() + 60
    while service.get("/tuning-jobs/evil-regex").json()["status"] == "InProgress":
        started = time.monotonic()
        assert service.get("/healthz").status_code == 200
        slowest = max(slowest, time.monotonic() - started)
        assert time.monotonic() < deadline
    done = service.get("/tuning-jobs/evil-regex").json()
    assert done["status"] == "Completed", done
    assert slowest < 2.0, f"/healthz took {slowest:.2f} s while the log was parsed"
    service.post("/tuning-jobs/evil-regex/stop")


MISSING_PARENT = {"parents": ["ghost"], "type": "IdenticalDataAndAlgorithm"}
MISSING_WORDS = ["every parent must be a tuning job in this store", "'ghost'"]


def test_a_missing_parent_is_refused_at_every_door_when_the_job_is_created(
    tmp_path: Path, service: httpx.Client, capsys: pytest.CaptureFixture[str]
) -> None:
    """Parents are read from the store when the job is created: Python ``fit``, ``tuner run``
    (file and ``--warm-start``), REST and SageMaker's shape all refuse, storing nothing."""
    url = f"sqlite:///{tmp_path}/t.db"
    data = definition(name="bad-one", warm_start_config=MISSING_PARENT)
    with pytest.raises(ValidationError) as info:
        HyperparameterTuner.from_definition(data, storage=url).fit(progress=False)
    errors = [str(info.value)]
    config = tmp_path / "bad.yaml"
    config.write_text(yaml.safe_dump(data))
    assert main(["--storage", url, "run", str(config), "--no-progress"]) == 2
    plain = tmp_path / "plain.yaml"
    plain.write_text(yaml.safe_dump(definition(name="bad-one")))
    flags = ["--warm-start", "ghost", "--warm-start-type", "TransferLearning"]
    assert main(["--storage", url, "run", str(plain), *flags, "--no-progress"]) == 2
    errors.append(capsys.readouterr().err)
    assert Store(url).list_tuning_jobs() == []
    for body in (data, to_sagemaker(data)):
        response = post(service, body)
        assert response.status_code == 400, response.text
        errors.append(response.json()["detail"])
    for error in errors:
        for word in MISSING_WORDS:
            assert word in error, error


@pytest.mark.parametrize(
    ("flags", "words"),
    [
        (["--warm-start", "p1", "--warm-start", "p1"], ["parents must be distinct", "['p1']"]),
        (["--warm-start", "p1", "--warm-start-type", "Both"], ["warm_start_config.type", "Both"]),
        (["--warm-start-type", "TransferLearning"], ["--warm-start-type needs parents"]),
    ],
)
def test_warm_start_flags_are_checked_like_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str], words: list[str]
) -> None:
    config = tmp_path / "job.yaml"
    config.write_text(yaml.safe_dump(definition(name="bad-one")))
    url = f"sqlite:///{tmp_path}/t.db"
    assert main(["--storage", url, "run", str(config), *flags, "--no-progress"]) == 2
    err = capsys.readouterr().err
    for word in words:
        assert word in err
    assert Store(url).list_tuning_jobs() == []
