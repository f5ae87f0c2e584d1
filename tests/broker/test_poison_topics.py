"""No poison pill in registration (issue 29, N1): a topic no name server would route --
``%RETRY%evilg`` with 2**40 queues, as ``retryQueueNums=2**40`` and one heartbeat made it --
must not cost the broker the routes of all its other topics, then or after a restart. Here
it gets in by other means than the request (which the edge now refuses): a topics.json
written before the broker starts (an old store), and a topic table given it directly (a
future bug)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from structlog.testing import capture_logs

from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.protocol.register import DataVersion, TopicConfigWrapper
from aiorocketmq.remoting.protocol.topic import TopicConfig
from tests.broker.poison import in_process, queue_counts, registered
from tests.broker.wire import create_topic
from tests.cluster import Cluster
from tests.scrape import scrape, value

EVIL = TopicConfig(topic_name="%RETRY%evilg", read_queue_nums=2**40, write_queue_nums=2**40)
GOOD = ["GoodT", "OtherT"]


async def test_an_unroutable_topic_in_topics_json_leaves_every_other_route(
    cluster: Cluster, client: RemotingClient
) -> None:
    """N1 end to end: broker-a starts from a topics.json holding GoodT, OtherT and
    %RETRY%evilg at 2**40 queues. GoodT and OtherT get routes (4 queues), the bad topic none,
    after several registrations and again after a restart; no name server refuses a
    registration. (Before: ``register_broker_refused`` and TOPIC_NOT_EXIST for every topic.)"""
    store = cluster.root / "broker-a"
    (store / "config").mkdir(parents=True)
    table = {t: TopicConfig(topic_name=t, read_queue_nums=4, write_queue_nums=4) for t in GOOD}
    table[EVIL.topic_name] = EVIL
    wrapper = TopicConfigWrapper(topic_config_table=table, data_version=DataVersion(7, 1))
    (store / "config" / "topics.json").write_text(json.dumps(wrapper.to_json()))
    broker = cluster.add_broker("broker-a")  # registers before it says `listening`
    accepted = 0.0
    for restarted in (False, True):
        if restarted:
            assert cluster.stop_broker("broker-a") == 0
            cluster.start_broker("broker-a")
        for topic in GOOD:
            assert await queue_counts(client, cluster.namesrv_addr, topic) == (0, [4]), topic
        assert (await queue_counts(client, cluster.namesrv_addr, EVIL.topic_name))[0] == 17
        accepted = await registrations_accepted(cluster, more_than=accepted + 2)
    assert broker.proc is not None
    refused = [e for e in broker.proc.events if e.get("event") == "register_broker_refused"]
    assert refused == []


async def registrations_accepted(cluster: Cluster, more_than: float) -> float:
    """Wait (20 s at most) until the name server has answered SUCCESS to more than
    ``more_than`` REGISTER_BROKER requests (one a second here); how many it has."""
    labels = {"request_code": "103", "request": "REGISTER_BROKER", "response_code": "0",
              "response": "SUCCESS"}  # fmt: skip
    port = cluster.ns.metrics_port()
    async with asyncio.timeout(20):
        while True:
            seen = value(await scrape(port), "rocketmq_rpc_requests_total", **labels)
            if seen > more_than:
                return seen
            await asyncio.sleep(0.2)


async def test_a_topic_put_in_the_table_is_left_out_and_warned_about_once(
    tmp_path: Path,
) -> None:
    """The broker's own line of defence, whatever the edge and the load do: %RETRY%evilg put
    straight into a running broker's topic table is left out of every registration (the
    same rule as the name server's: register.unregistrable), warned about once over at least
    three registrations and counted; the topics created before and after it keep and get
    their routes, and the broker serves the bad topic locally as before."""
    with capture_logs() as logs:
        async with in_process(tmp_path) as (ns, broker), RemotingClient() as cli:
            addr, namesrv = f"127.0.0.1:{broker.port}", f"127.0.0.1:{ns.port}"
            assert (await cli.invoke(addr, create_topic("GoodT", 4))).code == 0
            await broker.ctx.topics.put(EVIL)  # a future bug: no request, no load check
            await registered(broker)
            assert (await cli.invoke(addr, create_topic("OtherT", 4))).code == 0
            await registered(broker)
            for _ in range(2):  # two more registrations, as the 1 s timer makes them
                await registered(broker, full=True)
            for topic in GOOD:
                assert await queue_counts(cli, namesrv, topic) == (0, [4]), topic
            assert (await queue_counts(cli, namesrv, EVIL.topic_name))[0] == 17
            assert broker.ctx.topics.get(EVIL.topic_name) is EVIL  # still served here
            assert ns.processor.topics_skipped == 0  # never sent
            assert broker.namesrv.left_out.count == 1
    warned = [e for e in logs if e["event"] == "topic_not_registered"]
    assert len(warned) == 1, warned
    assert warned[0]["topic"] == EVIL.topic_name and "Java ints" in warned[0]["reason"]
    assert [e for e in logs if e["event"] == "register_broker_refused"] == []
