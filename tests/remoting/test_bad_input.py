"""Bad input against a real server process: it logs one line, closes that connection only,
and keeps serving everyone else (issue "Bad input"; protocol.md 1: any decoding error closes
that connection, and only that one)."""

from __future__ import annotations

import asyncio
import random
import struct
from collections.abc import Iterator

import pytest

from aiorocketmq.remoting.protocol.frame import encode
from tests.harness import ServerProcess, serving
from tests.remoting.echo_server import ECHO, SIZED, SLOW
from tests.remoting.wire import RawPeer, request


@pytest.fixture(scope="module")
def server() -> Iterator[ServerProcess]:
    # the server must survive every bad input and stop cleanly (exit 0)
    args = ["-m", "tests.remoting.echo_server", "--listen-port", "0",
            "--set", "serverWriteStallTimeoutMillis=500", "--log-level", "debug"]  # fmt: skip
    with serving(args) as proc:
        yield proc


def frame(stype: int, header: bytes, body: bytes = b"") -> bytes:
    return (
        struct.pack(">II", 4 + len(header) + len(body), stype << 24 | len(header)) + header + body
    )


MALFORMED = {
    "http request": b"GET / HTTP/1.1\r\nHost: broker\r\n\r\n",
    "random bytes": random.Random(7).randbytes(256),
    "length over the 16 MiB limit": struct.pack(">I", 16 * 1024 * 1024 - 3) + b"\x00" * 64,
    "length shorter than the prefix": struct.pack(">I", 2) + b"ab",
    "header longer than the frame": struct.pack(">II", 8, 100) + b"{}{}",
    "invalid JSON header": frame(0, b'{"code":10,'),
    "JSON header without code": frame(0, b'{"opaque":1}'),
    "invalid msgpack header": frame(2, b"\xc1\xc1"),
    "msgpack header of the wrong shape": frame(2, b"\x93\x01\x02\x03"),
    "truncated ROCKETMQ header": frame(1, b"\x00\x0a\x00"),
    "unknown serialize type": frame(9, b"{}"),
}


async def assert_still_serving(port: int) -> None:
    peer = await RawPeer.connect(port)
    peer.send(request(ECHO, opaque=42, ok="yes"))
    resp = await peer.read()
    assert (resp.opaque, resp.ext_fields) == (42, {"ok": "yes"})
    await peer.close()


def count(server: ServerProcess, event: str) -> int:
    return sum(1 for e in server.events if e.get("event") == event)


@pytest.mark.parametrize("case", sorted(MALFORMED))
async def test_malformed_frame_closes_only_that_connection(
    server: ServerProcess, case: str
) -> None:
    """A malformed frame: one warning line, that connection closed, others served."""
    port = server.listening_port()
    bystander = await RawPeer.connect(port)
    before = count(server, "frame_error")
    bad = await RawPeer.connect(port)
    bad.send_raw(MALFORMED[case])
    assert await bad.closed_by_peer()
    server.wait_for("frame_error", count=before + 1)
    await asyncio.sleep(0.05)
    assert count(server, "frame_error") == before + 1
    bystander.send(request(ECHO, opaque=1))
    assert (await bystander.read()).opaque == 1
    await bystander.close()
    await assert_still_serving(port)


async def test_truncated_frame_then_disconnect(server: ServerProcess) -> None:
    """A client that vanishes mid-frame costs nothing but its connection."""
    port = server.listening_port()
    head, body = encode(request(ECHO, opaque=1, k="v"))
    peer = await RawPeer.connect(port)
    peer.send_raw((head + body)[: len(head) // 2])
    await peer.close()
    await assert_still_serving(port)


async def test_disconnect_mid_request(server: ServerProcess) -> None:
    """A client that disconnects while its request runs: the response is dropped quietly."""
    port = server.listening_port()
    errors = sum(1 for e in server.events if e.get("level") == "error")
    peer = await RawPeer.connect(port)
    peer.send(request(SLOW, opaque=1))
    await asyncio.sleep(0.05)
    await peer.close()
    server.wait_for("response_dropped")
    await assert_still_serving(port)
    assert sum(1 for e in server.events if e.get("level") == "error") == errors


async def test_client_that_never_reads_is_closed(server: ServerProcess) -> None:
    """A client that never reads its responses is closed once our writes stall past the limit
    (500 ms here), and bounded memory is kept meanwhile: reading stops while writes are stuck."""
    port = server.listening_port()
    peer = await RawPeer.connect(port)
    for i in range(64):
        peer.send(request(SIZED, opaque=i, size=str(1 << 20)))
    server.wait_for("peer_not_reading", timeout=20)
    assert await peer.closed_by_peer(timeout=20)
    await assert_still_serving(port)
