"""The controller's metrics (broker/controller/metrics.py) on a real /metrics endpoint (the
Metrics service the broker runs, port 0), scraped as Prometheus does, while real Controllers
campaign against a real etcd: a master, its SyncStateSet growing, the master cut off from
etcd (fenced), another elected, the old one back as a slave."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import pytest

from aiorocketmq.broker.controller.controller import Controller, Role
from aiorocketmq.broker.controller.metrics import controller_metrics
from aiorocketmq.remoting.counters import RequestStats
from aiorocketmq.remoting.metrics import Metrics
from tests.controller.conftest import Node
from tests.controller.test_election import start
from tests.etcd import EtcdMember
from tests.partition import Forwarder
from tests.scrape import Samples, scrape, value
from tests.util import wait_until

UP = 30.0


@asynccontextmanager
async def endpoint(ctl: Controller) -> AsyncIterator[Callable[[], Awaitable[Samples]]]:
    """/metrics on 127.0.0.1, port 0, with the controller's collector; a scrape function."""
    metrics = Metrics("127.0.0.1", 0, RequestStats(), dict, [controller_metrics(ctl)])
    await metrics.start()
    assert metrics.port is not None
    port = metrics.port
    try:
        yield lambda: scrape(port)
    finally:
        await metrics.close()


@pytest.fixture
async def forwarder(etcd: EtcdMember) -> AsyncIterator[Forwarder]:
    """A partition between a controller and etcd, on demand (tests/partition.py)."""
    fwd = Forwarder("127.0.0.1", etcd.client_port)
    await fwd.start()
    yield fwd
    fwd.heal()
    await fwd.close()


def view(s: Samples) -> dict[str, float | str]:
    """The controller's samples by short name; the role as the one label set to 1."""
    roles = [r.value for r in Role if value(s, "rocketmq_controller_role", role=r.value) == 1]
    assert len(roles) == 1 and all(
        value(s, "rocketmq_controller_role", role=r.value) == 0 for r in Role if r.value != roles[0]
    )
    return {
        "elections": value(s, "rocketmq_controller_elections_won_total"),
        "epoch": value(s, "rocketmq_controller_master_epoch"),
        "set": value(s, "rocketmq_controller_sync_state_set_size"),
        "fenced": value(s, "rocketmq_controller_fenced"),
        "denied": value(s, "rocketmq_controller_access_denied"),
        "role": roles[0],
    }


@pytest.mark.slow
async def test_the_metrics_follow_election_and_fencing(
    etcd: EtcdMember, nodes: list[Node], forwarder: Forwarder
) -> None:
    a = await start(nodes, forwarder.endpoint, 0, lease_ttl_ms=4000, margin=2.0)
    await wait_until(lambda: a.ctl.role is Role.MASTER, UP)
    b = await start(nodes, etcd.endpoint, 1)
    await wait_until(lambda: b.ctl.role is Role.SLAVE and 1 in a.ctl.state.replicas, UP)
    async with endpoint(a.ctl) as scrape_a, endpoint(b.ctl) as scrape_b:
        assert view(await scrape_a()) == {
            "elections": 1, "epoch": 1, "set": 1, "fenced": 0, "denied": 0, "role": "MASTER"
        }  # fmt: skip
        await a.ctl.alter_sync_state_set({0, 1})
        assert view(await scrape_a())["set"] == 2
        await wait_until(lambda: len(b.ctl.state.sync_state_set) == 2, UP)
        assert view(await scrape_b()) == {
            "elections": 0, "epoch": 1, "set": 2, "fenced": 0, "denied": 0, "role": "SLAVE"
        }  # fmt: skip

        forwarder.cut()  # a cannot renew its lease: fenced while it still holds the role
        await wait_until(lambda: not a.ctl.may_ack(), UP)
        got = view(await scrape_a())
        assert (got["role"], got["fenced"], got["epoch"]) == ("MASTER", 1, 1), got
        await wait_until(lambda: b.ctl.role is Role.MASTER, UP)
        assert view(await scrape_b()) == {
            "elections": 1, "epoch": 2, "set": 1, "fenced": 0, "denied": 0, "role": "MASTER"
        }  # fmt: skip

        forwarder.heal()
        await wait_until(lambda: a.ctl.role is Role.SLAVE, UP)
        assert view(await scrape_a()) == {
            "elections": 1, "epoch": 2, "set": 1, "fenced": 0, "denied": 0, "role": "SLAVE"
        }  # fmt: skip
