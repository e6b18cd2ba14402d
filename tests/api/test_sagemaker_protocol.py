"""boto3's own SageMaker client against a real ``tuner serve`` (``api.sagemaker_protocol``).

The client signs with SigV4, the service's token as its secret key; nothing is mocked: the
requests are botocore's, the answers are parsed by botocore's SageMaker model.
"""

from __future__ import annotations

import asyncio
import json
import sys
import tarfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import httpx
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from api.sigv4 import SignatureRejected, verify
from tests.api.conftest import TOKEN, Server
from tests.conftest import FAKE_TRAIN
from tests.launchers.conftest import docker_host, docker_image  # noqa: F401 - fixtures
from tests.launchers.docker_image import PYTHON, build_rootfs

NAME = "boto-job"


def sagemaker(server: Server, secret: str = TOKEN) -> Any:
    return boto3.client(
        "sagemaker",
        endpoint_url=server.url,
        region_name="eu-west-1",
        aws_access_key_id="tuner",
        aws_secret_access_key=secret,
        config=Config(retries={"max_attempts": 1}),
    )


def create(server: Server, body: dict[str, Any]) -> httpx.Response:
    """CreateHyperParameterTuningJob over the same protocol with the bearer token, as curl
    would send it: boto3's model of a tuning job's ``AlgorithmSpecification`` has no
    ``ContainerEntrypoint``, so boto3 can only ask for images (Docker, not in this test)."""
    return httpx.post(
        f"{server.url}/",
        content=json.dumps(body),
        headers={
            "Authorization": f"Bearer {TOKEN}",
            "X-Amz-Target": "SageMaker.CreateHyperParameterTuningJob",
            "Content-Type": "application/x-amz-json-1.1",
        },
        timeout=30,
    )


def request(name: str = NAME, jobs: int = 4, sleep: str = "0") -> dict[str, Any]:
    """A CreateHyperParameterTuningJob request (boto3's keyword arguments)."""
    return {
        "HyperParameterTuningJobName": name,
        "HyperParameterTuningJobConfig": {
            "Strategy": "Random",
            "RandomSeed": 1,
            "HyperParameterTuningJobObjective": {"Type": "Maximize", "MetricName": "accuracy"},
            "ResourceLimits": {"MaxNumberOfTrainingJobs": jobs, "MaxParallelTrainingJobs": 2},
            "ParameterRanges": {
                "ContinuousParameterRanges": [
                    {"Name": "x", "MinValue": "0", "MaxValue": "1", "ScalingType": "Linear"}
                ],
                "IntegerParameterRanges": [{"Name": "layers", "MinValue": "1", "MaxValue": "5"}],
            },
        },
        "TrainingJobDefinition": {
            "AlgorithmSpecification": {
                "TrainingImage": "unused-with-an-entrypoint",
                "TrainingInputMode": "File",
                "MetricDefinitions": [{"Name": "accuracy", "Regex": "accuracy=([0-9\\.]+)"}],
                "ContainerEntrypoint": [sys.executable, str(FAKE_TRAIN)],
            },
            "StaticHyperParameters": {"epochs": "2", "sleep": sleep},
            "RoleArn": "arn:aws:iam::123456789012:role/unused",
            "OutputDataConfig": {"S3OutputPath": "s3://unused/output"},
            "ResourceConfig": {
                "InstanceType": "ml.g5.xlarge",
                "InstanceCount": 1,
                "VolumeSizeInGB": 50,
            },
            "StoppingCondition": {"MaxRuntimeInSeconds": 600},
        },
    }


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    folder = tmp_path_factory.mktemp("sagemaker-protocol")
    s = Server(f"sqlite:///{folder / 'tuner.db'}", folder / "runs").start()
    yield s
    s.stop()


