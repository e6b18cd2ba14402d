"""The live dashboard: pages under ``/ui`` and the data endpoints they poll.

The pages (``/ui/...``) and their scripts and styles (``/ui/static/...``) are static files that
hold no data, so they are served without the token; the token typed into the login page is kept
in the tab's ``sessionStorage`` and every data call sends it as ``Authorization: Bearer``. The
data endpoints (``/dashboard/...``, ``/tuning-jobs/{name}/trials``,
``/training-jobs/{name}/log-chunk``) need it like the rest of the API (401 otherwise).

Nothing is fetched from another origin: every page carries a Content-Security-Policy that
allows scripts, styles and connections from the service itself only, and no inline script.
"""

import gzip
import re
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, FastAPI, HTTPException, Query, Request
from fastapi import Path as PathParam
from fastapi.responses import FileResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel

from api.dashboard_data import log_chunk, overview, trials
from api.renders import RenderLimit
from tuner.names import (
    TRAINING_JOB_NAME,
    TRAINING_JOB_NAME_LENGTH,
    TUNING_JOB_NAME,
    TUNING_JOB_NAME_LENGTH,
)
from tuner.records import TuningStatus
from tuner.reports import build
from tuner.storage import Store

STATIC = Path(__file__).parent / "static"
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'"
)
PAGE_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}
MAX_COMPARE = 20
GZIP_MIN_BYTES = 16_384


class Progress(BaseModel):
    ended: int
    running: int
    total: int
    max_jobs: int | None


class Objective(BaseModel):
    metric: str | None
    type: str


class OverviewItem(BaseModel):
    name: str
    status: str
    status_reason: str | None
    strategy: str | None
    objective: Objective
    progress: Progress
    best_objective: float | None
    created_at: float
    ended_at: float | None


class Overview(BaseModel):
    items: list[OverviewItem]
    limit: int
    offset: int
    next_offset: int | None


class Trials(BaseModel):
    """One tuning job for its page: counters, best-so-far curve (``curve``: lists ``jobs``,
    ``seconds``, ``compute_seconds``, ``best``) and training jobs as ``columns`` (one list per
    field; times in seconds since the tuning job was created)."""

    name: str
    status: str
    status_reason: str | None
    strategy: str | None
    objective: Objective
    limits: dict[str, int | None]
    created_at: float
    ended_at: float | None
    now: float
    training_job_status_counters: dict[str, int]
    stopped_early: int
    failure_reasons: list[dict[str, Any]]
    best_training_job: dict[str, Any] | None
    consumed_seconds: float
    compute_unit: str
    hyperparameter_ranges: dict[str, dict[str, Any]]
    curve: dict[str, list[float | None]]
    columns: dict[str, Any]


class LogChunk(BaseModel):
    name: str
    status: str
    ended: bool
    offset: int
    next_offset: int
    size: int
    text: str


class Comparison(BaseModel):
    """The comparison report's figures without its per-job lists (``tuner.reports.data``)."""

    generated_at: float
    objective: Objective
    arms: list[dict[str, Any]]
    curves: dict[str, list[list[dict[str, Any]]]]
    reach: dict[str, dict[str, dict[str, Any]]]
    top: list[dict[str, Any]]
    statuses: dict[str, str]
    importance: list[dict[str, Any]] = []  # asked for with ``importance=true``


