"""Numbers a request carries are bounded at the edge (issue 29 N1, build item 1): what Java
would refuse, or what the name server, slaves, clients or state files cannot carry, is
refused with its field named, before anything is stored; the broker keeps serving and
keeps registering. Real broker processes, raw requests."""

from __future__ import annotations

import json
from typing import Any

import pytest

from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.protocol.batch import BatchItem, encode_batch
from aiorocketmq.remoting.protocol.codes import RequestCode, ResponseCode
from aiorocketmq.remoting.protocol.command import RemotingCommand
from tests.broker.wire import create_topic, pull, route, send_v2
from tests.cluster import BrokerProc, Cluster

INT_MAX, LONG_MAX = 2**31 - 1, 2**63 - 1


def update_group(**fields: Any) -> RemotingCommand:
    """UPDATE_AND_CREATE_SUBSCRIPTIONGROUP (200) with a SubscriptionGroupConfig body."""
    body = json.dumps({"groupName": "evilg", **fields}).encode()
    return RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, {}, body)


def heartbeat(group: str, client_id: str = "evil@1", **consumer: Any) -> RemotingCommand:
    data = {
        "clientID": client_id,
        "producerDataSet": [],
        "consumerDataSet": [
            {"groupName": group, "consumeType": "CONSUME_PASSIVELY",
             "messageModel": "CLUSTERING", "consumeFromWhere": "CONSUME_FROM_LAST_OFFSET",
             "subscriptionDataSet": [], "unitMode": False, **consumer}
        ],
    }  # fmt: skip
    return RemotingCommand.request(RequestCode.HEART_BEAT, {}, json.dumps(data).encode())


def refusals(cluster: Cluster, broker: BrokerProc) -> list[dict[str, object]]:
    """Registrations the name server refused, and error lines, on either side."""
    assert broker.proc is not None
    events = broker.proc.events + cluster.ns.events
    bad = ("register_broker_refused", "register_body_refused")
    return [e for e in events if e.get("event") in bad or e.get("level") == "error"]


@pytest.fixture
async def broker(cluster: Cluster, client: RemotingClient) -> BrokerProc:
    b = cluster.add_broker("broker-a")
    assert (await client.invoke(b.addr, create_topic("GoodT", 2))).code == 0
    return b


async def test_n1_retry_queue_nums_out_of_range_is_refused_and_routes_stay(
    cluster: Cluster, broker: BrokerProc, client: RemotingClient
) -> None:
    """N1: retryQueueNums=2**40 was stored, the next heartbeat made %RETRY%evilg with 2**40
    queues, and the name server refused every registration of the broker from then on (all
    its topics lost their routes). Now the group update is refused naming retryQueueNums,
    the heartbeat makes a retry topic of the default size, and registration goes on."""
    resp = await client.invoke(broker.addr, update_group(retryQueueNums=2**40))
    assert resp.code == ResponseCode.SYSTEM_ERROR
    assert "retryQueueNums" in str(resp.remark) and str(2**40) in str(resp.remark)
    assert (await client.invoke(broker.addr, heartbeat("evilg"))).code == 0
    retry = await route(client, cluster.namesrv_addr, "%RETRY%evilg")
    assert retry.code == 0, retry.remark
    assert json.loads(retry.body)["queueDatas"][0]["readQueueNums"] == 1
    # a later change registers at once (the broker answers once the name server has it)
    assert (await client.invoke(broker.addr, create_topic("After", 1))).code == 0
    for topic in ("GoodT", "After"):
        assert (await route(client, cluster.namesrv_addr, topic)).code == 0, topic
    assert refusals(cluster, broker) == []


def lock(code: int, queue_id: int, group: str = "lockg") -> RemotingCommand:
    mq = {"brokerName": "broker-a", "queueId": queue_id, "topic": "GoodT"}
    body = {"clientId": "c@1", "consumerGroup": group, "mqSet": [mq], "onlyThisBroker": False}
    return RemotingCommand.request(code, {}, json.dumps(body).encode())


def commit(queue_id: int, group: str = "offg") -> RemotingCommand:
    ext = {"consumerGroup": group, "topic": "GoodT", "queueId": str(queue_id),
           "commitOffset": "1"}  # fmt: skip
    return RemotingCommand.request(RequestCode.UPDATE_CONSUMER_OFFSET, ext)


def subscribed(**sub: Any) -> RemotingCommand:
    base = {"topic": "GoodT", "subString": "*", "tagsSet": [], "codeSet": [], "subVersion": 1,
            "expressionType": "TAG", "classFilterMode": False}  # fmt: skip
    return heartbeat("subg", subscriptionDataSet=[{**base, **sub}])


