"""mqadmin getSyncStateSet and getBrokerEpoch (client/admin/cmd_controller.py) reading the state
real Controllers made campaigning against a real etcd (plain, then TLS with etcd's auth on).
mqadmin runs as its own process, as an operator runs it, while the controllers keep their
leases in this one."""

from __future__ import annotations

import asyncio
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiorocketmq.broker.controller.controller import Role
from tests.controller.conftest import PASSWORD, Node, access, password_file
from tests.etcd import EtcdMember, EtcdTls
from tests.harness import ROOT
from tests.tls_certs import CA
from tests.util import wait_until

UP = 30.0


@dataclass
class Run:
    code: int
    out: str
    err: str

    @property
    def json(self) -> Any:
        return json.loads(self.out)

    def fields(self) -> list[tuple[str, str]]:
        """The ``#key<TAB>value`` and ``Name:<TAB>value`` lines, as (key, value)."""
        pairs = []
        for line in self.out.splitlines():
            m = re.match(r"^(#?[A-Za-z]+):?\s+(.*?)\s*$", line)
            if m:
                pairs.append((m.group(1), m.group(2)))
        return pairs


async def mqadmin(*argv: str) -> Run:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "aiorocketmq.client.admin", *argv, cwd=ROOT,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode is not None
    return Run(proc.returncode, out.decode(), err.decode())


async def start(nodes: list[Node], addr: str, broker_id: int, **options: Any) -> Node:
    node = Node(addr, broker_id, **options)
    nodes.append(node)
    await node.ctl.start()
    return node


def identity(broker_id: int, addr: str, alive: bool) -> str:
    return (f"ReplicaIdentity{{brokerName='broker-a', brokerId={broker_id}, "
            f"brokerAddress='{addr}', alive={str(alive).lower()}}}")  # fmt: skip


async def test_the_views_follow_an_election(etcd: EtcdMember, nodes: list[Node]) -> None:
    """Master 0 with 1 in its SyncStateSet, 2 outside it; then 0 goes and 1 is elected."""
    a = await start(nodes, etcd.endpoint, 0)
    await wait_until(lambda: a.ctl.role is Role.MASTER, UP)
    b = await start(nodes, etcd.endpoint, 1)
    c = await start(nodes, etcd.endpoint, 2)
    await wait_until(lambda: b.ctl.role is Role.SLAVE and c.ctl.role is Role.SLAVE, UP)
    await wait_until(lambda: {1, 2} <= a.ctl.state.replicas.keys(), UP)
    await a.ctl.alter_sync_state_set({0, 1})

    run = await mqadmin("getSyncStateSet", "-a", etcd.endpoint, "-c", "DefaultCluster")
    assert run.code == 0, run.err
    assert run.fields() == [
        ("#brokerName", "broker-a"), ("#MasterBrokerId", "0"), ("#MasterAddr", a.addr),
        ("#MasterEpoch", "1"), ("#SyncStateSetEpoch", "2"), ("#SyncStateSetNums", "2"),
        ("InSyncReplica", identity(0, a.addr, True)), ("InSyncReplica", identity(1, b.addr, True)),
        ("NotInSyncReplica", identity(2, c.addr, True)),
    ]  # fmt: skip
    run = await mqadmin("getSyncStateSet", "-a", etcd.endpoint, "-b", "broker-a", "--json")
    info = run.json["replicasInfoTable"]["broker-a"]
    assert (info["masterBrokerId"], info["masterEpoch"], info["syncStateSetEpoch"]) == (0, 1, 2)
    assert [r["brokerId"] for r in info["inSyncReplicas"]] == [0, 1]

    await a.ctl.close()  # its lease revoked: the master key goes, 1 (in the set) is elected
    nodes.remove(a)
    await wait_until(lambda: b.ctl.role is Role.MASTER, UP)
    run = await mqadmin("getBrokerEpoch", "-a", etcd.endpoint, "-c", "DefaultCluster")
    assert run.code == 0, run.err
    assert run.fields() == [
        ("#clusterName", "DefaultCluster"), ("#brokerName", "broker-a"), ("#brokerAddr", b.addr),
        ("#brokerId", "1"), ("#MasterEpoch", "2"), ("#MasterBrokerId", "1"), ("#Role", "MASTER"),
        ("#InSyncStateSet", "true"),
        ("#clusterName", "DefaultCluster"), ("#brokerName", "broker-a"), ("#brokerAddr", c.addr),
        ("#brokerId", "2"), ("#MasterEpoch", "2"), ("#MasterBrokerId", "1"), ("#Role", "SLAVE"),
        ("#InSyncStateSet", "false"),
    ]  # fmt: skip
    run = await mqadmin("getSyncStateSet", "-a", etcd.endpoint, "-b", "broker-a")
    assert ("InSyncReplica", identity(1, b.addr, True)) in run.fields()  # the new set: {1}
    assert ("#SyncStateSetNums", "1") in run.fields() and ("#MasterEpoch", "2") in run.fields()

    run = await mqadmin("getSyncStateSet", "-a", etcd.endpoint, "-b", "broker-z")
    assert run.code == 1 and run.err.strip() == (
        "mqadmin getSyncStateSet: broker broker-z: etcd holds no controller state for it"
    )


