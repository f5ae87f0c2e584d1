"""What each request needs, per resource (4.9.8's PlainAccessValidator.parse): topics and
groups (a group as ``%RETRY%<group>``) with the permission wanted. Every other code is checked
for its signature only (320, a batch send, included, as in 4.9.8). Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from aiorocketmq.remoting.acl.errors import PARSE_FRAME, AclError
from aiorocketmq.remoting.acl.permission import PUB, SUB
from aiorocketmq.remoting.protocol.codes import RequestCode as C
from aiorocketmq.remoting.protocol.command import RemotingCommand
from aiorocketmq.remoting.protocol.heartbeat import HeartbeatData
from aiorocketmq.remoting.protocol.topic import RETRY_GROUP_TOPIC_PREFIX

Needs = dict[str, int]  # resource -> the permission wanted


def _retry(group: str | None) -> str | None:
    return None if group is None else RETRY_GROUP_TOPIC_PREFIX + group


def _add(needs: Needs, resource: str | None, perm: int) -> None:
    if resource is not None:  # compat: addResourceAndPerm ignores a null resource
        needs[resource] = perm


def _required(ext: Mapping[str, str], name: str) -> str:
    """decodeCommandCustomHeader: a @CFNotNull field; its failure becomes an AclException."""
    value = ext.get(name)
    if value is None:
        raise AclError(
            f"the custom field <{name}> is null", reason="bad_request", frame=PARSE_FRAME
        )
    return value


def _send(needs: Needs, topic: str | None, group: str | None) -> None:
    if topic is not None and topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
        _add(needs, _retry(group), SUB)  # a retry topic: the group's retry resource, SUB
    else:
        _add(needs, topic, PUB)


def _heartbeat(needs: Needs, body: bytes) -> None:
    try:
        data = HeartbeatData.decode(body)
    except (ValueError, KeyError, TypeError, RecursionError) as exc:
        raise AclError(str(exc) or None, reason="bad_request", frame=PARSE_FRAME) from None
    for consumer in data.consumers:
        _add(needs, _retry(consumer.group_name), SUB)
        for sub in consumer.subscriptions:
            _add(needs, sub.topic, SUB)


def needs(cmd: RemotingCommand) -> Needs:
    """The resources ``cmd`` touches and the permission each needs; raises AclError
    (``bad_request``) where 4.9.8 cannot decode what it reads."""
    ext, code, out = cmd.ext_fields, cmd.code, Needs()
    if code == C.SEND_MESSAGE_V2:
        _send(out, ext.get("b"), ext.get("a"))
    elif code == C.SEND_MESSAGE:
        _send(out, ext.get("topic"), ext.get("group"))
    elif code == C.CONSUMER_SEND_MSG_BACK:
        _add(out, _retry(ext.get("group")), SUB)
    elif code == C.PULL_MESSAGE:
        _add(out, ext.get("topic"), SUB)
        _add(out, _retry(ext.get("consumerGroup")), SUB)
    elif code == C.QUERY_MESSAGE:
        _add(out, ext.get("topic"), SUB)
    elif code == C.HEART_BEAT:
        _heartbeat(out, cmd.body)
    elif code == C.UNREGISTER_CLIENT:
        _required(ext, "clientID")
        _add(out, _retry(ext.get("consumerGroup")), SUB)
    elif code == C.GET_CONSUMER_LIST_BY_GROUP:
        _add(out, _retry(_required(ext, "consumerGroup")), SUB)
    elif code == C.UPDATE_CONSUMER_OFFSET:
        group, topic = _required(ext, "consumerGroup"), _required(ext, "topic")
        for name in ("queueId", "commitOffset"):
            _number(_required(ext, name))
        _add(out, _retry(group), SUB)
        _add(out, topic, SUB)
    return out


def _number(text: str) -> None:
    try:
        int(text)
    except ValueError:
        # compat: the NumberFormatException decodeCommandCustomHeader meets
        raise AclError(
            f'For input string: "{text}"', reason="bad_request", frame=PARSE_FRAME
        ) from None


CODES_WITH_RESOURCES: Final = frozenset({
    C.SEND_MESSAGE, C.SEND_MESSAGE_V2, C.CONSUMER_SEND_MSG_BACK, C.PULL_MESSAGE,
    C.QUERY_MESSAGE, C.HEART_BEAT, C.UNREGISTER_CLIENT, C.GET_CONSUMER_LIST_BY_GROUP,
    C.UPDATE_CONSUMER_OFFSET,
})  # fmt: skip
