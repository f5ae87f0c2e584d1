"""mqadmin's group and offset commands against the package's cluster, with real clients in
this process: updateSubGroup / deleteSubGroup (200, 207; -c: 106, 215, 216),
consumerConnection (105 + 203), producerConnection (105 + 204), consumerProgress (105 + 208s;
-s true: 203 and 307 through the broker to the consumer; no -g: 206 first) and
resetOffsetByTime (222 -> 220 to a running consumer; with none online, the old way: 208, 202,
29/30, 15).

mqadmin runs in a thread (``asyncio.run`` of its own) while the clients run in the test's loop.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from aiorocketmq.client import ConsumeFromWhere, Message, Producer, PushConsumer
from aiorocketmq.client.core.api import request
from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.config import ClientConfig
from aiorocketmq.remoting.protocol import fastjson
from aiorocketmq.remoting.protocol.codes import RequestCode as C
from aiorocketmq.remoting.protocol.codes import SerializeType
from tests.admin.conftest import Run
from tests.client.conftest import create_everywhere
from tests.client.test_push import FAST, Collect
from tests.cluster import Cluster
from tests.util import wait_until

Admin = Callable[..., Run]


async def run(admin: Admin, *argv: str) -> Run:
    """mqadmin in a worker thread, so the clients of this loop keep answering brokers."""
    return await asyncio.to_thread(admin, *argv)


async def poll(admin: Admin, ok: Callable[[Run], bool], *argv: str, timeout: float = 15) -> Run:
    """Run the command until ``ok`` holds for its result (each run is a fresh mqadmin)."""
    deadline = time.monotonic() + timeout
    while True:
        result = await run(admin, *argv)
        if ok(result):
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"mqadmin {argv} never satisfied the test: {result}")
        await asyncio.sleep(0.1)


def push(cluster: Cluster, group: str, topic: str, listener: Collect) -> PushConsumer:
    c = PushConsumer(
        group,
        namesrv_addr=cluster.namesrv_addr,
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        **FAST,
    )
    c.subscribe(topic, "*")
    c.register_message_listener(listener)
    return c


async def send(cluster: Cluster, topic: str, n: int, group: str = "pg_admin_cmds") -> None:
    """``n`` messages, one per queue of the topic's 4 (round robin)."""
    async with Producer(group, namesrv_addr=cluster.namesrv_addr) as p:
        for i in range(n):
            await p.send(Message(topic, f"m{i}".encode(), keys=f"k{i}"))


def lines(result: Run) -> list[list[str]]:
    """The printed words, line by line, without blank lines and the tables' header rules."""
    return [line.split() for line in result.out.splitlines() if line.strip(" ─")]


async def group_configs(cluster: Cluster) -> dict[str, dict[str, Any]]:
    """GET_ALL_SUBSCRIPTIONGROUP_CONFIG (201) of each broker: group -> its config."""
    out = {}
    async with RemotingClient(ClientConfig(serialize_type=SerializeType.JSON)) as cli:
        for name, broker in cluster.brokers.items():
            resp = await cli.invoke(broker.addr, request(C.GET_ALL_SUBSCRIPTIONGROUP_CONFIG), 5)
            table = fastjson.loads(resp.body)["subscriptionGroupTable"]
            out[name] = table
    return out


async def test_update_sub_group(admin: Admin, cluster: Cluster) -> None:
    """-c: 106, then 200 to each master; -b: 200 to that broker only."""
    flags = ("-g", "GAdmSub", "-r", "3", "-q", "2", "-s", "false")
    made = await run(admin, "updateSubGroup", "-c", "DefaultCluster", *flags)
    assert made.code == 0, made.err
    for broker in cluster.brokers.values():
        assert made.out.count(f"create subscription group to {broker.addr} success.") == 1
    shown = lines(made)
    assert ["retryMaxTimes", "3"] in shown and ["consumeBroadcastEnable", "false"] in shown
    for table in (await group_configs(cluster)).values():
        got = table["GAdmSub"]
        assert (got["retryMaxTimes"], got["retryQueueNums"], got["consumeEnable"]) == (3, 2, False)
        assert got["consumeBroadcastEnable"] is False and got["consumeFromMinEnable"] is False
    one = cluster.brokers["broker-a"].addr
    data = (await run(admin, "updateSubGroup", "-b", one, "-g", "GAdmSubB", "--json")).json
    assert data["brokers"] == [one] and data["config"]["groupName"] == "GAdmSubB"
    configs = await group_configs(cluster)
    assert "GAdmSubB" in configs["broker-a"] and "GAdmSubB" not in configs["broker-b"]


