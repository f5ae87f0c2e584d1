"""MetricsEndpoint: ``GET /metrics`` over HTTP/1.x on the server's own event loop.

Just enough HTTP for a scraper: one request per connection (answered with ``Connection:
close``), GET or HEAD, the exposition format prometheus_client picks from ``Accept``. A
client cannot make it hold much or for long: the request head is capped (``MAX_HEAD``), a
whole exchange must finish within ``TIMEOUT`` (a client that never sends, or never reads,
is dropped), at most ``MAX_CONNECTIONS`` are open at once (a new one closes the oldest: a
real scrape is over in milliseconds), and anything malformed gets its 4xx and the connection
closed. Given a ``BearerToken`` (``metricsBearerTokenFile``), every well-formed request
without that token in ``Authorization: Bearer`` gets 401 with ``WWW-Authenticate: Bearer``
(RFC 6750), whatever its method or path, and nothing else.
"""

from __future__ import annotations

import asyncio
import socket
from typing import Final, NamedTuple

from prometheus_client.exposition import choose_encoder
from prometheus_client.registry import CollectorRegistry

from aiorocketmq.remoting.log import get_logger
from aiorocketmq.remoting.metrics_port import bind_metrics
from aiorocketmq.remoting.metrics_token import BearerToken

log = get_logger(__name__)

PATH: Final = "/metrics"
MAX_HEAD: Final = 8192  # bytes of request line and headers
TIMEOUT: Final = 10.0  # seconds for a whole exchange: request, scrape, response taken
MAX_CONNECTIONS: Final = 16
REASONS: Final = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 404: "Not Found",
                  405: "Method Not Allowed", 431: "Request Header Fields Too Large",
                  500: "Internal Server Error"}  # fmt: skip
REALM: Final = 'Bearer realm="metrics"'
REFUSAL_LOG_EVERY: Final = 60.0  # seconds: a refused client is logged once a minute at most
REFUSAL_LOG_HOSTS: Final = 1024  # clients remembered for that, the oldest forgotten first


class Request(NamedTuple):
    method: str
    path: str
    accept: str
    authorization: str | None = None


class Answer(NamedTuple):
    status: int
    content_type: str
    body: bytes
    head_only: bool = False


def _error(status: int, text: str) -> Answer:
    return Answer(status, "text/plain; charset=utf-8", f"{text}\n".encode())


def parse_head(head: bytes) -> Request | Answer:
    """The request in ``head`` (request line and headers, CRLF-separated), or the error
    answer it deserves."""
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        return _error(400, "bad request line")
    method, target, _version = parts
    accept = ""
    authorization = None
    for line in lines[1:]:
        if not line:
            continue
        name, sep, value = line.partition(":")
        if not sep or not name or name != name.strip():
            return _error(400, "bad header line")
        if name.lower() == "accept":
            accept = value.strip()
        elif name.lower() == "authorization":
            authorization = value.strip()
    return Request(method, target.split("?", 1)[0], accept, authorization)


