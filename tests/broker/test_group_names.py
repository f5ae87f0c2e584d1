"""Group names are validated like topic names (issue 29 N8, N2's edge, build item 2):
Validators.checkGroup's blank, length (255) and charset rules wherever a request names a
group, and a group's %RETRY%/%DLQ% topic must itself be a valid topic (127 characters)
wherever one is derived. Nothing is stored under a refused name. Real broker processes."""

from __future__ import annotations

import json
from typing import Any

import pytest

from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.protocol import fastjson
from aiorocketmq.remoting.protocol.codes import RequestCode, ResponseCode
from aiorocketmq.remoting.protocol.command import RemotingCommand
from aiorocketmq.remoting.protocol.msgid import parse_offset_msg_id
from tests.broker.test_edge_bounds import heartbeat, refusals
from tests.broker.wire import create_topic, max_offset, pull, route, send_v2
from tests.cluster import BrokerProc, Cluster
from tests.util import wait_until

BAD_NAMES = {
    "300 characters": "g" * 300,
    "slash": "a/b",
    "dot dot": "..",
    "dlq dot dot": "%DLQ%..",
    "blank": " ",
}
LONG = "L" * 200  # Java clients allow it (255), but %RETRY%<it> is 207 characters


def requests_naming(group: str, offset: int) -> dict[str, RemotingCommand]:
    """Every kind of request that stores something under a group, naming ``group``."""
    ext = {"consumerGroup": group, "topic": "GoodT", "queueId": "0", "commitOffset": "1"}
    lock = {"clientId": "c@1", "consumerGroup": group, "onlyThisBroker": False,
            "mqSet": [{"brokerName": "broker-a", "queueId": 0, "topic": "GoodT"}]}  # fmt: skip
    producer = {"clientID": "p@1", "producerDataSet": [{"groupName": group}],
                "consumerDataSet": []}  # fmt: skip
    back = {"offset": str(offset), "group": group, "delayLevel": "0", "originTopic": "GoodT",
            "maxReconsumeTimes": "16"}  # fmt: skip
    code = RequestCode
    return {
        "group config": RemotingCommand.request(
            code.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, {}, json.dumps({"groupName": group}).encode()
        ),
        "consumer heartbeat": heartbeat(group),
        "producer heartbeat": RemotingCommand.request(
            code.HEART_BEAT, {}, json.dumps(producer).encode()
        ),
        "offset commit": RemotingCommand.request(code.UPDATE_CONSUMER_OFFSET, ext),
        "pull": pull(group, "GoodT", 0, 0, sys_flag=4, subscription="*"),
        "send back": RemotingCommand.request(code.CONSUMER_SEND_MSG_BACK, back),
        "lock": RemotingCommand.request(code.LOCK_BATCH_MQ, {}, json.dumps(lock).encode()),
    }


async def stored_names(client: RemotingClient, addr: str) -> set[str]:
    """Every name the broker keeps: topics, groups, and the groups it has offsets of."""
    names: set[str] = set()
    for code, table in (
        (RequestCode.GET_ALL_TOPIC_CONFIG, "topicConfigTable"),
        (RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG, "subscriptionGroupTable"),
        (RequestCode.GET_ALL_CONSUMER_OFFSET, "offsetTable"),
    ):
        resp = await client.invoke(addr, RemotingCommand.request(code))
        assert resp.code == 0
        keys = fastjson.loads(resp.body)[table]
        names |= {str(k).rpartition("@")[2] if "@" in str(k) else str(k) for k in keys}
    return names


@pytest.fixture
async def broker(cluster: Cluster, client: RemotingClient) -> BrokerProc:
    b = cluster.add_broker("broker-a")
    assert (await client.invoke(b.addr, create_topic("GoodT", 2))).code == 0
    return b


async def stored_offset(client: RemotingClient, addr: str) -> int:
    sent = await client.invoke(addr, send_v2("GoodT", b"failed once", queue_id=0))
    assert sent.code == 0
    return parse_offset_msg_id(sent.ext_fields["msgId"])[1]


