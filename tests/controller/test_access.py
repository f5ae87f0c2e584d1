"""Controller traffic authenticated like the rest (issue 35, the Security issue's rule): a real
etcd started with TLS on its client port, requiring client certificates, and with etcd's
user/password auth on (tests/etcd.py). The right credentials campaign; none, a wrong password,
a certificate etcd does not trust or a CA that does not sign etcd's are refused, with a
message naming what failed (AccessDenied), and such a broker is never master."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from aiorocketmq.broker.controller.controller import Role
from aiorocketmq.broker.controller.etcd import AccessDenied, Etcd, parse_endpoints
from aiorocketmq.broker.controller.layout import GroupKeys
from aiorocketmq.broker.controller.metrics import controller_metrics
from aiorocketmq.broker.controller.state import read_state
from tests.controller.conftest import PASSWORD, Node, access
from tests.etcd import ROOT_PASSWORD, EtcdMember, EtcdTls
from tests.tls_certs import CA
from tests.util import wait_until

KEYS = GroupKeys("DefaultCluster", "broker-a")
UP = 30.0


@pytest.fixture
async def root(tmp_path: Path, secured: EtcdMember, tls: EtcdTls) -> AsyncIterator[Etcd]:
    """etcd's root, over TLS: how the test reads the keys itself."""
    client = Etcd(
        parse_endpoints(secured.endpoint),
        timeout=5,
        access=access(tmp_path, tls.ca.path, cert=tls.ca, username="root", password=ROOT_PASSWORD),
    )
    yield client
    await client.close()


async def no_master(root: Etcd) -> None:
    snap = await root.snapshot(KEYS.prefix)
    state = read_state(KEYS, snap.entries, snap.revision)
    assert state.master is None and state.master_epoch == 0, state


async def test_the_right_credentials_campaign(
    tmp_path: Path, tls: EtcdTls, secured: EtcdMember, nodes: list[Node], root: Etcd
) -> None:
    a = Node(
        secured.endpoint,
        0,
        access=access(tmp_path, tls.ca.path, cert=tls.ca, username="broker", password=PASSWORD),
    )
    nodes.append(a)
    await a.ctl.start()
    await wait_until(lambda: a.ctl.role is Role.MASTER, UP)
    assert a.told == [("master", 1)] and a.ctl.may_ack() and a.ctl.denied is None
    snap = await root.snapshot(KEYS.prefix)
    master = read_state(KEYS, snap.entries, snap.revision).master
    assert master is not None and master.broker_id == 0


@pytest.mark.parametrize(
    ("case", "says"),
    [
        ("wrong password", "authentication failed"),
        # etcd grants a lease to anyone, then refuses the first key
        ("no credentials", "permission denied"),
        ("untrusted client certificate", "unwrap failed"),  # etcd's alert, as gRPC sees it
        ("untrusted etcd", "handshake failed"),
    ],
)
async def test_refused_access_is_named_and_never_master(
    tmp_path: Path,
    tls: EtcdTls,
    secured: EtcdMember,
    nodes: list[Node],
    root: Etcd,
    case: str,
    says: str,
) -> None:
    other = CA(tmp_path, "other")
    given = {
        "wrong password": access(
            tmp_path, tls.ca.path, cert=tls.ca, username="broker", password="not-it"
        ),
        "no credentials": access(tmp_path, tls.ca.path, cert=tls.ca),
        "untrusted client certificate": access(
            tmp_path, tls.ca.path, cert=other, username="broker", password=PASSWORD
        ),
        "untrusted etcd": access(
            tmp_path, other.path, cert=tls.ca, username="broker", password=PASSWORD
        ),
    }[case]
    a = Node(secured.endpoint, 0, access=given)
    nodes.append(a)
    await a.ctl.start()
    await wait_until(lambda: a.ctl.denied is not None, UP)
    denied = a.ctl.denied
    assert isinstance(denied, AccessDenied)
    text = str(denied)
    assert "refused the controller's access" in text and says in text.lower(), text
    assert "\n" not in text and "Traceback" not in text
    assert PASSWORD not in text and "not-it" not in text  # never the password
    # refused at every call, round after round: no lease, no campaign, never master
    await wait_until(lambda: a.ctl.etcd.denials >= 6, UP)
    assert not a.ctl.keeper.registered and a.ctl.role is Role.NONE and not a.ctl.may_ack()
    assert a.told == []
    await no_master(root)
    collected = {m.name: m.samples[0].value for m in controller_metrics(a.ctl).collect()}
    assert collected["rocketmq_controller_access_denied"] == 1


async def test_a_restarted_etcd_is_authenticated_again(
    tmp_path: Path, tls: EtcdTls, secured: EtcdMember, nodes: list[Node]
) -> None:
    """etcd forgets its auth tokens when it restarts: the controller's next calls are
    refused as unauthenticated, it dials again, authenticates again, and goes on renewing its
    lease as master."""
    a = Node(
        secured.endpoint,
        0,
        access=access(tmp_path, tls.ca.path, cert=tls.ca, username="broker", password=PASSWORD),
    )
    nodes.append(a)
    await a.ctl.start()
    await wait_until(lambda: a.ctl.role is Role.MASTER, UP)
    secured.restart()  # blocks the loop a while: the lease may lapse, and a new one is granted
    before = a.ctl.keeper.keep_alives
    await wait_until(lambda: a.ctl.keeper.keep_alives >= before + 3, UP)
    await wait_until(lambda: a.ctl.role is Role.MASTER and a.ctl.may_ack(), UP)
    assert a.ctl.denied is None
