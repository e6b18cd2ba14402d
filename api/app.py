"""The REST service: create, watch and stop tuning jobs over HTTP.

Every endpoint but ``/healthz``, ``/openapi.json`` and ``/docs`` (which describe the API and
hold no data) and the dashboard's page shells under ``/ui`` (static files without data, see
``api.dashboard``) needs ``Authorization: Bearer <token>`` (401 otherwise). Client
mistakes are answered with a 4xx whose ``detail`` names the field and the rule: 400 for a
definition that breaks a rule, 404 for an unknown name, 413 for a body over the size limit,
422 for a request of the wrong shape. Tuning jobs run in the background
(``tuner.service.TuningService``) and survive restarts of the service.

Run it with ``tuner serve`` or ``uvicorn --factory api.app:create_app``.
"""

import asyncio
import codecs
import logging
import math
import re
import secrets
import time
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Body, Depends, FastAPI, HTTPException, Query, Request
from fastapi import Path as PathParam
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import (
    HTMLResponse,
    JSONResponse,
    PlainTextResponse,
    Response,
    StreamingResponse,
)
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from api import schemas
from api.dashboard import add_pages, data_router
from api.renders import RenderLimit
from api.sagemaker import from_sagemaker, in_sagemaker_terms, is_sagemaker_request
from api.sagemaker_protocol import sagemaker_router
from api.settings import Settings
from tuner.definition import MAX_NESTING, TuningJobDefinition
from tuner.errors import NotFoundError, StoreUnavailable, TunerError, ValidationError
from tuner.fidelity import tuning_job_report
from tuner.launch_policy import LaunchPolicy
from tuner.names import TRAINING_JOB_NAME as TRAINING_NAME
from tuner.names import TRAINING_JOB_NAME_LENGTH, TUNING_JOB_NAME_LENGTH
from tuner.names import TUNING_JOB_NAME as TUNING_NAME
from tuner.records import TrainingStatus, TuningJob, TuningStatus
from tuner.reports import build, render_html
from tuner.service import TuningService
from tuner.storage import Store
from tuner.storage.store import RUN_PATIENCE
from tuner.summary import describe, training_job_dict

FOLLOW_POLL_SECONDS = 0.5  # how often a follower reads a log that has not grown
FOLLOW_STATUS_SECONDS = 2.0  # how often it asks the store whether a silent job has ended
FOLLOW_LIMIT_SECONDS = 6 * 3600
LOG_FILE = "log.txt"
LOG_CHUNK_BYTES = 1 << 20  # a log is read and sent in pieces of this size
TAIL_LIMIT_BYTES = 16 << 20  # ``tail`` reads at most this much of the end of a log
HTTP_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")

TuningName = Annotated[str, PathParam(pattern=TUNING_NAME, max_length=TUNING_JOB_NAME_LENGTH)]
TrainingName = Annotated[str, PathParam(pattern=TRAINING_NAME, max_length=TRAINING_JOB_NAME_LENGTH)]
REPEATABLE_QUERY = {"names"}  # the only list parameter: ?names=a&names=b
Format = Annotated[Literal["json", "html"], Query(description="json (default) or html")]
SortKey = Literal["number", "name", "created", "status", "objective"]
SortOrder = Literal["Ascending", "Descending"]

ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"model": schemas.Problem, "description": "the request breaks a rule (named)"},
    401: {"model": schemas.Problem, "description": "missing or wrong bearer token"},
    404: {"model": schemas.Problem, "description": "no such tuning or training job"},
    413: {"model": schemas.Problem, "description": "request body too large"},
}

log = logging.getLogger("tuner.api")


class BodyLimit:
    """ASGI middleware: answer 413 to a request body over ``limit`` bytes, read or declared."""

    def __init__(self, app: Any, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.limit):
            await self._refuse(send)
            return
        # The body is read here, in full and up to the limit, before the app sees it: a body
        # sent in chunks without Content-Length is refused with 413 as well (the app's own
        # body parser would turn an error raised while it reads into a 400).
        messages: list[Any] = []
        total = 0
        while True:
            message = await receive()
            messages.append(message)
            if message["type"] != "http.request":
                break
            total += len(message.get("body", b""))
            if total > self.limit:
                await self._refuse(send)
                return
            if not message.get("more_body", False):
                break

        async def replay() -> Any:
            return messages.pop(0) if messages else await receive()

        await self.app(scope, replay, send)

    async def _refuse(self, send: Any) -> None:
        body = f'{{"detail":"request bodies are limited to {self.limit} bytes"}}'.encode()
        await send(
            {
                "type": "http.response.start",
                "status": 413,
                "headers": [(b"content-type", b"application/json")],
            }
        )
        await send({"type": "http.response.body", "body": body})


