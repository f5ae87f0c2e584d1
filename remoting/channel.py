"""Channel: one TCP connection, either side. Decoding, the pending-response table, the write
path with back-pressure, and close notification.

Both ends are symmetric: a server-side channel can send requests to its peer (check-back,
consumer-change notices) and a client-side channel serves requests from the server.

Back-pressure: while the peer leaves our output unread, its decoded requests are held and
reading stops, so such a peer costs about one buffered response, not one per request.
"""

from __future__ import annotations

import asyncio
import collections
import time
import typing
from collections.abc import Callable
from typing import Final

from aiorocketmq.remoting.channel_options import ChannelOptions, peer_addr
from aiorocketmq.remoting.deadlines import Deadlines
from aiorocketmq.remoting.dispatch import Dispatcher
from aiorocketmq.remoting.errors import (
    FrameError,
    RemotingCommandError,
    RemotingConnectError,
    RemotingSendRequestError,
    RemotingTimeoutError,
)
from aiorocketmq.remoting.log import get_logger
from aiorocketmq.remoting.protocol.codes import ResponseCode, SerializeType
from aiorocketmq.remoting.protocol.command import (
    ONEWAY_FLAG,
    RESPONSE_FLAG,
    RemotingCommand,
    next_opaque,
    response_to,
)
from aiorocketmq.remoting.protocol.frame import FrameDecoder, encode

log = get_logger(__name__)

_PAUSED_IN_FLIGHT: Final = 1
_PAUSED_WRITES: Final = 2
_CORK_MAX: Final = 64 * 1024  # gathered output written at once past this many bytes