async def test_delete_sub_group(admin: Admin, cluster: Cluster) -> None:
    """-c: 207 to each master, then the retry and DLQ topics deleted (215s, 216); -b: 207."""
    assert (await run(admin, "updateSubGroup", "-c", "DefaultCluster", "-g", "GAdmDel")).code == 0
    await create_everywhere(cluster, "%RETRY%GAdmDel", 1)
    gone = await run(admin, "deleteSubGroup", "-c", "DefaultCluster", "-g", "GAdmDel")
    assert gone.code == 0, gone.err
    assert gone.out.count("delete subscription group [GAdmDel] from broker [") == 2
    assert "delete topic [%RETRY%GAdmDel] from NameServer success." in gone.out
    assert all("GAdmDel" not in t for t in (await group_configs(cluster)).values())
    route = await run(admin, "consumerConnection", "-g", "GAdmDel")
    assert route.code == 1 and "TOPIC_NOT_EXIST" in route.err  # the retry topic is gone
    one = cluster.brokers["broker-a"].addr
    assert (await run(admin, "updateSubGroup", "-b", one, "-g", "GAdmDelB")).code == 0
    data = (await run(admin, "deleteSubGroup", "-b", one, "-g", "GAdmDelB", "--json")).json
    assert data["messages"] == [
        f"delete subscription group [GAdmDelB] from broker [{one}] success."
    ]
    assert "GAdmDelB" not in (await group_configs(cluster))["broker-a"]


def test_group_commands_usage_errors(admin: Admin) -> None:
    assert admin("updateSubGroup", "-c", "DefaultCluster").code == 2  # -g is required
    assert admin("deleteSubGroup", "-b", "127.0.0.1:1").code == 2
    assert admin("consumerConnection").code == 2
    assert admin("producerConnection", "-g", "x").code == 2  # -t too
    assert admin("resetOffsetByTime", "-g", "x", "-t", "y").code == 2  # -s too
    nowhere = admin("updateSubGroup", "-g", "GAdmNowhere")
    assert (nowhere.code, nowhere.err) == (
        1,
        "mqadmin updateSubGroup: give -b brokerAddr or -c clusterName\n",
    )


def test_unknown_groups_are_one_line_and_exit_1(admin: Admin) -> None:
    for argv in (
        ("consumerProgress", "-g", "GAdmNoSuch"),
        ("consumerConnection", "-g", "GAdmNoSuch"),
        ("producerConnection", "-g", "GAdmNoSuch", "-t", "TBW102"),
        ("resetOffsetByTime", "-g", "GAdmNoSuch", "-t", "TAdmNoSuch", "-s", "now"),
        ("resetOffsetByTime", "-g", "GAdmNoSuch", "-t", "TBW102", "-s", "yesterday"),
    ):
        result = admin(*argv)
        assert result.code == 1, (argv, result)
        assert result.err.startswith(f"mqadmin {argv[0]}: ") and result.err.count("\n") == 1
    assert (
        "bad timestamp 'yesterday'"
        in admin("resetOffsetByTime", "-g", "x", "-t", "y", "-s", "yesterday").err
    )
    no_producer = admin("producerConnection", "-g", "GAdmNoSuch", "-t", "TBW102")
    assert "the producer group[GAdmNoSuch] not exist" in no_producer.err


async def test_connections_and_progress_of_a_running_consumer(
    admin: Admin, cluster: Cluster
) -> None:
    topic, group = "TAdmProgress", "GAdmProgress"
    await create_everywhere(cluster, topic, 2)
    got = Collect()
    async with push(cluster, group, topic, got) as c:
        await send(cluster, topic, 4)
        await wait_until(lambda: len(got.msgs) == 4, 20)
        await _check_group_progress(admin, group, topic, c.instance.client_id)
        await _check_all_groups(admin, group)
        await _check_connection(admin, cluster, group, topic, c.instance.client_id)
    offline = await poll(
        admin,
        lambda r: any(x["group"] == group and x["count"] == 0 for x in r.json),
        "consumerProgress",
        "--json",
    )
    assert next(x for x in offline.json if x["group"] == group)["version"] == "OFFLINE"


def _mine(result: Run, topic: str) -> list[dict[str, Any]]:
    return [q for q in result.json["queues"] if q["topic"] == topic]