def _summary(record: TuningJob) -> dict[str, Any]:
    return {
        "name": record.name,
        "status": record.status.value,
        "status_reason": record.status_reason,
        "strategy": record.definition.get("strategy"),
        "created_at": record.created_at,
        "ended_at": record.ended_at,
    }


def tail_start(path: Path, lines: int, end: int | None = None) -> int:
    """Where the last ``lines`` lines of a file's first ``end`` bytes (all of it by default)
    begin, a last line without its newline counted as one. Read backwards in blocks, none
    kept (a tail of a 30 MB line held about 33 MB per request), at most ``TAIL_LIMIT_BYTES``
    of them (lines that long are cut at their start)."""
    with open(path, "rb") as f:
        end = f.seek(0, 2) if end is None else end
        if lines <= 0 or end == 0:
            return end
        f.seek(end - 1)
        wanted = lines + (f.read(1) == b"\n")  # newlines to pass: a last one ends the last line
        position = end
        while position > 0 and end - position < TAIL_LIMIT_BYTES:
            step = min(65536, position, TAIL_LIMIT_BYTES - (end - position))
            position -= step
            f.seek(position)
            block = f.read(step)
            found = block.count(b"\n")
            if found >= wanted:
                cut = len(block)
                for _ in range(wanted):
                    cut = block.rindex(b"\n", 0, cut)
                return position + cut + 1
            wanted -= found
        return position