class Channel(asyncio.Protocol):
    """One connection. Create through RemotingServer or RemotingClient."""

    def __init__(
        self,
        dispatcher: Dispatcher,
        options: ChannelOptions,
        *,
        serialize_type: int | None = None,
        on_close: Callable[[Channel], None] | None = None,
    ) -> None:
        self._dispatcher = dispatcher
        self._options = options
        self._limits = options.limits
        self._decoder = FrameDecoder(options.max_frame, options.frame_keep)
        self._partial = 0  # bytes of unfinished frames last reported to the limits
        self._output = 0  # bytes of unsent output last reported to the limits
        self._pending: dict[int, asyncio.Future[RemotingCommand]] = {}
        self._timeouts = Deadlines(self._expire, self._pending)
        self._transport: asyncio.Transport | None = None
        self._on_close = on_close
        self._paused = 0
        self._writable = asyncio.Event()
        self._writable.set()
        self._write_paused = False
        self._held: collections.deque[RemotingCommand] = collections.deque()
        self._stall_timer: asyncio.TimerHandle | None = None
        self._corked = False  # writes are gathered into _out until _flush
        self._flush_scheduled = False
        self._out: list[bytes] = []
        self._out_bytes = 0
        self._log = log
        self._respond = self.respond  # bound once: handed to the dispatcher per request
        # the type of requests we originate; a server channel learns it from the peer
        self.serialize_type = serialize_type
        self.peer = "?"
        self.local = "?"
        self.in_flight = 0
        self.last_active = time.monotonic()
        self.closed: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    # ------------------------------------------------------------ asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports are not asyncio.Transport subclasses, but have its interface
        transport = typing.cast(asyncio.Transport, transport)
        self._transport = transport
        self.peer = peer_addr(transport.get_extra_info("peername"))
        self.local = peer_addr(transport.get_extra_info("sockname"))
        self._log = log.bind(peer=self.peer)
        self._log.debug("connection_opened", local=self.local)

    def data_received(self, data: bytes) -> None:
        self.last_active = time.monotonic()
        try:
            commands = self._decoder.feed(data)
        except FrameError as exc:
            self._log.warning("frame_error", error=str(exc))
            self.abort()
            return
        if self._limits is not None and (self._partial or self._decoder.buffered):
            self._partial = self._decoder.buffered
            self._limits.partial(self, self._partial)
        if len(commands) > 1:  # answers to this batch go out in one write at its end
            self._corked = True
        run: list[RemotingCommand] = []  # batchable requests of one code, in order
        for cmd in commands:
            if cmd.flag & RESPONSE_FLAG:
                fut = self._pending.pop(cmd.opaque, None)
                if fut is not None and not fut.done():
                    fut.set_result(cmd)
                else:
                    self._log.debug("late_response", opaque=cmd.opaque, code=cmd.code)
                continue
            if self.serialize_type is None:
                self.serialize_type = cmd.serialize_type
            if self._write_paused or self._held:  # the peer is not reading its answers
                self._held.append(cmd)
                continue
            if self._dispatcher.batchable(cmd):  # handled together with its neighbours
                if run and run[0].code != cmd.code:
                    self._dispatch_run(run)
                    run = []
                run.append(cmd)
                continue
            if run:
                self._dispatch_run(run)
                run = []
            task = self._dispatcher.dispatch(cmd, self, self._respond)
            if task is not None:
                self._count(task)
        if run:
            self._dispatch_run(run)
        if self._corked and not self._flush_scheduled:
            self._flush()

    def _dispatch_run(self, run: list[RemotingCommand]) -> None:
        if len(run) == 1:
            self._handle(run[0])
            return
        for task in self._dispatcher.dispatch_run(run, self, self._respond):
            self._count(task)

    def _handle(self, cmd: RemotingCommand) -> None:
        task = self._dispatcher.dispatch(cmd, self, self._respond)
        if task is not None:
            self._count(task)

    def _count(self, task: asyncio.Task[None]) -> None:
        """A request of ours is still being handled (reading pauses at the cap)."""
        self.in_flight += 1
        if self.in_flight >= self._options.max_in_flight:
            self._pause(_PAUSED_IN_FLIGHT)
        task.add_done_callback(self._request_done)

    def _request_done(self, _task: asyncio.Task[None]) -> None:
        self.in_flight -= 1
        if self._paused & _PAUSED_IN_FLIGHT and self.in_flight <= self._options.max_in_flight // 2:
            self._resume(_PAUSED_IN_FLIGHT)

    def connection_lost(self, exc: Exception | None) -> None:
        self._transport = None
        if self._stall_timer is not None:
            self._stall_timer.cancel()
        self._writable.set()  # wake writers: they find the channel closed
        self._timeouts.close()
        self._held.clear()
        self._decoder.clear()  # an unfinished frame's memory goes with its connection
        self._out.clear()
        if self._limits is not None:
            self._limits.forget(self)
        error = RemotingConnectError(f"connection to {self.peer} lost")
        pending = list(self._pending.values())
        self._pending.clear()
        for fut in pending:
            if not fut.done():
                fut.set_exception(error)
        if not self.closed.done():
            self.closed.set_result(None)
        self._log.debug("connection_closed", error=str(exc) if exc else None)
        if self._on_close is not None:
            self._on_close(self)

    def pause_writing(self) -> None:
        self._writable.clear()
        self._write_paused = True
        if self._options.pause_reading_on_write_stall:
            self._pause(_PAUSED_WRITES)
        loop = asyncio.get_running_loop()
        self._stall_timer = loop.call_later(self._options.write_stall_timeout, self._stalled)

    def resume_writing(self) -> None:
        self._writable.set()
        self._write_paused = False
        if self._stall_timer is not None:
            self._stall_timer.cancel()
            self._stall_timer = None
        if self._limits is not None:
            self._report_output(self.write_buffer_size())
        held = self._held
        while held and not self._write_paused and self._transport is not None:
            self._handle(held.popleft())  # may pause writing again
        if not self._write_paused:
            self._resume(_PAUSED_WRITES)

    # ------------------------------------------------------------ flow control

    def _pause(self, reason: int) -> None:
        if not self._paused and self._transport is not None:
            self._transport.pause_reading()
        self._paused |= reason

    def _resume(self, reason: int) -> None:
        was = self._paused
        self._paused &= ~reason
        if was and not self._paused and self._transport is not None:
            self._transport.resume_reading()

    def _stalled(self) -> None:
        self._log.warning("peer_not_reading", seconds=self._options.write_stall_timeout)
        self.abort()

    def write_buffer_size(self) -> int:
        """Output written but not yet taken by the peer (and gathered, not yet written)."""
        transport = self._transport
        buffered = transport.get_write_buffer_size() if transport is not None else 0
        return buffered + self._out_bytes

    # ------------------------------------------------------------ writing

    @property
    def is_open(self) -> bool:
        return self._transport is not None and not self._transport.is_closing()

    def _write(self, cmd: RemotingCommand) -> None:
        head, body = encode(cmd, self._options.max_frame)
        transport = self._transport
        if transport is None or transport.is_closing():
            raise RemotingSendRequestError(f"connection to {self.peer} is closed")
        if self._corked:
            self._out.append(head)
            self._out_bytes += len(head)
            if body:
                self._out.append(body)
                self._out_bytes += len(body)
            if self._out_bytes >= _CORK_MAX:  # a big batch: let the transport judge its size
                self._write_out()
            return
        if body:
            transport.writelines((head, body))
        else:
            transport.write(head)
        if self._limits is not None and transport.get_write_buffer_size() != self._output:
            self._report_output(transport.get_write_buffer_size())

    def _cork_until_next_iteration(self) -> None:
        """Gather this loop iteration's writes into one (several requests are in flight)."""
        if not self._corked:
            self._corked = self._flush_scheduled = True
            asyncio.get_running_loop().call_soon(self._flush)

    def _flush(self) -> None:
        self._corked = self._flush_scheduled = False
        self._write_out()

    def _write_out(self) -> None:
        out, self._out, self._out_bytes = self._out, [], 0
        transport = self._transport
        if out and transport is not None and not transport.is_closing():
            transport.writelines(out)
            if self._limits is not None:
                self._report_output(transport.get_write_buffer_size())

    def _report_output(self, size: int) -> None:
        if size != self._output:  # mostly 0 == 0: the peer took everything at once
            self._output = size
            assert self._limits is not None
            self._limits.output(self, size)

    def respond(self, request: RemotingCommand, response: RemotingCommand | None) -> None:
        """Answer ``request`` with ``response`` (the dispatcher's reply): nothing for a oneway
        request or a None response; opaque, flag and header type follow the request."""
        if response is not None and not request.flag & ONEWAY_FLAG:
            response.opaque = request.opaque
            response.flag |= RESPONSE_FLAG
            response.serialize_type = request.serialize_type
            self.send_response(response)

    def send_response(self, response: RemotingCommand) -> None:
        """Write a response (dropped if the peer is gone)."""
        if self.in_flight > 1:  # answers released together (a slave's ack) go in one write
            self._cork_until_next_iteration()
        try:
            self._write(response)
        except RemotingCommandError as exc:  # unencodable: tell the peer instead
            self._log.error("response_unencodable", code=response.code, error=str(exc))
            error = response_to(response, ResponseCode.SYSTEM_ERROR, f"response unencodable: {exc}")
            error.serialize_type = response.serialize_type
            self._write_quietly(error)
        except RemotingSendRequestError:
            self._log.debug("response_dropped", opaque=response.opaque)

    def _write_quietly(self, cmd: RemotingCommand) -> None:
        try:
            self._write(cmd)
        except (RemotingSendRequestError, RemotingCommandError):
            self._log.debug("response_dropped", opaque=cmd.opaque)

    def _prepare(self, cmd: RemotingCommand, flag: int) -> None:
        cmd.opaque, cmd.flag = next_opaque(), flag
        stype = self.serialize_type
        cmd.serialize_type = stype if stype is not None else SerializeType.JSON

    @property
    def ready(self) -> bool:
        """Open and writable now: a request can be started without waiting."""
        return self._transport is not None and self._writable.is_set()

    async def wait_writable(self, deadline: float) -> None:
        """Wait until the peer reads again (RemotingSendRequestError past ``deadline``)."""
        if not self._writable.is_set():
            try:
                async with asyncio.timeout_at(deadline):
                    await self._writable.wait()
            except TimeoutError:
                raise RemotingSendRequestError(f"{self.peer} is not reading") from None
        if not self.is_open:
            raise RemotingConnectError(f"connection to {self.peer} is closed")

    async def request(self, cmd: RemotingCommand, timeout: float) -> RemotingCommand:
        """Send ``cmd`` and await its response for at most ``timeout`` seconds.

        Raises RemotingTimeoutError (the connection stays usable), RemotingConnectError (lost),
        RemotingSendRequestError (not writable), RemotingCommandError (unencodable).
        """
        if not self.ready:
            await self.wait_writable(asyncio.get_running_loop().time() + timeout)
        return await self.start_request(cmd, timeout)

    def start_request(
        self, cmd: RemotingCommand, timeout: float
    ) -> asyncio.Future[RemotingCommand]:
        """Write ``cmd`` now; the future gets its response, or fails with RemotingTimeoutError
        after ``timeout`` seconds or RemotingConnectError when the connection is lost.
        Call only when ``ready``; raises RemotingCommandError when ``cmd`` is unencodable."""
        loop = asyncio.get_running_loop()
        cmd.opaque = opaque = next_opaque()
        cmd.flag = 0
        stype = self.serialize_type
        cmd.serialize_type = stype if stype is not None else SerializeType.JSON
        fut: asyncio.Future[RemotingCommand] = loop.create_future()
        if self._pending:
            self._cork_until_next_iteration()
        self._write(cmd)
        self._pending[opaque] = fut
        self._timeouts.add(loop.time() + timeout, opaque, cmd.code, timeout)
        return fut

    def _expire(self, expired: list[tuple[int, int, float]]) -> None:
        for opaque, code, timeout in expired:
            fut = self._pending.pop(opaque, None)
            if fut is not None and not fut.done():
                fut.set_exception(RemotingTimeoutError(
                    f"no response from {self.peer} to code {code} within {timeout:.3f}s"
                ))  # fmt: skip

    def send_oneway(self, cmd: RemotingCommand) -> bool:
        """Write a oneway request now, without waiting (notices such as 40); False when the
        peer is gone, not reading, or cannot take it."""
        if not self.ready:
            return False
        self._prepare(cmd, ONEWAY_FLAG)
        try:
            self._write(cmd)
        except (RemotingSendRequestError, RemotingCommandError):
            return False
        return True

    async def oneway(self, cmd: RemotingCommand, timeout: float) -> None:
        """Send ``cmd`` as a oneway request; the peer never answers it."""
        await self.wait_writable(asyncio.get_running_loop().time() + timeout)
        self._prepare(cmd, ONEWAY_FLAG)
        self._write(cmd)

    def close(self) -> None:
        """Close after flushing what is buffered."""
        if self._transport is not None:
            self._transport.close()

    def abort(self) -> None:
        """Close at once, dropping buffered writes."""
        if self._transport is not None:
            self._transport.abort()
