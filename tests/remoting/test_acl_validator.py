"""The ACL check (remoting.acl.validator, resources) in 4.9.8's order, and the guard in a real
RemotingServer: answered inline before dispatch, once per request, batched runs included."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from aiorocketmq.remoting.acl.errors import AclError
from aiorocketmq.remoting.acl.resources import needs
from aiorocketmq.remoting.acl.rules import build
from aiorocketmq.remoting.acl.validator import BROKER, Policy, check, java_hashmap_order
from aiorocketmq.remoting.channel import Channel
from aiorocketmq.remoting.config import ServerConfig
from aiorocketmq.remoting.dispatch import Route
from aiorocketmq.remoting.protocol.codes import RequestCode as C
from aiorocketmq.remoting.protocol.codes import ResponseCode
from aiorocketmq.remoting.protocol.command import ONEWAY_FLAG, RemotingCommand, response_to
from aiorocketmq.remoting.protocol.heartbeat import ConsumerData, HeartbeatData, SubscriptionData
from aiorocketmq.remoting.protocol.signature import Credentials, sign
from aiorocketmq.remoting.server import RemotingServer
from tests.remoting.wire import RawPeer, request

RULES, _ = build([("plain_acl.yml", {
    "globalWhiteRemoteAddresses": ["10.1.1.*"],
    "accounts": [
        {"accessKey": "admin0001", "secretKey": "adminSecret", "admin": True},
        {"accessKey": "user00001", "secretKey": "userSecret1", "defaultTopicPerm": "PUB",
         "defaultGroupPerm": "SUB", "topicPerms": ["t1=SUB", "t2=DENY"],
         "groupPerms": ["g1=DENY"], "whiteRemoteAddress": "192.168.0.1"},
    ],
})], 0)  # fmt: skip
USER = Credentials("user00001", "userSecret1")


def signed(cmd: RemotingCommand, credentials: Credentials = USER) -> RemotingCommand:
    sign(cmd, credentials)
    return cmd


def refusal(cmd: RemotingCommand, ip: str = "127.0.0.1", policy: Policy = BROKER) -> str | None:
    try:
        check(RULES, policy, cmd, ip)
    except AclError as exc:
        return exc.message
    return None


def send(topic: str, group: str = "pg") -> RemotingCommand:
    return RemotingCommand.request(C.SEND_MESSAGE_V2, {"a": group, "b": topic}, b"body")


def test_the_order_of_checks() -> None:
    """White addresses first (global, then the account's, each skipping the signature), then
    the key, the signature, the admin codes, the resources."""
    unsigned = send("t2")
    assert refusal(unsigned, "10.1.1.7") is None
    assert refusal(unsigned) == "No accessKey is configured"
    unsigned.ext_fields["AccessKey"] = "user00001"
    assert refusal(unsigned, "192.168.0.1") is None
    assert refusal(unsigned) == "Check signature failed for accessKey=user00001"
    assert refusal(signed(send("t2"))) == "No default permission for topic:t2"
    assert refusal(signed(send("t1"))) == "No default permission for topic:t1"
    assert refusal(signed(send("other"))) is None  # defaultTopicPerm PUB
    create = signed(RemotingCommand.request(C.UPDATE_AND_CREATE_TOPIC, {"topic": "t2"}))
    assert (
        refusal(create)
        == "Need admin permission for request code=17, but accessKey=user00001 is not"
    )


def test_a_pure_publish_to_the_trace_topic_passes() -> None:
    """r#3895: the validator exempts a request whose only PUB is RMQ_SYS_TRACE_TOPIC."""
    rules, _ = build(
        [("f", {"accounts": [{"accessKey": "tracer001", "secretKey": "secret123"}]})], 0
    )
    tracer = Credentials("tracer001", "secret123")
    check(rules, BROKER, signed(send("RMQ_SYS_TRACE_TOPIC"), tracer), "127.0.0.1")
    with pytest.raises(AclError, match="No default permission for topic:other"):
        check(rules, BROKER, signed(send("other"), tracer), "127.0.0.1")


def test_the_resources_of_each_code() -> None:
    beat = HeartbeatData(client_id="c", consumers=[ConsumerData(
        group_name="cg", subscriptions=[SubscriptionData(topic="t")])])  # fmt: skip
    cases: list[tuple[RemotingCommand, dict[str, int]]] = [
        (send("t"), {"t": 4}),
        (send("%RETRY%cg", "cg"), {"%RETRY%cg": 8}),
        (RemotingCommand.request(C.SEND_MESSAGE, {"topic": "t", "group": "pg"}), {"t": 4}),
        (RemotingCommand.request(C.CONSUMER_SEND_MSG_BACK, {"group": "cg"}), {"%RETRY%cg": 8}),
        (RemotingCommand.request(C.PULL_MESSAGE, {"topic": "t", "consumerGroup": "cg"}),
         {"t": 8, "%RETRY%cg": 8}),
        (RemotingCommand.request(C.QUERY_MESSAGE, {"topic": "t"}), {"t": 8}),
        (RemotingCommand.request(C.HEART_BEAT, {}, beat.encode()), {"%RETRY%cg": 8, "t": 8}),
        (RemotingCommand.request(C.UNREGISTER_CLIENT, {"clientID": "c"}), {}),
        (RemotingCommand.request(C.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": "cg"}),
         {"%RETRY%cg": 8}),
        (RemotingCommand.request(C.UPDATE_CONSUMER_OFFSET, {"consumerGroup": "cg", "topic": "t",
                                 "queueId": "0", "commitOffset": "1"}), {"%RETRY%cg": 8, "t": 8}),
        (RemotingCommand.request(C.SEND_BATCH_MESSAGE, {"b": "t"}), {}),  # 320: signature only
    ]  # fmt: skip
    for cmd, want in cases:
        assert needs(cmd) == want, cmd.code
    with pytest.raises(AclError) as missing:
        needs(RemotingCommand.request(C.GET_CONSUMER_LIST_BY_GROUP, {}))
    assert missing.value.remark == (
        "org.apache.rocketmq.acl.common.AclException: the custom field <consumerGroup> is null, "
        "org.apache.rocketmq.acl.plain.PlainAccessValidator.parse(PlainAccessValidator.java:134)"
    )


def test_the_remark_names_the_first_refused_resource_in_java_hashmap_order() -> None:
    """Two refused resources: 4.9.8 reports the one its HashMap iterates first."""
    assert java_hashmap_order(["t2", "%RETRY%g1"]) == ["%RETRY%g1", "t2"]  # buckets 10 and 14
    pull = signed(RemotingCommand.request(C.PULL_MESSAGE, {"topic": "t2", "consumerGroup": "g1"}))
    assert refusal(pull) == "No default permission for group:g1"


def test_the_name_server_policy_checks_only_its_codes() -> None:
    policy = Policy(checked=frozenset({C.REGISTER_BROKER}), admin_codes=frozenset({
        C.REGISTER_BROKER}), resources=False)  # fmt: skip
    assert refusal(RemotingCommand.request(C.GET_ROUTEINFO_BY_TOPIC), policy=policy) is None
    register = signed(RemotingCommand.request(C.REGISTER_BROKER, {"brokerName": "b"}))
    assert refusal(register, policy=policy) == (
        "Need admin permission for request code=103, but accessKey=user00001 is not"
    )
    admin = Credentials("admin0001", "adminSecret")
    assert refusal(signed(RemotingCommand.request(C.REGISTER_BROKER), admin), policy=policy) is None


async def test_the_guard_runs_once_per_request_before_dispatch_batched_runs_too() -> None:
    """RemotingServer(guard=...): a refused request never reaches its handler (nor a batch
    handler, whose run goes on without it) and is answered SYSTEM_ERROR with the guard's
    remark; a refused oneway request gets no answer; the guard sees each request once."""
    seen: list[int] = []
    batched: list[list[int]] = []

    def guard(cmd: RemotingCommand, conn: Any) -> str | None:
        seen.append(cmd.opaque)
        return "no" if cmd.ext_fields.get("deny") else None

    def one(req: RemotingCommand, ch: Channel) -> RemotingCommand:
        return response_to(req, ResponseCode.SUCCESS, "alone")

    def many(reqs: list[RemotingCommand], ch: Channel) -> list[RemotingCommand]:
        batched.append([r.opaque for r in reqs])
        return [response_to(r, ResponseCode.SUCCESS, "run") for r in reqs]

    config = ServerConfig(listen_port=0, bind_address="127.0.0.1")
    server = RemotingServer({7: Route(one, batch=many), 8: Route(one)}, config, guard=guard)
    await server.start()
    peer = await RawPeer.connect(server.port)
    try:
        oneway = request(8, opaque=5, deny="1")
        oneway.flag = ONEWAY_FLAG
        peer.send(request(7, opaque=1), request(7, opaque=2, deny="1"), request(7, opaque=3),
                  request(7, opaque=4), oneway, request(8, opaque=6))  # fmt: skip
        got: dict[int, tuple[int, str | None]] = {}
        async with asyncio.timeout(5):
            while len(got) < 5:
                r = await peer.read()
                got[r.opaque] = (r.code, r.remark)
    finally:
        await peer.close()
        await server.close(drain_timeout=1.0)
    assert got == {1: (0, "run"), 2: (1, "no"), 3: (0, "run"), 4: (0, "run"), 6: (0, "alone")}
    assert batched == [[1, 3, 4]]
    assert sorted(seen) == [1, 2, 3, 4, 5, 6]
