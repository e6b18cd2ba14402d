"""A bound on the heavy reads a service computes at once: reports, comparisons, fidelity and
the dashboard's trial columns.

Each is built in a worker thread, and the service has one pool of them (anyio's, 40 threads)
for every request that touches the store. Unbounded, 40 clients asking for a large HTML report
held every thread, and the next request waited behind them: ``/healthz`` took 25 s. Here at
most ``at_once`` builds run; the rest wait on the event loop, holding no thread, so every other
request still finds one.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import Callable
from functools import cache
from typing import Any, TypeVar

from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, TypeAdapter
from starlette.concurrency import run_in_threadpool

RENDERS_AT_ONCE = 4
T = TypeVar("T")


class RenderLimit:
    """``await limit.run(function, *args)``: ``function(*args)`` in a worker thread, at most
    ``at_once`` of them at a time on each event loop (first come, first served)."""

    def __init__(self, at_once: int = RENDERS_AT_ONCE) -> None:
        self.at_once = at_once
        # one semaphore per event loop: an asyncio one waits only on the loop it first waited
        # on, and one app may be served from several (a test client's, a second server's)
        self._slots: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore]
        self._slots = weakref.WeakKeyDictionary()
        self._made = threading.Lock()

    async def run(self, function: Callable[..., T], *args: Any) -> T:
        async with self._loops_slots():
            return await run_in_threadpool(function, *args)

    def _loops_slots(self) -> asyncio.Semaphore:
        """The running event loop's semaphore (``at_once`` per loop)."""
        loop = asyncio.get_running_loop()
        with self._made:
            slots = self._slots.get(loop)
            if slots is None:
                slots = self._slots[loop] = asyncio.Semaphore(self.at_once)
        return slots

    async def respond(
        self, model: type[BaseModel], function: Callable[..., Any], *args: Any
    ) -> Response:
        """``run``, the result checked against ``model`` and made JSON in the worker thread
        too (a ``Response`` is sent as it is): FastAPI checks what an ``async`` route returns on
        the event loop, where a large report held every other request (24 ms for 5,000 jobs)."""

        def build() -> Response:
            data = function(*args)
            if isinstance(data, Response):
                return data
            adapter = _adapter(model)
            return JSONResponse(adapter.dump_python(adapter.validate_python(data), mode="json"))

        return await self.run(build)


@cache
def _adapter(model: type[BaseModel]) -> TypeAdapter[Any]:
    return TypeAdapter(model)
