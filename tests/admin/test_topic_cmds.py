"""mqadmin's topic and stats commands against the shared cluster (broker-a, broker-b): updateTopic,
deleteTopic, topicList (-c), topicRoute, topicStatus, topicClusterList, statsAll; tables and
--json, the effects on routes and brokers, and the error paths."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from aiorocketmq.client.admin import api_cluster as capi
from aiorocketmq.client.core import api
from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.config import ClientConfig
from aiorocketmq.remoting.protocol import fastjson
from aiorocketmq.remoting.protocol.codes import RequestCode as C
from aiorocketmq.remoting.protocol.codes import ResponseCode as R
from aiorocketmq.remoting.protocol.codes import SerializeType
from aiorocketmq.remoting.protocol.command import RemotingCommand
from aiorocketmq.remoting.protocol.heartbeat import ConsumerData, SubscriptionData
from aiorocketmq.remoting.protocol.route import decode_topic_list
from tests.admin.conftest import Run
from tests.cluster import Cluster


def unique(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:8]}"


def one_line_error(run: Run, command: str) -> str:
    assert run.code == 1, (run.out, run.err)
    assert run.out == ""
    assert run.err.startswith(f"mqadmin {command}: ")
    assert run.err.count("\n") == 1
    return run.err


async def call(addr: str, *reqs: RemotingCommand) -> list[RemotingCommand]:
    """``reqs`` to ``addr`` in order, on one connection, with JSON headers."""
    client = RemotingClient(ClientConfig(serialize_type=SerializeType.JSON))
    try:
        return [await client.invoke(addr, req, 5.0) for req in reqs]
    finally:
        await client.close()


def topics_on(addr: str) -> set[str]:
    """The broker's topic table (GET_ALL_TOPIC_CONFIG, 21)."""
    (resp,) = asyncio.run(call(addr, api.request(C.GET_ALL_TOPIC_CONFIG)))
    return set(api_json(resp)["topicConfigTable"])


def api_json(resp: RemotingCommand) -> Any:
    assert resp.code == R.SUCCESS, resp.remark
    return fastjson.loads(resp.body)


def test_update_topic_on_a_cluster_shows_in_route_status_and_lists(
    admin: Any, cluster: Cluster
) -> None:
    topic = unique("AdminTopic")
    a, b = cluster.brokers["broker-a"].addr, cluster.brokers["broker-b"].addr
    run = admin("updateTopic", "-c", "DefaultCluster", "-t", topic, "-r", "4", "-w", "4")
    assert run.code == 0, run.err
    assert sorted(run.out.splitlines()[:2]) == sorted(
        [f"create topic to {a} success.", f"create topic to {b} success."]
    )
    assert run.out.splitlines()[2] == (
        f"TopicConfig [topicName={topic}, readQueueNums=4, writeQueueNums=4, perm=RW-, "
        "topicFilterType=SINGLE_TAG, topicSysFlag=0, order=false]"
    )
    assert topic in topics_on(a) and topic in topics_on(b)

    route = admin("topicRoute", "-t", topic)
    assert route.code == 0, route.err
    rows = [line.split() for line in route.out.splitlines()]
    assert rows[0] == ["#ClusterName", "#BrokerName", "#BrokerAddrs", "#ReadQueue",
                       "#WriteQueue", "#Perm"]  # fmt: skip
    assert ["DefaultCluster", "broker-a", f"{{0={a}}}", "4", "4", "6"] in rows
    assert ["DefaultCluster", "broker-b", f"{{0={b}}}", "4", "4", "6"] in rows
    assert ["Total:", "2", "8", "8"] in rows
    data = admin("topicRoute", "-t", topic, "--json").json
    queues = {(q["brokerName"], q["readQueueNums"], q["writeQueueNums"], q["perm"])
              for q in data["queueDatas"]}  # fmt: skip
    assert queues == {("broker-a", 4, 4, 6), ("broker-b", 4, 4, 6)}
    assert {d["brokerName"]: d["brokerAddrs"] for d in data["brokerDatas"]} == {
        "broker-a": {"0": a},
        "broker-b": {"0": b},
    }

    status = admin("topicStatus", "-t", topic)
    assert status.code == 0, status.err
    lines = status.out.splitlines()
    assert lines[0].split() == ["#Broker", "Name", "#QID", "#Min", "Offset", "#Max", "Offset",
                                "#Last", "Updated"]  # fmt: skip
    assert [line.split()[:4] for line in lines[2:]] == [
        [name, str(q), "0", "0"] for name in ("broker-a", "broker-b") for q in range(4)
    ]
    queues = admin("topicStatus", "-t", topic, "--json").json
    assert [(q["brokerName"], q["queueId"], q["maxOffset"]) for q in queues] == [
        (name, q, 0) for name in ("broker-a", "broker-b") for q in range(4)
    ]

    clusters = admin("topicClusterList", "-t", topic)
    assert (clusters.code, clusters.out) == (0, "DefaultCluster\n")
    assert admin("topicClusterList", "-t", topic, "--json").json == ["DefaultCluster"]
    listed = admin("topicList")
    assert topic in listed.out.splitlines()
    assert topic in admin("topicList", "--json").json


