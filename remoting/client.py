"""RemotingClient: one channel per address, opened lazily and re-opened after a loss."""

from __future__ import annotations

import asyncio
import math
import ssl
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from aiorocketmq.remoting.channel import Channel
from aiorocketmq.remoting.channel_options import ChannelOptions
from aiorocketmq.remoting.config import ClientConfig
from aiorocketmq.remoting.dispatch import Dispatcher, Route
from aiorocketmq.remoting.errors import RemotingConnectError, RemotingError
from aiorocketmq.remoting.lifecycle import Service
from aiorocketmq.remoting.log import get_logger
from aiorocketmq.remoting.protocol.command import RemotingCommand
from aiorocketmq.remoting.protocol.frame import CLIENT_KEEP
from aiorocketmq.remoting.protocol.signature import Credentials, sign
from aiorocketmq.remoting.slots import Slots

log = get_logger(__name__)

DEFAULT_TIMEOUT = 3.0

Listener = Callable[[str], None]  # called with the address, "host:port" as the caller gave it


@dataclass(slots=True)
class _Backoff:
    """Consecutive failed connects to one address: no new attempt before ``until``."""

    millis: float  # the current window; doubles per failure up to the configured max
    until: float  # loop time
    reason: str  # why the last attempt failed


class RemotingClient(Service):
    """Talks to any number of servers; requests from a server go to ``routes``.

    ``invoke`` awaits a response; ``invoke_oneway`` only writes. Many requests share one
    connection per address (opaque -> future). Headers go out in ``config.serialize_type``.

    Listeners (``add_connect_listener``, ``add_close_listener``) learn at once when a
    connection to an address opens or is lost. After a failed connect, new connects to that
    address fail fast for a while (see ``_back_off``).

    Given ``credentials``, every request is signed with them (ACL 1.0, AclClientRPCHook);
    given ``tls``, every connection is TLS with that context (``useTLS``).
    """

    def __init__(
        self,
        config: ClientConfig | None = None,
        routes: Mapping[int, Route] | None = None,
        *,
        credentials: Credentials | None = None,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self.config = config or ClientConfig()
        self.credentials = credentials
        self.tls = tls
        self._dispatcher = Dispatcher(routes or {})
        self._options = ChannelOptions(
            max_frame=self.config.frame_max_length,
            frame_keep=CLIENT_KEEP,  # a few connections: their big answers reuse one buffer
            write_stall_timeout=self.config.client_write_stall_timeout_millis / 1000,
            pause_reading_on_write_stall=False,  # never stop reading responses
        )
        self._channels: dict[str, Channel] = {}
        self._connecting: dict[str, asyncio.Task[Channel]] = {}
        # in-flight limits per address: one slow peer never starves requests to the others
        self._requests: dict[str, Slots] = {}
        self._oneways: dict[str, Slots] = {}
        self._backoff: dict[str, _Backoff] = {}
        self._announced: set[Channel] = set()  # open, and connect listeners told
        self._connect_listeners: list[Listener] = []
        self._close_listeners: list[Listener] = []
        self._closed = False

    def add_connect_listener(self, listener: Listener) -> None:
        """Call ``listener(addr)`` each time a connection to ``addr`` opens.

        Listeners are plain callables run on the event loop; one that raises is logged and
        does not stop the others."""
        self._connect_listeners.append(listener)

    def add_close_listener(self, listener: Listener) -> None:
        """Call ``listener(addr)`` each time an open connection to ``addr`` is lost, whatever
        the reason: the peer closed or reset it, or we aborted it (``close_channel``, a frame
        error, a peer that stopped reading). Not for the connections ``close()`` closes.
        Each connection is reported at most once, after its connect."""
        self._close_listeners.append(listener)

    def _notify(self, listeners: list[Listener], event: str, addr: str) -> None:
        for listener in list(listeners):
            try:
                listener(addr)
            except Exception:  # a listener bug must not skip the others (logged)
                log.exception(event, addr=addr)

    async def invoke(
        self, addr: str, request: RemotingCommand, timeout: float = DEFAULT_TIMEOUT
    ) -> RemotingCommand:
        """Send ``request`` to ``addr`` ("host:port") and await the response.

        The whole call, waiting for a slot and connecting included, is bounded by ``timeout``.
        Raises the RemotingError subclasses: ...TimeoutError, ...ConnectError,
        ...SendRequestError, ...TooMuchRequestError, ...CommandError.
        """
        loop = asyncio.get_running_loop()
        start = loop.time()
        if self.credentials is not None:
            sign(request, self.credentials)
        slots = self._requests.get(addr)
        if slots is None:
            slots = self._requests[addr] = Slots(self.config.client_async_semaphore_value)
        if slots.used < slots.limit:
            slots.used += 1
        else:
            await slots.take(start + timeout, f"requests to {addr}")
        try:
            ch = self._channels.get(addr)
            if ch is None or not ch.ready:
                ch = await self._channel(addr, start + timeout)
                await ch.wait_writable(start + timeout)
                timeout = start + timeout - loop.time()
            return await ch.start_request(request, timeout)
        finally:
            slots.give()

    async def invoke_many(
        self, addr: str, requests: list[RemotingCommand], timeout: float = DEFAULT_TIMEOUT
    ) -> list[RemotingCommand | RemotingError]:
        """``invoke`` of each of ``requests`` to ``addr``, all written before any response is
        awaited (pipelined on the one connection, in one write, without a task each); per
        request, in order, its response or the RemotingError ``invoke`` would raise. Each
        takes a request slot until every response is in; the whole call is bounded by
        ``timeout``. A request that cannot be sent fails, and those after it fail alike."""
        loop = asyncio.get_running_loop()
        start = loop.time()
        slots = self._requests.get(addr)
        if slots is None:
            slots = self._requests[addr] = Slots(self.config.client_async_semaphore_value)
        sent: list[asyncio.Future[RemotingCommand] | RemotingError] = []
        taken = 0
        try:
            for request in requests:
                if self.credentials is not None:
                    sign(request, self.credentials)
                try:
                    if slots.used < slots.limit:
                        slots.used += 1
                    else:
                        await slots.take(start + timeout, f"requests to {addr}")
                    taken += 1
                    ch = self._channels.get(addr)
                    if ch is None or not ch.ready:
                        ch = await self._channel(addr, start + timeout)
                        await ch.wait_writable(start + timeout)
                    sent.append(ch.start_request(request, start + timeout - loop.time()))
                except RemotingError as exc:
                    sent += [exc] * (len(requests) - len(sent))
                    break
            out: list[RemotingCommand | RemotingError] = []
            for pending in sent:
                if isinstance(pending, RemotingError):
                    out.append(pending)
                    continue
                try:
                    out.append(await pending)
                except RemotingError as exc:
                    out.append(exc)
            return out
        finally:
            for pending in sent:  # cancelled: no response is waited for any more
                if not isinstance(pending, RemotingError) and not pending.done():
                    pending.cancel()
            for _ in range(taken):
                slots.give()

    async def invoke_oneway(
        self, addr: str, request: RemotingCommand, timeout: float = DEFAULT_TIMEOUT
    ) -> None:
        """Send ``request`` as oneway; returns once written. Oneway sends waiting for a peer
        that does not read are bounded per address (clientOnewaySemaphoreValue)."""
        deadline = asyncio.get_running_loop().time() + timeout
        if self.credentials is not None:
            sign(request, self.credentials)
        slots = self._oneways.get(addr)
        if slots is None:
            slots = self._oneways[addr] = Slots(self.config.client_oneway_semaphore_value)
        await slots.take(deadline, f"oneway requests to {addr}")
        try:
            ch = await self._channel(addr, deadline)
            await ch.oneway(request, max(0.0, deadline - asyncio.get_running_loop().time()))
        finally:
            slots.give()

    async def _channel(self, addr: str, deadline: float) -> Channel:
        ch = self._channels.get(addr)
        if ch is not None and ch.is_open:
            return ch
        if self._closed:
            raise RemotingConnectError("client is closed")
        task = self._connecting.get(addr)
        if task is None:
            self._check_backoff(addr)
            task = asyncio.get_running_loop().create_task(self._connect(addr))
            self._connecting[addr] = task
            task.add_done_callback(self._connected)
        try:
            async with asyncio.timeout_at(deadline):
                return await asyncio.shield(task)
        except TimeoutError:
            raise RemotingConnectError(f"connect to {addr} timed out") from None

    def _connected(self, task: asyncio.Task[Channel]) -> None:
        for addr, pending in list(self._connecting.items()):
            if pending is task:
                del self._connecting[addr]
        if not task.cancelled() and task.exception() is not None:
            log.debug("connect_failed", error=str(task.exception()))

    async def _connect(self, addr: str) -> Channel:
        host, _, port = addr.rpartition(":")
        loop = asyncio.get_running_loop()

        def factory() -> Channel:
            return Channel(
                self._dispatcher,
                self._options,
                serialize_type=self.config.serialize_type,
                on_close=lambda c: self._lost(addr, c),
            )

        millis = self.config.connect_timeout_millis
        try:
            async with asyncio.timeout(millis / 1000):
                _transport, ch = await loop.create_connection(
                    factory,
                    host.strip("[]"),
                    int(port),
                    ssl=self.tls,
                    server_hostname=host.strip("[]") if self.tls is not None else None,
                )
        except TimeoutError:
            raise self._back_off(addr, f"no answer in {millis} ms") from None
        except (OSError, ValueError) as exc:
            raise self._back_off(addr, str(exc)) from exc
        if self._closed:
            ch.abort()
            raise RemotingConnectError("client is closed")
        if not ch.is_open:
            raise self._back_off(addr, "closed by the peer at once")
        self._backoff.pop(addr, None)
        self._channels[addr] = ch
        self._announced.add(ch)
        log.debug("connected", addr=addr, local=ch.local)
        self._notify(self._connect_listeners, "connect_listener_failed", addr)
        return ch

    def _back_off(self, addr: str, reason: str) -> RemotingConnectError:
        """Record a failed connect to ``addr``; the error to raise.

        Until the window passes, connects to ``addr`` fail fast (``_check_backoff``) instead
        of each opening a TCP attempt to a peer that is down. The window starts at
        ``reconnect_backoff_initial_millis``, doubles per consecutive failure up to
        ``reconnect_backoff_max_millis``, and a successful connect clears it. Ours: Java's
        NettyRemotingClient has no backoff and tries again on every request."""
        last = self._backoff.get(addr)
        millis = min(
            self.config.reconnect_backoff_max_millis,
            self.config.reconnect_backoff_initial_millis if last is None else last.millis * 2,
        )
        until = asyncio.get_running_loop().time() + millis / 1000
        self._backoff[addr] = _Backoff(millis, until, reason)
        return RemotingConnectError(f"connect to {addr} failed: {reason}")

    def _check_backoff(self, addr: str) -> None:
        backoff = self._backoff.get(addr)
        if backoff is None:
            return
        left = backoff.until - asyncio.get_running_loop().time()
        if left > 0:
            raise RemotingConnectError(
                f"connect to {addr} failed: {backoff.reason} "
                f"(retrying in {math.ceil(left * 1000)} ms)"
            )

    def _lost(self, addr: str, ch: Channel) -> None:
        if self._channels.get(addr) is ch:
            del self._channels[addr]
        if self._closed or ch not in self._announced:
            return
        self._announced.discard(ch)
        log.info("connection_lost", addr=addr)
        self._notify(self._close_listeners, "close_listener_failed", addr)

    def channel(self, addr: str) -> Channel | None:
        """The open channel to ``addr``, if any."""
        ch = self._channels.get(addr)
        return ch if ch is not None and ch.is_open else None

    def close_channel(self, addr: str) -> None:
        """Close the connection to ``addr``; the next request re-opens it."""
        ch = self._channels.pop(addr, None)
        if ch is not None:
            ch.abort()

    async def close(self) -> None:
        """Close every connection; pending requests fail with RemotingConnectError."""
        self._closed = True
        self._announced.clear()
        for task in list(self._connecting.values()):
            task.cancel()
        channels = list(self._channels.values())
        self._channels.clear()
        for ch in channels:
            ch.abort()
        if channels:
            await asyncio.wait([ch.closed for ch in channels], timeout=5)
        await self._dispatcher.drain(1.0)
