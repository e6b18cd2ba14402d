"""A client of the REST service, for ``HyperparameterTuner(service_url=...)``.

Every call raises ``ValidationError`` for a 400/413/422 answer, ``NotFoundError`` for 404 and
``TunerError`` for anything else that is not a success (the service's ``detail`` included).
Reads made with ``patience`` (``describe``, which ``wait()`` polls) ride out a service that is
restarting: a refused connection, a timeout or a 503 is tried again, 0.5 s doubling to 5 s
apart, for up to ``patience`` seconds (a service killed and started again continues its
tuning jobs; its client's ``wait()`` failed at the first refused poll).
"""

from __future__ import annotations

import os
import re
import time
from typing import Any

from tuner.definition import NAME_PATTERN
from tuner.errors import NotFoundError, TunerError, ValidationError
from tuner.records import TrainingJob, TrainingStatus
from tuner.summary import training_job_from_dict

REQUEST_TIMEOUT = 30.0  # seconds a request waits for the service, by default


class ServiceClient:
    def __init__(
        self, url: str, token: str | None = None, timeout: float = REQUEST_TIMEOUT
    ) -> None:
        token = token or os.environ.get("TUNER_API_TOKEN")
        if not token:
            raise ValidationError(
                "a service needs a bearer token: pass service_token= or set TUNER_API_TOKEN"
            )
        self.url = url.rstrip("/")
        import httpx  # here, not at import: only a tuner that talks to a service needs it

        self._http = httpx.Client(
            base_url=self.url, headers={"Authorization": f"Bearer {token}"}, timeout=timeout
        )

    def _call(self, method: str, path: str, patience: float = 0.0, **kw: Any) -> Any:
        import httpx

        give_up = time.monotonic() + patience
        pause = 0.5
        while True:
            unreachable: httpx.HTTPError | None = None
            try:
                response = self._http.request(method, path, **kw)
            except httpx.HTTPError as exc:
                unreachable = exc
            retry = unreachable is None and response.status_code == 503
            retry |= isinstance(unreachable, httpx.TransportError)
            if not retry or time.monotonic() + pause > give_up:
                break
            time.sleep(pause)
            pause = min(pause * 2, 5.0)
        if unreachable is not None:
            raise TunerError(f"cannot reach the tuner service at {self.url}: {unreachable}")
        if response.is_success:
            return response.json()
        try:
            detail = response.json().get("detail", response.text)
        except ValueError:
            detail = response.text
        if isinstance(detail, list):  # FastAPI's own 422: one entry per refused field
            detail = "; ".join(_refusal(entry) for entry in detail)
        if response.status_code == 404 and detail == "Not Found":  # no such route: a wrong URL
            raise TunerError(
                f"{self.url}{path} is no endpoint of a tuner service: is service_url the "
                "service's root (http://host:port)?"
            )
        if response.status_code == 404:
            raise NotFoundError(str(detail))
        if response.status_code in (400, 413, 422):
            raise ValidationError(str(detail))
        raise TunerError(f"the tuner service answered {response.status_code}: {detail}")

    def create(self, definition: dict[str, Any]) -> dict[str, Any]:
        result: dict[str, Any] = self._call("POST", "/tuning-jobs", json=definition)
        return result

    def describe(
        self, name: str, patience: float = 0.0, timeout: float | None = None
    ) -> dict[str, Any]:
        """``timeout``: of each request (default the client's)."""
        extra = {} if timeout is None else {"timeout": timeout}
        result: dict[str, Any] = self._call("GET", _path(name), patience=patience, **extra)
        return result

    def step_counts(self, name: str) -> dict[str, int]:
        """How many values of the objective each training job reported, by job name."""
        columns = self._call("GET", _path(name, "trials"))["columns"]
        return dict(zip(columns["name"], columns["steps"], strict=True))

    def importance(self, name: str) -> dict[str, Any]:
        """The hyperparameter importance row of tuning job ``name`` (its report's one arm)."""
        report = self._call("GET", _path(name, "report"), params={"importance": "true"})
        row: dict[str, Any] = report["importance"][0]
        return row

    def step_agreement(self, name: str, eta: int) -> dict[str, Any]:
        """The service's ``tuner fidelity`` report of tuning job ``name``."""
        result: dict[str, Any] = self._call("GET", _path(name, "fidelity"), params={"eta": eta})
        return result

    def training_jobs(
        self,
        name: str,
        status: TrainingStatus | None = None,
        sort_by: str = "number",
        sort_order: str | None = None,
        limit: int | None = None,
        offset: int = 0,
    ) -> list[TrainingJob]:
        """As ``HyperparameterTuner.training_jobs`` (the service sorts, filters and pages)."""
        asked = {
            "status": None if status is None else status.value,
            "sort_by": sort_by,
            "sort_order": sort_order,
            "limit": limit,
            "offset": offset,
        }
        params = {k: v for k, v in asked.items() if v is not None}
        return [
            training_job_from_dict(d)
            for d in self._call("GET", _path(name, "training-jobs"), params=params)
        ]

    def stop(self, name: str) -> dict[str, Any]:
        result: dict[str, Any] = self._call("POST", _path(name, "stop"))
        return result

    def close(self) -> None:
        self._http.close()


def _path(name: str, *rest: str) -> str:
    """The URL path of tuning job ``name`` (and a sub-resource); a name the service could not
    have made (``..``, ``a/b``, ``x?y=1``) is refused here, never sent as another path."""
    if not isinstance(name, str) or not re.fullmatch(NAME_PATTERN, name):
        raise ValidationError(
            "a tuning job name is 1-63 letters, digits and hyphens, starting with a letter or "
            f"digit, got {name!r}"
        )
    return "/".join(("/tuning-jobs", name, *rest))


def _refusal(entry: Any) -> str:
    """One entry of FastAPI's validation error as a sentence: where, the rule, the value."""
    if not isinstance(entry, dict):
        return str(entry)
    where = " ".join(str(part) for part in entry.get("loc", ()))
    got = f", got {entry['input']!r}" if "input" in entry else ""
    return f"{where}: {entry.get('msg', 'refused')}{got}"
