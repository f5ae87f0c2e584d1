"""Every msgCheck failure and bad body gets its code and remark, stores nothing, and the
broker keeps serving (issue 6 "Bad input"; seed 000 msgCheck; protocol.md 5.1 steps 2-14)."""

from __future__ import annotations

import pytest

from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.protocol.batch import BatchItem, encode_batch
from aiorocketmq.remoting.protocol.codes import RequestCode, ResponseCode
from aiorocketmq.remoting.protocol.command import RemotingCommand
from aiorocketmq.remoting.protocol.message import encode_properties
from tests.broker.wire import create_topic, send_v2, total_messages
from tests.cluster import BrokerProc, Cluster
from tests.util import FAQ

_ILLEGAL = "the message is illegal, maybe msg body or properties length not matched."
CASES = [
    # (case, topic, queue id, body, props, code, remark prefix)
    ("blank topic", "", -1, b"x", {}, 1, "The specified topic is blank."),
    (
        "illegal characters", "bad topic!", -1, b"x", {}, 1,
        "The specified topic contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$",
    ),
    ("too long", "t" * 128, -1, b"x", {}, 1, "The specified topic is longer than topic max"),
    ("schedule topic", "SCHEDULE_TOPIC_XXXX", -1, b"x", {}, 16, "Sending message to topic[SCH"),
    ("half topic", "RMQ_SYS_TRANS_HALF_TOPIC", -1, b"x", {}, 16, "Sending message to topic[RMQ"),
    ("queue id out of range", "Known", 4, b"x", {}, 1, "request queueId[4] is illegal, Topic"),
    ("body over maxMessageSize", "Known", 0, b"x" * 2049, {}, 13, _ILLEGAL + " msg body length"),
    ("properties over 32767 bytes", "Known", 0, b"x", {"big": "v" * 33000}, 13, _ILLEGAL),
]  # fmt: skip


@pytest.fixture
async def small(cluster: Cluster, client: RemotingClient) -> BrokerProc:
    broker = cluster.add_broker("broker-a", maxMessageSize="2048")
    assert (await client.invoke(broker.addr, create_topic("Known", 4))).code == 0
    return broker


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
async def test_msg_check_refusals(
    small: BrokerProc, client: RemotingClient, case: tuple[object, ...]
) -> None:
    """Each refusal: the original's code and remark; nothing stored; next send still works."""
    _name, topic, queue_id, body, props, code, remark = case
    assert isinstance(topic, str) and isinstance(body, bytes) and isinstance(props, dict)
    resp = await client.invoke(small.addr, send_v2(topic, body, queue_id=int(str(queue_id)),
                                                   props=props))  # fmt: skip
    assert resp.code == code, resp.remark
    assert resp.remark is not None and resp.remark.startswith(str(remark))
    assert resp.ext_fields["MSG_REGION"] == "DefaultRegion"  # set before any check
    assert await total_messages(client, small.addr, "Known", 4) == 0
    ok = await client.invoke(small.addr, send_v2("Known", b"fine", queue_id=0))
    assert ok.code == 0


async def test_malformed_batches_and_headers(small: BrokerProc, client: RemotingClient) -> None:
    """A malformed batch body is MESSAGE_ILLEGAL; a batch to a %RETRY% topic too; a header
    missing a required field is SYSTEM_ERROR naming it; nothing is stored."""
    bad = send_v2("Known", b"\x00\x00\x00\x30garbage", queue_id=0)
    bad.code = RequestCode.SEND_BATCH_MESSAGE
    resp = await client.invoke(small.addr, bad)
    assert resp.code == ResponseCode.MESSAGE_ILLEGAL and "malformed batch body" in str(resp.remark)
    retry = send_v2("%RETRY%g", b"", queue_id=0)
    retry.code = RequestCode.SEND_BATCH_MESSAGE
    resp = await client.invoke(small.addr, retry)
    assert (resp.code, resp.remark) == (13, "batch request does not support retry group %RETRY%g")
    missing = send_v2("Known", b"x")
    del missing.ext_fields["b"]
    resp = await client.invoke(small.addr, missing)
    assert (resp.code, resp.remark) == (1, "the custom field <b> is null")
    assert await total_messages(client, small.addr, "Known", 4) == 0


