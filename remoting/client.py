"""RemotingClient: one channel per address, opened lazily and re-opened after a loss."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from remoting.channel import Channel, ChannelOptions
from remoting.config import ClientConfig
from remoting.dispatch import Dispatcher, Route
from remoting.errors import RemotingConnectError
from remoting.lifecycle import Service
from remoting.log import get_logger
from remoting.protocol.command import RemotingCommand
from remoting.slots import Slots

log = get_logger(__name__)

DEFAULT_TIMEOUT = 3.0


class RemotingClient(Service):
    """Talks to any number of servers; requests from a server go to ``routes``.

    ``invoke`` awaits a response; ``invoke_oneway`` only writes. Many requests share one
    connection per address (opaque -> future). Headers go out in ``config.serialize_type``.
    """

    def __init__(
        self, config: ClientConfig | None = None, routes: Mapping[int, Route] | None = None
    ) -> None:
        self.config = config or ClientConfig()
        self._dispatcher = Dispatcher(routes or {})
        self._options = ChannelOptions(
            max_frame=self.config.frame_max_length,
            write_stall_timeout=self.config.client_write_stall_timeout_millis / 1000,
            pause_reading_on_write_stall=False,  # never stop reading responses
        )
        self._channels: dict[str, Channel] = {}
        self._connecting: dict[str, asyncio.Task[Channel]] = {}
        # in-flight limits per address: one slow peer never starves requests to the others
        self._requests: dict[str, Slots] = {}
        self._oneways: dict[str, Slots] = {}
        self._closed = False

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

    async def invoke_oneway(
        self, addr: str, request: RemotingCommand, timeout: float = DEFAULT_TIMEOUT
    ) -> None:
        """Send ``request`` as oneway; returns once written. Oneway sends waiting for a peer
        that does not read are bounded per address (clientOnewaySemaphoreValue)."""
        deadline = asyncio.get_running_loop().time() + timeout
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

        try:
            async with asyncio.timeout(self.config.connect_timeout_millis / 1000):
                _transport, ch = await loop.create_connection(factory, host.strip("[]"), int(port))
        except (OSError, TimeoutError, ValueError) as exc:
            raise RemotingConnectError(f"connect to {addr} failed: {exc}") from exc
        self._channels[addr] = ch
        log.debug("connected", addr=addr, local=ch.local)
        return ch

    def _lost(self, addr: str, ch: Channel) -> None:
        if self._channels.get(addr) is ch:
            del self._channels[addr]
        if not self._closed:
            log.info("connection_lost", addr=addr)

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
        for task in list(self._connecting.values()):
            task.cancel()
        channels = list(self._channels.values())
        self._channels.clear()
        for ch in channels:
            ch.abort()
        if channels:
            await asyncio.wait([ch.closed for ch in channels], timeout=5)
        await self._dispatcher.drain(1.0)