async def test_the_views_take_etcd_tls_and_credentials(
    tmp_path: Path, tls: EtcdTls, secured: EtcdMember, nodes: list[Node]
) -> None:
    """Flags, then tools.yml with the broker's key names; a wrong password is one line."""
    a = await start(
        nodes,
        secured.endpoint,
        0,
        access=access(tmp_path, tls.ca.path, cert=tls.ca, username="broker", password=PASSWORD),
    )
    await wait_until(lambda: a.ctl.role is Role.MASTER, UP)
    client = tls.ca.issue("mqadmin-host", client=True)
    good = password_file(tmp_path, "good", PASSWORD)
    flags = ["--etcd-tls", "--etcd-ca", str(tls.ca.path), "--etcd-cert", str(client.cert),
             "--etcd-key", str(client.key), "--etcd-user", "broker"]  # fmt: skip
    run = await mqadmin("getBrokerEpoch", "-a", secured.endpoint, "-b", "broker-a", *flags,
                        "--etcd-password-file", good, "--json")  # fmt: skip
    assert run.code == 0, run.err
    assert [(r["brokerId"], r["role"], r["masterEpoch"]) for r in run.json] == [(0, "MASTER", 1)]

    yml = tmp_path / "tools.yml"
    yml.write_text(
        f"controllerAddr: {secured.endpoint}\ncontrollerTlsEnable: true\n"
        f"controllerTlsTrustCertPath: {tls.ca.path}\ncontrollerTlsCertPath: {client.cert}\n"
        f"controllerTlsKeyPath: {client.key}\ncontrollerUsername: broker\n"
        f"controllerPasswordFile: {good}\n"
    )
    run = await mqadmin("getSyncStateSet", "-c", "DefaultCluster", "--tools-yml", str(yml))
    assert run.code == 0, run.err
    assert ("#MasterAddr", a.addr) in run.fields()

    wrong = password_file(tmp_path, "wrong", "not-the-password")
    run = await mqadmin("getSyncStateSet", "-a", secured.endpoint, "-c", "DefaultCluster", *flags,
                        "--etcd-password-file", wrong)  # fmt: skip
    assert run.code == 1 and run.out == ""
    err = run.err.strip()
    assert err.startswith("mqadmin getSyncStateSet: etcd: range: etcd at "), err
    assert "refused the controller's access" in err and "authentication failed" in err, err
    assert "not-the-password" not in err and "Traceback" not in err
    assert len(err.splitlines()) == 1, err

    other = CA(tmp_path, "other")  # etcd's certificate is not signed by it
    run = await mqadmin("getSyncStateSet", "-a", secured.endpoint, "-c", "DefaultCluster",
                        *flags[:1], "--etcd-ca", str(other.path), *flags[3:],
                        "--etcd-password-file", good)  # fmt: skip
    assert run.code == 1 and len(run.err.strip().splitlines()) == 1, run.err
    assert "refused the controller's access" in run.err and "handshake failed" in run.err.lower()

    run = await mqadmin("getSyncStateSet", "-a", secured.endpoint, "-c", "DefaultCluster",
                        "--etcd-user", "broker")  # fmt: skip
    assert (run.code, run.err.strip()) == (
        1, "mqadmin getSyncStateSet: --etcd-user needs --etcd-password-file (etcd's user and "
        "its password)")  # fmt: skip