def topic(**ext: str) -> RemotingCommand:
    cmd = create_topic("BadT", 4)
    cmd.ext_fields.update(ext)
    return cmd


# (case, request, the field its remark names): each value is one Java would take or one that
# only a later step (the name server, a client, a slave) would refuse
CASES = [
    ("retryQueueNums 2**40", update_group(retryQueueNums=2**40), "retryQueueNums"),
    ("retryQueueNums -1", update_group(retryQueueNums=-1), "retryQueueNums"),
    ("retryQueueNums 1025", update_group(retryQueueNums=1025), "retryQueueNums"),
    ("retryMaxTimes 2**31", update_group(retryMaxTimes=2**31), "retryMaxTimes"),
    ("brokerId 2**63", update_group(brokerId=2**63), "brokerId"),
    ("whichBroker... -2**63-1", update_group(whichBrokerWhenConsumeSlowly=-(2**63) - 1),
     "whichBrokerWhenConsumeSlowly"),
    ("readQueueNums 1025", topic(readQueueNums="1025"), "readQueueNums"),
    ("writeQueueNums 2**31-1", topic(writeQueueNums=str(INT_MAX)), "writeQueueNums"),
    ("writeQueueNums -1", topic(writeQueueNums="-1"), "writeQueueNums"),
    ("perm 16", topic(perm="16"), "perm"),
    ("topicFilterType", topic(topicFilterType="BOGUS"), "topicFilterType"),
    ("subVersion 2**63", subscribed(subVersion=2**63), "subVersion"),
    ("codeSet 2**31", subscribed(codeSet=[2**31]), "codeSet"),
    ("lock queueId 2**31", lock(RequestCode.LOCK_BATCH_MQ, 2**31), "queueId"),
    ("lock queueId -1", lock(RequestCode.LOCK_BATCH_MQ, -1), "queueId"),
    ("unlock queueId 65535", lock(RequestCode.UNLOCK_BATCH_MQ, 65535), "queueId"),
    ("offset queueId -1", commit(-1), "queueId"),
    ("offset queueId 65535", commit(65535), "queueId"),
]  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
async def test_out_of_range_numbers_are_refused_naming_the_field(
    cluster: Cluster, broker: BrokerProc, client: RemotingClient, case: tuple[Any, ...]
) -> None:
    """Each value is refused (SYSTEM_ERROR, the field in the remark), nothing is stored, and
    the broker serves and registers on."""
    _name, request, field = case
    resp = await client.invoke(broker.addr, request)
    assert resp.code == ResponseCode.SYSTEM_ERROR, resp.remark
    assert field in str(resp.remark), resp.remark
    groups = await client.invoke(
        broker.addr, RemotingCommand.request(RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)
    )
    assert "evilg" not in json.loads(groups.body)["subscriptionGroupTable"]
    topics = await client.invoke(
        broker.addr, RemotingCommand.request(RequestCode.GET_ALL_TOPIC_CONFIG)
    )
    assert "BadT" not in json.loads(topics.body)["topicConfigTable"]
    offsets = await client.invoke(
        broker.addr, RemotingCommand.request(RequestCode.GET_ALL_CONSUMER_OFFSET)
    )
    assert "GoodT@offg" not in offsets.body.decode()
    assert (await client.invoke(broker.addr, create_topic("After", 1))).code == 0
    assert (await route(client, cluster.namesrv_addr, "After")).code == 0
    assert refusals(cluster, broker) == []


async def test_max_msg_nums_is_read_as_at_most_1024(
    broker: BrokerProc, client: RemotingClient
) -> None:
    """A filtered pull scans ConsumeQueue units in proportion to maxMsgNums (Java: 20 bytes
    each, at least 16,000 bytes; Java's int overflow caps the product, Python's ints do not):
    maxMsgNums 2**31-1 made one pull scan the whole queue on the broker's loop. It is read
    as 1024 (the Java push consumer's pullBatchSize bound): a pull for tag B over 1,100
    tag-A messages stops after 1,024 units."""
    items = [BatchItem(b"a") for _ in range(100)]
    for _ in range(11):
        batch = send_v2("GoodT", encode_batch(items), queue_id=0, m="true", props={"TAGS": "A"})
        batch.code = RequestCode.SEND_BATCH_MESSAGE
        assert (await client.invoke(broker.addr, batch)).code == 0
    ask = pull("pg", "GoodT", 0, 0, sys_flag=4, subscription="B", max_msgs=INT_MAX)
    got = await client.invoke(broker.addr, ask)
    assert got.code == ResponseCode.PULL_RETRY_IMMEDIATELY, got.remark
    assert got.ext_fields["nextBeginOffset"] == "1024"
