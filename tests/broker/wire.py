"""Test conveniences over client.api (the one request layer): what a RocketMQ producer,
consumer or mqadmin puts on the wire, with the overrides hostile tests need (``**extra``
replaces or adds raw ext fields)."""

from __future__ import annotations

from aiorocketmq.client.core import api
from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.protocol.codes import RequestCode
from aiorocketmq.remoting.protocol.command import RemotingCommand
from aiorocketmq.remoting.protocol.heartbeat import ConsumerData, SubscriptionData
from aiorocketmq.remoting.protocol.message import MessageExt, decode_record
from aiorocketmq.remoting.protocol.msgid import parse_offset_msg_id


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
    cmd = api.send_message(
        topic,
        body,
        group=group,
        properties=props or {},
        queue_id=queue_id,
        default_topic_queue_nums=default_queue_nums,
    )
    cmd.ext_fields.update(extra)
    return cmd


def create_topic(topic: str, queues: int = 4, perm: int = 6, **extra: str) -> RemotingCommand:
    cmd = api.create_topic(topic, queues, perm)
    cmd.ext_fields.update(extra)
    return cmd


async def max_offset(cli: RemotingClient, addr: str, topic: str, queue_id: int) -> int:
    resp = await cli.invoke(addr, api.queue_request(RequestCode.GET_MAX_OFFSET, topic, queue_id))
    return api.parse_offset(resp, addr)


async def total_messages(cli: RemotingClient, addr: str, topic: str, queues: int) -> int:
    return sum([await max_offset(cli, addr, topic, q) for q in range(queues)])


async def view(cli: RemotingClient, addr: str, msg_id: str) -> MessageExt:
    """VIEW_MESSAGE_BY_ID: the stored message behind an offsetMsgId."""
    _host, offset = parse_offset_msg_id(msg_id)
    resp = await cli.invoke(addr, api.view_message(offset))
    assert resp.code == 0, resp.remark
    return decode_record(resp.body)


async def route(cli: RemotingClient, namesrv: str, topic: str) -> RemotingCommand:
    return await cli.invoke(namesrv, api.get_route(topic))


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
    return api.pull_message(
        group,
        topic,
        queue_id,
        offset,
        max_nums=max_msgs,
        sys_flag=sys_flag,
        commit_offset=commit,
        suspend_ms=suspend_ms,
        subscription=subscription,
    )


def heartbeat(client_id: str, group: str, *subscriptions: tuple[str, str]) -> RemotingCommand:
    """HEART_BEAT with one push consumer group subscribing (topic, expression) pairs."""
    subs = [SubscriptionData.build(topic, expr) for topic, expr in subscriptions]
    return api.heartbeat(client_id, consumers=[ConsumerData(group_name=group, subscriptions=subs)])
