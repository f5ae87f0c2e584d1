"""A malformed JSON body is refused with a remark that names the field and what it holds, not
with what Python's int() or a subscript said (issue 29: "a clear error"; these are the
fuzzer's reproducers, benchmarks/fuzz.py). fastjson's rules stay: numeric text is a number,
null leaves a field at its default. Real name server and broker processes."""

from __future__ import annotations

import json

import pytest

from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.protocol.codes import RequestCode as C
from aiorocketmq.remoting.protocol.codes import ResponseCode
from aiorocketmq.remoting.protocol.command import RemotingCommand
from tests.cluster import Cluster

HEARTBEAT = {"clientID": "c1", "producerDataSet": [], "consumerDataSet": [
    {"groupName": "g1", "consumeType": "CONSUME_PASSIVELY", "messageModel": "CLUSTERING",
     "consumeFromWhere": "CONSUME_FROM_LAST_OFFSET", "unitMode": False,
     "subscriptionDataSet": [{"topic": "T", "subString": "*", "subVersion": "x"}]}]}  # fmt: skip
BROKER_CASES = [
    (C.HEART_BEAT, json.dumps(HEARTBEAT),
     "bad HeartbeatData: subVersion: expected an integer, got 'x'"),
    (C.LOCK_BATCH_MQ, "1e999999",
     "bad LockBatchRequestBody: the body: expected an object, got inf"),
    (C.UNLOCK_BATCH_MQ, '{"consumerGroup": "g", "clientId": "c", "mqSet": [7]}',
     "bad UnlockBatchRequestBody: a MessageQueue: expected an object, got 7"),
    (C.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, '{"groupName": "g", "retryMaxTimes": [1]}',
     "bad SubscriptionGroupConfig: retryMaxTimes: expected an integer, got an array"),
    (C.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, '{"retryQueueNums": 1}',
     "bad SubscriptionGroupConfig: groupName is missing"),
]  # fmt: skip


@pytest.mark.parametrize(("code", "body", "remark"), BROKER_CASES)
async def test_a_malformed_body_names_its_field(
    cluster: Cluster, json_client: RemotingClient, code: int, body: str, remark: str
) -> None:
    broker = cluster.add_broker("broker-a")
    resp = await json_client.invoke(broker.addr, RemotingCommand.request(code, {}, body.encode()))
    assert (resp.code, resp.remark) == (ResponseCode.SYSTEM_ERROR, remark)


async def test_fastjson_rules_still_hold(cluster: Cluster, json_client: RemotingClient) -> None:
    """Numeric text reads as a number and null leaves the default, as fastjson has it: a
    group whose whichBrokerWhenConsumeSlowly is null and retryMaxTimes "3" is created."""
    broker = cluster.add_broker("broker-a")
    body = b'{"groupName": "g", "whichBrokerWhenConsumeSlowly": null, "retryMaxTimes": "3"}'
    req = RemotingCommand.request(C.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, {}, body)
    assert (await json_client.invoke(broker.addr, req)).code == ResponseCode.SUCCESS


async def test_the_name_server_names_the_field_too(
    cluster: Cluster, json_client: RemotingClient
) -> None:
    ident = {"brokerName": "b", "brokerAddr": "127.0.0.1:1", "clusterName": "c", "brokerId": "0"}
    body = b'{"counter": "x", "timestamp": 1}'
    req = RemotingCommand.request(C.QUERY_DATA_VERSION, ident, body)
    resp = await json_client.invoke(cluster.namesrv_addr, req)
    assert (resp.code, resp.remark) == (
        ResponseCode.SYSTEM_ERROR,
        "bad DataVersion: counter: expected an integer, got 'x'",
    )