def test_update_topic_on_one_broker_with_order_merges_the_order_conf(
    admin: Any, cluster: Cluster
) -> None:
    """-b with ``-o true``: 17 to the broker, then ORDER_TOPIC_CONFIG in the name server's KV
    merged with what was there (101 then 100)."""
    topic = unique("AdminOrder")
    a, b = cluster.brokers["broker-a"].addr, cluster.brokers["broker-b"].addr
    run = admin("updateTopic", "-b", a, "-t", topic, "-r", "2", "-w", "2", "-p", "4", "-o", "true")
    assert run.code == 0, run.err
    assert f"create topic to {a} success." in run.out.splitlines()
    assert "set broker orderConf. isOrder=true, orderConf=[broker-a:2]" in run.out.splitlines()
    assert "perm=R--" in run.out and "order=true" in run.out
    data = admin("updateTopic", "-b", b, "-t", topic, "-w", "3", "-o", "true", "--json").json
    assert data["orderConf"] == "broker-a:2;broker-b:3"
    assert data["brokers"] == [{"brokerAddr": b, "ok": True}]
    assert data["topicConfig"]["writeQueueNums"] == 3 and data["topicConfig"]["order"] is True
    (kv,) = asyncio.run(call(cluster.namesrv_addr, capi.get_kv(capi.ORDER_TOPIC_CONFIG, topic)))
    assert kv.ext_fields["value"] == "broker-a:2;broker-b:3"
    route = admin("topicRoute", "-t", topic, "--json").json
    queues = {(q["brokerName"], q["readQueueNums"], q["writeQueueNums"], q["perm"])
              for q in route["queueDatas"]}  # fmt: skip
    assert queues == {("broker-a", 2, 2, 4), ("broker-b", 8, 3, 6)}
    admin("deleteKvConfig", "-s", capi.ORDER_TOPIC_CONFIG, "-k", topic)


def test_delete_topic_removes_it_from_brokers_and_the_name_server(
    admin: Any, cluster: Cluster
) -> None:
    a, b = cluster.brokers["broker-a"].addr, cluster.brokers["broker-b"].addr
    topic, other = unique("AdminDelete"), unique("AdminDelete")
    for t in (topic, other):
        assert admin("updateTopic", "-c", "DefaultCluster", "-t", t).code == 0
    run = admin("deleteTopic", "-c", "DefaultCluster", "-t", topic)
    assert run.code == 0, run.err
    assert run.out.splitlines() == [
        f"delete topic [{topic}] from cluster [DefaultCluster] success.",
        f"delete topic [{topic}] from NameServer success.",
    ]
    assert topic not in topics_on(a) and topic not in topics_on(b)
    assert "TOPIC_NOT_EXIST" in one_line_error(admin("topicRoute", "-t", topic), "topicRoute")
    assert topic not in admin("topicList", "--json").json
    (resp,) = asyncio.run(call(cluster.namesrv_addr, api.all_topics()))
    assert topic not in decode_topic_list(resp.body) and other in decode_topic_list(resp.body)

    data = admin("deleteTopic", "-c", "DefaultCluster", "-t", other, "--json").json
    assert data == {"topic": other, "cluster": "DefaultCluster", "brokers": [a, b],
                    "namesrvAddrs": [cluster.namesrv_addr]}  # fmt: skip
    assert other not in topics_on(a) and other not in topics_on(b)
    assert admin("topicRoute", "-t", other).code == 1


async def consume_some(broker: str, topic: str, group: str, sends: int, pulls: int) -> None:
    """On one connection to ``broker``: a consumer of ``group`` subscribing ``topic`` says
    hello (34, which makes %RETRY%group), ``sends`` messages go to queue 0, ``pulls`` of them
    are pulled (11) and the group's offset is committed there (15)."""
    hello = api.heartbeat(f"127.0.0.1@{group}", consumers=[
        ConsumerData(group_name=group, subscriptions=[SubscriptionData(topic=topic)])])  # fmt: skip
    sends_ = [api.send_message(topic, b"m%d" % i, group="admin_pg", queue_id=0)
              for i in range(sends)]  # fmt: skip
    pull = api.pull_message(group, topic, 0, 0, max_nums=pulls, sys_flag=api.FLAG_SUBSCRIPTION,
                            subscription="*", suspend_ms=0)  # fmt: skip
    commit = api.update_consumer_offset(group, topic, 0, pulls)
    resps = await call(broker, hello, *sends_, pull, commit)
    assert all(r.code == R.SUCCESS for r in resps[: sends + 1]), [r.remark for r in resps]
    assert len(api.parse_pull(resps[-2]).messages()) == pulls
    assert resps[-1].code == R.SUCCESS


