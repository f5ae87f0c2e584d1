"""The controller on a three-member etcd cluster (tests/etcd.py's etcd_cluster): losing the
member a broker talks to costs it nothing -- its calls go to the next endpoint of
controllerAddr, its lease stays alive, nobody is elected."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from aiorocketmq.broker.controller.controller import Role
from aiorocketmq.broker.controller.state import Master
from tests.controller.conftest import Node
from tests.etcd import etcd_cluster
from tests.util import wait_until

UP = 30.0


@pytest.mark.slow
async def test_a_lost_etcd_member_is_skipped(tmp_path: Path, nodes: list[Node]) -> None:
    with etcd_cluster(tmp_path, 3) as cluster:
        a = Node(cluster.controller_addr, 0)
        b = Node(cluster.controller_addr, 1)
        nodes += [a, b]
        await a.ctl.start()
        await wait_until(lambda: a.ctl.role is Role.MASTER, UP)
        await b.ctl.start()
        await wait_until(lambda: b.told == [("slave", a.addr, 1)], UP)
        first = cluster.members[0]
        assert a.ctl.etcd.endpoint == b.ctl.etcd.endpoint == first.endpoint

        await asyncio.to_thread(first.kill)  # SIGKILL: maybe the raft leader too
        done = a.ctl.keeper.keep_alives
        # two TTLs' worth of keep-alives, through the other members
        await wait_until(lambda: a.ctl.keeper.keep_alives >= done + 8, UP)
        assert a.ctl.etcd.endpoint != first.endpoint
        await wait_until(a.ctl.may_ack, UP)
        state = await b.ctl.read_state()
        assert state.master == Master(0, a.addr, 1, a.ctl.keeper.lease_id or -1)
        assert a.told == [("master", 1)] and b.told == [("slave", a.addr, 1)]
        assert a.ctl.elections == 1 and b.ctl.elections == 0
        for node in nodes:
            await node.ctl.close()  # while etcd still runs: the leases revoked
