"""A TCP forwarder that reads the requests clients send through it and records, for each, its
code, its ``AccessKey`` and whether its ``Signature`` is right for a secret: what an ACL
broker would check (signature.verify, 4.9.8's server-side content), on every request path of
the SDK, oneway ones too, whose refusal nobody would see.

Real sockets and real servers behind it: the bytes pass unchanged both ways. Brokers reach it
by advertising another loopback address (``brokerIP1=127.0.0.2``, bound to 127.0.0.1): the
forwarder listens on 127.0.0.2 at the broker's own port, so the routes the name server hands
out lead through it.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import subprocess
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from aiorocketmq.remoting.protocol.frame import FrameDecoder
from aiorocketmq.remoting.protocol.signature import ACCESS_KEY, SECURITY_TOKEN, verify

if TYPE_CHECKING:
    from tests.cluster import Cluster

ADVERTISED = "127.0.0.2"  # brokers' brokerIP1: their routes lead here
# a cluster's brokers, to be reached through forwarders (tests.cluster.running's sets)
ADVERTISED_SETS = {"brokerIP1": ADVERTISED, "bindAddress": "127.0.0.1"}


@dataclass(frozen=True)
class Seen:
    code: int
    access_key: str | None
    token: str | None
    signed_right: bool  # the Signature verifies with the secret
    oneway: bool


@dataclass
class Audit:
    """What every forwarder of one test saw, client to server."""

    secret: str
    requests: list[Seen] = field(default_factory=list)
    server_requests: list[int] = field(default_factory=list)  # server to client: not signed

    def codes(self) -> set[int]:
        return {s.code for s in self.requests}

    def unsigned(self) -> list[Seen]:
        return [s for s in self.requests if not s.signed_right]


class Forwarder:
    """Listens on ``listen`` and forwards each connection to ``target``."""

    def __init__(
        self,
        audit: Audit,
        listen: tuple[str, int],
        target: tuple[str, int],
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self.audit, self.listen, self.target, self.tls = audit, listen, target, tls
        self.server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def addr(self) -> str:
        assert self.server is not None
        host, port = self.server.sockets[0].getsockname()[:2]
        return f"{host}:{port}"

    async def start(self) -> Forwarder:
        self.server = await asyncio.start_server(self._serve, *self.listen, ssl=self.tls)
        return self

    async def close(self) -> None:
        if self.server is not None:
            self.server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self.server is not None:
            await self.server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            up_r, up_w = await asyncio.open_connection(*self.target)
        except OSError:
            writer.close()
            self._tasks.discard(task)
            return
        try:
            await asyncio.gather(
                self._pump(reader, up_w, upstream=True),
                self._pump(up_r, writer, upstream=False),
            )
        finally:
            for w in (writer, up_w):
                w.close()
            self._tasks.discard(task)

    async def _pump(
        self, src: asyncio.StreamReader, dst: asyncio.StreamWriter, *, upstream: bool
    ) -> None:
        decoder = FrameDecoder()
        with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError):
            while data := await src.read(65536):
                for cmd in decoder.feed(data):
                    if cmd.is_response:
                        continue
                    if not upstream:
                        self.audit.server_requests.append(cmd.code)
                        continue
                    ext = cmd.ext_fields
                    self.audit.requests.append(
                        Seen(
                            cmd.code,
                            ext.get(ACCESS_KEY),
                            ext.get(SECURITY_TOKEN),
                            verify(ext, cmd.body, self.audit.secret),
                            cmd.is_oneway,
                        )
                    )
                dst.write(data)
                await dst.drain()
        with contextlib.suppress(OSError, NotImplementedError, RuntimeError):
            dst.write_eof()  # a TLS stream has no half-close: the connection just ends


@contextlib.asynccontextmanager
async def forwarding(
    cluster: Cluster, audit: Audit, tls: ssl.SSLContext | None = None
) -> AsyncIterator[str]:
    """Forwarders in front of the name server and each broker of ``cluster`` (started with
    ADVERTISED_SETS) until the block ends; the name server's forwarded address."""
    ends = [(("127.0.0.1", 0), cluster.namesrv_port)]
    ends += [((ADVERTISED, b.port), b.port) for b in cluster.brokers.values()]
    started: list[Forwarder] = []
    try:
        for listen, port in ends:
            started.append(await Forwarder(audit, listen, ("127.0.0.1", port), tls).start())
        yield started[0].addr
    finally:
        for f in started:
            await f.close()


def self_signed(where: Path, name: str = "server") -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and ADVERTISED (subjectAltName IPs) and its
    key, made by the openssl command; (cert, key)."""
    cert, key = where / f"{name}.pem", where / f"{name}.key"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
         "-subj", f"/CN={name}", "-keyout", str(key), "-out", str(cert),
         "-addext", f"subjectAltName=IP:127.0.0.1,IP:{ADVERTISED}"],
        check=True, capture_output=True,
    )  # fmt: skip
    return cert, key


def server_context(cert: Path, key: Path) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    return ctx
