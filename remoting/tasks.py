"""Helpers for owned background tasks and waits: ``every()`` runs a periodic job with a fixed
delay; ``wait_future()`` waits with a timeout without needing a current task."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

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


async def wait_future(fut: asyncio.Future[Any], timeout: float | None) -> bool:
    """Await ``fut`` (a future only this caller waits on) for at most ``timeout`` seconds;
    False on timeout, after which ``fut`` is done (failed) so nobody resolves it later.

    Unlike ``asyncio.timeout`` this needs no current task, so it is safe in the first step
    of a handler that the dispatcher runs inline (see remoting.dispatch).
    """
    if timeout is None:
        await fut
        return True
    timer = asyncio.get_running_loop().call_later(timeout, _expire, fut)
    try:
        await fut
    except _Expired:
        return False
    finally:
        timer.cancel()
    return True


class _Expired(Exception):
    pass


def _expire(fut: asyncio.Future[Any]) -> None:
    if not fut.done():
        fut.set_exception(_Expired())
