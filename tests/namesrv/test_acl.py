"""A name server that requires signatures (ours, issue 32: 4.9.8's name server has no ACL):
with ``aclEnable=true`` its writes need an admin account's signature, its reads stay open.
Real name server and broker processes."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from aiorocketmq.client.core import api
from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.protocol.codes import RequestCode as C
from aiorocketmq.remoting.protocol.codes import ResponseCode
from aiorocketmq.remoting.protocol.command import RemotingCommand
from aiorocketmq.remoting.protocol.register import RegisterBrokerBody, TopicConfigWrapper
from aiorocketmq.remoting.protocol.route import TopicRouteData
from aiorocketmq.remoting.protocol.topic import TopicConfig
from tests.broker.acl_setup import ADMIN, USER, acl_files, client, inner, remark
from tests.broker.wire import create_topic
from tests.cluster import Cluster
from tests.scrape import scrape, value

VALIDATE = "PlainPermissionManager.validate(PlainPermissionManager.java:664)"
NO_ACCESS_KEY = remark("No accessKey is configured", VALIDATE)


@pytest.fixture
def guarded(tmp_path: Path) -> Iterator[Cluster]:
    """A name server with ACL on, and broker misc-b registering with the admin account's
    inner credentials."""
    cluster = Cluster(tmp_path, namesrv_sets=acl_files(tmp_path))
    cluster.start_namesrv()
    try:
        cluster.add_broker("misc-b", innerClientAuthenticationCredentials=inner(ADMIN))
        yield cluster
    finally:
        codes = cluster.stop()
        print(cluster.dump())
    assert all(code == 0 for code in codes.values()), codes


async def route(cli: RemotingClient, namesrv: str, topic: str) -> tuple[str, dict[str, str]]:
    resp = await cli.invoke(namesrv, api.get_route(topic))
    assert resp.code == ResponseCode.SUCCESS, resp.remark
    (data,) = TopicRouteData.decode(resp.body).broker_datas
    return data.broker_name, {str(k): v for k, v in data.broker_addrs.items()}


async def routed(cli: RemotingClient, namesrv: str, topic: str) -> tuple[str, dict[str, str]]:
    """The topic's route, once the broker has registered it."""
    async with asyncio.timeout(20):
        while True:
            if (await cli.invoke(namesrv, api.get_route(topic))).code == ResponseCode.SUCCESS:
                return await route(cli, namesrv, topic)
            await asyncio.sleep(0.1)


def hijack(topic: str) -> RemotingCommand:
    """The issue's reproducer: REGISTER_BROKER under the real broker's name, another address."""
    topics = TopicConfigWrapper(topic_config_table={topic: TopicConfig(topic_name=topic)})
    body = RegisterBrokerBody(topic_config_wrapper=topics).encode()
    return api.request(C.REGISTER_BROKER, {
        "brokerName": "misc-b", "brokerAddr": "127.0.0.1:6666", "clusterName": "DefaultCluster",
        "haServerAddr": "127.0.0.1:6667", "brokerId": "0", "compressed": "false",
        "bodyCrc32": "0"}, body)  # fmt: skip


async def test_an_unsigned_register_broker_cannot_hijack_a_route(guarded: Cluster) -> None:
    """Issue 32's route hijack: one unsigned REGISTER_BROKER moved route(Victim) to
    127.0.0.1:6666. With ACL on it is refused (and a non-admin account's too) and the route
    stays; the broker itself, signing with its inner credentials, registered."""
    broker = guarded.brokers["misc-b"]
    ns = guarded.namesrv_addr
    async with client() as anonymous:
        assert (await anonymous.invoke(broker.addr, create_topic("Victim"))).code == 0
        before = await routed(anonymous, ns, "Victim")
        assert before == ("misc-b", {"0": broker.addr})
        refused = await anonymous.invoke(ns, hijack("Victim"))
        async with client(USER) as user:
            not_admin = await user.invoke(ns, hijack("Victim"))
        after = await route(anonymous, ns, "Victim")
    assert refused.code == ResponseCode.SYSTEM_ERROR
    assert refused.remark == NO_ACCESS_KEY
    assert not_admin.remark == remark(
        "Need admin permission for request code=103, but accessKey=userKey01 is not",
        "PlainPermissionManager.checkPerm(PlainPermissionManager.java:581)",
    )
    assert after == before


