"""Helpers for owned background tasks: ``every()`` runs a periodic job with a fixed delay."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import structlog

log = structlog.get_logger(__name__)


async def every(
    interval: float,
    job: Callable[[], Awaitable[None]],
    *,
    name: str,
    initial_delay: float | None = None,
) -> None:
    """Sleep, run ``job``, repeat until cancelled; an exception is logged and survived.

    The delay is fixed between the end of one round and the start of the next, so slow rounds
    never pile up.
    """
    await asyncio.sleep(interval if initial_delay is None else initial_delay)
    while True:
        try:
            await job()
        except Exception:  # broad catch 2 of 3: a failed round must not stop the loop
            log.exception("periodic_job_failed", job=name)
        await asyncio.sleep(interval)
