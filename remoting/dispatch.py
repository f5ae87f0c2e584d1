"""Request dispatch: the ``{code: Route}`` table, bulkheads, and tasks for waiting handlers.

A handler is a plain function (answered inline from the read callback, no task at all: the
name server's lookups, echo) or a coroutine function. A coroutine handler starts inline too,
like Python 3.12's eager tasks: most finish without ever waiting (a send with ASYNC_FLUSH)
and then cost no task; one that suspends is handed, mid-flight, to a Task, so a slow handler
never blocks its connection. During that first step an ``InlineTask`` stands in as the
current task, so ``asyncio.timeout``, ``TaskGroup`` and outbound requests work from a
handler's first line; once the Task exists the stand-in forwards to it. The dispatcher
keeps a strong reference to every task (the loop keeps only weak ones) and drains them at
shutdown. Handler failures become SYSTEM_ERROR responses; the connection stays.

A route may also take a ``batch`` handler: the requests of its code that one read delivered
together go to it at once (``dispatch_run``; the broker stores a read's single-message sends
in one append), and it answers as many of the leading ones as it can -- or, when their
answers must wait (a SYNC_FLUSH store's flush), returns them ``Deferred``: one Task then
answers them all.

The dispatcher knows nothing of connections: the caller passes the connection object through
to handlers, and a ``Reply`` callable that takes each ``(request, response)``. Given a
``RequestStats``, it counts each request it answers there (code, response code, latency from
dispatch to reply) for ``/metrics``: plain Python, a few hundred nanoseconds.
"""

from __future__ import annotations

import asyncio
import collections
import contextvars
import inspect
import time
from asyncio.tasks import _enter_task, _leave_task
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from time import perf_counter
from typing import Any, NamedTuple, TypeAlias

from aiorocketmq.remoting.counters import OTHER_CODE, RequestStats
from aiorocketmq.remoting.errors import RemotingCommandError
from aiorocketmq.remoting.inline import InlineTask, Resume
from aiorocketmq.remoting.log import get_logger
from aiorocketmq.remoting.protocol.codes import ResponseCode
from aiorocketmq.remoting.protocol.command import RemotingCommand, response_to

# the second argument is the connection the request came on (remoting.channel.Channel)
AsyncHandler: TypeAlias = Callable[[RemotingCommand, Any], Awaitable[RemotingCommand | None]]
SyncHandler: TypeAlias = Callable[[RemotingCommand, Any], RemotingCommand | None]
Handler: TypeAlias = AsyncHandler | SyncHandler
Reply: TypeAlias = Callable[[RemotingCommand, RemotingCommand | None], None]


class Deferred(NamedTuple):
    """A batch handler took the first ``taken`` requests, whose answers need waiting for (a
    SYNC_FLUSH store's flush): ``answers`` gives them, in order, once they are settled."""

    taken: int
    answers: Coroutine[Any, Any, list[RemotingCommand]]


# requests of one route that arrived together, in order -> answers to the leading ones it
# handled, or a Deferred for them; the dispatcher hands the next request to the route's handler
BatchHandler: TypeAlias = Callable[[list[RemotingCommand], Any], list[RemotingCommand] | Deferred]
# what a request with no route gets: a response, or None for no answer at all
Unknown: TypeAlias = Callable[[RemotingCommand], RemotingCommand | None]
# run on each request before anything else (remoting.acl.guard): None serves it, a remark
# refuses it with SYSTEM_ERROR (no answer to a oneway request, as for any response)
Guard: TypeAlias = Callable[[RemotingCommand, Any], str | None]

log = get_logger(__name__)


@dataclass(frozen=True, slots=True)
class Route:
    """A handler and the bulkhead group it runs in; plain functions are answered inline."""

    handler: Handler
    group: str = "default"
    batch: BatchHandler | None = None  # several requests of one read at once, if given
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

    def take_up_to(self, n: int) -> int:
        """Up to ``n`` of the free slots at once; how many were taken."""
        k = min(n, self.limit - self.used)
        if k <= 0:
            return 0
        self.used += k
        return k

    def release_many(self, k: int) -> None:
        for _ in range(k):
            self.release()

    async def take(self, timeout: float | None) -> bool:
        """Wait for a slot; False if ``timeout`` seconds pass first."""
        if self.try_take():
            return True
        fut = asyncio.get_running_loop().create_future()
        self.waiters.append(fut)
        try:
            async with asyncio.timeout(timeout):
                await fut
        except TimeoutError:
            self._give_up(fut)
            return False
        except asyncio.CancelledError:
            self._give_up(fut)
            raise
        return True

    def _give_up(self, fut: asyncio.Future[None]) -> None:
        if fut.done() and not fut.cancelled():
            self.release()  # the slot arrived as we gave up: pass it on
        else:
            fut.cancel()  # never take the slot later

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


