"""Fidelity rows D18 and D19 (issue 13 item 8): a real `python -m aiorocketmq.namesrv` on port 0,
spoken to in JSON headers as Java brokers and tools speak."""

from __future__ import annotations

import asyncio
import contextlib
import json
import struct
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.config import ClientConfig
from aiorocketmq.remoting.errors import RemotingError
from aiorocketmq.remoting.protocol.codes import RequestCode, SerializeType
from aiorocketmq.remoting.protocol.command import RemotingCommand
from aiorocketmq.remoting.protocol.frame import FrameDecoder
from aiorocketmq.remoting.protocol.route import decode_topic_list
from tests.harness import serving
from tests.namesrv.test_process import namesrv_args, register_request, route, start_namesrv


def json_frame(code: int, opaque: int, ext: dict[str, str] | None = None) -> bytes:
    """A JSON-header request as a Java peer frames it."""
    header = json.dumps({"code": code, "extFields": ext or {}, "flag": 0, "language": "JAVA",
                         "opaque": opaque, "serializeTypeCurrentRPC": "JSON",
                         "version": 409}).encode()  # fmt: skip
    return struct.pack(">II", 4 + len(header), len(header)) + header


@pytest.fixture
async def raw(tmp_path: Path) -> AsyncIterator[tuple[asyncio.StreamReader, asyncio.StreamWriter]]:
    with serving(namesrv_args(tmp_path)) as proc:
        reader, writer = await asyncio.open_connection("127.0.0.1", proc.listening_port())
        try:
            yield reader, writer
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()


async def _read_one(reader: asyncio.StreamReader, decoder: FrameDecoder) -> RemotingCommand:
    while True:
        data = await reader.read(65536)
        assert data, "the name server closed the connection"
        if commands := decoder.feed(data):
            (cmd,) = commands
            return cmd


async def test_unknown_code_gets_no_answer(
    raw: tuple[asyncio.StreamReader, asyncio.StreamWriter],
) -> None:
    """fidelity D19: a code 4.9.8's name server does not know gets no response at all
    (DefaultRequestProcessor.processRequest returns null), and the connection goes on serving:
    the next request is answered. A code it knows and we do not serve still gets 3."""
    reader, writer = raw
    decoder = FrameDecoder()
    writer.write(json_frame(9999, opaque=1))
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.5):
            await _read_one(reader, decoder)
    writer.write(json_frame(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER, opaque=2))
    async with asyncio.timeout(5):
        listed = await _read_one(reader, decoder)
    assert (listed.opaque, listed.code, decode_topic_list(listed.body)) == (2, 0, [])
    writer.write(json_frame(RequestCode.GET_NAMESRV_CONFIG, opaque=3))
    async with asyncio.timeout(5):
        unserved = await _read_one(reader, decoder)
    assert (unserved.opaque, unserved.code) == (3, 3)


async def _query(cli: RemotingClient, addr: str, broker: str, counter: int) -> None:
    ident = {"brokerName": broker, "brokerAddr": f"127.0.0.1:{broker[-1]}",
             "clusterName": "DefaultCluster", "brokerId": "0"}  # fmt: skip
    body = json.dumps({"counter": counter, "timestamp": 1}).encode()
    cmd = RemotingCommand.request(RequestCode.QUERY_DATA_VERSION, ident, body)
    with contextlib.suppress(RemotingError):  # a broker's connection closes when it is evicted
        await cli.invoke(addr, cmd)


async def test_changed_data_version_does_not_keep_a_broker_alive(tmp_path: Path) -> None:
    """fidelity D18: QUERY_DATA_VERSION refreshes a broker's liveness only when its version is
    unchanged (DefaultRequestProcessor.queryBrokerTopicConfig): a broker that keeps asking
    with a newer version, never re-registering, expires; one asking with its own stays."""
    proc = start_namesrv(tmp_path, "brokerChannelExpiredTime=1000",
                         "scanNotActiveBrokerInterval=200")  # fmt: skip
    same, newer, reader = (RemotingClient(ClientConfig(serialize_type=SerializeType.JSON))
                           for _ in range(3))  # fmt: skip
    try:
        addr = f"127.0.0.1:{proc.listening_port()}"
        await same.invoke(addr, register_request("broker-1", "127.0.0.1:1", "Kept"))
        await newer.invoke(addr, register_request("broker-2", "127.0.0.1:2", "Stale"))
        for _ in range(12):  # 2.4 s: twice the expiry
            await _query(same, addr, "broker-1", 1)
            await _query(newer, addr, "broker-2", 2)
            await asyncio.sleep(0.2)
        assert (await route(reader, addr, "Kept")).code == 0
        assert (await route(reader, addr, "Stale")).code == 17
        evicted = proc.wait_for(
            "broker_evicted", timeout=10
        )  # logged already: room for a slow read
        assert (evicted["broker"], evicted["reason"]) == ("broker-2", "expired")
    finally:
        for cli in (same, newer, reader):
            await cli.close()
        assert proc.stop() == 0
