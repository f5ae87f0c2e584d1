"""RemotingServer: bind, one route table, bulkheads, idle close, connection-closed callbacks."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import time
from collections.abc import Callable, Mapping

from aiorocketmq.remoting.channel import Channel
from aiorocketmq.remoting.channel_options import ChannelOptions
from aiorocketmq.remoting.config import ServerConfig
from aiorocketmq.remoting.counters import RequestStats
from aiorocketmq.remoting.dispatch import (
    Bulkhead,
    Dispatcher,
    Guard,
    Routes,
    Unknown,
    not_supported,
)
from aiorocketmq.remoting.lifecycle import Service
from aiorocketmq.remoting.limits import MemoryLimits
from aiorocketmq.remoting.log import get_logger
from aiorocketmq.remoting.process import prepare_server_process, trim_heap
from aiorocketmq.remoting.sniff import Sniffer
from aiorocketmq.remoting.tls_config import TlsMode
from aiorocketmq.remoting.tls_context import ServerTls
from aiorocketmq.remoting.warnlimit import WarnLimiter

log = get_logger(__name__)

CloseListener = Callable[[Channel], None]


class RemotingServer(Service):
    """Serves ``routes`` on ``config.bind_address:config.listen_port`` (0 binds a free port),
    or on ``sock`` when its owner bound it earlier (to learn the port before it is ready).
    Each request answered is counted in ``stats`` when given (``/metrics``).

    ``start()`` logs ``listening`` with the real host and port, unless ``announce=False`` (a
    process whose readiness comes later logs it itself). ``guard``, when given, checks each
    request before dispatch (remoting.acl: ACL 1.0).

    ``tls`` says what the port does with TLS and plaintext, told apart by each connection's
    first byte (remoting.sniff); by default it serves plaintext only.
    """

    def __init__(
        self,
        routes: Routes,
        config: ServerConfig | None = None,
        *,
        bulkheads: Mapping[str, Bulkhead] | None = None,
        unknown: Unknown = not_supported,
        announce: bool = True,
        sock: socket.socket | None = None,
        stats: RequestStats | None = None,
        tls: ServerTls | None = None,
        guard: Guard | None = None,
    ) -> None:
        self.config = config or ServerConfig()
        self.tls = tls or ServerTls()
        self._dispatcher = Dispatcher(routes, bulkheads, unknown=unknown, stats=stats,
                                      guard=guard)  # fmt: skip
        self.limits = MemoryLimits(
            self.config.server_output_buffer_max_bytes,
            self.config.server_partial_frame_max_bytes,
            trim=_trim_soon,  # blocks under the mmap threshold (remoting.process)
        )
        self._options = ChannelOptions(
            max_frame=self.config.frame_max_length,
            max_in_flight=self.config.server_connection_max_in_flight,
            write_stall_timeout=self.config.server_write_stall_timeout_millis / 1000,
            limits=self.limits,
        )
        self._announce = announce
        self._sock = sock
        self._server: asyncio.Server | None = None
        self._sweeper: asyncio.Task[None] | None = None
        self._listeners: list[CloseListener] = []
        self.channels: set[Channel] = set()
        self._unserved: set[asyncio.Transport] = set()  # before the first byte, or TLS
        self._refusals = WarnLimiter(60.0)  # refused and failed connections, by host and why
        self.accepted = 0  # connections ever accepted
        self.host = self.config.bind_address
        self.port = self.config.listen_port

    def add_close_listener(self, listener: CloseListener) -> None:
        """Call ``listener(channel)`` whenever a connection closes, for whatever reason."""
        self._listeners.append(listener)

    def _channel_closed(self, ch: Channel) -> None:
        self.channels.discard(ch)
        for listener in self._listeners:
            try:
                listener(ch)
            except Exception:  # a listener bug must not skip the others (logged)
                log.exception("close_listener_failed", peer=ch.peer)

    def _accept(self) -> Sniffer:
        self.accepted += 1
        return Sniffer(
            self.tls,
            self._new_channel,
            idle=self.config.server_channel_max_idle_time_seconds,
            pending=self._unserved,
            warn=self._refusals,
        )

    def _new_channel(self) -> Channel:
        ch = Channel(self._dispatcher, self._options, on_close=self._channel_closed)
        self.channels.add(ch)
        return ch

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        prepare_server_process()  # open-files limit, memory returned (remoting.process)
        if self._sock is not None:  # bound earlier by its owner (see bind_socket)
            self._server = await loop.create_server(self._accept, sock=self._sock, backlog=1024)
        else:
            self._server = await loop.create_server(
                self._accept, self.config.bind_address, self.config.listen_port, backlog=1024
            )
        sockname = self._server.sockets[0].getsockname()
        self.host, self.port = sockname[0], sockname[1]
        self._sweeper = loop.create_task(self._sweep_idle(), name="remoting-idle-sweep")
        if self.tls.mode is not TlsMode.disabled:
            log.info("tls_serving", port=self.port, mode=self.tls.mode.value)
        if self._announce:
            log.info("listening", host=self.host, port=self.port)

    async def _sweep_idle(self) -> None:
        idle = self.config.server_channel_max_idle_time_seconds
        while True:
            await asyncio.sleep(min(10.0, idle / 2))
            cutoff = time.monotonic() - idle
            for ch in [c for c in self.channels if c.last_active < cutoff]:
                log.info("connection_idle_closed", peer=ch.peer, idle_seconds=idle)
                ch.close()

    def stop_accepting(self) -> None:
        """Stop taking new connections; existing ones keep being served."""
        if self._server is not None:
            self._server.close()

    async def close(self, drain_timeout: float = 5.0) -> None:
        """Stop accepting, let in-flight requests finish (up to ``drain_timeout``), close all."""
        self.stop_accepting()
        await self._dispatcher.drain(drain_timeout)
        if self._sweeper is not None:
            self._sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sweeper
        for transport in list(self._unserved):  # nothing of theirs is being handled
            transport.abort()
        for ch in list(self.channels):
            ch.close()
        waits = [ch.closed for ch in self.channels]
        if waits:
            _done, _pending = await asyncio.wait(waits, timeout=drain_timeout)
            for ch in [c for c in self.channels if not c.closed.done()]:
                ch.abort()
        if self._server is not None:
            await self._server.wait_closed()


def bind_socket(host: str, port: int) -> socket.socket:
    """A TCP socket bound to ``host:port`` (0 = any free port), not yet listening."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    return sock


def _trim_soon() -> None:
    """``trim_heap`` once this loop turn is over: what connections let go of (a closed one's
    buffers, an output drained) is freed as its callbacks return."""
    with contextlib.suppress(RuntimeError):  # no running loop: nothing to free after
        asyncio.get_running_loop().call_soon(trim_heap)