@pytest.mark.parametrize("name", list(BAD_NAMES), ids=list(BAD_NAMES))
async def test_a_bad_group_name_is_refused_wherever_a_group_is_named(
    cluster: Cluster, broker: BrokerProc, client: RemotingClient, name: str
) -> None:
    """Each request is refused with SYSTEM_ERROR, the field and the rule in its remark;
    no group, topic or offset is stored under the name; the broker registers on."""
    group = BAD_NAMES[name]
    offset = await stored_offset(client, broker.addr)
    for what, request in requests_naming(group, offset).items():
        resp = await client.invoke(broker.addr, request)
        assert resp.code == ResponseCode.SYSTEM_ERROR, (what, resp.remark)
        assert "The specified group" in str(resp.remark), (what, resp.remark)
    stored = await stored_names(client, broker.addr)
    assert not {group, f"%RETRY%{group}", f"%DLQ%{group}"} & stored
    assert await max_offset(client, broker.addr, "SCHEDULE_TOPIC_XXXX", 2) == 0
    assert (await client.invoke(broker.addr, create_topic("After", 1))).code == 0
    assert (await route(client, cluster.namesrv_addr, "After")).code == 0
    assert refusals(cluster, broker) == []


async def test_send_back_for_a_300_character_group_is_refused(
    broker: BrokerProc, client: RemotingClient
) -> None:
    """N2's edge: the send-back was answered 0 and its delivery then failed forever. Now it
    is refused, the remark naming the group rule; nothing is stored (no delay-level copy)."""
    offset = await stored_offset(client, broker.addr)
    resp = await client.invoke(broker.addr, requests_naming("g" * 300, offset)["send back"])
    assert resp.code == ResponseCode.SYSTEM_ERROR
    assert resp.remark == "group: The specified group is longer than group max length 255."
    for level in range(18):
        assert await max_offset(client, broker.addr, "SCHEDULE_TOPIC_XXXX", level) == 0


async def test_a_group_too_long_to_retry_consumes_without_a_retry_topic(
    cluster: Cluster, broker: BrokerProc, client: RemotingClient
) -> None:
    """A 200-character group passes Validators.checkGroup, so a Java consumer may use it:
    its heartbeat is taken (it consumes) but no %RETRY% topic is made (one over 127
    characters no record can hold), said once however many heartbeats; its send-back and
    an explicit group config with retry queues are refused naming the limit."""
    for _ in range(3):
        resp = await client.invoke(broker.addr, heartbeat(LONG, subscriptionDataSet=[_all()]))
        assert resp.code == 0, resp.remark
    listed = await client.invoke(
        broker.addr,
        RemotingCommand.request(RequestCode.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": LONG}),
    )
    assert listed.code == 0 and json.loads(listed.body)["consumerIdList"] == ["evil@1"]
    got = await client.invoke(broker.addr, pull(LONG, "GoodT", 0, 0, sys_flag=0))
    assert got.code in (ResponseCode.PULL_NOT_FOUND, ResponseCode.SUCCESS), got.remark
    stored = await stored_names(client, broker.addr)
    assert LONG in stored and f"%RETRY%{LONG}" not in stored
    proc = broker.proc
    assert proc is not None
    await wait_until(lambda: _events(proc.events, "retry_topic_not_created") == 1)
    offset = await stored_offset(client, broker.addr)
    back = await client.invoke(broker.addr, requests_naming(LONG, offset)["send back"])
    assert back.code == ResponseCode.SYSTEM_ERROR
    assert "topic max length 127" in str(back.remark) and "120 characters" in str(back.remark)
    config = {"groupName": LONG, "retryQueueNums": 1}
    update = RemotingCommand.request(
        RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, {}, json.dumps(config).encode()
    )
    refused = await client.invoke(broker.addr, update)
    assert refused.code == ResponseCode.SYSTEM_ERROR and "groupName" in str(refused.remark)
    update.body = json.dumps({**config, "retryQueueNums": 0}).encode()  # nothing to derive
    assert (await client.invoke(broker.addr, update)).code == 0
    assert _events(proc.events, "retry_topic_not_created") == 1
    assert refusals(cluster, broker) == []


def _all() -> dict[str, Any]:
    return {"topic": "GoodT", "subString": "*", "tagsSet": [], "codeSet": [], "subVersion": 1,
            "expressionType": "TAG", "classFilterMode": False}  # fmt: skip


def _events(events: list[dict[str, Any]], name: str) -> int:
    return sum(1 for e in events if e.get("event") == name)
