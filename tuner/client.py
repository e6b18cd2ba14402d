"""A client of the REST service, for ``HyperparameterTuner(service_url=...)``.

Every call raises ``ValidationError`` for a 400/413/422 answer, ``NotFoundError`` for 404 and
``TunerError`` for anything else that is not a success (the service's ``detail`` included).
"""

from __future__ import annotations

import os
from typing import Any

from tuner.errors import NotFoundError, TunerError, ValidationError
from tuner.records import TrainingJob, TrainingStatus
from tuner.summary import training_job_from_dict


class ServiceClient:
    def __init__(self, url: str, token: str | None = None, timeout: float = 30.0) -> None:
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

    def _call(self, method: str, path: str, **kw: Any) -> Any:
        import httpx

        try:
            response = self._http.request(method, path, **kw)
        except httpx.HTTPError as exc:
            raise TunerError(f"cannot reach the tuner service at {self.url}: {exc}") from None
        if response.is_success:
            return response.json()
        try:
            detail = response.json().get("detail", response.text)
        except ValueError:
            detail = response.text
        if response.status_code == 404:
            raise NotFoundError(str(detail))
        if response.status_code in (400, 413, 422):
            raise ValidationError(str(detail))
        raise TunerError(f"the tuner service answered {response.status_code}: {detail}")

    def create(self, definition: dict[str, Any]) -> dict[str, Any]:
        result: dict[str, Any] = self._call("POST", "/tuning-jobs", json=definition)
        return result

    def describe(self, name: str) -> dict[str, Any]:
        result: dict[str, Any] = self._call("GET", f"/tuning-jobs/{name}")
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
            for d in self._call("GET", f"/tuning-jobs/{name}/training-jobs", params=params)
        ]

    def stop(self, name: str) -> dict[str, Any]:
        result: dict[str, Any] = self._call("POST", f"/tuning-jobs/{name}/stop")
        return result

    def close(self) -> None:
        self._http.close()
