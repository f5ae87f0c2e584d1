"""State an older version stored that a current rule refuses is quarantined at start
(issue 29 build item 2): the broker starts, warns once per entry, registers everything
else, and keeps each bad entry aside (``<file>.quarantine``), never in its live tables.
The store holds the N1 reproducer's result: %RETRY%evilg with 2**40 queues, which made
the name server refuse every registration of the broker, so all its topics lost their
routes, after every restart too."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.protocol import fastjson
from aiorocketmq.remoting.protocol.codes import RequestCode, ResponseCode
from aiorocketmq.remoting.protocol.command import RemotingCommand
from tests.broker.test_edge_bounds import refusals
from tests.broker.wire import route
from tests.cluster import Cluster


def topic(name: str, queues: int = 4, perm: int = 6) -> dict[str, Any]:
    return {"topicName": name, "readQueueNums": queues, "writeQueueNums": queues, "perm": perm,
            "topicFilterType": "SINGLE_TAG", "topicSysFlag": 0, "order": False}  # fmt: skip


def group(name: str, **fields: Any) -> dict[str, Any]:
    return {"groupName": name, "retryQueueNums": 1, "retryMaxTimes": 16, "brokerId": 0,
            "whichBrokerWhenConsumeSlowly": 1, "consumeEnable": True, **fields}  # fmt: skip


BAD_TOPICS = {
    "%RETRY%evilg": topic("%RETRY%evilg", 2**40),  # N1's
    "%RETRY%" + "L" * 200: topic("%RETRY%" + "L" * 200, 1),  # a name no record holds
    "PermBits": topic("PermBits", 4, perm=99),
    "Huge": topic("Huge", 2**31 - 1),
}
BAD_GROUPS = {
    "evilg": group("evilg", retryQueueNums=2**40),
    "g" * 300: group("g" * 300),
    "a/b": group("a/b"),
}
BAD_OFFSETS = {"GoodT@bigg": {"0": 2**70}, "GoodT@a/b": {"0": 5}}


def write_old_store(config: Path) -> None:
    config.mkdir(parents=True)
    # Wide: more queues than a request may give a topic now, fewer than clients can carry
    topics = {"GoodT": topic("GoodT", 2), "Wide": topic("Wide", 2048), **BAD_TOPICS}
    version = {"counter": 7, "timestamp": 1}
    (config / "topics.json").write_text(
        json.dumps({"dataVersion": version, "topicConfigTable": topics})
    )
    groups = {"okg": group("okg", retryMaxTimes=3), **BAD_GROUPS}
    (config / "subscriptionGroup.json").write_text(
        json.dumps({"dataVersion": version, "subscriptionGroupTable": groups})
    )
    offsets = {"GoodT@okg": {"0": 42}, "Wide@okg": {"2047": 9}, **BAD_OFFSETS}
    (config / "consumerOffset.json").write_text(json.dumps({"offsetTable": offsets}))


def quarantined(config: Path, name: str) -> dict[str, Any]:
    kept = json.loads((config / f"{name}.quarantine").read_text())["quarantined"]
    return {e["key"]: e["entry"] for e in kept}


async def table(client: RemotingClient, addr: str, code: int, key: str) -> dict[str, Any]:
    resp = await client.invoke(addr, RemotingCommand.request(code))
    assert resp.code == 0
    result: dict[str, Any] = fastjson.loads(resp.body)[key]
    return result


async def test_bad_stored_entries_are_quarantined_and_the_rest_registers(
    cluster: Cluster, client: RemotingClient
) -> None:
    """Start on the old store: one warning per bad entry; GoodT routes (it did not: the
    name server refused the broker's registration); the bad topics, groups and offsets are
    in no table and in the quarantine files; the good ones keep their settings. The state
    files are written again without them, so a restart finds nothing more to set aside.
    A topic stored with more queues than a request may now ask for (2,048) but what clients
    can carry loads, routes and keeps its offsets: an upgrade takes no route away."""
    config = cluster.root / "broker-a" / "config"
    write_old_store(config)
    broker = cluster.add_broker("broker-a")
    assert (await route(client, cluster.namesrv_addr, "GoodT")).code == 0
    wide = await route(client, cluster.namesrv_addr, "Wide")
    assert wide.code == 0 and json.loads(wide.body)["queueDatas"][0]["writeQueueNums"] == 2048
    for name in BAD_TOPICS:
        gone = await route(client, cluster.namesrv_addr, name)
        assert gone.code == ResponseCode.TOPIC_NOT_EXIST, name
    await check_tables(client, broker.addr)
    assert broker.proc is not None
    warned = [e for e in broker.proc.events if e.get("event") == "state_entry_quarantined"]
    assert len(warned) == len(BAD_TOPICS) + len(BAD_GROUPS) + len(BAD_OFFSETS), warned
    assert refusals(cluster, broker) == []
    assert cluster.stop_broker("broker-a") == 0

    assert json.loads((config / "topics.json").read_text())["dataVersion"]["counter"] == 8
    cluster.start_broker("broker-a")
    async with RemotingClient() as fresh:  # the first client's connection died with the broker
        await check_tables(fresh, broker.addr)
        assert (await route(fresh, cluster.namesrv_addr, "GoodT")).code == 0
    assert quarantined(config, "topics.json") == BAD_TOPICS
    assert quarantined(config, "subscriptionGroup.json") == BAD_GROUPS
    assert quarantined(config, "consumerOffset.json") == BAD_OFFSETS
    assert not [e for e in broker.proc.events if e.get("event") == "state_entry_quarantined"]
    assert refusals(cluster, broker) == []


async def check_tables(client: RemotingClient, addr: str) -> None:
    topics = await table(client, addr, RequestCode.GET_ALL_TOPIC_CONFIG, "topicConfigTable")
    assert "GoodT" in topics and not set(BAD_TOPICS) & set(topics)
    groups = await table(
        client, addr, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG, "subscriptionGroupTable"
    )
    assert groups["okg"]["retryMaxTimes"] == 3
    assert not set(BAD_GROUPS) & set(groups)
    offsets = await table(client, addr, RequestCode.GET_ALL_CONSUMER_OFFSET, "offsetTable")
    assert (offsets["GoodT@okg"], offsets["Wide@okg"]) == ({"0": 42}, {"2047": 9})
    assert not set(BAD_OFFSETS) & set(offsets)
