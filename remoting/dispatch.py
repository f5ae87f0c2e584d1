"""Request dispatch: the ``{code: Route}`` table, bulkheads, and one task per request.

Each request runs as its own task, so a slow handler never blocks its connection. The
dispatcher keeps a strong reference to every task (the loop keeps only weak ones) and can
drain them at shutdown. Handler failures become SYSTEM_ERROR responses; the connection stays.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeAlias

import structlog

from remoting.errors import RemotingCommandError
from remoting.protocol.codes import ResponseCode
from remoting.protocol.command import RESPONSE_FLAG, RemotingCommand, response_to

if TYPE_CHECKING:
    from remoting.channel import Channel

Handler: TypeAlias = Callable[[RemotingCommand, "Channel"], Awaitable[RemotingCommand | None]]

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class Route:
    """A handler and the bulkhead group it runs in."""

    handler: Handler
    group: str = "default"


Routes: TypeAlias = Mapping[int, Route]


@dataclass(frozen=True, slots=True)
class Bulkhead:
    """Concurrency limit of a route group, like Java's executor per processor.

    A request that waited longer than ``max_wait_ms`` since it arrived, before getting a slot,
    is answered SYSTEM_BUSY with ``busy_remark`` instead of queueing without bound.
    """

    limit: int
    max_wait_ms: int | None = None
    busy_remark: str = "[REJECTREQUEST]system busy, start flow control for a while"


def not_supported(request: RemotingCommand) -> RemotingCommand:
    # compat: NettyRemotingAbstract.processRequestCommand's remark, leading space included
    return response_to(
        request,
        ResponseCode.REQUEST_CODE_NOT_SUPPORTED,
        f" request type {request.code} not supported",
    )


class Dispatcher:
    """Routes requests from any number of channels to handlers."""

    def __init__(self, routes: Routes, bulkheads: Mapping[str, Bulkhead] | None = None) -> None:
        self._routes = dict(routes)
        self._bulkheads = dict(bulkheads or {})
        self._slots = {name: asyncio.Semaphore(b.limit) for name, b in self._bulkheads.items()}
        self.tasks: set[asyncio.Task[None]] = set()

    def dispatch(self, ch: Channel, cmd: RemotingCommand) -> asyncio.Task[None] | None:
        """Start handling ``cmd``; returns its task, or None when answered at once."""
        route = self._routes.get(cmd.code)
        if route is None:
            log.debug("request_code_not_supported", code=cmd.code, peer=ch.peer)
            if not cmd.is_oneway:
                ch.send_response(not_supported(cmd))
            return None
        task = asyncio.get_running_loop().create_task(self._run(route, cmd, ch))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        return task

    async def _run(self, route: Route, cmd: RemotingCommand, ch: Channel) -> None:
        arrived = time.monotonic()
        slots = self._slots.get(route.group)
        if slots is None:
            response = await self._call(route, cmd, ch)
        elif (busy := await self._acquire(route.group, slots, arrived)) is not None:
            response = response_to(cmd, ResponseCode.SYSTEM_BUSY, busy)
        else:
            try:
                response = await self._call(route, cmd, ch)
            finally:
                slots.release()
        if response is not None and not cmd.is_oneway:
            response.opaque = cmd.opaque
            response.flag |= RESPONSE_FLAG
            response.serialize_type = cmd.serialize_type
            ch.send_response(response)

    async def _acquire(self, group: str, slots: asyncio.Semaphore, arrived: float) -> str | None:
        """Take a slot; returns the busy remark instead when the wait ran past the limit."""
        bulkhead = self._bulkheads[group]
        if bulkhead.max_wait_ms is None:
            await slots.acquire()
            return None
        deadline = arrived + bulkhead.max_wait_ms / 1000
        try:
            async with asyncio.timeout(max(0.0, deadline - time.monotonic())):
                await slots.acquire()
        except TimeoutError:
            log.warning("request_rejected_busy", group=group, limit=bulkhead.limit)
            return bulkhead.busy_remark
        return None

    @staticmethod
    async def _call(route: Route, cmd: RemotingCommand, ch: Channel) -> RemotingCommand | None:
        try:
            return await route.handler(cmd, ch)
        except RemotingCommandError as exc:  # a bad header: the client's fault, no traceback
            log.warning("bad_request", code=cmd.code, peer=ch.peer, error=str(exc))
            return response_to(cmd, ResponseCode.SYSTEM_ERROR, str(exc))
        except (
            Exception
        ) as exc:  # broad catch 1 of 3: a handler bug must not take the connection down
            log.exception("handler_failed", code=cmd.code, peer=ch.peer)
            return response_to(cmd, ResponseCode.SYSTEM_ERROR, f"{type(exc).__name__}: {exc}")

    async def drain(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds for running handlers, then cancel the rest."""
        if not self.tasks:
            return
        _done, pending = await asyncio.wait(set(self.tasks), timeout=timeout)
        for task in pending:
            task.cancel()
        if pending:
            log.warning("requests_cancelled_at_stop", count=len(pending))
            await asyncio.wait(pending)
