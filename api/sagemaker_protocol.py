"""SageMaker's own JSON protocol on ``POST /``, so that boto3's SageMaker client works unchanged.

    boto3.client("sagemaker", endpoint_url="http://host:8000", region_name="us-east-1",
                 aws_access_key_id="tuner", aws_secret_access_key=TUNER_API_TOKEN)

Requests are SageMaker's (``X-Amz-Target: SageMaker.<Operation>``, a JSON body), signed with
SigV4 using the service's API token as the secret key (``api.sigv4``; a bearer token works too);
any access key id is accepted. Operations: ``CreateHyperParameterTuningJob`` (the request shape
``POST /tuning-jobs`` also takes, ``api.sagemaker``), ``DescribeHyperParameterTuningJob``,
``ListHyperParameterTuningJobs`` (every filter; LastModifiedTime is the end time, else the
creation time; by default Name, Ascending, 10 a page),
``ListTrainingJobsForHyperParameterTuningJob`` (``StatusEquals``, a Pending job counting as
InProgress; ``SortBy``, by default Name; ``SortOrder``, by default Ascending; sorted by
FinalObjectiveMetricValue, jobs without an objective are left out, as SageMaker does;
``MaxResults``, ``NextToken``), ``StopHyperParameterTuningJob`` and ``DescribeTrainingJob`` (a
tuning job's training job); another is refused with
``UnknownOperationException`` naming these. Errors are SageMaker's: ``ValidationException``
(the rule and the value, in the request's field names), ``ResourceNotFound``, ``ResourceInUse``
(a name taken), 503 ``ServiceUnavailable`` while the store is down (boto3 retries it). ARNs
carry account ``000000000000`` and the signer's region. Times are seconds since the epoch.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import secrets
from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from api.sagemaker import from_sagemaker, in_sagemaker_terms
from api.sigv4 import SignatureRejected, verify
from tuner.definition import TuningJobDefinition
from tuner.errors import NotFoundError, StoreUnavailable, TunerError, ValidationError
from tuner.extras import MissingExtra
from tuner.metrics import MetricPoint
from tuner.names import TRAINING_JOB_NAME, TUNING_JOB_NAME
from tuner.parameters import argv_word
from tuner.records import ObjectiveStatus, TrainingJob, TrainingStatus, TuningJob, TuningStatus
from tuner.service import TuningService
from tuner.storage import Store
from tuner.summary import best_of

CONTENT_TYPE = "application/x-amz-json-1.1"
TARGET_PREFIX = "SageMaker."
DEFAULT_REGION = "us-east-1"
ACCOUNT = "000000000000"
# SageMaker's StatusEquals -> our training statuses (a Pending job is reported InProgress; no
# training job stays Stopping here).
STATUS_EQUALS: dict[str, set[TrainingStatus]] = {
    "InProgress": {TrainingStatus.PENDING, TrainingStatus.IN_PROGRESS},
    "Completed": {TrainingStatus.COMPLETED},
    "Failed": {TrainingStatus.FAILED},
    "Stopping": set(),
    "Stopped": {TrainingStatus.STOPPED},
}
TUNING_STATUS_EQUALS = [
    "Completed", "InProgress", "Failed", "Stopped", "Stopping", "Deleting", "DeleteFailed"
]  # fmt: skip
TIME_FILTERS = (
    "CreationTimeAfter", "CreationTimeBefore", "LastModifiedTimeAfter", "LastModifiedTimeBefore"
)  # fmt: skip
LIST_MAX_RESULTS = 100
LIST_DEFAULT_RESULTS = 10
# SageMaker's SortBy for training jobs -> our store's sort keys.
TRAINING_SORT = {
    "Name": "name",
    "CreationTime": "created",
    "Status": "status",
    "FinalObjectiveMetricValue": "objective",  # sorted here, not by the store (see _list)
}


class SageMakerError(Exception):
    """An error answered in SageMaker's shape: ``{"__type": code, "message": ...}``."""

    def __init__(self, code: str, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.code, self.status = code, status


def sagemaker_router(store: Store, service: TuningService, token: str) -> APIRouter:
    """``POST /`` answering SageMaker's operations (see the module contract)."""
    router = APIRouter(include_in_schema=False)

    def shown(exc: Exception) -> str:
        """The error's text for a client: the store's URL is the operator's."""
        return str(exc).replace(store.shown_url, "the store")

    def _create(body: dict[str, Any], region: str) -> dict[str, Any]:
        try:
            data = from_sagemaker(body)
        except ValidationError as exc:  # it names the request's own fields already
            raise SageMakerError("ValidationException", shown(exc)) from None
        try:
            definition = TuningJobDefinition.parse(data)
            record = service.submit(definition, store)
        except ValidationError as exc:  # refused in our fields: renamed to the request's
            message = in_sagemaker_terms(shown(exc))
            taken = "tuning job names must be unique" in message
            code = "ResourceInUse" if taken else "ValidationException"
            raise SageMakerError(code, message) from None
        return {
            "HyperParameterTuningJobArn": _arn(region, "hyper-parameter-tuning-job", record.name)
        }

    def _describe(body: dict[str, Any], region: str) -> dict[str, Any]:
        record = store.get_tuning_job(_name(body))
        return describe_tuning_job(record, store.list_training_jobs(record.name), region)

    def _list(body: dict[str, Any], region: str) -> dict[str, Any]:
        name = _name(body)
        record = store.get_tuning_job(name)  # ResourceNotFound for a tuning job not there
        status = _choice(body, "StatusEquals", list(STATUS_EQUALS))
        sort_by = _choice(body, "SortBy", list(TRAINING_SORT)) or "Name"
        descending = _descending(body)
        wanted = STATUS_EQUALS[status] if status else set(TrainingStatus)
        if sort_by == "FinalObjectiveMetricValue":  # by value alone, jobs with one only
            valued = [
                j
                for j in store.list_training_jobs(name)
                if j.status in wanted and j.objective is not None and math.isfinite(j.objective)
            ]
            listed = sorted(valued, key=lambda j: j.objective or 0.0, reverse=descending)
        else:
            everything = store.list_training_jobs(name, None, TRAINING_SORT[sort_by], descending)
            listed = [j for j in everything if j.status in wanted]
        jobs, more = _page(body, listed)
        summaries = [training_job_summary(j, record.definition, region) for j in jobs]
        return {"TrainingJobSummaries": summaries, **more}

    def _list_tuning(body: dict[str, Any], region: str) -> dict[str, Any]:
        status = _choice(body, "StatusEquals", TUNING_STATUS_EQUALS)
        sort_by = _choice(body, "SortBy", ["Name", "Status", "CreationTime"]) or "Name"
        descending = _descending(body)
        contains = body.get("NameContains")
        if contains is not None and not isinstance(contains, str):
            raise SageMakerError(
                "ValidationException", f"NameContains must be a string, got {contains!r:.80}"
            )
        window = {k: _time(body, k) for k in TIME_FILTERS}
        if status in (None, *(s.value for s in TuningStatus)):
            records = store.list_tuning_jobs(TuningStatus(status) if status else None)
        else:  # Deleting, DeleteFailed: no tuning job here is ever deleted
            records = []
        kept = [
            r
            for r in records
            if (contains is None or contains.lower() in r.name.lower())
            and _within(r.created_at, window["CreationTimeAfter"], window["CreationTimeBefore"])
            and _within(
                r.ended_at or r.created_at,
                window["LastModifiedTimeAfter"],
                window["LastModifiedTimeBefore"],
            )
        ]
        key = {"Name": lambda r: r.name, "Status": lambda r: r.status.value}.get(
            sort_by, lambda r: r.created_at
        )
        page, more = _page(body, sorted(kept, key=key, reverse=descending))
        summaries = [tuning_job_summary(r, store.list_training_jobs(r.name), region) for r in page]
        return {"HyperParameterTuningJobSummaries": summaries, **more}

    def _describe_training(body: dict[str, Any], region: str) -> dict[str, Any]:
        job = store.get_training_job(_name(body, "TrainingJobName"))
        record = store.get_tuning_job(job.tuning_job_name)
        return describe_training_job(job, record, store.last_metric_points(job.name), region)

    def _stop(body: dict[str, Any], _region: str) -> dict[str, Any]:
        service.stop(_name(body), store)
        return {}

    operations: dict[str, Callable[[dict[str, Any], str], dict[str, Any]]] = {
        "CreateHyperParameterTuningJob": _create,
        "DescribeHyperParameterTuningJob": _describe,
        "DescribeTrainingJob": _describe_training,
        "ListHyperParameterTuningJobs": _list_tuning,
        "ListTrainingJobsForHyperParameterTuningJob": _list,
        "StopHyperParameterTuningJob": _stop,
    }

    @router.post("/")
    async def sagemaker_operation(request: Request) -> JSONResponse:
        try:
            raw = await request.body()
            region = _authorized(request, raw, token)
            target = request.headers.get("x-amz-target", "")
            operation = operations.get(target.removeprefix(TARGET_PREFIX))
            if not target.startswith(TARGET_PREFIX) or operation is None:
                raise SageMakerError(
                    "UnknownOperationException",
                    f"X-Amz-Target must be SageMaker.<operation>, one of {sorted(operations)}, "
                    f"got {target[:100]!r}",
                )
            answer = await run_in_threadpool(operation, _json_object(raw), region)
            return JSONResponse(answer, media_type=CONTENT_TYPE)
        except SageMakerError as exc:
            return _error(exc.code, str(exc), exc.status)
        except NotFoundError as exc:
            return _error("ResourceNotFound", shown(exc))
        except StoreUnavailable:
            return _error("ServiceUnavailable", "the service's store did not answer; retry", 503)
        except TunerError as exc:
            return _error("ValidationException", shown(exc))

    return router


def _authorized(request: Request, body: bytes, token: str) -> str:
    """The signer's region, for a request signed with the token (or a bearer token)."""
    header = request.headers.get("authorization", "")
    if header.startswith("Bearer ") and secrets.compare_digest(
        header.removeprefix("Bearer ").encode(), token.encode()
    ):
        return DEFAULT_REGION
    try:
        signer = verify(
            request.method,
            request.url.path,
            request.url.query,
            dict(request.headers),
            body,
            token,
            "sagemaker",
        )
    except SignatureRejected as exc:
        raise SageMakerError("InvalidSignatureException", str(exc), 403) from None
    except MissingExtra as exc:  # the operator's to fix: not retried, not the client's fault
        raise SageMakerError("NotImplemented", str(exc), 501) from None
    return signer.region


def _error(code: str, message: str, status: int = 400) -> JSONResponse:
    """SageMaker's error body; text UTF-8 cannot hold (a lone surrogate echoed from the
    request) is escaped, not a 500."""
    text = message.encode("utf-8", "backslashreplace").decode("utf-8")
    return JSONResponse({"__type": code, "message": text}, status, media_type=CONTENT_TYPE)


def _json_object(raw: bytes) -> dict[str, Any]:
    try:
        body = json.loads(raw or b"{}")
    except (ValueError, RecursionError) as exc:
        raise SageMakerError("SerializationException", f"the body is not JSON: {exc}") from None
    if not isinstance(body, dict):
        raise SageMakerError(
            "SerializationException", f"the body must be a JSON object, got {body!r:.80}"
        )
    return body


def _name(body: dict[str, Any], field: str = "HyperParameterTuningJobName") -> str:
    """The tuning job's name in ``field`` (``TrainingJobName``: a training job's), checked
    against the rule for such names."""
    pattern = TRAINING_JOB_NAME if field == "TrainingJobName" else TUNING_JOB_NAME
    name = body.get(field)
    if not isinstance(name, str) or not re.fullmatch(pattern, name):
        raise SageMakerError(
            "ValidationException", f"{field} must match {pattern}, got {name!r:.80}"
        )
    return name


def _choice(body: dict[str, Any], field: str, allowed: list[str]) -> str | None:
    value = body.get(field)
    if value is not None and value not in allowed:
        raise SageMakerError(
            "ValidationException", f"{field} must be one of {allowed}, got {value!r:.80}"
        )
    return value


def _whole(body: dict[str, Any], field: str, low: int, high: int, default: int) -> int:
    value = body.get(field, default)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise SageMakerError(
            "ValidationException", f"{field} must be an integer in {low}..{high}, got {value!r:.80}"
        )
    return value


def _descending(body: dict[str, Any]) -> bool:
    """``SortOrder``: Ascending unless it says Descending."""
    return _choice(body, "SortOrder", ["Ascending", "Descending"]) == "Descending"


def _page(body: dict[str, Any], items: list[Any]) -> tuple[list[Any], dict[str, str]]:
    """The page of ``items`` that ``MaxResults`` and ``NextToken`` ask for, and the
    ``NextToken`` of the next page when there is one: ``OFFSET-LISTING``, where LISTING stands
    for the request's other fields, so that a token is refused in another listing (another
    tuning job, filter or order) rather than read there as an offset."""
    limit = _whole(body, "MaxResults", 1, LIST_MAX_RESULTS, LIST_DEFAULT_RESULTS)
    offset = _next_token(body)
    more = (
        {"NextToken": f"{offset + limit}-{_listing(body)}"} if len(items) > offset + limit else {}
    )
    return items[offset : offset + limit], more


def _listing(body: dict[str, Any]) -> str:
    """What a listing asks for (its fields but the paging ones; ``NameContains`` ignores
    case), as 16 hex digits."""
    asked = {k: v for k, v in body.items() if k not in ("NextToken", "MaxResults")}
    if isinstance(asked.get("NameContains"), str):
        asked["NameContains"] = asked["NameContains"].lower()
    text = json.dumps(asked, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8", "backslashreplace")).hexdigest()[:16]


def _next_token(body: dict[str, Any]) -> int:
    token = body.get("NextToken")
    if token is None:
        return 0
    match = re.fullmatch(r"([0-9]{1,12})-([0-9a-f]{16})", token) if isinstance(token, str) else None
    if match is None:
        raise SageMakerError(
            "ValidationException", f"NextToken must be one a previous page gave, got {token!r:.80}"
        )
    if match[2] != _listing(body):
        raise SageMakerError(
            "ValidationException",
            f"NextToken {token!r} was given by another listing (another tuning job, filter or "
            "order); list again without it",
        )
    return int(match[1])


def _time(body: dict[str, Any], field: str) -> float | None:
    """A time filter: seconds since the epoch (boto3 sends datetimes so)."""
    value = body.get(field)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise SageMakerError(
            "ValidationException", f"{field} must be seconds since the epoch, got {value!r:.80}"
        )
    return float(value)


def _within(moment: float, after: float | None, before: float | None) -> bool:
    """Strictly between, to the microsecond: boto3 sends times rounded to it, so a time it read
    from an answer and sends back means that same moment, not one a fraction earlier."""
    moment = round(moment, 6)
    return (after is None or moment > after) and (before is None or moment < before)


def _arn(region: str, kind: str, name: str) -> str:
    return f"arn:aws:sagemaker:{region}:{ACCOUNT}:{kind}/{name.lower()}"


def describe_tuning_job(record: TuningJob, jobs: list[TrainingJob], region: str) -> dict[str, Any]:
    """``DescribeHyperParameterTuningJob``'s answer for a tuning job and its training jobs."""
    definition = record.definition
    maximize = definition.get("objective_type", "Maximize") == "Maximize"
    best = best_of(jobs, maximize)
    answer: dict[str, Any] = {
        "HyperParameterTuningJobName": record.name,
        "HyperParameterTuningJobArn": _arn(region, "hyper-parameter-tuning-job", record.name),
        "HyperParameterTuningJobConfig": _config(definition),
        "TrainingJobDefinition": _training_definition(definition),
        "HyperParameterTuningJobStatus": record.status.value,
        "CreationTime": record.created_at,
        **_counters(jobs),
        "ConsumedResources": {"RuntimeInSeconds": int(sum(j.duration or 0.0 for j in jobs))},
    }
    if record.ended_at is not None:
        answer["HyperParameterTuningEndTime"] = record.ended_at
    if best is not None:
        answer["BestTrainingJob"] = training_job_summary(best, definition, region)
    if record.status is TuningStatus.FAILED and record.status_reason:
        answer["FailureReason"] = record.status_reason
    warm = definition.get("warm_start_config")
    if warm:
        answer["WarmStartConfig"] = {
            "ParentHyperParameterTuningJobs": [
                {"HyperParameterTuningJobName": p} for p in warm["parents"]
            ],
            "WarmStartType": warm["type"],
        }
    return answer


def tuning_job_summary(record: TuningJob, jobs: list[TrainingJob], region: str) -> dict[str, Any]:
    """SageMaker's ``HyperParameterTuningJobSummary`` of one tuning job."""
    summary: dict[str, Any] = {
        "HyperParameterTuningJobName": record.name,
        "HyperParameterTuningJobArn": _arn(region, "hyper-parameter-tuning-job", record.name),
        "HyperParameterTuningJobStatus": record.status.value,
        "Strategy": record.definition["strategy"],
        "CreationTime": record.created_at,
        "ResourceLimits": _config(record.definition)["ResourceLimits"],
        **_counters(jobs),
    }
    if record.ended_at is not None:
        summary["HyperParameterTuningEndTime"] = record.ended_at
    return summary


def _counters(jobs: list[TrainingJob]) -> dict[str, Any]:
    """SageMaker's counters of training-job states (a Pending job is InProgress, a Failed one
    NonRetryableError) and of objective states."""
    return {
        "TrainingJobStatusCounters": {
            "Completed": sum(j.status is TrainingStatus.COMPLETED for j in jobs),
            "InProgress": sum(not j.status.terminal for j in jobs),
            "RetryableError": 0,
            "NonRetryableError": sum(j.status is TrainingStatus.FAILED for j in jobs),
            "Stopped": sum(j.status is TrainingStatus.STOPPED for j in jobs),
        },
        "ObjectiveStatusCounters": {
            s.value: sum(j.objective_status is s for j in jobs) for s in ObjectiveStatus
        },
    }


def training_job_summary(
    job: TrainingJob, definition: dict[str, Any], region: str
) -> dict[str, Any]:
    """SageMaker's ``HyperParameterTrainingJobSummary`` of one training job."""
    summary: dict[str, Any] = {
        "TrainingJobName": job.name,
        "TrainingJobArn": _arn(region, "training-job", job.name),
        "TuningJobName": job.tuning_job_name,
        "CreationTime": job.created_at,
        "TrainingJobStatus": "InProgress"
        if job.status is TrainingStatus.PENDING
        else job.status.value,
        "TunedHyperParameters": {
            k: str(v)
            for k, v in job.hyperparameters.items()
            if k in definition["hyperparameter_ranges"]
        },
        "ObjectiveStatus": job.objective_status.value,
    }
    began = job.running_at if job.running_at is not None else job.started_at
    if began is not None:
        summary["TrainingStartTime"] = began
    if job.ended_at is not None:
        summary["TrainingEndTime"] = job.ended_at
    if job.failure_reason:
        summary["FailureReason"] = job.failure_reason
    if job.objective is not None and math.isfinite(job.objective):
        summary["FinalHyperParameterTuningJobObjectiveMetric"] = {
            "Type": definition.get("objective_type", "Maximize"),
            "MetricName": definition["objective_metric_name"],
            "Value": job.objective,
        }
    return summary


def describe_training_job(
    job: TrainingJob, record: TuningJob, points: list[MetricPoint], region: str
) -> dict[str, Any]:
    """``DescribeTrainingJob``'s answer for a training job of a tuning job: the hyperparameters
    as its command line got them, and ``FinalMetricDataList`` from ``points``, each metric's
    last finite value (``Store.last_metric_points``; stamped when it was read, no later than
    the job's end)."""
    definition = record.definition
    static = definition["job_definition"].get("static_hyperparameters") or {}
    training = _training_definition(definition)
    answer: dict[str, Any] = {
        "TrainingJobName": job.name,
        "TrainingJobArn": _arn(region, "training-job", job.name),
        "TuningJobArn": _arn(region, "hyper-parameter-tuning-job", record.name),
        "TrainingJobStatus": "InProgress"
        if job.status is TrainingStatus.PENDING
        else job.status.value,
        "SecondaryStatus": _secondary_status(job),
        "HyperParameters": {k: argv_word(v) for k, v in {**static, **job.hyperparameters}.items()},
        "AlgorithmSpecification": training["AlgorithmSpecification"],
        "StoppingCondition": training.get("StoppingCondition", {}),
        "CreationTime": job.created_at,
        "LastModifiedTime": max(
            t for t in (job.created_at, job.started_at, job.running_at, job.ended_at) if t
        ),
    }
    began = job.running_at if job.running_at is not None else job.started_at
    if began is not None:
        answer["TrainingStartTime"] = began
    if job.ended_at is not None:
        answer["TrainingEndTime"] = job.ended_at
    if job.duration is not None:
        seconds = round(job.duration)
        answer["TrainingTimeInSeconds"] = answer["BillableTimeInSeconds"] = seconds
    if job.failure_reason:
        answer["FailureReason"] = job.failure_reason
    if job.artifacts_uri:
        answer["ModelArtifacts"] = {"S3ModelArtifacts": job.artifacts_uri}
    answer["FinalMetricDataList"] = [
        {"MetricName": p.name, "Value": p.value, "Timestamp": _printed(p.timestamp, job)}
        for p in points
    ]
    return answer


def _printed(read_at: float, job: TrainingJob) -> float:
    """When a metric line was printed, as near as is known: a point is stamped when the tuner
    read it, which for a short job is after the job ended; it was printed by then."""
    return read_at if job.ended_at is None else min(read_at, job.ended_at)


def _secondary_status(job: TrainingJob) -> str:
    """SageMaker's ``SecondaryStatus``: Starting until the program runs, then Training, then
    the end state (MaxRuntimeExceeded for a job ended by its ``max_runtime``)."""
    if job.status is TrainingStatus.PENDING or (
        job.status is TrainingStatus.IN_PROGRESS and job.running_at is None
    ):
        return "Starting"
    if job.status is TrainingStatus.IN_PROGRESS:
        return "Training"
    if job.status is TrainingStatus.FAILED and (job.failure_reason or "").startswith(
        "exceeded max_runtime"
    ):
        return "MaxRuntimeExceeded"
    return job.status.value


def _config(definition: dict[str, Any]) -> dict[str, Any]:
    """``HyperParameterTuningJobConfig`` as SageMaker would echo it, from our definition."""
    limits: dict[str, Any] = {"MaxParallelTrainingJobs": definition["max_parallel_jobs"]}
    if definition.get("max_jobs") is not None:
        limits["MaxNumberOfTrainingJobs"] = definition["max_jobs"]
    if definition.get("max_tuning_runtime") is not None:
        limits["MaxRuntimeInSeconds"] = int(definition["max_tuning_runtime"])
    ranges: dict[str, list[dict[str, Any]]] = {
        "ContinuousParameterRanges": [],
        "IntegerParameterRanges": [],
        "CategoricalParameterRanges": [],
    }
    for name, spec in definition["hyperparameter_ranges"].items():
        if spec["type"] == "categorical":
            values = [str(v) for v in spec["values"]]
            ranges["CategoricalParameterRanges"].append({"Name": name, "Values": values})
            continue
        kind = (
            "IntegerParameterRanges" if spec["type"] == "integer" else "ContinuousParameterRanges"
        )
        ranges[kind].append(
            {
                "Name": name,
                "MinValue": str(spec["min_value"]),
                "MaxValue": str(spec["max_value"]),
                "ScalingType": spec.get("scaling_type") or "Auto",
            }
        )
    config: dict[str, Any] = {
        "Strategy": definition["strategy"],
        "HyperParameterTuningJobObjective": {
            "Type": definition.get("objective_type", "Maximize"),
            "MetricName": definition["objective_metric_name"],
        },
        "ResourceLimits": limits,
        "ParameterRanges": ranges,
        "TrainingJobEarlyStoppingType": definition.get("early_stopping_type") or "Off",
    }
    if definition.get("random_seed") is not None:
        config["RandomSeed"] = definition["random_seed"]
    return config


def _training_definition(definition: dict[str, Any]) -> dict[str, Any]:
    """``TrainingJobDefinition`` as SageMaker would echo it, from our definition."""
    job = definition["job_definition"]
    algorithm: dict[str, Any] = {
        "TrainingInputMode": "File",
        "MetricDefinitions": definition.get("metric_definitions") or [],
    }
    if job.get("image"):
        algorithm["TrainingImage"] = job["image"]
    if job.get("command"):
        algorithm["ContainerEntrypoint"] = list(job["command"])
    answer: dict[str, Any] = {
        "AlgorithmSpecification": algorithm,
        "StaticHyperParameters": {
            k: str(v) for k, v in (job.get("static_hyperparameters") or {}).items()
        },
    }
    if job.get("max_runtime") is not None:
        answer["StoppingCondition"] = {"MaxRuntimeInSeconds": int(job["max_runtime"])}
    return answer
