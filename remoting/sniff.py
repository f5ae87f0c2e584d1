"""Sniffer: a new connection's first protocol, deciding on its first byte whether it speaks TLS
or plaintext on the shared port (NettyRemotingServer.HandshakeHandler).

``0x16`` (a TLS handshake record) goes to TLS (``TlsTransport``) in permissive and enforcing
mode and is closed in disabled mode; anything else is plaintext, closed in enforcing mode.
compat: 4.9.8's handler closes a plaintext connection in enforcing mode but still passes its
first packet on, so the request is processed (r#10110); here nothing of it is read past the
first byte.

A plaintext connection costs nothing after the decision: the Sniffer hands the transport to a
Channel (``set_protocol``) with the bytes it read. A connection that sends nothing is closed
after ``idle`` seconds, as an idle channel would be.
"""

from __future__ import annotations

import asyncio
import typing
from collections.abc import Callable
from typing import Final

from aiorocketmq.remoting.channel import Channel
from aiorocketmq.remoting.channel_options import peer_addr
from aiorocketmq.remoting.log import get_logger
from aiorocketmq.remoting.tls_config import TlsMode
from aiorocketmq.remoting.tls_context import ServerTls
from aiorocketmq.remoting.tls_transport import TlsTransport
from aiorocketmq.remoting.warnlimit import WarnLimiter

log = get_logger(__name__)

TLS_HANDSHAKE: Final = 0x16  # the content type of a TLS handshake record (RFC 8446 5.1)


class Sniffer(asyncio.Protocol):
    """One accepted connection until its first byte says what it is."""

    def __init__(
        self,
        tls: ServerTls,
        new_channel: Callable[[], Channel],
        *,
        idle: float,
        pending: set[asyncio.Transport],
        warn: WarnLimiter,
    ) -> None:
        self._tls = tls
        self._new_channel = new_channel
        self._idle = idle
        self._pending = pending  # the server's connections not yet served: closed on stop
        self._warn = warn
        self._transport: asyncio.Transport | None = None
        self._timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports are not asyncio.Transport subclasses, but have its interface
        self._transport = typing.cast(asyncio.Transport, transport)
        self._pending.add(self._transport)
        self._timer = asyncio.get_running_loop().call_later(self._idle, self._silent)

    def data_received(self, data: bytes) -> None:
        transport = self._transport
        assert transport is not None
        self._stop_timer()
        mode = self._tls.mode
        if data[0] == TLS_HANDSHAKE:
            if mode is TlsMode.disabled:
                self._refuse(transport, "a TLS handshake, and TLS is disabled on this port")
                return
            assert self._tls.context is not None
            tls = TlsTransport(
                transport,
                self._tls.context,
                self._new_channel,
                handshake_timeout=self._tls.handshake_timeout,
                warn=self._warn,
                on_done=self._pending.discard,
            )
            transport.set_protocol(tls)
            tls.start(data)
            return
        if mode is TlsMode.enforcing:
            self._refuse(transport, "plaintext, and this port is TLS only (enforcing)")
            return
        self._pending.discard(transport)
        ch = self._new_channel()
        transport.set_protocol(ch)
        ch.connection_made(transport)
        ch.data_received(data)

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_timer()
        if self._transport is not None:
            self._pending.discard(self._transport)

    def _stop_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _silent(self) -> None:
        self._timer = None
        if self._transport is not None:
            peer = peer_addr(self._transport.get_extra_info("peername"))
            log.info("connection_idle_closed", peer=peer, idle_seconds=self._idle)
            self._transport.abort()

    def _refuse(self, transport: asyncio.Transport, what: str) -> None:
        """Close a connection the mode does not serve, having read nothing past its first
        byte (HandshakeHandler: ``ctx.close()``)."""
        peer = peer_addr(transport.get_extra_info("peername"))
        due = self._warn.hit((peer.rpartition(":")[0], what))
        if due is not None:
            log.warning("connection_refused", peer=peer, reason=what, suppressed=due)
        transport.abort()
