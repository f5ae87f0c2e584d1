"""Request dispatch: the ``{code: Route}`` table, bulkheads, and tasks for waiting handlers.

A handler is a plain function (answered inline from the read callback, no task at all: the
name server's lookups, echo) or a coroutine function. A coroutine handler starts inline too,
like Python 3.12's eager tasks: most finish without ever waiting (a send with ASYNC_FLUSH)
and then cost no task; one that suspends is handed, mid-flight, to a Task, so a slow handler
never blocks its connection. Until its first suspension a handler has no current task, so it
must not use ``asyncio.timeout`` / ``TaskGroup`` before awaiting something
(``remoting.tasks.wait_future`` needs none). The dispatcher keeps a strong reference to every
task (the loop keeps only weak ones) and drains them at shutdown. Handler failures become
SYSTEM_ERROR responses; the connection stays.
"""

from __future__ import annotations

import asyncio
import collections
import inspect
import time
from collections.abc import Awaitable, Callable, Coroutine, Generator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeAlias

import structlog

from remoting.errors import RemotingCommandError
from remoting.protocol.codes import ResponseCode
from remoting.protocol.command import ONEWAY_FLAG, RESPONSE_FLAG, RemotingCommand, response_to
from remoting.tasks import wait_future

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


class Slots:
    """A bulkhead's slots: a counter, and a queue of waiters only when all are taken.
    A released slot passes straight to the first waiter, so none is ever lost."""

    __slots__ = ("limit", "used", "waiters")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0
        self.waiters: collections.deque[asyncio.Future[None]] = collections.deque()

    def try_take(self) -> bool:
        if self.used < self.limit:
            self.used += 1
            return True
        return False

    async def take(self, timeout: float | None) -> bool:
        """Wait for a slot; False if ``timeout`` seconds pass first."""
        if self.try_take():
            return True
        fut = asyncio.get_running_loop().create_future()
        self.waiters.append(fut)
        try:
            return await wait_future(fut, timeout)
        except asyncio.CancelledError:
            if fut.done() and not fut.cancelled() and fut.exception() is None:
                self.release()  # the slot arrived as we were cancelled: pass it on
            raise
        finally:
            if not fut.done():  # cancelled while waiting: never take the slot
                fut.cancel()

    def release(self) -> None:
        while self.waiters:
            waiter = self.waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)  # the slot moves to the waiter: ``used`` stays
                return
        self.used -= 1


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
        self._slots = {name: Slots(b.limit) for name, b in self._bulkheads.items()}
        self.tasks: dict[asyncio.Task[None], Channel] = {}

    def dispatch(self, ch: Channel, cmd: RemotingCommand) -> None:
        """Handle ``cmd``: inline for plain handlers, else in a task the channel counts."""
        route = self._routes.get(cmd.code)
        if route is None:
            log.debug("request_code_not_supported", code=cmd.code, peer=ch.peer)
            respond(ch, cmd, not_supported(cmd))
        elif not route.is_async and route.group not in self._slots:
            respond(ch, cmd, _call_sync(route, cmd, ch))
        else:
            coro = self._run(route, cmd, ch)
            try:
                waiting_on = coro.send(None)  # the first step, inline
            except StopIteration:
                return  # finished without waiting: answered already, no task needed
            task = asyncio.get_running_loop().create_task(_Resume(coro, waiting_on).run())
            self.tasks[task] = ch
            ch.request_started()
            task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[None]) -> None:
        self.tasks.pop(task).request_done()

    async def _run(self, route: Route, cmd: RemotingCommand, ch: Channel) -> None:
        slots = self._slots.get(route.group)
        if slots is None:
            response = await _call(route, cmd, ch)
        elif slots.try_take():
            try:
                response = await _call(route, cmd, ch)
            finally:
                slots.release()
        elif (busy := await self._acquire(route.group, slots, time.monotonic())) is not None:
            response = response_to(cmd, ResponseCode.SYSTEM_BUSY, busy)
        else:
            try:
                response = await _call(route, cmd, ch)
            finally:
                slots.release()
        respond(ch, cmd, response)

    async def _acquire(self, group: str, slots: Slots, arrived: float) -> str | None:
        """Take a slot; returns the busy remark instead when the wait ran past the limit."""
        bulkhead = self._bulkheads[group]
        limit = bulkhead.max_wait_ms
        timeout = None if limit is None else max(0.0, arrived + limit / 1000 - time.monotonic())
        if await slots.take(timeout):
            return None
        waited_ms = int((time.monotonic() - arrived) * 1000)
        queued = len(slots.waiters)
        log.warning("request_rejected_busy", group=group, waited_ms=waited_ms, queued=queued)
        return bulkhead.busy_remark.format(waited_ms=waited_ms, queued=queued)

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


class _Resume:
    """Continues, under a Task, a coroutine whose first step already ran and suspended: the
    Task waits on what it yielded, then everything is passed through (send and throw), as
    ``yield from`` would."""

    __slots__ = ("coro", "waiting_on")

    def __init__(self, coro: Coroutine[Any, Any, None], waiting_on: Any) -> None:
        self.coro = coro
        self.waiting_on = waiting_on

    async def run(self) -> None:
        await self

    def __await__(self) -> Generator[Any, Any, None]:
        coro, value = self.coro, self.waiting_on
        while True:
            try:
                sent = yield value
            except GeneratorExit:
                coro.close()
                raise
            except BaseException as exc:  # noqa: BLE001 -- not caught: forwarded (cancellation)
                try:
                    value = coro.throw(exc)
                except StopIteration:
                    return
            else:
                try:
                    value = coro.send(sent)
                except StopIteration:
                    return


def respond(ch: Channel, cmd: RemotingCommand, response: RemotingCommand | None) -> None:
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
