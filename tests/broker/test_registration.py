"""Incremental registration (issue 29, N6), step by step: a broker's Registrar and TopicTable
(real files) against real in-process name servers on port 0 over real sockets, so each
registration round is driven by the test rather than by a timer."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from aiorocketmq.broker.configfile import ConfigFile
from aiorocketmq.broker.namesrv_api import BrokerIdentity, NamesrvAPI
from aiorocketmq.broker.registration import Registrar
from aiorocketmq.broker.topics import TopicTable, system_topics
from aiorocketmq.namesrv.config import NamesrvConfig
from aiorocketmq.namesrv.server import Namesrv
from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.config import ServerConfig
from aiorocketmq.remoting.protocol.topic import (
    TRANS_HALF_TOPIC,
    TRANS_OP_HALF_TOPIC,
    Perm,
    TopicConfig,
)

ME = BrokerIdentity("C", "broker-a", 0, "127.0.0.1:10911", "127.0.0.1:10912")


def namesrv(tmp: Path, name: str) -> Namesrv:
    config = NamesrvConfig(kv_config_path=str(tmp / name / "kv.json"), metrics_port=-1)
    return Namesrv(config, ServerConfig(listen_port=0, bind_address="127.0.0.1"))


def routed(ns: Namesrv) -> set[str]:
    """The topics ``ns`` routes to broker-a."""
    return {t for t, queues in ns.table.topic_queues.items() if "broker-a" in queues}


@pytest.fixture
async def broker(tmp_path: Path) -> AsyncIterator[tuple[TopicTable, Registrar, NamesrvAPI]]:
    table = TopicTable(
        ConfigFile(tmp_path / "topics.json"),
        system_topics("C", "broker-a", auto_create=True, default_queue_nums=8),
        auto_create=True,
    )
    table.load()
    api = NamesrvAPI(RemotingClient(), [], 3.0)
    registrar = Registrar(api, table, lambda: ME, lambda: 6)
    table.listeners.append(registrar.changed)
    table.registered = registrar.wait
    yield table, registrar, api
    await registrar.close()
    await api.close()
    await table.file.close()


async def create(table: TopicTable, name: str) -> None:
    await table.put(TopicConfig(topic_name=name, read_queue_nums=2, write_queue_nums=2))
    await table.registered()


async def test_a_name_server_that_saw_only_an_increment_gets_everything_at_the_next_full(
    tmp_path: Path, broker: tuple[TopicTable, Registrar, NamesrvAPI]
) -> None:
    """A create registers that topic alone; a name server whose first registration was such
    an increment (started, or restarted, after the other creates) records its data version,
    and the next full registration must still rebuild there: it carries another version."""
    table, registrar, api = broker
    async with namesrv(tmp_path, "first") as first:
        api.addrs = [f"127.0.0.1:{first.port}"]
        await registrar.register_all()
        for i in range(20):
            await create(table, f"T{i}")
        assert routed(first) == set(table.topics)
        async with namesrv(tmp_path, "late") as late:
            api.addrs.append(f"127.0.0.1:{late.port}")
            received = late.table.topics_received
            await create(table, "X")  # the late name server's first registration
            assert late.table.topics_received - received == 1, "only the new topic is sent"
            assert routed(late) == {"X"}
            await registrar.register_all()  # the periodic full registration
            assert routed(late) == set(table.topics)
            assert routed(first) == set(table.topics)


async def test_concurrent_creates_share_registration_rounds(
    tmp_path: Path, broker: tuple[TopicTable, Registrar, NamesrvAPI]
) -> None:
    """50 creates at once: each answered after a round that holds it, far fewer rounds than
    creates, and no round carries more than the topics changed since the one before."""
    table, registrar, api = broker
    async with namesrv(tmp_path, "ns") as ns:
        api.addrs = [f"127.0.0.1:{ns.port}"]
        await registrar.register_all()
        received, rounds = ns.table.topics_received, registrar.rounds
        await asyncio.gather(*(create(table, f"C{i}") for i in range(50)))
        assert {f"C{i}" for i in range(50)} <= routed(ns)
        assert ns.table.topics_received - received == 50
        assert registrar.rounds - rounds < 25, registrar.rounds - rounds


async def test_the_op_half_topic_is_never_registered(
    tmp_path: Path, broker: tuple[TopicTable, Registrar, NamesrvAPI]
) -> None:
    """issue 33, difference 3: 4.9.8 writes RMQ_SYS_TRANS_OP_HALF_TOPIC without a topic
    config, so its name server never lists it (Apache's broker, run by hand: topicList after
    commits and rollbacks has RMQ_SYS_TRANS_HALF_TOPIC and no op topic). Ours has it in the
    broker's table and leaves it out of increments and full registrations alike."""
    table, registrar, api = broker
    async with namesrv(tmp_path, "ns") as ns:
        api.addrs = [f"127.0.0.1:{ns.port}"]
        await registrar.register_all()
        for topic in (TRANS_HALF_TOPIC, TRANS_OP_HALF_TOPIC):
            await table.create_plain(topic, 1, Perm.READ | Perm.WRITE, wait_registered=False)
        await create(table, "After")  # rounds go in order: both increments are out
        assert {TRANS_HALF_TOPIC, TRANS_OP_HALF_TOPIC} <= set(table.topics)
        assert {TRANS_HALF_TOPIC, "After"} <= routed(ns)
        assert TRANS_OP_HALF_TOPIC not in routed(ns)
        await registrar.register_all()  # the periodic full registration
        assert routed(ns) == set(table.topics) - {TRANS_OP_HALF_TOPIC}


async def test_each_increment_carries_a_version_of_its_own(
    tmp_path: Path, broker: tuple[TopicTable, Registrar, NamesrvAPI]
) -> None:
    """A round that starts while the next create is being written reads the table's version,
    which that create has already moved on; the create's own increment then carried the same
    version and every name server skipped it (RouteInfoManager.registerBroker takes a table
    only when its version differs), leaving the topic unrouted until the next full
    registration. Each increment carries a version no earlier one carried."""
    table, registrar, api = broker
    async with namesrv(tmp_path, "ns") as ns:
        api.addrs = [f"127.0.0.1:{ns.port}"]
        await registrar.register_all()
        for i in range(10):
            await table.create_plain(f"A{i}", 1, Perm.READ | Perm.WRITE, wait_registered=False)
            await create(table, f"B{i}")
            assert {f"A{i}", f"B{i}"} <= routed(ns), i