async def _check_group_progress(admin: Admin, group: str, topic: str, client_id: str) -> None:
    """-g: 105 + 208 per broker; -s true: 203 and 307 name each queue's client."""
    done = await poll(
        admin,
        lambda r: (
            r.code == 0
            and r.json["diffTotal"] == 0
            and sum(q["consumerOffset"] for q in _mine(r, topic)) == 4
        ),
        "consumerProgress",
        "-g",
        group,
        "--json",
    )
    mine = _mine(done, topic)
    assert [(q["brokerName"], q["queueId"], q["brokerOffset"]) for q in mine] == [
        ("broker-a", 0, 1),
        ("broker-a", 1, 1),
        ("broker-b", 0, 1),
        ("broker-b", 1, 1),
    ]
    assert all(q["lastTimestamp"] > 0 for q in mine) and "clientIp" not in mine[0]
    table = await run(admin, "consumerProgress", "-g", group)
    head = table.out.splitlines()[0]
    assert head.split("  ")[0].strip() == "#Topic" and "#Consumer Offset" in head
    assert "#Client IP" not in head and "Diff Total: 0" in table.out
    assert "Consume TPS: " in table.out
    assert next(r for r in lines(table) if r[0] == topic)[1:6] == ["broker-a", "0", "1", "1", "0"]
    ip = client_id.split("@")[0]
    shown = await run(admin, "consumerProgress", "-g", group, "-s", "true", "--json")
    assert {q["clientIp"] for q in _mine(shown, topic)} == {ip}
    ips = await run(admin, "consumerProgress", "-g", group, "-s", "true")
    assert "#Client IP" in ips.out and all(r[5] == ip for r in lines(ips) if r[0] == topic)


async def _check_all_groups(admin: Admin, group: str) -> None:
    """No -g: 206, then per retry topic 105 + 208s and 105 + 203."""
    every = await run(admin, "consumerProgress", "--json")
    row = next(r for r in every.json if r["group"] == group)
    assert row == {
        "group": group,
        "count": 1,
        "version": "V4_9_8",
        "consumeType": "PUSH",
        "messageModel": "CLUSTERING",
        "consumeTps": row["consumeTps"],
        "diffTotal": 0,
    }
    text = lines(await run(admin, "consumerProgress"))
    assert text[0] == ["#Group", "#Count", "#Version", "#Type", "#Model", "#TPS", "#Diff", "Total"]
    assert [group, "1", "V4_9_8", "PUSH", "CLUSTERING"] in [r[:5] for r in text]


async def _check_connection(
    admin: Admin, cluster: Cluster, group: str, topic: str, client_id: str
) -> None:
    conn = await run(admin, "consumerConnection", "-g", group, "--json")
    assert conn.code == 0, conn.err
    assert [x["clientId"] for x in conn.json["connections"]] == [client_id]
    assert conn.json["connections"][0]["version"] == "V4_9_8"
    assert conn.json["consumeType"] == "CONSUME_PASSIVELY"
    assert conn.json["consumeFromWhere"] == "CONSUME_FROM_FIRST_OFFSET"
    assert {s["topic"]: s["subExpression"] for s in conn.json["subscriptions"]}[topic] == "*"
    by_broker = await run(
        admin, "consumerConnection", "-g", group, "-b", cluster.brokers["broker-b"].addr
    )
    assert by_broker.code == 0 and client_id in by_broker.out
    assert "ConsumeType: CONSUME_PASSIVELY" in by_broker.out
    assert "MessageModel: CLUSTERING" in by_broker.out
    assert [topic, "*"] in lines(by_broker)


async def test_producer_connection(admin: Admin, cluster: Cluster) -> None:
    topic = "TAdmProducer"
    await create_everywhere(cluster, topic, 1)
    async with Producer("PGAdmConn", namesrv_addr=cluster.namesrv_addr) as p:
        await p.send(Message(topic, b"x"))
        await p.instance.heartbeat_all()  # now, not at the next 30 s round
        found = await run(admin, "producerConnection", "-g", "PGAdmConn", "-t", topic, "--json")
        assert found.code == 0, found.err
        assert [x["clientId"] for x in found.json["connections"]] == [p.instance.client_id]
        assert found.json["connections"][0]["version"] == "V4_9_8"
        table = await run(admin, "producerConnection", "-g", "PGAdmConn", "-t", topic)
        row = next(r for r in lines(table) if r[0] == "0001")
        assert row[1] == p.instance.client_id and row[-1] == "V4_9_8"