def wait_ended(client: Any, name: str, timeout: float = 90) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        answer: dict[str, Any] = client.describe_hyper_parameter_tuning_job(
            HyperParameterTuningJobName=name
        )
        if answer["HyperParameterTuningJobStatus"] in ("Completed", "Failed", "Stopped"):
            return answer
        assert time.monotonic() < deadline, answer["HyperParameterTuningJobStatus"]
        time.sleep(0.3)


def test_boto3_creates_describes_and_lists_a_tuning_job(server: Server) -> None:
    client = sagemaker(server)
    created = create(server, request())
    assert created.status_code == 200, created.text
    assert created.json()["HyperParameterTuningJobArn"] == (
        "arn:aws:sagemaker:us-east-1:000000000000:hyper-parameter-tuning-job/boto-job"
    )
    done = wait_ended(client, NAME)
    assert done["HyperParameterTuningJobStatus"] == "Completed", done.get("FailureReason")
    assert done["TrainingJobStatusCounters"] == {
        "Completed": 4,
        "InProgress": 0,
        "RetryableError": 0,
        "NonRetryableError": 0,
        "Stopped": 0,
    }
    assert done["ObjectiveStatusCounters"] == {"Succeeded": 4, "Pending": 0, "Failed": 0}
    config = done["HyperParameterTuningJobConfig"]
    assert config["ResourceLimits"] == {"MaxParallelTrainingJobs": 2, "MaxNumberOfTrainingJobs": 4}
    assert config["ParameterRanges"]["IntegerParameterRanges"][0]["MaxValue"] == "5"
    assert done["TrainingJobDefinition"]["StoppingCondition"] == {"MaxRuntimeInSeconds": 600}
    assert done["CreationTime"] <= done["HyperParameterTuningEndTime"]  # parsed as datetimes

    summaries = client.list_training_jobs_for_hyper_parameter_tuning_job(
        HyperParameterTuningJobName=NAME, MaxResults=100
    )["TrainingJobSummaries"]
    assert [s["TrainingJobName"] for s in summaries] == [f"{NAME}-00{i}" for i in range(1, 5)]
    best = done["BestTrainingJob"]
    values = [s["FinalHyperParameterTuningJobObjectiveMetric"]["Value"] for s in summaries]
    assert best["FinalHyperParameterTuningJobObjectiveMetric"] == {
        "Type": "Maximize",
        "MetricName": "accuracy",
        "Value": max(values),
    }
    assert set(best["TunedHyperParameters"]) == {"x", "layers"}  # the static ones are not tuned
    assert all(isinstance(v, str) for v in best["TunedHyperParameters"].values())

    by_value = client.list_training_jobs_for_hyper_parameter_tuning_job(
        HyperParameterTuningJobName=NAME,
        SortBy="FinalObjectiveMetricValue",
        SortOrder="Descending",
        MaxResults=3,
    )
    first = [
        s["FinalHyperParameterTuningJobObjectiveMetric"]["Value"]
        for s in by_value["TrainingJobSummaries"]
    ]
    assert first == sorted(values, reverse=True)[:3]
    rest = client.list_training_jobs_for_hyper_parameter_tuning_job(
        HyperParameterTuningJobName=NAME,
        SortBy="FinalObjectiveMetricValue",
        SortOrder="Descending",
        MaxResults=3,
        NextToken=by_value["NextToken"],
    )
    assert len(rest["TrainingJobSummaries"]) == 1 and "NextToken" not in rest
    ascending = client.list_training_jobs_for_hyper_parameter_tuning_job(
        HyperParameterTuningJobName=NAME, SortBy="FinalObjectiveMetricValue"
    )["TrainingJobSummaries"]  # SageMaker's default order: Ascending
    values_up = [s["FinalHyperParameterTuningJobObjectiveMetric"]["Value"] for s in ascending]
    assert values_up == sorted(values)
    failed = client.list_training_jobs_for_hyper_parameter_tuning_job(
        HyperParameterTuningJobName=NAME, StatusEquals="Failed"
    )
    assert failed["TrainingJobSummaries"] == []

    described = client.describe_training_job(TrainingJobName=best["TrainingJobName"])
    assert described["TrainingJobStatus"] == described["SecondaryStatus"] == "Completed"
    assert described["TuningJobArn"] == done["HyperParameterTuningJobArn"]
    tuned = best["TunedHyperParameters"]
    assert described["HyperParameters"] == {"epochs": "2", "sleep": "0", **tuned}
    job = httpx.get(
        f"{server.url}/training-jobs/{best['TrainingJobName']}",
        headers={"Authorization": f"Bearer {TOKEN}"},
    ).json()
    workdir = Path(job["workdir"])
    argv = json.loads(next(workdir.rglob("argv.json")).read_text())
    assert argv == [w for k, v in described["HyperParameters"].items() for w in (f"--{k}", v)]
    [final] = described["FinalMetricDataList"]  # the last value of the one metric defined
    assert (final["MetricName"], final["Value"]) == ("accuracy", max(values))
    assert described["TrainingStartTime"] <= final["Timestamp"] <= described["TrainingEndTime"]
    assert described["TrainingTimeInSeconds"] >= 0
    entrypoint = described["AlgorithmSpecification"]["ContainerEntrypoint"]
    assert entrypoint == [sys.executable, str(FAKE_TRAIN)]
    with pytest.raises(client.exceptions.ResourceNotFound):
        client.describe_training_job(TrainingJobName=f"{NAME}-999")


