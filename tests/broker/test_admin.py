"""Broker admin and query codes against real processes (issue 6 item 6; protocol.md 5.3,
5.8)."""

from __future__ import annotations

import json
import time

from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.protocol import fastjson
from aiorocketmq.remoting.protocol.codes import RequestCode as C
from aiorocketmq.remoting.protocol.codes import ResponseCode
from aiorocketmq.remoting.protocol.command import RemotingCommand
from aiorocketmq.remoting.protocol.message import decode_records
from aiorocketmq.remoting.protocol.route import decode_kv_table
from tests.broker.wire import create_topic, max_offset, route, send_v2
from tests.cluster import Cluster
from tests.util import wait_until


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def req(code: int, body: bytes = b"", /, **ext: str) -> RemotingCommand:
    return RemotingCommand.request(code, ext, body)


async def test_topic_admin(cluster: Cluster, client: RemotingClient) -> None:
    """protocol.md 5.8: 17 creates or updates and registers at once; system topics and bad
    names are refused; 21 lists; 215 deletes config and queues."""
    broker = cluster.add_broker("broker-a")
    assert (await client.invoke(broker.addr, create_topic("Admin", 3))).code == 0
    assert (await route(client, cluster.namesrv_addr, "Admin")).code == 0
    again = await client.invoke(broker.addr, create_topic("Admin", 5, perm=4))
    assert again.code == 0
    table = json.loads((await client.invoke(broker.addr, req(C.GET_ALL_TOPIC_CONFIG))).body)
    admin = table["topicConfigTable"]["Admin"]
    assert (admin["writeQueueNums"], admin["perm"]) == (5, 4)
    assert table["dataVersion"]["counter"] >= 2
    for topic in ("TBW102", "SCHEDULE_TOPIC_XXXX", "rmq_sys_x", "DefaultCluster", "broker-a"):
        refused = await client.invoke(broker.addr, create_topic(topic))
        assert (refused.code, refused.remark) == (
            1,
            f"The topic[{topic}] is conflict with system topic.",
        )
    bad = await client.invoke(broker.addr, create_topic("no spaces"))
    assert bad.code == 1 and str(bad.remark).startswith("The specified topic contains illegal")
    await client.invoke(broker.addr, send_v2("Admin", b"x", queue_id=0))
    assert (
        await client.invoke(broker.addr, req(C.DELETE_TOPIC_IN_BROKER, topic="Admin"))
    ).code == 0
    table = json.loads((await client.invoke(broker.addr, req(C.GET_ALL_TOPIC_CONFIG))).body)
    assert "Admin" not in table["topicConfigTable"]
    assert await max_offset(client, broker.addr, "Admin", 0) == 0