async def test_the_writes_need_a_signature_and_the_reads_stay_open(guarded: Cluster) -> None:
    ns = guarded.namesrv_addr
    put = api.request(C.PUT_KV_CONFIG, {"namespace": "ORDER_TOPIC_CONFIG", "key": "Victim",
                                        "value": "misc-b:4"})  # fmt: skip
    broker = {"brokerName": "misc-b", "brokerAddr": guarded.brokers["misc-b"].addr,
              "clusterName": "DefaultCluster", "brokerId": "0"}  # fmt: skip
    writes = [
        put,
        api.request(C.DELETE_KV_CONFIG, {"namespace": "ORDER_TOPIC_CONFIG", "key": "Victim"}),
        api.request(C.UNREGISTER_BROKER, broker),
        api.request(C.WIPE_WRITE_PERM_OF_BROKER, {"brokerName": "misc-b"}),
        api.request(C.ADD_WRITE_PERM_OF_BROKER, {"brokerName": "misc-b"}),
        api.request(C.DELETE_TOPIC_IN_NAMESRV, {"topic": "Victim"}),
        api.request(C.QUERY_DATA_VERSION, broker),
    ]
    reads = [
        api.get_route("TBW102"),
        api.request(C.GET_BROKER_CLUSTER_INFO),
        api.request(C.GET_ALL_TOPIC_LIST_FROM_NAMESERVER),
        api.request(C.GET_KV_CONFIG, {"namespace": "ORDER_TOPIC_CONFIG", "key": "none"}),
    ]
    async with client() as anonymous:
        await routed(anonymous, ns, "TBW102")  # the broker's first registration
        refused = [await anonymous.invoke(ns, req) for req in writes]
        answered = [await anonymous.invoke(ns, req) for req in reads]
    assert [(r.code, r.remark) for r in refused] == [(1, NO_ACCESS_KEY)] * len(writes)
    assert [r.code for r in answered] == [0, 0, 0, ResponseCode.QUERY_NOT_FOUND]
    async with client(ADMIN) as admin:
        stored = await admin.invoke(ns, put)
        got = await admin.invoke(ns, api.request(C.GET_KV_CONFIG, {
            "namespace": "ORDER_TOPIC_CONFIG", "key": "Victim"}))  # fmt: skip
    assert stored.code == ResponseCode.SUCCESS, stored.remark
    assert got.ext_fields["value"] == "misc-b:4"
    samples = await scrape(guarded.ns.metrics_port())
    assert value(samples, "rocketmq_acl_auth_failures_total", reason="no_access_key") == len(writes)
    guarded.ns.wait_for("acl_refused", 60)  # its log comes through a pipe: waited for
    lines = [e for e in guarded.ns.events if e.get("event") == "acl_refused"]
    assert len(lines) == 1, lines  # one client (127.0.0.1, no key): one line a minute


def test_a_broker_without_inner_credentials_is_refused_registration(tmp_path: Path) -> None:
    """Its REGISTER_BROKER is refused with the ACL's answer, and its log says so."""
    cluster = Cluster(tmp_path, namesrv_sets=acl_files(tmp_path))
    cluster.start_namesrv()
    try:
        broker = cluster.add_broker("lost")
        assert broker.proc is not None
        refused = broker.proc.wait_for("register_broker_refused")
    finally:
        codes = cluster.stop()
    assert refused["remark"] == NO_ACCESS_KEY
    assert all(code == 0 for code in codes.values()), codes
