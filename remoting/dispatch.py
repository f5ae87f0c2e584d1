"""Request dispatch: the ``{code: Route}`` table, bulkheads, and a task per async request.

A handler is either a coroutine function, run as its own task so a slow one never blocks its
connection, or a plain function that cannot block, answered inline from the read callback
with no task at all (the name server's lookups, echo). The dispatcher keeps a strong
reference to every task (the loop keeps only weak ones) and drains them at shutdown. Handler
failures become SYSTEM_ERROR responses; the connection stays.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeAlias

import structlog

from remoting.errors import RemotingCommandError
from remoting.protocol.codes import ResponseCode
from remoting.protocol.command import ONEWAY_FLAG, RESPONSE_FLAG, RemotingCommand, response_to

if TYPE_CHECKING:
    from remoting.channel import Channel

AsyncHandler: TypeAlias = Callable[[RemotingCommand, "Channel"], Awaitable[RemotingCommand | None]]
SyncHandler: TypeAlias = Callable[[RemotingCommand, "Channel"], RemotingCommand | None]
Handler: TypeAlias = AsyncHandler | SyncHandler

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class Route:
    """A handler and the bulkhead group it runs in; plain functions are answered inline."""

    handler: Handler
    group: str = "default"
    is_async: bool = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "is_async", inspect.iscoroutinefunction(self.handler))


Routes: TypeAlias = Mapping[int, Route]


@dataclass(frozen=True, slots=True)
class Bulkhead:
    """Concurrency limit of a route group, like Java's executor per processor.

    A request that waited longer than ``max_wait_ms`` since it arrived, before getting a slot,
    is answered SYSTEM_BUSY with ``busy_remark`` instead of queueing without bound; the remark
    may name ``{waited_ms}`` and ``{queued}`` (requests then waiting in the group).
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
        self.tasks: dict[asyncio.Task[None], Channel] = {}

    def dispatch(self, ch: Channel, cmd: RemotingCommand) -> None:
        """Handle ``cmd``: inline for plain handlers, else in a task the channel counts."""
        route = self._routes.get(cmd.code)
        if route is None:
            log.debug("request_code_not_supported", code=cmd.code, peer=ch.peer)
            _respond(ch, cmd, not_supported(cmd))
        elif not route.is_async and route.group not in self._slots:
            _respond(ch, cmd, _call_sync(route, cmd, ch))
        else:
            task = asyncio.get_running_loop().create_task(self._run(route, cmd, ch))
            self.tasks[task] = ch
            ch.request_started()
            task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[None]) -> None:
        self.tasks.pop(task).request_done()

    async def _run(self, route: Route, cmd: RemotingCommand, ch: Channel) -> None:
        slots = self._slots.get(route.group)
        if slots is None:
            response = await _call(route, cmd, ch)
        elif (busy := await self._acquire(route.group, slots, time.monotonic())) is not None:
            response = response_to(cmd, ResponseCode.SYSTEM_BUSY, busy)
        else:
            try:
                response = await _call(route, cmd, ch)
            finally:
                slots.release()
        _respond(ch, cmd, response)

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
            waited_ms = int((time.monotonic() - arrived) * 1000)
            queued = len(getattr(slots, "_waiters", None) or ())
            log.warning("request_rejected_busy", group=group, waited_ms=waited_ms, queued=queued)
            return bulkhead.busy_remark.format(waited_ms=waited_ms, queued=queued)
        return None

    async def drain(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds for running handlers, then cancel the rest."""
        if not self.tasks:
            return
        _finished, pending = await asyncio.wait(set(self.tasks), timeout=timeout)
        for task in pending:
            task.cancel()
        if pending:
            log.warning("requests_cancelled_at_stop", count=len(pending))
            await asyncio.wait(pending)


def _respond(ch: Channel, cmd: RemotingCommand, response: RemotingCommand | None) -> None:
    if response is not None and not cmd.flag & ONEWAY_FLAG:
        response.opaque = cmd.opaque
        response.flag |= RESPONSE_FLAG
        response.serialize_type = cmd.serialize_type
        ch.send_response(response)


async def _call(route: Route, cmd: RemotingCommand, ch: Channel) -> RemotingCommand | None:
    try:
        result = route.handler(cmd, ch)
        return await result if inspect.isawaitable(result) else result
    except Exception as exc:  # noqa: BLE001 -- broad catch 1 of 3 (logged in _failed)
        return _failed(cmd, ch, exc)


def _call_sync(route: Route, cmd: RemotingCommand, ch: Channel) -> RemotingCommand | None:
    try:
        return route.handler(cmd, ch)  # type: ignore[return-value]  # checked: not a coroutine fn
    except Exception as exc:  # noqa: BLE001 -- broad catch 1 of 3 (logged in _failed)
        return _failed(cmd, ch, exc)


def _failed(cmd: RemotingCommand, ch: Channel, exc: Exception) -> RemotingCommand:
    if isinstance(exc, RemotingCommandError):  # a bad header: the client's fault, no traceback
        log.warning("bad_request", code=cmd.code, peer=ch.peer, error=str(exc))
        return response_to(cmd, ResponseCode.SYSTEM_ERROR, str(exc))
    log.error("handler_failed", code=cmd.code, peer=ch.peer, exc_info=exc)
    return response_to(cmd, ResponseCode.SYSTEM_ERROR, f"{type(exc).__name__}: {exc}")
