"""Fixtures: a real cluster (name server + brokers) per test, stopped by PID afterwards."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from remoting.client import RemotingClient
from remoting.config import ClientConfig
from remoting.protocol.codes import SerializeType
from tests.cluster import Cluster


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    c = Cluster(tmp_path)
    c.start_namesrv()
    try:
        yield c
    finally:
        codes = c.stop()
        print(c.dump())
    assert all(code in (0, -9) for code in codes.values()), codes


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