async def test_auto_create_off_is_topic_not_exist(cluster: Cluster, client: RemotingClient) -> None:
    """protocol.md 12.1: with autoCreateTopicEnable=false TBW102 is not inherited: 17."""
    broker = cluster.add_broker("broker-a", autoCreateTopicEnable="false")
    resp = await client.invoke(broker.addr, send_v2("Nope", b"x"))
    assert (resp.code, resp.remark) == (17, "topic[Nope] not exist, apply first please!" + FAQ)


async def test_unwritable_broker_refuses(cluster: Cluster, client: RemotingClient) -> None:
    """protocol.md 5.1 step 3, as 4.9.8's msgCheck does it (fidelity D8): a broker without
    the write perm refuses sends to an order topic; others are stored."""
    broker = cluster.add_broker("broker-a", brokerPermission="4")
    assert (await client.invoke(broker.addr, create_topic("Ordered", order="true"))).code == 0
    resp = await client.invoke(broker.addr, send_v2("Ordered", b"x"))
    assert (resp.code, resp.remark) == (16, "the broker[127.0.0.1] sending message is forbidden")
    assert (await client.invoke(broker.addr, send_v2("Any", b"x"))).code == 0


async def test_retry_to_unknown_group_without_auto_create(
    cluster: Cluster, client: RemotingClient
) -> None:
    """protocol.md 5.1 step 9: with autoCreateSubscriptionGroup=false an unknown group's
    retry topic answers SUBSCRIPTION_GROUP_NOT_EXIST."""
    broker = cluster.add_broker("broker-a", autoCreateSubscriptionGroup="false")
    resp = await client.invoke(broker.addr, send_v2("%RETRY%ghost", b"x"))
    assert (resp.code, resp.remark) == (26, "subscription group not exist, ghost " + FAQ)


async def test_properties_that_break_the_encoding(
    small: BrokerProc, client: RemotingClient
) -> None:
    """Malformed property text (stray separators) never corrupts a record: bad pairs are
    dropped as Java's string2messageProperties drops them."""
    cmd = send_v2("Known", b"x", queue_id=0)
    cmd.ext_fields["i"] = "a\x01b\x02\x01\x02broken\x02k\x01v\x01w\x02" + encode_properties(
        {"T": "1"}
    )
    resp = await client.invoke(small.addr, cmd)
    assert resp.code == 0, resp.remark


async def test_a_batch_with_a_delayed_message_is_refused(
    small: BrokerProc, client: RemotingClient
) -> None:
    """A batch may not carry delayed messages (CommitLog.asyncPutMessages; 4.9.8's
    MessageBatch refuses them on the client side too): a delay level above 0 on one item, or
    on the request's own properties, is MESSAGE_ILLEGAL and nothing of the batch is stored;
    level 0 is no delay."""
    remark = "a batch may not carry delayed messages"

    def batch(delays: list[str | None], common: dict[str, str]) -> RemotingCommand:
        items = [
            BatchItem(b"m%d" % i, 0, encode_properties({"DELAY": d} if d is not None else {}))
            for i, d in enumerate(delays)
        ]
        cmd = send_v2("Known", encode_batch(items), queue_id=0, props=common)
        cmd.code = RequestCode.SEND_BATCH_MESSAGE
        return cmd

    refused: list[tuple[list[str | None], dict[str, str]]] = [
        ([None, "2", None], {}),
        ([None, None], {"DELAY": "1"}),
    ]
    for delays, common in refused:
        resp = await client.invoke(small.addr, batch(delays, common))
        assert (resp.code, resp.remark) == (ResponseCode.MESSAGE_ILLEGAL, remark)
    assert await total_messages(client, small.addr, "Known", 4) == 0
    ok = await client.invoke(small.addr, batch(["0", None, "0"], {}))
    assert ok.code == ResponseCode.SUCCESS and len(ok.ext_fields["msgId"].split(",")) == 3
