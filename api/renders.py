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
from collections.abc import Callable
from typing import Any, TypeVar

from starlette.concurrency import run_in_threadpool

RENDERS_AT_ONCE = 4
T = TypeVar("T")


class RenderLimit:
    """``await limit.run(function, *args)``: ``function(*args)`` in a worker thread, at most
    ``at_once`` of them at a time (first come, first served)."""

    def __init__(self, at_once: int = RENDERS_AT_ONCE) -> None:
        self._slots = asyncio.Semaphore(at_once)

    async def run(self, function: Callable[..., T], *args: Any) -> T:
        async with self._slots:
            return await run_in_threadpool(function, *args)