async def wait_for_route(namesrv: str, topic: str) -> None:
    for _ in range(50):
        (resp,) = await call(namesrv, api.get_route(topic))
        if resp.code == R.SUCCESS:
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"no route for {topic}")


def test_stats_all_and_topic_list_c_show_groups_backlog_and_traffic(
    admin: Any, cluster: Cluster
) -> None:
    """5 sent, 3 pulled and committed by a group: statsAll's row has backlog 2, 5 in and 3 out
    over 24 h (206, 105, 300, 315 TOPIC_PUT_NUMS / GROUP_GET_NUMS, 105 + 208); topicList -c
    names the group (300). A topic without traffic or groups is a NO_CONSUMER row, which -a
    leaves out."""
    a = cluster.brokers["broker-a"].addr
    topic, idle, group = unique("AdminStats"), unique("AdminIdle"), unique("AdminGroup")
    for t in (topic, idle):
        assert admin("updateTopic", "-b", a, "-t", t, "-r", "1", "-w", "1").code == 0
    asyncio.run(consume_some(a, topic, group, sends=5, pulls=3))
    asyncio.run(wait_for_route(cluster.namesrv_addr, f"%RETRY%{group}"))

    rows = admin("statsAll", "-t", topic, "--json").json
    assert len(rows) == 1
    row = rows[0]
    assert (row["topic"], row["group"], row["accumulation"]) == (topic, group, 2)
    assert (row["inMsg24Hour"], row["outMsg24Hour"]) == (5, 3)
    assert row["inTps"] > 0 and row["outTps"] > 0
    table = admin("statsAll", "-t", topic)
    assert table.code == 0, table.err
    assert table.out.splitlines()[0].split()[:3] == ["#Topic", "#Consumer", "Group"]
    cells = table.out.splitlines()[2].split()
    assert (cells[0], cells[1], cells[2], cells[5], cells[6]) == (topic, group, "2", "5", "3")

    assert admin("statsAll", "-t", idle, "--json").json == [
        {"topic": idle, "group": None, "accumulation": 0, "inTps": 0.0, "outTps": None,
         "inMsg24Hour": 0, "outMsg24Hour": None}
    ]  # fmt: skip
    assert admin("statsAll", "-t", idle).out.splitlines()[2].split() == [
        idle,
        "0",
        "0.00",
        "0",
        "NO_CONSUMER",
    ]
    assert admin("statsAll", "-a", "-t", idle, "--json").json == []
    active = admin("statsAll", "-a", "--json").json
    assert {r["topic"] for r in active} >= {topic} and idle not in {r["topic"] for r in active}

    listed = admin("topicList", "-c", "--json").json
    assert {"cluster": "DefaultCluster", "topic": topic, "groups": [group]} in listed
    assert {"cluster": "DefaultCluster", "topic": idle, "groups": []} in listed
    assert not any(d["topic"].startswith("%RETRY%") for d in listed)
    lines = [line.split() for line in admin("topicList", "-c").out.splitlines()]
    assert lines[0] == ["#Cluster", "Name", "#Topic", "#Consumer", "Group"]
    assert ["DefaultCluster", topic, group] in lines and ["DefaultCluster", idle] in lines


def test_unknown_topic_is_one_line_and_exit_1(admin: Any) -> None:
    topic = unique("NoSuchTopic")
    for command in ("topicRoute", "topicStatus", "topicClusterList"):
        err = one_line_error(admin(command, "-t", topic), command)
        assert f"for the topic: {topic}" in err and "answered 17 TOPIC_NOT_EXIST" in err


def test_missing_or_conflicting_options_exit_2(admin: Any, cluster: Cluster) -> None:
    a = cluster.brokers["broker-a"].addr
    assert admin("updateTopic", "-t", "T").code == 2  # neither -b nor -c
    assert admin("updateTopic", "-b", a, "-c", "DefaultCluster", "-t", "T").code == 2
    assert admin("updateTopic", "-b", a).code == 2  # no -t
    assert admin("updateTopic", "-b", a, "-t", "T", "-w", "many").code == 2
    assert admin("deleteTopic", "-t", "T").code == 2  # no -c
    for command in ("topicRoute", "topicStatus", "topicClusterList"):
        assert admin(command).code == 2
