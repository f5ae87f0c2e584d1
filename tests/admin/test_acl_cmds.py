"""mqadmin's ACL commands (4.9.8's tools/command/acl) against a real broker with ACL on:
updateAclConfig, deleteAclConfig and updateGlobalWhiteAddr rewrite its plain_acl.yml (the
dataVersion bumped each time, as clusterAclConfigVersion shows) and take effect at once.
The commands run as mqadmin runs them -- its parser, its Session -- signed with the admin
account's credentials."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from aiorocketmq.client.admin.access import Access
from aiorocketmq.client.admin.cli import build_parser
from aiorocketmq.client.admin.output import Output
from aiorocketmq.client.admin.registry import COMMANDS
from aiorocketmq.client.admin.session import AdminError, Session
from aiorocketmq.client.core import api
from aiorocketmq.remoting.protocol.codes import RequestCode as C
from aiorocketmq.remoting.protocol.codes import ResponseCode
from aiorocketmq.remoting.protocol.signature import Credentials
from tests.broker.acl_setup import ADMIN, USER, acl_files, client, remark
from tests.broker.wire import create_topic, send_v2
from tests.cluster import BrokerProc, Cluster, running

NEWCOMER = Credentials("newUser001", "newSecret01")


@pytest.fixture
def acl_cluster(tmp_path: Path) -> Iterator[tuple[Cluster, BrokerProc, Path]]:
    with running(tmp_path) as cluster:
        sets = acl_files(tmp_path)
        yield cluster, cluster.add_broker("broker-acl", sets=sets), Path(sets["aclFile"])


async def mqadmin(cluster: Cluster, credentials: Credentials | None, *argv: str) -> Output:
    """``mqadmin argv... -n <name server>``, its session signing with ``credentials``."""
    args = build_parser().parse_args([*argv, "-n", cluster.namesrv_addr])
    access = Access()
    if credentials is not None:
        access = Access(credentials.access_key, credentials.secret_key)
    session = Session([cluster.namesrv_addr], access=access)
    try:
        return await COMMANDS[args.command].run(session, args)
    finally:
        await session.close()


def plain(path: Path) -> Any:
    return yaml.safe_load(path.read_text())


def counter(path: Path) -> int:
    return int(plain(path)["dataVersion"][0]["counter"])


async def test_codes_50_to_53_round_trip_through_mqadmin(
    acl_cluster: tuple[Cluster, BrokerProc, Path],
) -> None:
    cluster, broker, path = acl_cluster
    addr = broker.addr
    async with client(ADMIN) as admin:
        for topic in ("t1", "t2"):
            assert (await admin.invoke(addr, create_topic(topic))).code == ResponseCode.SUCCESS

    out = await mqadmin(cluster, ADMIN, "updateAclConfig", "-b", addr, "-a", "newUser001",
                        "-s", "newSecret01", "-t", "t1=PUB,t2=SUB", "-g", "g1=SUB",
                        "-i", "DENY", "-u", "SUB", "-m", "false")  # fmt: skip
    assert out.lines == [f"create or update plain access config to {addr} success."]
    entry = next(a for a in plain(path)["accounts"] if a["accessKey"] == "newUser001")
    assert entry == {"accessKey": "newUser001", "secretKey": "newSecret01", "admin": False,
                     "defaultTopicPerm": "DENY", "defaultGroupPerm": "SUB",
                     "topicPerms": ["t1=PUB", "t2=SUB"], "groupPerms": ["g1=SUB"]}  # fmt: skip
    assert counter(path) == 1
    async with client(NEWCOMER) as newcomer:  # at once: the broker reloads after a rewrite
        assert (await newcomer.invoke(addr, send_v2("t1", b"x"))).code == ResponseCode.SUCCESS
        refused = await newcomer.invoke(addr, send_v2("t2", b"x"))
    assert refused.remark == remark("No default permission for topic:t2",
                                    "PlainPermissionManager.checkPerm(PlainPermissionManager"
                                    ".java:611)")  # fmt: skip

    versions = await mqadmin(cluster, ADMIN, "clusterAclConfigVersion", "-c", "DefaultCluster")
    assert [(r["brokerAddr"], r["aclFilePath"], r["counter"]) for r in versions.data] == [
        (addr, str(path), 1)
    ]
    assert versions.lines == ["get cluster's plain access config version success."]

    async with client() as anonymous:
        refused = await anonymous.invoke(addr, api.queue_request(C.GET_MAX_OFFSET, "t1", 0))
        assert refused.code == ResponseCode.SYSTEM_ERROR
        out = await mqadmin(cluster, ADMIN, "updateGlobalWhiteAddr", "-b", addr, "-g",
                            "127.0.0.1,10.10.103.*")  # fmt: skip
        assert out.lines == [f"update global white remote addresses to {addr} success."]
        assert plain(path)["globalWhiteRemoteAddresses"] == ["127.0.0.1", "10.10.103.*"]
        served = await anonymous.invoke(addr, api.queue_request(C.GET_MAX_OFFSET, "t1", 0))
        assert served.code == ResponseCode.SUCCESS, served.remark
        await mqadmin(cluster, ADMIN, "updateGlobalWhiteAddr", "-b", addr, "-g", "10.10.103.*",
                      "-p", str(path))  # fmt: skip
        refused = await anonymous.invoke(addr, api.queue_request(C.GET_MAX_OFFSET, "t1", 0))
        assert refused.code == ResponseCode.SYSTEM_ERROR

    out = await mqadmin(cluster, ADMIN, "deleteAclConfig", "-c", "DefaultCluster", "-a",
                        "newUser001")  # fmt: skip
    assert out.lines == [f"delete plain access config account from {addr} success.",
                         "account's accesskey is:newUser001"]  # fmt: skip
    assert all(a["accessKey"] != "newUser001" for a in plain(path)["accounts"])
    assert counter(path) == 4
    async with client(NEWCOMER) as newcomer:
        gone = await newcomer.invoke(addr, send_v2("t1", b"x"))
    assert gone.remark == remark("No acl config for newUser001",
                                 "PlainPermissionManager.validate(PlainPermissionManager"
                                 ".java:668)")  # fmt: skip
    versions = await mqadmin(cluster, ADMIN, "clusterAclConfigVersion", "-b", addr)
    assert versions.data[0]["counter"] == 4


async def test_the_acl_commands_refusals(acl_cluster: tuple[Cluster, BrokerProc, Path]) -> None:
    """4.9.8's failures: 209 with checkPlainAccessConfig's message for a short key, 210 for
    an account no file holds, 211 for a file that is not one of the broker's ACL files; and
    ours: a non-admin account may not rewrite the ACL (4.9.8 lets any account)."""
    cluster, broker, path = acl_cluster
    addr = broker.addr
    before = path.read_text()
    with pytest.raises(AdminError) as short:
        await mqadmin(cluster, ADMIN, "updateAclConfig", "-b", addr, "-a", "shortKey1", "-s",
                      "abc")  # fmt: skip
    assert str(short.value) == (f"{addr} answered 209 UNKNOWN_CODE: The accessKey=shortKey1 "
                                "and secretKey=abc cannot be null and length should longer "
                                "than 6")  # fmt: skip
    with pytest.raises(AdminError) as unknown:
        await mqadmin(cluster, ADMIN, "deleteAclConfig", "-b", addr, "-a", "noSuchKey1")
    assert str(unknown.value) == (f"{addr} answered 210 UNKNOWN_CODE: The "
                                  "accesskey[noSuchKey1] corresponding to accessConfig has "
                                  "been deleted failed.")  # fmt: skip
    with pytest.raises(AdminError) as elsewhere:
        await mqadmin(cluster, ADMIN, "updateGlobalWhiteAddr", "-b", addr, "-g", "*",
                      "-p", str(path.parent.parent / "broker.conf"))  # fmt: skip
    assert str(elsewhere.value) == (f"{addr} answered 211 UNKNOWN_CODE: The "
                                    "globalWhiteAddresses[*] has been updated failed.")  # fmt: skip
    with pytest.raises(AdminError) as not_admin:
        await mqadmin(cluster, USER, "updateAclConfig", "-b", addr, "-a", "userKey01", "-s",
                      "userSecret1", "-m", "true")  # fmt: skip
    assert "Need admin permission for request code=50, but accessKey=userKey01" in str(
        not_admin.value
    )
    assert path.read_text() == before
