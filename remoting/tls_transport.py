"""TlsTransport: the server side of TLS over a connection already accepted and read from, in
memory (``ssl.MemoryBIO`` + ``SSLContext.wrap_bio``).

The first bytes of a connection were read to tell TLS from plaintext (remoting.sniff), so the
loop's own TLS (``loop.start_tls``) cannot take it over: it would lose them (features.md 8.4,
python/cpython#142352, MagicStack/uvloop#707). Instead this object becomes the raw transport's
protocol, is fed those bytes, runs the handshake, and once it is done creates the connection's
protocol (a Channel) and is its transport: reads are decrypted before they reach it, writes
encrypted, and flow control, close and abort pass through.

The handshake is bounded: it must finish within ``handshake_timeout`` seconds and
``MAX_HANDSHAKE_BYTES`` of input, else the connection is aborted. A failed handshake is one
warning line (at most one a minute per peer host and reason) and a closed connection; nothing
is created for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import threading
import typing
from collections.abc import Callable, Iterable
from typing import Any, Final

from aiorocketmq.remoting.channel_options import peer_addr
from aiorocketmq.remoting.log import get_logger
from aiorocketmq.remoting.warnlimit import WarnLimiter

log = get_logger(__name__)

MAX_HANDSHAKE_BYTES: Final = 256 * 1024  # a client's whole handshake: hello and certificates
READ_SIZE: Final = 256 * 1024  # plaintext handed to the protocol at most per call


class TlsTransport(asyncio.Transport, asyncio.Protocol):
    """Protocol of the raw transport; transport of the protocol ``make_protocol`` returns."""

    def __init__(
        self,
        raw: asyncio.BaseTransport,
        context: ssl.SSLContext,
        make_protocol: Callable[[], asyncio.Protocol],
        *,
        handshake_timeout: float,
        warn: WarnLimiter,
        on_done: Callable[[asyncio.Transport], None] | None = None,
    ) -> None:
        super().__init__()
        # uvloop's transports are not asyncio.Transport subclasses, but have its interface
        self._raw = typing.cast(asyncio.Transport, raw)
        self._incoming = ssl.MemoryBIO()
        self._outgoing = ssl.MemoryBIO()
        self._ssl = context.wrap_bio(self._incoming, self._outgoing, server_side=True)
        self._make_protocol = make_protocol
        self._app: asyncio.Protocol | None = None  # set once the handshake is done
        self._warn = warn
        self._on_done = on_done  # told once: the handshake ended, or the connection did
        self._received = 0  # bytes of the handshake so far
        self._timer: asyncio.TimerHandle | None = None
        self._timeout = handshake_timeout
        self._reading = True
        self._closing = False
        self.peer = peer_addr(raw.get_extra_info("peername"))

    def start(self, data: bytes) -> None:
        """Begin with ``data``, the bytes already read from the connection."""
        loop = asyncio.get_running_loop()
        self._timer = loop.call_later(self._timeout, self._handshake_timed_out)
        self.data_received(data)

    # ------------------------------------------------------------ the raw side (Protocol)

    def data_received(self, data: bytes) -> None:
        self._incoming.write(data)
        if self._app is None:
            self._received += len(data)
            self._handshake()
        else:
            self._read()

    def eof_received(self) -> bool | None:
        if self._app is None:
            self._failed("closed by the peer during the handshake")
        return None  # close our side too

    def connection_lost(self, exc: Exception | None) -> None:
        self._closing = True
        self._done()
        app, self._app = self._app, None
        if app is not None:
            app.connection_lost(exc)

    def pause_writing(self) -> None:
        if self._app is not None:
            self._app.pause_writing()

    def resume_writing(self) -> None:
        if self._app is not None:
            self._app.resume_writing()

    # ------------------------------------------------------------ handshake

    def _handshake(self) -> None:
        if self._closing:
            return
        try:
            self._ssl.do_handshake()
        except ssl.SSLWantReadError:
            self._flush()
            if self._received > MAX_HANDSHAKE_BYTES:
                self._failed(f"over {MAX_HANDSHAKE_BYTES} bytes without finishing")
            return
        except (ssl.SSLError, ValueError) as exc:
            self._flush()  # the alert telling the peer why
            self._failed(_reason(exc))
            return
        self._flush()
        self._done()
        self._app = app = self._make_protocol()
        app.connection_made(self)
        if self._incoming.pending:  # data the client sent right after its Finished
            self._read()

    def _handshake_timed_out(self) -> None:
        self._timer = None
        self._failed(f"not finished within {self._timeout:g} s")

    def _failed(self, reason: str) -> None:
        due = self._warn.hit((self.peer.rpartition(":")[0], reason))
        if due is not None:
            log.warning("tls_handshake_failed", peer=self.peer, reason=reason, suppressed=due)
        self._closing = True
        self._done()
        self._raw.close()

    def _done(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        on_done, self._on_done = self._on_done, None
        if on_done is not None:
            on_done(self._raw)

    # ------------------------------------------------------------ reading

    def _read(self) -> None:
        """Decrypt every whole record received and hand the plaintext over in one call."""
        view, size = _buffer(), 0
        while True:
            if size == len(view):  # full: hand it over, go on
                self._deliver(bytes(view))
                size = 0
                if self._app is None:
                    return
            try:
                n = typing.cast(int, self._ssl.read(len(view) - size, view[size:]))
            except ssl.SSLWantReadError:
                break
            except ssl.SSLZeroReturnError:  # the peer's close_notify
                self._deliver(bytes(view[:size]))
                self.close()
                return
            except ssl.SSLError as exc:
                log.warning("tls_error", peer=self.peer, reason=_reason(exc))
                self.abort()
                return
            if not n:
                break
            size += n
        if self._outgoing.pending:  # a key update, a ticket
            self._flush()
        if size:
            self._deliver(bytes(view[:size]))

    def _deliver(self, data: bytes) -> None:
        app = self._app
        if data and app is not None:
            app.data_received(data)

    # ------------------------------------------------------------ the app side (Transport)

    def _flush(self) -> None:
        if self._outgoing.pending:
            self._raw.write(self._outgoing.read())

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if self._closing or not data:
            return
        try:
            self._ssl.write(data)
        except ssl.SSLError as exc:
            log.warning("tls_error", peer=self.peer, reason=_reason(exc))
            self.abort()
            return
        self._flush()

    def writelines(self, list_of_data: Iterable[bytes | bytearray | memoryview]) -> None:
        self.write(b"".join(list_of_data))  # one TLS record run, not one per piece

    def can_write_eof(self) -> bool:
        return False

    def is_closing(self) -> bool:
        return self._closing or self._raw.is_closing()

    def close(self) -> None:
        """Send close_notify after what is written, then close the connection."""
        if self._closing:
            return
        self._closing = True
        # SSLWantReadError: the peer's close_notify is not awaited
        with contextlib.suppress(ssl.SSLError, ValueError):
            self._ssl.unwrap()
        self._flush()
        self._raw.close()

    def abort(self) -> None:
        self._closing = True
        self._raw.abort()

    def pause_reading(self) -> None:
        if self._reading:
            self._reading = False
            self._raw.pause_reading()

    def resume_reading(self) -> None:
        if not self._reading:
            self._reading = True
            self._raw.resume_reading()

    def is_reading(self) -> bool:
        return self._reading

    def get_write_buffer_size(self) -> int:
        return self._raw.get_write_buffer_size() + self._outgoing.pending

    def get_write_buffer_limits(self) -> tuple[int, int]:
        return self._raw.get_write_buffer_limits()

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        self._raw.set_write_buffer_limits(high, low)

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        if name == "ssl_object":
            return self._ssl
        if name == "peercert":
            return self._ssl.getpeercert() if self._app is not None else default
        if name == "cipher":
            return self._ssl.cipher() if self._app is not None else default
        return self._raw.get_extra_info(name, default)

    def set_protocol(self, protocol: asyncio.BaseProtocol) -> None:
        self._app = typing.cast(asyncio.Protocol, protocol)

    def get_protocol(self) -> asyncio.BaseProtocol:
        assert self._app is not None
        return self._app


_local = threading.local()


def _buffer() -> memoryview:
    """This thread's decryption buffer: records are decrypted into it, then copied out once
    per delivery, before the protocol sees them (``read(n)`` would allocate n bytes per
    record). One per thread, shared by its connections: a delivery never nests in another."""
    buffer: memoryview | None = getattr(_local, "buffer", None)
    if buffer is None:
        buffer = _local.buffer = memoryview(bytearray(READ_SIZE))
    return buffer


def _reason(exc: Exception) -> str:
    if isinstance(exc, ssl.SSLCertVerificationError):
        return f"certificate refused: {exc.verify_message}"
    if isinstance(exc, ssl.SSLError) and exc.reason:
        return str(exc.reason)
    return str(exc) or type(exc).__name__