async def test_offsets_times_and_lookups(cluster: Cluster, client: RemotingClient) -> None:
    """protocol.md 5.3 and 5.8: 30/31/32 queue bounds, 29 by time (5.x LOWER/UPPER),
    33 by commitlog offset, 12 by KEYS and by UNIQ_KEY."""
    broker = cluster.add_broker("broker-a")
    await client.invoke(broker.addr, create_topic("Offsets", 1))
    stamps, ids = [], []
    for i in range(5):
        props = {"KEYS": f"order-{i} shared", "UNIQ_KEY": f"U{i:031d}"}
        resp = await client.invoke(
            broker.addr, send_v2("Offsets", f"b{i}".encode(), queue_id=0, props=props)
        )
        ids.append(resp.ext_fields["msgId"])
        stamps.append(now_ms())
        await wait_until(lambda: now_ms() > stamps[-1] + 1)  # distinct store times
    q = {"topic": "Offsets", "queueId": "0"}
    assert (await client.invoke(broker.addr, req(C.GET_MAX_OFFSET, **q))).ext_fields == {
        "offset": "5"
    }
    assert (await client.invoke(broker.addr, req(C.GET_MIN_OFFSET, **q))).ext_fields == {
        "offset": "0"
    }
    earliest = await client.invoke(broker.addr, req(C.GET_EARLIEST_MSG_STORETIME, **q))
    assert 0 < int(earliest.ext_fields["timestamp"]) <= stamps[0]
    after_second = await client.invoke(
        broker.addr, req(C.SEARCH_OFFSET_BY_TIMESTAMP, timestamp=str(stamps[1] + 1), **q)
    )
    assert after_second.ext_fields["offset"] == "2"
    upper = await client.invoke(
        broker.addr,
        req(C.SEARCH_OFFSET_BY_TIMESTAMP, timestamp=str(stamps[1] + 1), boundaryType="UPPER", **q),
    )
    assert upper.ext_fields["offset"] == "1"
    now = str(time.time_ns() // 1_000_000 + 1000)
    by_key = await client.invoke(
        broker.addr,
        req(
            C.QUERY_MESSAGE,
            topic="Offsets",
            key="order-3",
            maxNum="32",
            beginTimestamp="0",
            endTimestamp=now,
        ),
    )
    assert [m.body for m in decode_records(by_key.body)] == [b"b3"]
    shared = await client.invoke(
        broker.addr,
        req(
            C.QUERY_MESSAGE,
            topic="Offsets",
            key="shared",
            maxNum="32",
            beginTimestamp="0",
            endTimestamp=now,
        ),
    )
    assert sorted(m.body for m in decode_records(shared.body)) == [
        f"b{i}".encode() for i in range(5)
    ]
    uniq = req(
        C.QUERY_MESSAGE,
        topic="Offsets",
        key=f"U{2:031d}",
        maxNum="1",
        beginTimestamp="0",
        endTimestamp=now,
        _UNIQUE_KEY_QUERY="true",
    )
    assert [m.body for m in decode_records((await client.invoke(broker.addr, uniq)).body)] == [
        b"b2"
    ]
    missing = await client.invoke(
        broker.addr,
        req(
            C.QUERY_MESSAGE,
            topic="Offsets",
            key="nope",
            maxNum="32",
            beginTimestamp="0",
            endTimestamp=now,
        ),
    )
    assert missing.code == ResponseCode.QUERY_NOT_FOUND
    gone = await client.invoke(broker.addr, req(C.VIEW_MESSAGE_BY_ID, offset=str(10**12)))
    assert gone.code == ResponseCode.SYSTEM_ERROR


async def test_stats_and_broker_config(cluster: Cluster, client: RemotingClient) -> None:
    """202 TopicStatsTable with MessageQueue object keys (Java's form); 28 runtime info;
    315 per-topic put stats; 26 config lines with a version; 25 changes keys live, says
    which need a restart (fidelity D3) and an unwritable broker still stores sends to a topic
    that is not an order topic (fidelity D8)."""
    broker = cluster.add_broker("broker-a")
    await client.invoke(broker.addr, create_topic("Stats", 2))
    for _ in range(3):
        await client.invoke(broker.addr, send_v2("Stats", b"12345", queue_id=1))
    stats = await client.invoke(broker.addr, req(C.GET_TOPIC_STATS_INFO, topic="Stats"))
    table = {dict(k)["queueId"]: v for k, v in fastjson.loads(stats.body)["offsetTable"].items()}
    assert (table[0]["maxOffset"], table[1]["maxOffset"], table[1]["minOffset"]) == (0, 3, 0)
    assert table[1]["lastUpdateTimestamp"] > 0
    info = decode_kv_table((await client.invoke(broker.addr, req(C.GET_BROKER_RUNTIME_INFO))).body)
    assert int(info["msgPutTotalTodayNow"]) == 3 and int(info["commitLogMaxOffset"]) > 0
    put = await client.invoke(
        broker.addr, req(C.VIEW_BROKER_STATS_DATA, statsName="TOPIC_PUT_NUMS", statsKey="Stats")
    )
    day = json.loads(put.body)["statsDay"]  # BrokerStatsItem: sum, tps, avgpt (per send)
    assert (day["sum"], day["avgpt"]) == (3, 1.0) and day["tps"] > 0
    conf = await client.invoke(broker.addr, req(C.GET_BROKER_CONFIG))
    lines = dict(line.split("=", 1) for line in conf.body.decode().splitlines())
    assert lines["brokerName"] == "broker-a" and "counter" in json.loads(conf.ext_fields["version"])
    change = await client.invoke(broker.addr, req(C.UPDATE_BROKER_CONFIG, b"brokerPermission=4\n"))
    assert (change.code, change.remark) == (0, None)
    stored = await client.invoke(broker.addr, send_v2("Stats", b"x"))
    assert stored.code == ResponseCode.SUCCESS
    bad = await client.invoke(broker.addr, req(C.UPDATE_BROKER_CONFIG, b"brokerPermission=x\n"))
    assert bad.code == 1 and "brokerPermission" in str(bad.remark)
    later = await client.invoke(
        broker.addr, req(C.UPDATE_BROKER_CONFIG, b"flushIntervalCommitLog=300\n")
    )
    assert (later.code, later.remark) == (
        0,
        "updated; takes effect after restart: flushIntervalCommitLog",
    )
    moved = await client.invoke(broker.addr, req(C.UPDATE_BROKER_CONFIG, b"listenPort=1\n"))
    assert moved.code == ResponseCode.NO_PERMISSION and "listenPort" in str(moved.remark)