def _finite(value: Any) -> Any:
    """``value`` with every NaN or infinite float replaced by its text (JSON has neither)."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def _read_from(path: Path, offset: int, limit: int = LOG_CHUNK_BYTES) -> bytes:
    """At most ``limit`` bytes of a file from ``offset``."""
    with open(path, "rb") as f:
        f.seek(offset)
        return f.read(limit)


def _log_pieces(path: Path, end: int, start: int = 0) -> Iterator[bytes]:
    """A log's bytes from ``start`` to ``end`` in pieces of at most ``LOG_CHUNK_BYTES``: a log
    of gigabytes is sent without being held in memory (it was read whole, decoded and encoded
    again: three times its size per request)."""
    offset = start
    while offset < end:
        data = _read_from(path, offset, min(LOG_CHUNK_BYTES, end - offset))
        if not data:
            return
        offset += len(data)
        yield data


def _log_text(path: Path, end: int, start: int = 0) -> Iterator[bytes]:
    """``_log_pieces`` as ``_utf8`` sends them."""
    decoder = _utf8()
    for data in _log_pieces(path, end, start):
        yield decoder.decode(data).encode()
    yield decoder.decode(b"", final=True).encode()


def _utf8() -> codecs.IncrementalDecoder:
    """A log's bytes as UTF-8 text: invalid bytes replaced (U+FFFD), a character cut by a
    piece's end kept until its rest comes. Every way of reading a log sends text so (a
    follower got the raw bytes under ``charset=utf-8``)."""
    return codecs.getincrementaldecoder("utf-8")("replace")


def _methods_of(app: FastAPI, request: Request) -> list[str]:
    """The methods some route answers on the request's path (asked of each route as the
    router asks it, so routers included in others count too)."""
    return [
        method
        for method in HTTP_METHODS
        if any(
            route.matches({**request.scope, "method": method})[0] == Match.FULL
            for route in app.router.routes
        )
    ]


async def one_value_per_query_parameter(request: Request) -> None:
    """Refuse a query parameter given more than once, but ``names`` (the list of a
    comparison): ``?status=Failed&status=Completed`` silently took the last."""
    counts = Counter(key for key, _ in request.query_params.multi_items())
    for key, count in sorted(counts.items()):
        if count > 1 and key not in REPEATABLE_QUERY:
            raise HTTPException(
                400,
                f"query parameter {key!r} is given {count} times; give it once (only "
                f"{', '.join(sorted(REPEATABLE_QUERY))} may repeat)",
            )


def create_app(settings: Settings | None = None) -> FastAPI:
    """The application; ``settings`` default to the environment (``Settings.from_env``)."""
    settings = settings or Settings.from_env()
    store = Store(settings.database_url)  # a request fails at once when it does not answer
    service = TuningService(
        Store(settings.database_url, patience=RUN_PATIENCE),  # running jobs wait for it
        settings.runs_dir,
        lease_seconds=settings.lease_seconds,
        scan_interval=settings.scan_interval,
        policy=LaunchPolicy(
            settings.allowed_programs,
            settings.allowed_images,
            settings.allowed_docker_hosts,
            settings.max_parallel_jobs,
        ),
        workers=settings.workers,
        max_running=settings.max_running_tuning_jobs,
    )

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        service.start()
        service.scan()  # resume what a previous run of the service left
        yield
        service.shutdown()
        service.store.close()
        store.close()

    app = FastAPI(
        title="tuner",
        version="0.1.0",
        description=__doc__.split("\n\n")[0],
        lifespan=lifespan,
    )
    app.state.service = service
    app.state.settings = settings
    app.add_middleware(BodyLimit, limit=settings.max_body_bytes)

    def detail(exc: TunerError) -> str:
        """The error for a client: the store's URL (a server path, a database host and user)
        is the operator's, not the client's. Text UTF-8 cannot hold (a lone surrogate echoed
        from the request) is escaped: it was a 500."""
        text = str(exc).replace(store.shown_url, "the service's store")
        return text.encode("utf-8", "backslashreplace").decode("utf-8")

    @app.exception_handler(NotFoundError)
    async def _not_found(_: Request, exc: NotFoundError) -> JSONResponse:
        return JSONResponse({"detail": detail(exc)}, status_code=404)

    @app.exception_handler(StoreUnavailable)
    async def _unavailable(_: Request, exc: StoreUnavailable) -> JSONResponse:
        log.warning("%s", exc)  # the driver's reason names hosts and ports: the operator's
        message = "the service's store did not answer (its database is down or unreachable)"
        return JSONResponse({"detail": f"{message}; retry later"}, status_code=503)

    @app.exception_handler(TunerError)
    async def _bad(_: Request, exc: TunerError) -> JSONResponse:
        return JSONResponse({"detail": detail(exc)}, status_code=400)

    @app.exception_handler(RequestValidationError)
    async def _malformed(_: Request, exc: RequestValidationError) -> JSONResponse:
        """FastAPI's 422, with the offending input it echoes made JSON: a body of ``NaN`` or
        ``[1e400]`` (not an object) got a 500, as such a number cannot be sent back."""
        try:
            errors = _finite(jsonable_encoder(exc.errors()))
        except RecursionError:  # an input nested too deep to echo: leave it out
            errors = [{k: v for k, v in e.items() if k != "input"} for e in exc.errors()]
        return JSONResponse({"detail": errors}, status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        """FastAPI's own answer, but a 405 names every method the path has (Starlette's
        ``Allow`` named only the first route's: ``POST`` for ``/tuning-jobs``, which has GET
        too) and a body that could not be parsed says why."""
        headers = dict(exc.headers or {})
        message = exc.detail
        allowed = _methods_of(app, request) if exc.status_code == 405 else []
        if allowed:  # none inside a mount (its path is rewritten): Starlette's own stands
            headers["Allow"] = ", ".join(allowed)
            message = f"{request.method} is not allowed here; allowed: {headers['Allow']}"
        elif exc.status_code == 400 and isinstance(exc.__cause__, RecursionError):
            message = (
                "the body nests JSON objects and lists deeper than the service can read; a "
                f"tuning job definition nests them at most {MAX_NESTING} deep"
            )
        elif exc.status_code == 400 and isinstance(exc.__cause__, UnicodeDecodeError):
            message = f"the body is not UTF-8 JSON: {exc.__cause__}"
        elif exc.status_code == 400 and isinstance(exc.__cause__, ValueError):
            message = f"the body could not be read as JSON: {exc.__cause__}"  # a 5,000-digit int
        return JSONResponse({"detail": message}, status_code=exc.status_code, headers=headers)

    bearer = HTTPBearer(auto_error=False)

    def authorize(
        credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
    ) -> None:
        if credentials is None or not secrets.compare_digest(
            credentials.credentials.encode(), settings.token.encode()
        ):
            raise HTTPException(
                401, "a valid bearer token is required", headers={"WWW-Authenticate": "Bearer"}
            )

    renders = RenderLimit()

    @app.api_route(
        "/healthz", methods=["GET", "HEAD"], response_model=schemas.Health, tags=["service"]
    )
    async def healthz() -> dict[str, str]:
        """Liveness: answers without authentication (HEAD too, as uptime checkers ask), on the
        event loop (never waiting for a worker thread that other requests hold)."""
        return {"status": "ok"}

    # the token first: a client without it learns nothing of the rules of the rest
    checked = [Depends(authorize), Depends(one_value_per_query_parameter)]
    api = APIRouter(dependencies=checked, responses=ERRORS)

    @api.post(
        "/tuning-jobs",
        status_code=201,
        response_model=schemas.TuningJobDescription,
        tags=["tuning jobs"],
    )
    def create_tuning_job(body: Annotated[dict[str, Any], Body()]) -> dict[str, Any]:
        """Create and start a tuning job from our definition (the YAML's content as JSON) or
        from SageMaker's CreateHyperParameterTuningJob request shape."""
        sagemaker = is_sagemaker_request(body)
        data = from_sagemaker(body) if sagemaker else body  # refusals in the request's fields
        try:
            record = service.submit(TuningJobDefinition.parse(data), store)  # 503 if down
        except ValidationError as exc:  # refused in the field names the client sent
            if not sagemaker:
                raise
            raise ValidationError(in_sagemaker_terms(detail(exc))) from None
        return describe(store.get_tuning_job(record.name), [])

    @api.get("/tuning-jobs", response_model=schemas.TuningJobPage, tags=["tuning jobs"])
    def list_tuning_jobs(
        status: TuningStatus | None = None,
        limit: Annotated[int, Query(ge=1, le=500)] = 50,
        offset: Annotated[int, Query(ge=0, le=1_000_000_000)] = 0,
    ) -> dict[str, Any]:
        """Tuning jobs, newest first, optionally of one status; ``next_offset`` pages on."""
        items = store.list_tuning_jobs(status, limit=limit + 1, offset=offset)
        return {
            "items": [_summary(r) for r in items[:limit]],
            "limit": limit,
            "offset": offset,
            "next_offset": offset + limit if len(items) > limit else None,
        }

    @api.get(
        "/tuning-jobs/{name}", response_model=schemas.TuningJobDescription, tags=["tuning jobs"]
    )
    def describe_tuning_job(name: TuningName) -> dict[str, Any]:
        """Status and reason, counters of training-job and objective states, best training job,
        consumed training seconds, and the definition."""
        return describe(store.get_tuning_job(name), store.list_training_jobs(name))

    @api.get(
        "/tuning-jobs/{name}/training-jobs",
        response_model=list[schemas.TrainingJobOut],
        tags=["training jobs"],
    )
    def list_training_jobs(
        name: TuningName,
        status: TrainingStatus | None = None,
        sort_by: Annotated[
            SortKey, Query(description="number (default), name, created, status or objective")
        ] = "number",
        sort_order: Annotated[
            SortOrder | None, Query(description="default: Ascending, and for objective best first")
        ] = None,
        limit: Annotated[int | None, Query(ge=1, le=100_000)] = None,
        offset: Annotated[int, Query(ge=0, le=1_000_000_000)] = 0,
    ) -> list[dict[str, Any]]:
        """The tuning job's training jobs, by number unless ``sort_by`` says otherwise (ties by
        number; jobs without an objective last when sorting by it), optionally of one status
        and one page: at most ``limit`` from ``offset`` (a shorter page is the last one)."""
        descending = None if sort_order is None else sort_order == "Descending"
        jobs = store.list_training_jobs(name, status, sort_by, descending, limit, offset)
        return [training_job_dict(j) for j in jobs]

    @api.get("/tuning-jobs/{name}/fidelity", response_model=schemas.Fidelity, tags=["tuning jobs"])
    async def tuning_job_fidelity(
        name: TuningName, eta: Annotated[int, Query(ge=2, le=100)] = 3
    ) -> Response:
        """How well each step of the objective ranks the completed training jobs as they end,
        and the Hyperband ``min_resource`` that suggests (as ``tuner fidelity``)."""
        return await renders.respond(schemas.Fidelity, tuning_job_report, store, name, eta)

    @api.post(
        "/tuning-jobs/{name}/stop", response_model=schemas.TuningJobSummary, tags=["tuning jobs"]
    )
    def stop_tuning_job(name: TuningName) -> dict[str, Any]:
        """Stop a tuning job: its running training jobs are stopped, no new one starts."""
        return _summary(service.stop(name, store))

    @api.get("/training-jobs/{name}", response_model=schemas.TrainingJobOut, tags=["training jobs"])
    def get_training_job(name: TrainingName) -> dict[str, Any]:
        return training_job_dict(store.get_training_job(name))

    @api.get(
        "/training-jobs/{name}/logs",
        response_model=None,
        tags=["training jobs"],
        responses={200: {"content": {"text/plain": {"schema": {"type": "string"}}}}},
    )
    def training_job_logs(
        name: TrainingName,
        tail: Annotated[int | None, Query(ge=1, le=100_000)] = None,
        follow: bool = False,
    ) -> Any:
        """The job's log (stdout and stderr); ``tail`` keeps the last lines, ``follow``
        streams what is written until the job ends."""
        job = store.get_training_job(name)
        if not follow:
            path = Path(job.workdir or "") / LOG_FILE
            if job.workdir is None or not path.exists():
                return PlainTextResponse("")
            end = path.stat().st_size  # what was written when asked
            start = tail_start(path, tail, end) if tail else 0
            text = _log_text(path, end, start)
            return StreamingResponse(text, media_type="text/plain; charset=utf-8")

        async def stream() -> AsyncIterator[bytes]:
            """Waits asleep on the event loop, not in a worker thread: 200 followers held
            every thread before and every other request waited 1.5-2.7 s. Reads and store
            calls are short and run in threads."""
            deadline = time.monotonic() + FOLLOW_LIMIT_SECONDS
            current = job
            while current.workdir is None or not (Path(current.workdir) / LOG_FILE).exists():
                if current.status.terminal or time.monotonic() >= deadline:
                    return  # ended before it ever started (or never started in time)
                await asyncio.sleep(FOLLOW_POLL_SECONDS)
                current = await asyncio.to_thread(store.get_training_job, name)
            path = Path(current.workdir) / LOG_FILE
            offset = path.stat().st_size
            start = await asyncio.to_thread(tail_start, path, tail, offset) if tail else 0
            decoder = _utf8()
            pieces = _log_pieces(path, offset, start)  # what was written when asked
            while (piece := await asyncio.to_thread(next, pieces, None)) is not None:
                if text := decoder.decode(piece).encode():
                    yield text
            asked = -math.inf  # when the store last said the job runs
            ended = False
            while time.monotonic() < deadline:
                data = await asyncio.to_thread(_read_from, path, offset)
                offset += len(data)
                if data:
                    if text := decoder.decode(data).encode():
                        yield text
                    continue
                if ended:
                    break
                if time.monotonic() - asked >= FOLLOW_STATUS_SECONDS:  # a silent log
                    job_now = await asyncio.to_thread(store.get_training_job, name)
                    asked, ended = time.monotonic(), job_now.status.terminal
                    if ended:
                        continue  # what it wrote before it ended is read, then it leaves
                await asyncio.sleep(FOLLOW_POLL_SECONDS)
            if rest := decoder.decode(b"", final=True).encode():
                yield rest

        return StreamingResponse(stream(), media_type="text/plain; charset=utf-8")

    @api.get(
        "/tuning-jobs/{name}/report",
        response_model=schemas.Report,
        tags=["reports"],
        responses={200: {"content": {"text/html": {"schema": {"type": "string"}}}}},
    )
    async def report(name: TuningName, format: Format = "json", importance: bool = False) -> Any:
        """The tuning job's report (best-so-far curves, tables, objective against each
        hyperparameter) as JSON or a self-contained HTML page; ``importance=true`` adds each
        arm's hyperparameter importance (fANOVA: up to a few seconds an arm)."""
        title = f"Tuning job {name}"
        return await renders.respond(schemas.Report, _report, [name], format, title, importance)

    @api.get(
        "/reports/compare",
        response_model=schemas.Report,
        tags=["reports"],
        responses={200: {"content": {"text/html": {"schema": {"type": "string"}}}}},
    )
    async def compare(
        names: Annotated[list[str], Query(min_length=1, max_length=20)],
        format: Format = "json",
        importance: bool = False,
    ) -> Any:
        """Several tuning jobs side by side (``?names=a&names=b``), grouped into arms by their
        ``arm`` tag; they must share one objective. ``importance=true`` as for one."""
        for n in names:
            if not re.fullmatch(TUNING_NAME, n):
                raise HTTPException(400, f"names must match {TUNING_NAME}, got {n!r}")
        args = (names, format, "Comparison", importance)
        return await renders.respond(schemas.Report, _report, *args)

    def _report(names: list[str], format: str, title: str, importance: bool) -> Any:
        data = build(store, names, importance=importance)
        return HTMLResponse(render_html(data, title)) if format == "html" else data

    app.include_router(api)
    app.include_router(
        data_router(store, renders),
        dependencies=checked,
        responses=ERRORS,
    )
    app.include_router(sagemaker_router(store, service, settings.token))
    add_pages(app)
    return app