def test_boto3_lists_tuning_jobs_with_sagemakers_filters(server: Server) -> None:
    client = sagemaker(server)
    for name in ("list-b", "list-a", "list-c"):
        assert create(server, request(name, jobs=2)).status_code == 200
    for name in ("list-a", "list-b", "list-c"):
        wait_ended(client, name)
    listing = client.list_hyper_parameter_tuning_jobs(NameContains="LIST-", MaxResults=2)
    summaries = listing["HyperParameterTuningJobSummaries"]
    assert [s["HyperParameterTuningJobName"] for s in summaries] == ["list-a", "list-b"]
    assert summaries[0]["TrainingJobStatusCounters"]["Completed"] == 2
    assert summaries[0]["ResourceLimits"]["MaxNumberOfTrainingJobs"] == 2
    assert summaries[0]["Strategy"] == "Random"
    rest = client.list_hyper_parameter_tuning_jobs(
        NameContains="list-", MaxResults=2, NextToken=listing["NextToken"]
    )
    assert [s["HyperParameterTuningJobName"] for s in rest["HyperParameterTuningJobSummaries"]] == [
        "list-c"
    ]
    # a token is the listing's own: elsewhere it was read as an offset into another list
    with pytest.raises(ClientError, match="was given by another listing"):
        client.list_hyper_parameter_tuning_jobs(
            NameContains="list-a", MaxResults=2, NextToken=listing["NextToken"]
        )
    with pytest.raises(ClientError, match="was given by another listing"):
        client.list_training_jobs_for_hyper_parameter_tuning_job(
            HyperParameterTuningJobName="list-a", NextToken=listing["NextToken"]
        )
    newest = client.list_hyper_parameter_tuning_jobs(
        NameContains="list-", SortBy="CreationTime", SortOrder="Descending", MaxResults=1
    )["HyperParameterTuningJobSummaries"][0]
    assert newest["HyperParameterTuningJobName"] == "list-c"
    later = client.list_hyper_parameter_tuning_jobs(
        NameContains="list-", CreationTimeAfter=summaries[1]["CreationTime"]
    )["HyperParameterTuningJobSummaries"]
    assert [s["HyperParameterTuningJobName"] for s in later] == ["list-a", "list-c"]
    for status in ("InProgress", "Deleting"):
        assert not client.list_hyper_parameter_tuning_jobs(
            NameContains="list-", StatusEquals=status
        )["HyperParameterTuningJobSummaries"]