class SecurityHeaders:
    """ASGI middleware: the page headers (CSP first of all) on every response under ``/ui``."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or not str(scope.get("path", "")).startswith("/ui"):
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Any) -> None:
            if message["type"] == "http.response.start":
                extra = [(k.lower().encode(), v.encode()) for k, v in PAGE_HEADERS.items()]
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            await send(message)

        await self.app(scope, receive, send_with_headers)


def accepts_gzip(header: str) -> bool:
    """Whether an ``Accept-Encoding`` header accepts gzip: named (or ``*``) with a quality
    above 0 (RFC 9110 12.5.3; ``gzip;q=0`` refuses it, and a named coding outranks ``*``)."""
    qualities: dict[str, float] = {}
    for part in header.split(","):
        coding, *params = (p.strip() for p in part.split(";"))
        quality = 1.0
        for param in params:
            key, _, value = param.partition("=")
            if key.strip().lower() == "q":
                try:
                    quality = float(value)
                except ValueError:
                    quality = 0.0
        qualities[coding.lower()] = quality
    return qualities.get("gzip", qualities.get("*", 0.0)) > 0


def compact_json(model: type[BaseModel], data: dict[str, Any], request: Request) -> Response:
    """``data`` as ``model``'s JSON (what FastAPI would send), gzipped when it is large and the
    client accepts gzip: the trials of 5,000 jobs shrink about three times."""
    body = model.model_validate(data).model_dump_json().encode()
    headers = {"Vary": "Accept-Encoding"}
    if len(body) >= GZIP_MIN_BYTES and accepts_gzip(request.headers.get("accept-encoding", "")):
        body = gzip.compress(body, 5)
        headers["Content-Encoding"] = "gzip"
    return Response(body, media_type="application/json", headers=headers)


def data_router(store: Store, renders: RenderLimit) -> APIRouter:
    """The endpoints the pages poll; the caller adds the token check (``dependencies``); the
    trial columns and comparisons are built under ``renders``."""
    router = APIRouter()
    tuning = Annotated[str, PathParam(pattern=TUNING_JOB_NAME, max_length=TUNING_JOB_NAME_LENGTH)]
    training = Annotated[
        str, PathParam(pattern=TRAINING_JOB_NAME, max_length=TRAINING_JOB_NAME_LENGTH)
    ]

    @router.get("/dashboard/tuning-jobs", response_model=Overview, tags=["dashboard"])
    def dashboard_tuning_jobs(
        status: TuningStatus | None = None,
        name: Annotated[
            str | None, Query(max_length=TUNING_JOB_NAME_LENGTH, pattern=r"^[^\x00]*$")
        ] = None,
        limit: Annotated[int, Query(ge=1, le=500)] = 50,
        offset: Annotated[int, Query(ge=0, le=1_000_000_000)] = 0,
    ) -> dict[str, Any]:
        """Tuning jobs, newest first, with progress (ended, running, total training jobs and
        ``max_jobs``) and best objective; ``status`` filters, ``name`` keeps names containing
        it; ``next_offset`` pages on."""
        return overview(store, status, name, limit, offset)

    @router.get("/tuning-jobs/{name}/trials", response_model=Trials, tags=["dashboard"])
    async def tuning_job_trials(name: tuning, request: Request) -> Response:
        """Counters, best-so-far curve and every training job as compact columns (gzipped
        when large and the client accepts it)."""
        return await renders.run(lambda: compact_json(Trials, trials(store, name), request))

    @router.get("/training-jobs/{name}/log-chunk", response_model=LogChunk, tags=["dashboard"])
    def training_job_log_chunk(
        name: training,
        offset: Annotated[int, Query(ge=-(1 << 30), le=1 << 40)] = 0,
        limit: Annotated[int, Query(ge=1, le=1 << 20)] = 1 << 18,
    ) -> dict[str, Any]:
        """Up to ``limit`` bytes of the log from byte ``offset`` (negative: from the end);
        call again from ``next_offset`` to follow it; it is complete once ``ended`` is true
        and ``next_offset`` has reached ``size``."""
        return log_chunk(store, name, offset, limit)

    @router.get("/dashboard/compare", response_model=Comparison, tags=["dashboard"])
    async def dashboard_compare(
        names: Annotated[list[str], Query(min_length=1, max_length=MAX_COMPARE)],
        importance: bool = False,
    ) -> Response:
        """The comparison report's arms, best-so-far curves, reach and top configurations of
        these tuning jobs (``?names=a&names=b``), and each one's status; ``importance=true``
        adds each arm's hyperparameter importance (fANOVA, ``tuner.reports.importance``: up to
        a few seconds an arm, so the page asks for it once, not in its live refreshes)."""
        for n in names:
            if re.fullmatch(TUNING_JOB_NAME, n) is None:
                raise HTTPException(400, f"names must match {TUNING_JOB_NAME}, got {n!r}")
        return await renders.respond(Comparison, comparison, names, importance)

    def comparison(names: list[str], importance: bool) -> dict[str, Any]:
        data = build(store, names, importance=importance)
        keep = ("generated_at", "objective", "arms", "curves", "reach", "top", "importance")
        return {
            **{k: data[k] for k in keep},
            "statuses": {n: store.get_tuning_job(n).status.value for n in names},
        }

    return router


def add_pages(app: FastAPI) -> None:
    """Serve the pages and their static files under ``/ui`` (no data, no token needed)."""
    app.add_middleware(SecurityHeaders)
    app.mount("/ui/static", StaticFiles(directory=STATIC), name="ui-static")

    def page(file: str) -> FileResponse:
        return FileResponse(STATIC / file, media_type="text/html")

    @app.get("/", include_in_schema=False)
    def root() -> RedirectResponse:
        return RedirectResponse("/ui/tuning-jobs")

    @app.get("/favicon.ico", include_in_schema=False)
    def favicon() -> Response:
        return Response(status_code=204)

    @app.get("/ui", include_in_schema=False)
    @app.get("/ui/", include_in_schema=False)
    def ui() -> RedirectResponse:
        return RedirectResponse("/ui/tuning-jobs")

    @app.get("/ui/login", include_in_schema=False)
    def login() -> FileResponse:
        return page("login.html")

    @app.get("/ui/tuning-jobs", include_in_schema=False)
    def jobs() -> FileResponse:
        return page("jobs.html")

    @app.get("/ui/tuning-jobs/{name}", include_in_schema=False)
    def job(name: str) -> FileResponse:
        return page("job.html")

    @app.get("/ui/compare", include_in_schema=False)
    def compare() -> FileResponse:
        return page("compare.html")
