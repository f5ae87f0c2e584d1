"""Resources that grow with topics and clients stay bounded (issue 12 item 10): a broker
whose open-files limit is 512 serves 10,000 written queues; ConsumeQueue files hold no
descriptor and a cache bounds their mappings."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.protocol.codes import ResponseCode
from tests.broker.wire import create_topic, max_offset, send_v2
from tests.cluster import Cluster

TOPICS, QUEUES = 100, 100  # 10,000 queues


def open_fds(pid: int) -> int:
    return len(list(Path(f"/proc/{pid}/fd").iterdir()))


async def send_everywhere(client: RemotingClient, addr: str) -> None:
    """One message to each of the 10,000 queues, 128 in flight."""
    jobs = [(f"Many{t}", q) for t in range(TOPICS) for q in range(QUEUES)]
    sem = asyncio.Semaphore(128)

    async def one(topic: str, queue_id: int) -> None:
        async with sem:
            resp = await client.invoke(addr, send_v2(topic, b"m", queue_id=queue_id), 10)
            assert resp.code == ResponseCode.SUCCESS, resp.remark

    await asyncio.gather(*(one(t, q) for t, q in jobs))


@pytest.mark.slow
async def test_ten_thousand_queues_with_512_open_files(
    cluster: Cluster, client: RemotingClient
) -> None:
    """Item 10: 10,000 queues created and written on a broker limited to 512 descriptors
    (each queue file held one before, so it ran out at about 500 queues): the broker stays
    healthy; mapped queue files -- a descriptor each -- stay within half the limit (the
    rest is the broker's own few); every queue reads back, and so it does after a
    restart."""
    broker = cluster.add_broker("broker-a", open_files=512)
    assert broker.proc is not None
    limit = broker.proc.wait_for("open_files_limit")
    assert (limit["soft"], limit["hard"]) == (512, 512)
    for t in range(TOPICS):
        resp = await client.invoke(broker.addr, create_topic(f"Many{t}", QUEUES), 10)
        assert resp.code == ResponseCode.SUCCESS, resp.remark
    await send_everywhere(client, broker.addr)
    pid = broker.proc.proc.pid
    assert open_fds(pid) <= 256 + 40, f"{open_fds(pid)} descriptors open"
    for t in range(0, TOPICS, 7):
        for q in range(0, QUEUES, 13):
            assert await max_offset(client, broker.addr, f"Many{t}", q) == 1
    assert cluster.stop_broker("broker-a") == 0
    cluster.start_broker("broker-a")
    client.close_channel(broker.addr)
    assert broker.proc is not None
    assert open_fds(broker.proc.proc.pid) <= 256 + 40
    total = 0
    for t in range(TOPICS):
        for q in range(QUEUES):
            total += await max_offset(client, broker.addr, f"Many{t}", q)
    assert total == TOPICS * QUEUES