def test_boto3_stops_a_tuning_job(server: Server) -> None:
    client = sagemaker(server)
    assert create(server, request("boto-stop", jobs=20, sleep="30")).status_code == 200
    deadline = time.monotonic() + 60
    while not client.list_training_jobs_for_hyper_parameter_tuning_job(
        HyperParameterTuningJobName="boto-stop", StatusEquals="InProgress"
    )["TrainingJobSummaries"]:
        assert time.monotonic() < deadline
        time.sleep(0.2)
    assert client.stop_hyper_parameter_tuning_job(HyperParameterTuningJobName="boto-stop")
    done = wait_ended(client, "boto-stop")
    assert done["HyperParameterTuningJobStatus"] == "Stopped"
    assert done["TrainingJobStatusCounters"]["Stopped"] >= 1
    assert done["TrainingJobStatusCounters"]["InProgress"] == 0


@pytest.mark.parametrize(
    ("change", "code", "words"),
    [
        (
            lambda r: r["HyperParameterTuningJobConfig"]["ResourceLimits"].update(
                MaxParallelTrainingJobs=9
            ),
            "ValidationException",
            "ResourceLimits.MaxParallelTrainingJobs <= ResourceLimits.MaxNumberOfTrainingJobs",
        ),
        (
            lambda r: r["HyperParameterTuningJobConfig"]["ParameterRanges"][
                "ContinuousParameterRanges"
            ][0].update(MinValue="2"),
            "ValidationException",
            "ParameterRanges: x: MinValue < MaxValue must hold, got MinValue=2",
        ),
        (lambda r: r.update(HyperParameterTuningJobName=NAME), "ResourceInUse", f"'{NAME}'"),
        (  # was "HyperParameterTuningJobName: SageMaker has no such field"
            lambda r: r.update(name="x"),
            "ValidationException",
            "name: SageMaker has no such field",
        ),
    ],
)
def test_create_gets_sagemakers_errors(server: Server, change: Any, code: str, words: str) -> None:
    if code == "ResourceInUse" and not _exists(sagemaker(server), NAME):
        assert create(server, request()).status_code == 200
    body = request("boto-bad")
    change(body)
    refused = create(server, body)
    assert refused.status_code == 400, refused.text
    assert refused.json()["__type"] == code
    assert words in refused.json()["message"]
    assert not _exists(sagemaker(server), "boto-bad")


def test_boto3_validated_image_request_reaches_the_launch_policy(server: Server) -> None:
    """A request boto3 itself validates (an image, no entrypoint) is read and refused by the
    service's launch policy (this test service allows one program and no image), in SageMaker's
    field names."""
    body = request("boto-image")
    del body["TrainingJobDefinition"]["AlgorithmSpecification"]["ContainerEntrypoint"]
    with pytest.raises(ClientError) as refused:
        sagemaker(server).create_hyper_parameter_tuning_job(**body)
    assert refused.value.response["Error"]["Code"] == "ValidationException"
    message = refused.value.response["Error"]["Message"]
    assert "TrainingJobDefinition.AlgorithmSpecification.TrainingImage must be one of" in message
    assert "'unused-with-an-entrypoint'" in message


def _exists(client: Any, name: str) -> bool:
    try:
        client.describe_hyper_parameter_tuning_job(HyperParameterTuningJobName=name)
    except client.exceptions.ResourceNotFound:
        return False
    return True


def test_an_unknown_tuning_job_is_resource_not_found(server: Server) -> None:
    client = sagemaker(server)
    with pytest.raises(client.exceptions.ResourceNotFound):
        client.describe_hyper_parameter_tuning_job(HyperParameterTuningJobName="never-made")
    with pytest.raises(client.exceptions.ResourceNotFound):
        client.stop_hyper_parameter_tuning_job(HyperParameterTuningJobName="never-made")