class MetricsEndpoint:
    """Serves ``registry`` on ``sock`` if given (bound by ``bind_metrics``), else on
    ``host:port`` (0 = any free port), to requests carrying ``token`` when given. ``start``
    logs ``metrics_listening`` with ``metrics_port``; a port it cannot bind raises OSError
    naming the port and ``metricsPort`` (the server refuses to start)."""

    def __init__(
        self,
        registry: CollectorRegistry,
        host: str,
        port: int,
        sock: socket.socket | None = None,
        token: BearerToken | None = None,
    ) -> None:
        self.registry = registry
        self.token = token
        self._refusals_logged: dict[str, float] = {}  # client host -> loop time, oldest first
        self.host = host
        self.wanted = port
        self.sock = sock
        self.port: int | None = None  # bound port, None when not serving
        self._server: asyncio.Server | None = None
        self._active: dict[asyncio.StreamWriter, None] = {}  # oldest first

    async def start(self) -> None:
        sock = self.sock if self.sock is not None else bind_metrics(self.host, self.wanted)
        self.sock = None  # the server owns it now
        try:
            self._server = await asyncio.start_server(
                self._serve, sock=sock, limit=MAX_HEAD, backlog=64
            )
        except BaseException:
            sock.close()
            raise
        self.port = self._server.sockets[0].getsockname()[1]
        log.info("metrics_listening", host=self.host, metrics_port=self.port, path=PATH,
                 bearer_token=self.token is not None)  # fmt: skip

    async def close(self) -> None:
        if self.sock is not None:  # bound, never started
            self.sock.close()
            self.sock = None
        if self._server is None:
            return
        self._server.close()
        for writer in list(self._active):
            writer.transport.abort()
        await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if len(self._active) >= MAX_CONNECTIONS:  # the oldest makes room: a scrape takes ms
            oldest = next(iter(self._active))
            del self._active[oldest]
            oldest.transport.abort()
        self._active[writer] = None
        try:
            async with asyncio.timeout(TIMEOUT):
                answer = await self._answer(reader, writer)
                if answer is not None:
                    writer.write(_encode(answer))
                    await writer.drain()
            writer.close()
        except (TimeoutError, OSError):  # too slow, or gone: nothing more is owed
            writer.transport.abort()
        finally:
            self._active.pop(writer, None)

    async def _answer(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> Answer | None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except asyncio.LimitOverrunError:
            return _error(431, f"request head over {MAX_HEAD} bytes")
        except asyncio.IncompleteReadError as exc:  # the client stopped sending
            return _error(400, "incomplete request") if exc.partial.strip() else None
        request = parse_head(head[:-4])
        if isinstance(request, Answer):
            return request
        if self.token is not None and not self.token.accepts(request.authorization):
            self._log_refusal(writer, request.authorization is not None)
            return Answer(401, "text/plain; charset=utf-8", b"a bearer token is required\n")
        if request.method not in ("GET", "HEAD"):
            return _error(405, "only GET and HEAD")
        if request.path != PATH:
            return _error(404, f"not found; metrics are at {PATH}")
        return self._scrape(request)

    def _log_refusal(self, writer: asyncio.StreamWriter, presented: bool) -> None:
        """Once a minute per client host at most: a scanner cannot fill the log."""
        peer = writer.get_extra_info("peername")
        host = str(peer[0]) if isinstance(peer, tuple) else str(peer)
        now = asyncio.get_running_loop().time()
        last = self._refusals_logged.get(host)
        if last is not None and now - last < REFUSAL_LOG_EVERY:
            return
        self._refusals_logged.pop(host, None)
        self._refusals_logged[host] = now
        while len(self._refusals_logged) > REFUSAL_LOG_HOSTS:
            del self._refusals_logged[next(iter(self._refusals_logged))]
        why = "a wrong bearer token" if presented else "no bearer token"
        log.warning("metrics_unauthorized", client=host, reason=why)

    def _scrape(self, request: Request) -> Answer:
        encoder, content_type = choose_encoder(request.accept)
        try:
            body = encoder(self.registry)
        except Exception as exc:  # a collector's bug costs the scrape, not the server (logged)
            log.error("metrics_collect_failed", exc_info=exc)
            return _error(500, "collecting metrics failed")
        return Answer(200, content_type, body, head_only=request.method == "HEAD")


def _encode(answer: Answer) -> bytes:
    head = (
        f"HTTP/1.1 {answer.status} {REASONS[answer.status]}\r\n"
        f"Content-Type: {answer.content_type}\r\n"
        f"Content-Length: {len(answer.body)}\r\n"
        + ("Allow: GET, HEAD\r\n" if answer.status == 405 else "")
        + (f"WWW-Authenticate: {REALM}\r\n" if answer.status == 401 else "")
        + "Connection: close\r\n\r\n"
    )
    return head.encode("latin-1") + (b"" if answer.head_only else answer.body)
