"""Heavy reads (reports, comparisons, fidelity, trial columns) wait on the event loop beyond
``api.renders.RENDERS_AT_ONCE``: 40 clients asking for a report held every worker thread of
the service and ``/healthz`` answered after 25 s."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest

import api.app
from api.app import create_app
from api.renders import RENDERS_AT_ONCE, RenderLimit
from api.settings import Settings
from tests.api.conftest import definition
from tuner.definition import TuningJobDefinition
from tuner.storage import Store

TOKEN = "render-token"


def test_sixty_waiting_reports_leave_every_other_request_a_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"sqlite:///{tmp_path / 'tuner.db'}"
    store = Store(url)
    store.create_tuning_job("slow", TuningJobDefinition.parse(definition("slow")).to_json())
    store.close()
    release = threading.Event()
    building = threading.Semaphore(0)
    inside = 0
    most = 0
    count = threading.Lock()

    def blocked_build(_store: Any, names: list[str], **options: Any) -> dict[str, Any]:
        nonlocal inside, most
        with count:
            inside += 1
            most = max(most, inside)
        building.release()
        release.wait(60)
        with count:
            inside -= 1
        return real_build(_store, names, **options)

    real_build = api.app.build
    monkeypatch.setattr(api.app, "build", blocked_build)
    app = create_app(Settings(token=TOKEN, database_url=url, runs_dir=str(tmp_path / "runs")))
    headers = {"Authorization": f"Bearer {TOKEN}"}

    async def scenario() -> None:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(
            transport=transport, base_url="http://test", headers=headers, timeout=60
        ) as web:
            reports = [asyncio.create_task(web.get("/tuning-jobs/slow/report")) for _ in range(60)]
            for _ in range(RENDERS_AT_ONCE):
                assert await asyncio.to_thread(building.acquire, True, 30)
            # 60 reports asked, RENDERS_AT_ONCE being built: a request that needs a worker
            # thread still gets one at once, and so does the liveness probe.
            described = await asyncio.wait_for(web.get("/tuning-jobs/slow"), 10)
            assert described.status_code == 200 and described.json()["name"] == "slow"
            assert (await asyncio.wait_for(web.get("/healthz"), 10)).status_code == 200
            release.set()
            answers = await asyncio.gather(*reports)
            assert [a.status_code for a in answers] == [200] * 60

    asyncio.run(scenario())
    assert most == RENDERS_AT_ONCE


def test_one_limit_serves_every_event_loop_it_is_awaited_on() -> None:
    """An asyncio semaphore made once waits only on the first loop it waited on: the same app
    served from a second loop (a second test client, a second server) raised RuntimeError on
    the first contended render there."""
    limit = RenderLimit(at_once=1)

    async def contended() -> list[int]:
        return list(await asyncio.gather(*(limit.run(lambda n=n: n) for n in range(4))))

    for _ in range(3):  # a fresh event loop each time
        assert asyncio.run(contended()) == [0, 1, 2, 3]