def _refused(request: RemotingCommand) -> RemotingCommand:
    log.warning("request_refused", code=request.code, reason=request.refusal)
    return response_to(request, ResponseCode.SYSTEM_ERROR, request.refusal)


class Dispatcher:
    """Routes requests from any number of connections to handlers; a code with no route is
    answered by ``unknown`` (REQUEST_CODE_NOT_SUPPORTED unless told otherwise)."""

    def __init__(
        self,
        routes: Routes,
        bulkheads: Mapping[str, Bulkhead] | None = None,
        *,
        unknown: Unknown = not_supported,
        stats: RequestStats | None = None,
        guard: Guard | None = None,
    ) -> None:
        self._routes = dict(routes)
        self._guard = guard
        self._stats = stats  # None: nothing counted (a client, or a server without metrics)
        self._unknown = unknown
        self._bulkheads = dict(bulkheads or {})
        self._slots = {name: Slots(b.limit) for name, b in self._bulkheads.items()}
        self.tasks: set[asyncio.Task[None]] = set()

    def dispatch(self, cmd: RemotingCommand, conn: Any, reply: Reply) -> asyncio.Task[None] | None:
        """Handle ``cmd`` (from ``conn``); the response goes to ``reply(cmd, response)``.
        Returns the Task still handling it, or None when it was answered inline."""
        if self._guard is not None and not self._admit(cmd, conn, reply):
            return None
        return self._dispatch(cmd, conn, reply)

    def _admit(self, cmd: RemotingCommand, conn: Any, reply: Reply) -> bool:
        """The guard's verdict; a refused request is answered here (inline, no task)."""
        guard = self._guard
        refusal = guard(cmd, conn) if guard is not None else None
        if refusal is None:
            return True
        started = perf_counter() if self._stats is not None else 0.0
        response = response_to(cmd, ResponseCode.SYSTEM_ERROR, refusal)
        reply(cmd, response)
        if self._stats is not None:
            self._stats.record(cmd.code if cmd.code in self._routes else OTHER_CODE, response,
                               started)  # fmt: skip
        return False

    def _dispatch(self, cmd: RemotingCommand, conn: Any, reply: Reply) -> asyncio.Task[None] | None:
        started = perf_counter() if self._stats is not None else 0.0
        route = self._routes.get(cmd.code)
        if route is None or cmd.refusal is not None:
            response = _refused(cmd) if route is not None else self._unknown(cmd)
            reply(cmd, response)
            if self._stats is not None:
                self._stats.record(cmd.code if route is not None else OTHER_CODE, response, started)
            return None
        if not route.is_async and route.group not in self._slots:
            response = _call_sync(route, cmd, conn)
            reply(cmd, response)
            if self._stats is not None:
                self._stats.record(cmd.code, response, started)
            return None
        coro = self._run(route, cmd, conn, reply, started)
        stand_in = InlineTask()
        context = contextvars.copy_context()
        loop = asyncio.get_running_loop()
        try:
            _enter_task(loop, stand_in)  # type: ignore[arg-type]  # a Task's interface, below
        except RuntimeError:  # called from inside a task (not from a protocol callback)
            return self._track(loop.create_task(coro, context=context))
        try:
            waiting_on = context.run(coro.send, None)  # the first step, inline
        except StopIteration:
            return None  # finished without waiting: answered already, no task needed
        finally:
            _leave_task(loop, stand_in)  # type: ignore[arg-type]
        task = loop.create_task(Resume(coro, waiting_on), context=context)
        stand_in.hand_over(task)
        return self._track(task)

    def batchable(self, cmd: RemotingCommand) -> bool:
        """Whether ``cmd`` may go to ``dispatch_run`` (its route takes requests together)."""
        route = self._routes.get(cmd.code)
        return route is not None and route.batch is not None and cmd.refusal is None

    def dispatch_run(
        self, cmds: list[RemotingCommand], conn: Any, reply: Reply
    ) -> list[asyncio.Task[None]]:
        """Handle requests of one batchable code that arrived together, in order: the route's
        batch handler takes as many as it can at once, the next goes to ``dispatch``, and so
        on. Returns the Tasks still handling some. Each request of a run holds a bulkhead slot
        while it is handled (until answered, for Deferred answers), so a run is no longer
        than the free slots; a saturated bulkhead sends each request through ``dispatch`` (and
        its queue)."""
        tasks: list[asyncio.Task[None]] = []
        if self._guard is not None:  # each request is checked once, before any is handled
            cmds = [cmd for cmd in cmds if self._admit(cmd, conn, reply)]
        i, n = 0, len(cmds)
        while i < n:
            route = self._routes[cmds[i].code]
            slots = self._slots.get(route.group)
            batch, k = route.batch if n - i > 1 else None, 0
            if batch is not None:
                k = n - i if slots is None else slots.take_up_to(n - i)
                if k == 1 and slots is not None:  # a run of one goes the usual way
                    slots.release()
                    k = 0
            if batch is not None and k:
                started = perf_counter() if self._stats is not None else 0.0
                rest = cmds if k == n else cmds[i : i + k]
                try:
                    answers = batch(rest, conn)
                except Exception as exc:  # noqa: BLE001 -- a handler's failure (logged in _failed)
                    answers = [_failed(cmd, conn, exc) for cmd in rest]
                if isinstance(answers, Deferred):  # one task answers them all once settled
                    done = rest[: answers.taken]
                    if slots is not None:  # those answered later keep their slots until then
                        slots.release_many(k - len(done))
                    coro = self._settled(answers, done, conn, reply, started, slots)
                    tasks += [self._track(asyncio.get_running_loop().create_task(coro))] * len(done)
                    answers = []
                    i += len(done)
                elif slots is not None:
                    slots.release_many(k)
                for cmd, response in zip(rest, answers, strict=False):
                    reply(cmd, response)
                    if self._stats is not None:
                        self._stats.record(cmd.code, response, started)
                i += len(answers)
                if i >= n:
                    break
            task = self._dispatch(cmds[i], conn, reply)
            if task is not None:
                tasks.append(task)
            i += 1
        return tasks

    async def _settled(
        self,
        deferred: Deferred,
        cmds: list[RemotingCommand],
        conn: Any,
        reply: Reply,
        started: float,
        slots: Slots | None,
    ) -> None:
        """Reply to ``cmds`` with ``deferred``'s answers, then give back their bulkhead slots:
        each is in flight until answered, as it would be alone (the task is counted once per
        request of the run: the connection's in-flight cap sees each)."""
        try:
            answers = await deferred.answers
        except Exception as exc:  # noqa: BLE001 -- a handler's failure (logged in _failed)
            answers = [_failed(cmd, conn, exc) for cmd in cmds]
        finally:
            if slots is not None:
                slots.release_many(len(cmds))
        for cmd, response in zip(cmds, answers, strict=True):
            reply(cmd, response)
            if self._stats is not None:
                self._stats.record(cmd.code, response, started)

    def _track(self, task: asyncio.Task[None]) -> asyncio.Task[None]:
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        return task

    async def _run(
        self, route: Route, cmd: RemotingCommand, conn: Any, reply: Reply, started: float
    ) -> None:
        slots = self._slots.get(route.group)
        took = slots is not None and slots.try_take()
        if slots is not None and not took:
            busy = await self._acquire(route.group, slots, time.monotonic())
            if busy is not None:
                response: RemotingCommand | None = response_to(cmd, ResponseCode.SYSTEM_BUSY, busy)
                reply(cmd, response)
                if self._stats is not None:
                    self._stats.record(cmd.code, response, started)
                return
            took = True
        try:  # the handler is awaited here, not through a helper: one frame less per request
            result = route.handler(cmd, conn)
            response = await result if inspect.isawaitable(result) else result
        except Exception as exc:  # noqa: BLE001 -- a handler's failure (logged in _failed)
            response = _failed(cmd, conn, exc)
        finally:
            if took:
                slots.release()  # type: ignore[union-attr]  # took implies slots
        reply(cmd, response)
        if self._stats is not None:
            self._stats.record(cmd.code, response, started)

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


def _call_sync(route: Route, cmd: RemotingCommand, conn: Any) -> RemotingCommand | None:
    try:
        return route.handler(cmd, conn)  # type: ignore[return-value]  # checked: not a coroutine fn
    except Exception as exc:  # noqa: BLE001 -- a handler's failure (logged in _failed)
        return _failed(cmd, conn, exc)


def _failed(cmd: RemotingCommand, conn: Any, exc: Exception) -> RemotingCommand:
    peer = getattr(conn, "peer", "?")
    if isinstance(exc, RemotingCommandError):  # a bad header: the client's fault, no traceback
        log.warning("bad_request", code=cmd.code, peer=peer, error=str(exc))
        return response_to(cmd, ResponseCode.SYSTEM_ERROR, str(exc))
    log.error("handler_failed", code=cmd.code, peer=peer, exc_info=exc)
    return response_to(cmd, ResponseCode.SYSTEM_ERROR, f"{type(exc).__name__}: {exc}")
