"""Request builders for broker tests: what a RocketMQ producer or mqadmin puts on the wire."""

from __future__ import annotations

import time

from remoting.client import RemotingClient
from remoting.protocol.codes import MQVersion, RequestCode
from remoting.protocol.command import RemotingCommand
from remoting.protocol.message import MessageExt, decode_record, encode_properties
from remoting.protocol.msgid import parse_offset_msg_id


def send_v2(
    topic: str,
    body: bytes,
    *,
    queue_id: int = -1,
    props: dict[str, str] | None = None,
    group: str = "pg_test",
    default_queue_nums: int = 4,
    **extra: str,
) -> RemotingCommand:
    """SEND_MESSAGE_V2 with the one-letter keys a Java producer sends (protocol.md 5.1)."""
    ext = {
        "a": group,
        "b": topic,
        "c": "TBW102",
        "d": str(default_queue_nums),
        "e": str(queue_id),
        "f": "0",
        "g": str(time.time_ns() // 1_000_000),
        "h": "0",
        "i": encode_properties(props or {}),
        "j": "0",
        "k": "false",
        "m": "false",
        **extra,
    }
    cmd = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, ext, body)
    cmd.version = MQVersion.V4_9_8
    return cmd


def create_topic(topic: str, queues: int = 4, perm: int = 6, **extra: str) -> RemotingCommand:
    ext = {
        "topic": topic,
        "defaultTopic": "TBW102",
        "readQueueNums": str(queues),
        "writeQueueNums": str(queues),
        "perm": str(perm),
        "topicFilterType": "SINGLE_TAG",
        "topicSysFlag": "0",
        "order": "false",
        **extra,
    }
    return RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, ext)


async def max_offset(cli: RemotingClient, addr: str, topic: str, queue_id: int) -> int:
    ext = {"topic": topic, "queueId": str(queue_id)}
    resp = await cli.invoke(addr, RemotingCommand.request(RequestCode.GET_MAX_OFFSET, ext))
    assert resp.code == 0, resp.remark
    return int(resp.ext_fields["offset"])


async def total_messages(cli: RemotingClient, addr: str, topic: str, queues: int) -> int:
    return sum([await max_offset(cli, addr, topic, q) for q in range(queues)])


async def view(cli: RemotingClient, addr: str, msg_id: str) -> MessageExt:
    """VIEW_MESSAGE_BY_ID: the stored message behind an offsetMsgId."""
    _host, offset = parse_offset_msg_id(msg_id)
    ext = {"offset": str(offset)}
    resp = await cli.invoke(addr, RemotingCommand.request(RequestCode.VIEW_MESSAGE_BY_ID, ext))
    assert resp.code == 0, resp.remark
    return decode_record(resp.body)


async def route(cli: RemotingClient, namesrv: str, topic: str) -> RemotingCommand:
    return await cli.invoke(
        namesrv, RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic})
    )


def pull(
    group: str,
    topic: str,
    queue_id: int,
    offset: int,
    *,
    sys_flag: int = 2,
    suspend_ms: int = 3000,
    subscription: str | None = None,
    commit: int = 0,
    max_msgs: int = 32,
) -> RemotingCommand:
    """PULL_MESSAGE (protocol.md 5.2); sysFlag 2 = may be held, 4 = subscription included."""
    ext = {
        "consumerGroup": group,
        "topic": topic,
        "queueId": str(queue_id),
        "queueOffset": str(offset),
        "maxMsgNums": str(max_msgs),
        "sysFlag": str(sys_flag),
        "commitOffset": str(commit),
        "suspendTimeoutMillis": str(suspend_ms),
        "subVersion": "0",
    }
    if subscription is not None:
        ext["subscription"] = subscription
    return RemotingCommand.request(RequestCode.PULL_MESSAGE, ext)


def heartbeat(client_id: str, group: str, *subscriptions: tuple[str, str]) -> RemotingCommand:
    """HEART_BEAT with one push consumer group subscribing (topic, expression) pairs."""
    from remoting.protocol.heartbeat import ConsumerData, HeartbeatData, SubscriptionData

    subs = [SubscriptionData.build(topic, expr) for topic, expr in subscriptions]
    data = HeartbeatData(
        client_id=client_id, consumers=[ConsumerData(group_name=group, subscriptions=subs)]
    )
    return RemotingCommand.request(RequestCode.HEART_BEAT, {}, data.encode())