def test_a_wrong_secret_or_no_signature_is_refused(server: Server) -> None:
    with pytest.raises(ClientError) as refused:
        sagemaker(server, secret="not-the-token").describe_hyper_parameter_tuning_job(
            HyperParameterTuningJobName=NAME
        )
    assert refused.value.response["Error"]["Code"] == "InvalidSignatureException"
    assert refused.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403
    target = {"X-Amz-Target": "SageMaker.DescribeHyperParameterTuningJob"}
    body = json.dumps({"HyperParameterTuningJobName": NAME})
    unsigned = httpx.post(f"{server.url}/", content=body, headers=target)
    assert unsigned.status_code == 403
    assert unsigned.json()["__type"] == "InvalidSignatureException"


def test_raw_requests_get_sagemakers_error_shapes(server: Server) -> None:
    """With the bearer token (curl), an unknown operation and a malformed body are named."""
    headers = {"Authorization": f"Bearer {TOKEN}"}
    unknown = httpx.post(
        f"{server.url}/", content="{}", headers={**headers, "X-Amz-Target": "SageMaker.DeleteModel"}
    )
    assert unknown.status_code == 400
    assert unknown.json()["__type"] == "UnknownOperationException"
    assert "DescribeHyperParameterTuningJob" in unknown.json()["message"]
    target = {**headers, "X-Amz-Target": "SageMaker.ListTrainingJobsForHyperParameterTuningJob"}
    for body, words in [
        ("[1]", "the body must be a JSON object"),
        ("{", "the body is not JSON"),
        ("{}", "HyperParameterTuningJobName must match"),
        ('{"HyperParameterTuningJobName": "\\ud800"}', "HyperParameterTuningJobName must match"),
        (json.dumps({"HyperParameterTuningJobName": NAME, "MaxResults": 0}), "MaxResults must be"),
        (json.dumps({"HyperParameterTuningJobName": NAME, "SortBy": "Speed"}), "'Speed'"),
        (json.dumps({"HyperParameterTuningJobName": NAME, "NextToken": "x"}), "NextToken"),
    ]:
        answer = httpx.post(f"{server.url}/", content=body, headers=target)
        assert answer.status_code == 400, answer.text
        assert words in answer.json()["message"]


