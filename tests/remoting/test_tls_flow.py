"""Flow control through TLS (TlsTransport): a TLS peer that never reads its answers makes the
server hold about one of them, as a plaintext one does (issue 12 item 5, tests/remoting/
test_memory.py); others are served meanwhile and the stalled peer is closed at the stall
timeout. A real server process (echo_server) under uvloop; its RSS read from /proc."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.protocol.command import RemotingCommand
from aiorocketmq.remoting.protocol.frame import encode
from aiorocketmq.remoting.tls_context import client_context
from tests.harness import serving
from tests.remoting.echo_server import ECHO, SIZED
from tests.remoting.wire import request
from tests.tls_certs import CA
from tests.util import rss_mib

MiB = 1024 * 1024


@pytest.mark.slow
async def test_a_tls_peer_that_never_reads_makes_the_server_hold_about_one_response(
    tmp_path: Path,
) -> None:
    """200 requests for 4 MiB answers over TLS, never read (800 MiB of answers): the server's
    RSS grows by less than 64 MiB, a TLS client is answered meanwhile, and the stalled peer is
    closed at serverWriteStallTimeoutMillis (the Channel paused the TLS transport's reading
    when its writes backed up)."""
    ca = CA(tmp_path)
    pair = ca.issue("server")
    sets = {"serverWriteStallTimeoutMillis": "4000", "tls.server.mode": "enforcing",
            "tls.server.certPath": str(pair.cert), "tls.server.keyPath": str(pair.key)}  # fmt: skip
    argv = ["-m", "tests.remoting.echo_server", "--listen-port", "0"]
    argv += [a for k, v in sets.items() for a in ("--set", f"{k}={v}")]
    ctx = client_context(ca_file=str(ca.path))
    with serving(argv) as server:
        port = server.listening_port()
        base = rss_mib(server.proc.pid)
        reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=ctx)
        frames = [encode(request(SIZED, opaque=i, size=str(4 * MiB))) for i in range(200)]
        writer.write(b"".join(head + body for head, body in frames))
        other = RemotingClient(tls=ctx)
        peak = base
        try:
            for _ in range(10):
                await asyncio.sleep(0.2)
                peak = max(peak, rss_mib(server.proc.pid))
                resp = await other.invoke(f"127.0.0.1:{port}", RemotingCommand.request(ECHO), 10)
                assert resp.code == 0
        finally:
            await other.close()
        assert peak - base < 64, f"RSS grew {peak - base:.0f} MiB"
        server.wait_for("peer_not_reading", timeout=20)
        async with asyncio.timeout(60):  # what was sent before the close, then EOF
            while await reader.read(MiB):
                pass
        writer.close()
