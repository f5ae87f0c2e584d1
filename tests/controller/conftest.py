"""Fixtures: a real etcd per test (tests/etcd.py), and brokers' controllers that record what
they are told."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from aiorocketmq.broker.controller.controller import Controller
from aiorocketmq.broker.controller.etcd import Etcd, parse_endpoints
from aiorocketmq.broker.controller.fence import boot_clock
from tests.etcd import EtcdMember, etcd_server


@pytest.fixture
def etcd(tmp_path: Path) -> Iterator[EtcdMember]:
    with etcd_server(tmp_path) as member:
        yield member


class Node:
    """A broker's controller in this process; ``told`` lists its callbacks in order:
    ``("master", epoch)`` and ``("slave", master_addr, epoch)``; ``told_at`` when each came
    (fence.boot_clock)."""

    def __init__(self, controller_addr: str, broker_id: int, **options: Any) -> None:
        self.addr = f"127.0.0.1:{10911 + 10 * broker_id}"  # what it advertises; nothing listens
        self.told: list[tuple[object, ...]] = []
        self.told_at: list[float] = []
        options.setdefault("lease_ttl_ms", 3000)
        self.ctl = Controller(
            controller_addr=controller_addr,
            cluster="DefaultCluster",
            broker_name="broker-a",
            broker_id=broker_id,
            broker_addr=self.addr,
            on_master=self._on_master,
            on_slave=self._on_slave,
            **options,
        )

    async def _on_master(self, epoch: int) -> None:
        self.told_at.append(boot_clock())
        self.told.append(("master", epoch))

    async def _on_slave(self, master_addr: str, epoch: int) -> None:
        self.told_at.append(boot_clock())
        self.told.append(("slave", master_addr, epoch))


@pytest.fixture
async def nodes() -> AsyncIterator[list[Node]]:
    """Controllers a test starts go here; all are closed after it (leases revoked)."""
    started: list[Node] = []
    yield started
    for node in started:
        await node.ctl.close()


@pytest.fixture
async def observer(etcd: EtcdMember) -> AsyncIterator[Etcd]:
    """A plain etcd client: how the test reads the keys itself."""
    client = Etcd(parse_endpoints(etcd.endpoint), timeout=5)
    yield client
    await client.close()
