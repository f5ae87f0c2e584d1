"""What each request needs, per resource (4.9.8's PlainAccessValidator.parse): topics and
groups (a group as ``%RETRY%<group>``) with the permission wanted. Every other code is checked
for its signature only (320, a batch send, included, as in 4.9.8; so are 324/325, a request's
reply: no Apache version asks a permission of the reply topic, and a requester needs none, as
its reply comes pushed, 326). Pure.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
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


def _send(topic: str | None, group: str | None) -> Needs:
    if topic is not None and topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
        return {} if group is None else {RETRY_GROUP_TOPIC_PREFIX + group: SUB}
    return {} if topic is None else {topic: PUB}


def _send_v2(cmd: RemotingCommand) -> Needs:
    ext = cmd.ext_fields
    return _send(ext.get("b"), ext.get("a"))


def _send_v1(cmd: RemotingCommand) -> Needs:
    ext = cmd.ext_fields
    return _send(ext.get("topic"), ext.get("group"))


def _send_back(cmd: RemotingCommand) -> Needs:
    out = Needs()
    _add(out, _retry(cmd.ext_fields.get("group")), SUB)
    return out


def _pull(cmd: RemotingCommand) -> Needs:
    ext, out = cmd.ext_fields, Needs()
    _add(out, ext.get("topic"), SUB)
    _add(out, _retry(ext.get("consumerGroup")), SUB)
    return out


def _query(cmd: RemotingCommand) -> Needs:
    out = Needs()
    _add(out, cmd.ext_fields.get("topic"), SUB)
    return out


def _heartbeat(cmd: RemotingCommand) -> Needs:
    try:
        data = HeartbeatData.decode(cmd.body)
    except (ValueError, KeyError, TypeError, RecursionError) as exc:
        raise AclError(str(exc) or None, reason="bad_request", frame=PARSE_FRAME) from None
    out = Needs()
    for consumer in data.consumers:
        _add(out, _retry(consumer.group_name), SUB)
        for sub in consumer.subscriptions:
            _add(out, sub.topic, SUB)
    return out


def _unregister(cmd: RemotingCommand) -> Needs:
    ext, out = cmd.ext_fields, Needs()
    _required(ext, "clientID")
    _add(out, _retry(ext.get("consumerGroup")), SUB)
    return out


def _consumer_list(cmd: RemotingCommand) -> Needs:
    return {RETRY_GROUP_TOPIC_PREFIX + _required(cmd.ext_fields, "consumerGroup"): SUB}


def _update_offset(cmd: RemotingCommand) -> Needs:
    ext = cmd.ext_fields
    group, topic = _required(ext, "consumerGroup"), _required(ext, "topic")
    for name in ("queueId", "commitOffset"):
        _number(_required(ext, name))
    return {RETRY_GROUP_TOPIC_PREFIX + group: SUB, topic: SUB}


# compat: the codes PlainAccessValidator.parse reads resources of
_PARSERS: Final[dict[int, Callable[[RemotingCommand], Needs]]] = {
    int(C.SEND_MESSAGE_V2): _send_v2,
    int(C.SEND_MESSAGE): _send_v1,
    int(C.CONSUMER_SEND_MSG_BACK): _send_back,
    int(C.PULL_MESSAGE): _pull,
    int(C.QUERY_MESSAGE): _query,
    int(C.HEART_BEAT): _heartbeat,
    int(C.UNREGISTER_CLIENT): _unregister,
    int(C.GET_CONSUMER_LIST_BY_GROUP): _consumer_list,
    int(C.UPDATE_CONSUMER_OFFSET): _update_offset,
}
CODES_WITH_RESOURCES: Final = frozenset(_PARSERS)

# the ext fields that alone decide what the hot codes need (what their parsers above read):
# two such requests with the same values need the same permissions
RESOURCE_FIELDS: Final[dict[int, tuple[str, str]]] = {
    int(C.SEND_MESSAGE_V2): ("b", "a"),
    int(C.SEND_MESSAGE): ("topic", "group"),
    int(C.PULL_MESSAGE): ("topic", "consumerGroup"),
}


def needs(cmd: RemotingCommand) -> Needs | None:
    """The resources ``cmd`` touches and the permission each needs (None: a code checked for
    its signature only); raises AclError (``bad_request``) where 4.9.8 cannot decode what it
    reads."""
    parse = _PARSERS.get(cmd.code)
    return None if parse is None else parse(cmd)


def _number(text: str) -> None:
    try:
        int(text)
    except ValueError:
        # compat: the NumberFormatException decodeCommandCustomHeader meets
        raise AclError(
            f'For input string: "{text}"', reason="bad_request", frame=PARSE_FRAME
        ) from None
