"""Fixtures: a real cluster (name server + brokers) per test, stopped by PID afterwards."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.config import ClientConfig
from aiorocketmq.remoting.protocol.codes import SerializeType
from tests.cluster import Cluster, running


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    with running(tmp_path) as c:
        yield c


@pytest.fixture
async def json_client() -> AsyncIterator[RemotingClient]:
    """What real RocketMQ clients speak: JSON headers."""
    cli = RemotingClient(ClientConfig(serialize_type=SerializeType.JSON))
    yield cli
    await cli.close()


@pytest.fixture
async def client() -> AsyncIterator[RemotingClient]:
    cli = RemotingClient()
    yield cli
    await cli.close()
