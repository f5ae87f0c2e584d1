"""Fixtures of the SDK tests: a real cluster of a name server and two brokers."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from aiorocketmq.client.core import api
from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.config import ClientConfig
from aiorocketmq.remoting.protocol.codes import SerializeType
from tests.cluster import Cluster, running


@pytest.fixture
def two_brokers(tmp_path: Path) -> Iterator[Cluster]:
    """With enablePropertyFilter, as the README's SQL92 example asks of a cluster."""
    with running(tmp_path, ("broker-a", "broker-b"), {"enablePropertyFilter": "true"}) as cluster:
        yield cluster


async def create_everywhere(cluster: Cluster, topic: str, queues: int = 4) -> None:
    """updateTopic -c: the topic on every master, then routed by the name server."""
    async with RemotingClient(ClientConfig(serialize_type=SerializeType.JSON)) as cli:
        for broker in cluster.brokers.values():
            assert (await cli.invoke(broker.addr, api.create_topic(topic, queues))).code == 0
        for _ in range(100):
            resp = await cli.invoke(cluster.namesrv_addr, api.get_route(topic))
            if resp.code == 0 and len(api.parse_route(resp).queue_datas) == len(cluster.brokers):
                return
            await asyncio.sleep(0.05)
    raise AssertionError(f"{topic} never routed to every broker")