def test_no_request_without_the_token_gets_a_500(server: Server) -> None:
    """A Host botocore cannot put in a URL, an unsigned X-Amz-Target, and a lone surrogate
    echoed in an error were 500s (or, for the target, an operation taken unsigned)."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    forged = {
        "Authorization": f"AWS4-HMAC-SHA256 Credential=x/{stamp[:8]}/us-east-1/sagemaker/"
        f"aws4_request, SignedHeaders=host;x-amz-date, Signature={'0' * 64}",
        "X-Amz-Date": stamp,
        "X-Amz-Target": "SageMaker.DescribeHyperParameterTuningJob",
    }
    for host in ("[", "a]b", "[::1"):
        answer = httpx.post(f"{server.url}/", content="{}", headers={**forged, "Host": host})
        assert answer.status_code == 403, answer.text
        assert answer.json()["__type"] == "InvalidSignatureException"
    unsigned_target = httpx.post(f"{server.url}/", content="{}", headers=forged)
    assert unsigned_target.status_code == 403
    assert "x-amz-target" in unsigned_target.json()["message"]
    bearer = {"Authorization": f"Bearer {TOKEN}"}
    for target, body in [
        ("CreateHyperParameterTuningJob", '{"\\ud800": 1}'),
        ("StopHyperParameterTuningJob", '{"HyperParameterTuningJobName": "\\udfff"}'),
    ]:
        answer = httpx.post(
            f"{server.url}/",
            content=body,
            headers={**bearer, "X-Amz-Target": f"SageMaker.{target}"},
        )
        assert answer.status_code == 400, answer.text
    refused = httpx.post(f"{server.url}/tuning-jobs", content='{"\\ud800": 1}', headers=bearer)
    assert refused.status_code in (400, 422), refused.text


def test_create_refusals_do_not_show_the_stores_url(server: Server) -> None:
    body = request("boto-orphan")
    body["WarmStartConfig"] = {
        "ParentHyperParameterTuningJobs": [{"HyperParameterTuningJobName": "nope"}],
        "WarmStartType": "TransferLearning",
    }
    refused = create(server, body)
    assert refused.status_code == 400, refused.text
    assert "'nope'" in refused.json()["message"]
    assert "sqlite" not in refused.json()["message"]


def test_verify_refuses_a_changed_body_an_old_signature_and_a_claimed_hash() -> None:
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    body = b'{"HyperParameterTuningJobName": "x"}'
    signed = AWSRequest("POST", "http://127.0.0.1:8000/", {"X-Amz-Target": "t"}, body)
    SigV4Auth(Credentials("key", "secret"), "sagemaker", "us-east-1").add_auth(signed)
    headers = {**dict(signed.headers.items()), "Host": "127.0.0.1:8000"}
    assert verify("POST", "/", "", headers, body, "secret", "sagemaker").region == "us-east-1"
    for args, words in [
        ((headers, body + b" ", "secret"), "does not match"),
        ((headers, body, "other"), "does not match"),
        (({**headers, "X-Amz-Content-SHA256": "UNSIGNED-PAYLOAD"}, body, "secret"), "hash"),
    ]:
        with pytest.raises(SignatureRejected, match=words):
            verify("POST", "/", "", args[0], args[1], args[2], "sagemaker")
    with pytest.raises(SignatureRejected, match="15 minutes"):
        verify("POST", "/", "", headers, body, "secret", "sagemaker", now=time.time() + 3600)
    with pytest.raises(SignatureRejected, match="for 'sagemaker', not 's3'"):
        verify("POST", "/", "", headers, body, "secret", "s3")


TRAINING_IMAGE = "tuner-test-sagemaker:latest"


def sagemaker_image(host: str, folder: Path) -> str:
    """The test Python image with ``fake_train.py`` as its entrypoint, as a SageMaker training
    image runs its own program: the job's argv holds only the hyperparameters."""
    import docker

    client = docker.DockerClient(base_url=host)
    try:
        tarball = build_rootfs(folder / "rootfs.tar")
        with tarfile.open(tarball, "a") as tar:
            tar.add(FAKE_TRAIN, "opt/ml/code/train.py")
        repository, _, tag = TRAINING_IMAGE.partition(":")
        entrypoint = json.dumps([PYTHON, "/opt/ml/code/train.py"])
        client.api.import_image_from_file(
            str(tarball), repository=repository, tag=tag, changes=[f"ENTRYPOINT {entrypoint}"]
        )
    finally:
        client.close()
    return TRAINING_IMAGE


def test_boto3_runs_a_sagemaker_request_unchanged_on_docker(
    tmp_path: Path,
    docker_host: str,  # noqa: F811 - the fixture
    docker_image: str,  # noqa: F811 - the fixture: the engine holds the Python image
) -> None:
    """SageMaker's own flow with boto3 alone: a TrainingImage (no entrypoint, so boto3
    validates the request against its model), run by the service's Docker engine."""
    image = sagemaker_image(docker_host, tmp_path)
    server = Server(
        f"sqlite:///{tmp_path / 'tuner.db'}",
        tmp_path / "runs",
        env={"DOCKER_HOST": docker_host, "TUNER_ALLOWED_IMAGES": image},
    ).start()
    try:
        client = sagemaker(server)
        body = request("boto-docker", jobs=3)
        algorithm = body["TrainingJobDefinition"]["AlgorithmSpecification"]
        del algorithm["ContainerEntrypoint"]
        algorithm["TrainingImage"] = image
        arn = client.create_hyper_parameter_tuning_job(**body)["HyperParameterTuningJobArn"]
        assert arn.endswith(":hyper-parameter-tuning-job/boto-docker")
        done = wait_ended(client, "boto-docker", timeout=180)
        assert done["HyperParameterTuningJobStatus"] == "Completed", done.get("FailureReason")
        assert done["TrainingJobStatusCounters"]["Completed"] == 3
        best = done["BestTrainingJob"]
        x = float(best["TunedHyperParameters"]["x"])
        value = best["FinalHyperParameterTuningJobObjectiveMetric"]["Value"]
        assert value == pytest.approx(1 - (x - 0.3) ** 2 - 0.01, abs=1e-4)  # y at 0.5
    finally:
        server.stop()


