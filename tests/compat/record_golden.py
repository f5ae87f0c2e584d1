"""Record real ali-ons frames as golden bytes: ``python -m tests.compat.record_golden``.

A name server and a broker run as processes; a capture proxy sits in front of each. The proxy
in front of the name server rewrites route answers so that ali-ons dials the broker through
the second proxy. The first request frame of each code ali-ons sends is saved, byte for byte,
to tests/compat/golden/<code>-<NAME>.bin (test_golden.py decodes them). Run it again only to
refresh the recordings after changing the ali-ons version.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import tempfile
from pathlib import Path

from aiorocketmq.remoting.protocol.codes import RequestCode
from aiorocketmq.remoting.protocol.frame import FrameDecoder, encode
from aiorocketmq.remoting.runtime import configure_logging
from tests.cluster import Cluster
from tests.compat.conftest import Node, create_everywhere

GOLDEN = Path(__file__).resolve().parent / "golden"


class Recorder:
    def __init__(self) -> None:
        self.frames: dict[int, bytes] = {}
        self.route_opaques: set[int] = set()

    def keep(self, raw: bytes) -> None:
        (cmd,) = FrameDecoder().feed(raw)
        if not cmd.is_response and cmd.code not in self.frames:
            self.frames[cmd.code] = raw
        if cmd.code == RequestCode.GET_ROUTEINFO_BY_TOPIC and not cmd.is_response:
            self.route_opaques.add(cmd.opaque)


async def split(reader: asyncio.StreamReader):  # type: ignore[no-untyped-def]
    """Whole frames, as raw bytes, from a stream."""
    while True:
        head = await reader.readexactly(4)
        yield head + await reader.readexactly(int.from_bytes(head, "big"))


async def proxy(port: int, rec: Recorder, rewrite: dict[str, str] | None) -> asyncio.Server:
    async def serve(client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        server_r, server_w = await asyncio.open_connection("127.0.0.1", port)

        async def upstream() -> None:
            async for raw in split(client_r):
                rec.keep(raw)
                server_w.write(raw)

        async def downstream() -> None:
            async for raw in split(server_r):
                if rewrite:
                    raw = rewrite_route(raw, rec, rewrite)
                client_w.write(raw)

        with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError):
            await asyncio.gather(upstream(), downstream())
        client_w.close()
        server_w.close()

    return await asyncio.start_server(serve, "127.0.0.1", 0)


def rewrite_route(raw: bytes, rec: Recorder, addrs: dict[str, str]) -> bytes:
    (cmd,) = FrameDecoder().feed(raw)
    if not (cmd.is_response and cmd.opaque in rec.route_opaques and cmd.body):
        return raw
    text = cmd.body.decode()
    for real, proxied in addrs.items():
        text = text.replace(real, proxied)
    cmd.body = text.encode()
    head, body = encode(cmd)
    return head + body


async def record(root: Path) -> dict[int, bytes]:
    cluster = Cluster(root)
    cluster.start_namesrv()
    try:
        broker = cluster.add_broker("broker-a")
        from aiorocketmq.remoting.client import RemotingClient

        async with RemotingClient() as cli:
            await create_everywhere(cli, cluster, "GoldenTopic", 2)
        rec = Recorder()
        broker_proxy = await proxy(broker.port, rec, None)
        proxied = f"127.0.0.1:{broker_proxy.sockets[0].getsockname()[1]}"
        ns_proxy = await proxy(cluster.namesrv_port, rec, {broker.addr: proxied})
        ns = f"127.0.0.1:{ns_proxy.sockets[0].getsockname()[1]}"
        producer = await Node.start("produce.js", ns, "GoldenTopic", "3", "--run=g")
        assert await producer.wait() == 0, producer.stderr
        consumer = await Node.start("consume.js", ns, "GoldenTopic", "golden_cg", "--expect=3",
                                    "--idle-ms=1500")  # fmt: skip
        assert await consumer.wait() == 0, consumer.stderr
        broker_proxy.close()
        ns_proxy.close()
        return rec.frames
    finally:
        cluster.stop()


def main() -> int:
    configure_logging("warning", json=False)
    with tempfile.TemporaryDirectory() as tmp:
        frames = asyncio.run(record(Path(tmp)))
    GOLDEN.mkdir(exist_ok=True)
    for code, raw in sorted(frames.items()):
        name = RequestCode(code).name if code in RequestCode._value2member_map_ else str(code)
        (GOLDEN / f"{code}-{name}.bin").write_bytes(raw)
        print(f"{code:>4} {name:<32} {len(raw):>5} bytes")
    (GOLDEN / "README.md").write_text(
        "Request frames that ali-ons 3.12.0 sent to our cluster, recorded byte for byte by\n"
        "`python -m tests.compat.record_golden`; tests/compat/test_golden.py decodes each.\n"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
