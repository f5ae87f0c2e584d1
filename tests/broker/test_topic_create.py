"""Creating topics one by one (issue 29, N6), against real broker and name server processes:
a create registers only that topic with the name server (it used to register the whole
table, so creating n topics sent it n^2/2 topic configs), is durable when answered (a journal
line, not a rewrite of topics.json), and a name server that missed creates ends up with
every route all the same."""

from __future__ import annotations

import asyncio
import json

from aiorocketmq.client.core import api
from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.protocol import fastjson
from aiorocketmq.remoting.protocol.codes import RequestCode
from aiorocketmq.remoting.protocol.command import RemotingCommand
from tests.broker.wire import create_topic
from tests.cluster import BrokerProc, Cluster
from tests.scrape import grew, scrape

RECEIVED = "rocketmq_namesrv_registered_topics_total"


async def hosted(client: RemotingClient, broker: BrokerProc) -> dict[str, dict[str, object]]:
    """GET_ALL_TOPIC_CONFIG: the broker's topic table."""
    resp = await client.invoke(
        broker.addr, RemotingCommand.request(RequestCode.GET_ALL_TOPIC_CONFIG)
    )
    assert resp.code == 0, resp.remark
    table: dict[str, dict[str, object]] = fastjson.loads(resp.body)["topicConfigTable"]
    return table


async def routed(client: RemotingClient, cluster: Cluster) -> set[str]:
    resp = await client.invoke(cluster.namesrv_addr, api.all_topics())
    return set(api.parse_topic_list(resp))


async def test_a_create_registers_only_the_new_topic(
    cluster: Cluster, client: RemotingClient
) -> None:
    """150 creates, each answered once the name server knows the topic, carry 150 topic
    configs to it, give or take a periodic registration of the whole table; before, each
    carried the whole table (about 12,700 configs in all)."""
    broker = cluster.add_broker("broker-a", registerNameServerPeriod="60000")
    port = cluster.ns.metrics_port()
    before = await scrape(port)
    names = [f"Created{i}" for i in range(150)]
    for name in names:
        resp = await client.invoke(broker.addr, create_topic(name, 2))
        assert resp.code == 0, resp.remark
    assert set(names) <= await routed(client, cluster)
    table = len(await hosted(client, broker))
    sent = grew(before, await scrape(port), RECEIVED)
    assert sent <= len(names) + 2 * table, f"{sent} topic configs sent for {len(names)} creates"


async def test_a_created_topic_survives_a_kill_right_after_the_answer(
    cluster: Cluster, client: RemotingClient
) -> None:
    """SIGKILL as soon as the last create is answered: after a restart every topic is there
    (the journal is replayed), and topics.json holds them all, in Java's shape, with no
    journal left beside it."""
    broker = cluster.add_broker("broker-a", flushConsumerOffsetInterval="600000")
    names = [f"Durable{i}" for i in range(30)]
    for name in names:
        assert (await client.invoke(broker.addr, create_topic(name, 3))).code == 0
    cluster.kill_broker("broker-a")
    config = broker.store / "config"
    assert list(config.glob("topics.json.journal.*")), "journaled, not yet folded in"
    cluster.start_broker("broker-a")
    async with RemotingClient() as fresh:  # the old connection died with the broker
        table = await hosted(fresh, broker)
    assert {n: table[n]["writeQueueNums"] for n in names} == dict.fromkeys(names, 3)
    saved = json.loads((config / "topics.json").read_text())
    assert set(names) <= set(saved["topicConfigTable"]) and "dataVersion" in saved
    assert list(config.glob("topics.json.journal.*")) == []
    await wait_until_routed(client, cluster, names)


async def test_a_restarted_name_server_ends_with_every_route(
    cluster: Cluster, client: RemotingClient
) -> None:
    """Creates while the name server is down, and one right after it is back (its first
    registration from the broker may be that increment): it ends with every route."""
    broker = cluster.add_broker("broker-a")
    assert (await client.invoke(broker.addr, create_topic("Before", 2))).code == 0
    assert cluster.ns.stop() == 0
    down = [f"Down{i}" for i in range(10)]
    for name in down:
        assert (await client.invoke(broker.addr, create_topic(name, 2))).code == 0
    cluster.start_namesrv()  # the same port
    assert (await client.invoke(broker.addr, create_topic("After", 2))).code == 0
    await wait_until_routed(client, cluster, ["Before", *down, "After"])
    assert broker.proc is not None and broker.proc.proc.poll() is None


async def wait_until_routed(client: RemotingClient, cluster: Cluster, names: list[str]) -> None:
    """Every one of ``names`` gets a route within a generous deadline (periodic
    registrations run every second here)."""
    missing = set(names)
    async with asyncio.timeout(30):
        while missing:
            missing -= await routed(client, cluster)
            if missing:
                await asyncio.sleep(0.05)