def test_a_pending_training_job_is_listed_as_in_progress(tmp_path: Path) -> None:
    """SageMaker has no Pending: a job launched but not yet running is InProgress in the
    counters, in its summary and for ``StatusEquals=InProgress`` alike."""
    from fastapi import FastAPI

    from api.sagemaker import from_sagemaker
    from api.sagemaker_protocol import sagemaker_router
    from tuner.definition import TuningJobDefinition
    from tuner.records import TrainingStatus
    from tuner.storage import Store

    store = Store(f"sqlite:///{tmp_path / 'tuner.db'}")
    definition = TuningJobDefinition.parse(from_sagemaker(request("pend")))
    store.create_tuning_job("pend", definition.to_json())
    store.create_training_job("pend", 1, {"x": 0.5, "layers": 2})  # Pending
    running = store.create_training_job("pend", 2, {"x": 0.1, "layers": 3})
    store.mark_started(running.name, "handle", str(tmp_path))
    app = FastAPI()
    app.include_router(sagemaker_router(store, None, "tok"))  # type: ignore[arg-type]

    def call(operation: str, **body: Any) -> Any:
        """The router in this process (httpx's ASGI transport): the store holds states no
        running service would leave alone."""
        headers = {"Authorization": "Bearer tok", "X-Amz-Target": f"SageMaker.{operation}"}

        async def post() -> Any:
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://test") as web:
                return (await web.post("/", content=json.dumps(body), headers=headers)).json()

        return asyncio.run(post())

    listed = call(
        "ListTrainingJobsForHyperParameterTuningJob",
        HyperParameterTuningJobName="pend",
        StatusEquals="InProgress",
    )["TrainingJobSummaries"]
    assert [(s["TrainingJobName"], s["TrainingJobStatus"]) for s in listed] == [
        ("pend-001", "InProgress"),
        ("pend-002", "InProgress"),
    ]
    counters = call("DescribeHyperParameterTuningJob", HyperParameterTuningJobName="pend")
    assert counters["TrainingJobStatusCounters"]["InProgress"] == 2

    overran = store.create_training_job("pend", 3, {"x": 0.2, "layers": 1})
    store.mark_started(overran.name, "handle", str(tmp_path))
    reason = "exceeded max_runtime=600s and was stopped"
    store.finish_training_job(overran.name, TrainingStatus.FAILED, failure_reason=reason)
    statuses = {
        n: call("DescribeTrainingJob", TrainingJobName=n)
        for n in ("pend-001", "pend-002", "pend-003")
    }
    assert [(d["TrainingJobStatus"], d["SecondaryStatus"]) for d in statuses.values()] == [
        ("InProgress", "Starting"),  # Pending
        ("InProgress", "Starting"),  # launched, its program not yet running
        ("Failed", "MaxRuntimeExceeded"),
    ]
    assert statuses["pend-003"]["FailureReason"] == reason
    assert "TrainingStartTime" not in statuses["pend-001"]
    assert statuses["pend-001"]["FinalMetricDataList"] == []
    refused = call("DescribeTrainingJob", TrainingJobName="pend/../001")
    assert refused["__type"] == "ValidationException"
    assert "TrainingJobName must match" in refused["message"]
    store.close()
