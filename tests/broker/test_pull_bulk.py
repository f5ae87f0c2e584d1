"""Bulk pulls, ours beyond 4.9.8 (issue 34, the Spark source's reads): a PULL_MESSAGE with
the ext field ``bulkPull=true`` is served up to maxMsgNums messages from memory within the
broker's byte cap (maxTransferBytesOnMessageInMemory, 256 KiB), not maxTransferCountOnMessage-
InMemory's 32; without the field, or with ``enableBulkPull=false`` (what an Apache broker
does: it ignores the field), 32. Messages read from disk keep their caps (8, 64 KiB)."""

from __future__ import annotations

import asyncio

import pytest

from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.protocol.codes import ResponseCode as R
from aiorocketmq.remoting.protocol.message import decode_records
from tests.broker.wire import create_topic, heartbeat, pull, send_v2
from tests.cluster import Cluster

BYTE_CAP = 256 * 1024  # maxTransferBytesOnMessageInMemory, Java's default
BODY = 600  # bytes: with its head and properties a record is ~750, so ~350 fit the cap
N = 1200


async def fill(client: RemotingClient, addr: str, topic: str, tags: str = "A") -> None:
    assert (await client.invoke(addr, create_topic(topic, 1))).code == 0
    assert (await client.invoke(addr, heartbeat("127.0.0.1@1", "cg", (topic, "*")))).code == 0
    for start in range(0, N, 100):
        sends = [
            client.invoke(addr, send_v2(topic, bytes(BODY), queue_id=0, props={"TAGS": tags}))
            for _ in range(start, min(N, start + 100))
        ]
        assert all(r.code == 0 for r in await asyncio.gather(*sends))


async def pulled(
    client: RemotingClient, addr: str, topic: str, offset: int, max_msgs: int, *,
    bulk: bool, subscription: str | None = None,
) -> tuple[list[int], int]:  # fmt: skip
    """The queue offsets a pull got and its body's length."""
    req = pull("cg", topic, 0, offset, sys_flag=4 if subscription else 0, max_msgs=max_msgs,
               subscription=subscription)  # fmt: skip
    if bulk:
        req.ext_fields["bulkPull"] = "true"
    resp = await client.invoke(addr, req)
    assert resp.code == R.SUCCESS, (resp.code, resp.remark)
    return [m.queue_offset for m in decode_records(resp.body)], len(resp.body)


async def test_a_bulk_pull_is_capped_by_bytes_not_by_32(
    cluster: Cluster, client: RemotingClient
) -> None:
    addr = cluster.add_broker("broker-a").addr
    await fill(client, addr, "BulkT")
    plain, _ = await pulled(client, addr, "BulkT", 0, 1024, bulk=False)
    assert plain == list(range(32))
    got, size = await pulled(client, addr, "BulkT", 5, 1024, bulk=True)
    record = size // len(got)  # every record has the same size
    assert got == list(range(5, 5 + len(got)))
    assert len(got) == BYTE_CAP // record  # as many as fit the byte cap: ~350
    assert size <= BYTE_CAP
    few, _ = await pulled(client, addr, "BulkT", 0, 100, bulk=True)
    assert few == list(range(100))  # and never more than maxMsgNums
    # the filtered way (a tag subscription: unit by unit) is capped the same
    tagged, size = await pulled(client, addr, "BulkT", 0, 1024, bulk=True, subscription="A")
    assert tagged == list(range(BYTE_CAP // record)) and size <= BYTE_CAP
    tagged, _ = await pulled(client, addr, "BulkT", 0, 1024, bulk=False, subscription="A")
    assert tagged == list(range(32))


@pytest.mark.parametrize(
    ("sets", "most"),
    [
        ({"enableBulkPull": "false"}, 32),  # ignored, as an Apache broker ignores the field
        ({"accessMessageInMemoryMaxRatio": "0"}, 8),  # every message "on disk": its caps
    ],
)
async def test_a_bulk_pull_keeps_the_other_caps(
    cluster: Cluster, client: RemotingClient, sets: dict[str, str], most: int
) -> None:
    addr = cluster.add_broker("broker-a", sets=sets).addr
    await fill(client, addr, "BulkT")
    got, _ = await pulled(client, addr, "BulkT", 0, 1024, bulk=True)
    assert got == list(range(most))
    tagged, _ = await pulled(client, addr, "BulkT", 0, 1024, bulk=True, subscription="A")
    assert tagged == list(range(most))
