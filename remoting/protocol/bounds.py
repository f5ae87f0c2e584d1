"""What the cluster can carry: the bounds every edge checks a request's numbers and names
against, and state files are checked against at start (issue 29 N1, N8).

Java bounds a number by its type (an ``int`` field holds -2**31..2**31-1); the header codec
already refuses what Java's parseInt / parseLong would (``headers.base``), but a JSON body
is parsed into Python ints of any size, so each body number is checked here. Some numbers
must be smaller than their Java type allows, because a later step or another process cannot
carry them: a queue count becomes that many MessageQueue objects in every client and that
many rows in every per-queue answer; a permission has four bits; a topic name in a record
has at most 127 bytes. Those bounds are here too, each with its reason, so that a value
only a later step would refuse is refused at the edge, with the field named.

Each ``*_refusal`` function returns None for an acceptable value, else the remark to answer
with (the field first).
"""

from __future__ import annotations

import re
from typing import Final

from aiorocketmq.remoting.protocol.group import SubscriptionGroupConfig
from aiorocketmq.remoting.protocol.headers.base import parse_int
from aiorocketmq.remoting.protocol.heartbeat import HeartbeatData, LockBatchBody
from aiorocketmq.remoting.protocol.topic import (
    DLQ_GROUP_TOPIC_PREFIX,
    RETRY_GROUP_TOPIC_PREFIX,
    TOPIC_MAX_LENGTH,
    Perm,
    TopicConfig,
    check_topic_name,
)

INT32_MIN: Final = -(2**31)
INT32_MAX: Final = 2**31 - 1
INT64_MIN: Final = -(2**63)
INT64_MAX: Final = 2**63 - 1

# The most queues a topic (or a group's retry topic) may have. Java sets no bound, but every
# client allocates a MessageQueue (and a consumer a ProcessQueue and a pull request) per queue
# of a route, and the broker answers consume stats, topic stats and offset resets with a row
# per queue, computed on its loop: 2**31-1 queues is an out-of-memory error in every Java
# client. 1024 is the largest count 4.9.8 gives a topic itself (BenchmarkTest) and keeps each
# per-queue answer to a few milliseconds of work.
QUEUE_NUMS_MAX: Final = 1024
# What clients can still carry (a MessageQueue per queue is a few MiB at this count): a store
# written before QUEUE_NUMS_MAX existed may hold bigger topics that worked, and they keep
# working -- loaded at start, their queue ids accepted -- rather than lose their routes on an
# upgrade; only a topic beyond this is set aside. Changing such a topic takes it to 1024.
STORED_QUEUE_NUMS_MAX: Final = 65_535
# PermName's four bits: PRIORITY | READ | WRITE | INHERIT
PERM_MAX: Final = Perm.PRIORITY | Perm.READ | Perm.WRITE | Perm.INHERIT
# TopicFilterType: anything else fails Java's TopicFilterType.valueOf (header and route)
TOPIC_FILTER_TYPES: Final = ("SINGLE_TAG", "MULTI_TAG")
# Validators.CHARACTER_MAX_LENGTH
GROUP_MAX_LENGTH: Final = 255
# The longest group whose %RETRY% and %DLQ% topics fit the topic limit (the record's 127 bytes)
RETRIED_GROUP_MAX_LENGTH: Final = TOPIC_MAX_LENGTH - len(RETRY_GROUP_TOPIC_PREFIX)
# maxMsgNums is clamped to this: DefaultMQPushConsumer's pullBatchSize bound. The store gives
# at most maxTransferCountOnMessage* anyway; beyond that the number only widened the scan of a
# filtered pull (Java's int overflow caps it; Python's ints do not overflow).
PULL_MSG_NUMS_MAX: Final = 1024

_VALID_NAME = re.compile(r"[%|a-zA-Z0-9_-]+")  # whole name (fullmatch: "$" accepts "\n")
_VALID_GROUPS: set[str] = set()  # names that passed check_group_name
_VALID_GROUPS_MAX: Final = 4096


def range_refusal(field: str, value: int, low: int, high: int) -> str | None:
    """``field`` is refused unless ``low <= value <= high``."""
    if low <= value <= high:
        return None
    return f"{field} is out of range: {value} (allowed: {low} to {high})"


def java_int_refusal(field: str, value: int) -> str | None:
    return range_refusal(field, value, INT32_MIN, INT32_MAX)


def java_long_refusal(field: str, value: int) -> str | None:
    return range_refusal(field, value, INT64_MIN, INT64_MAX)


def queue_nums_refusal(field: str, value: int, most: int = QUEUE_NUMS_MAX) -> str | None:
    return range_refusal(field, value, 0, most)


def queue_id_refusal(field: str, value: int) -> str | None:
    """A queue id no topic can have, stored ones included (0 to STORED_QUEUE_NUMS_MAX - 1;
    whether the topic has that queue is the processor's check)."""
    return range_refusal(field, value, 0, STORED_QUEUE_NUMS_MAX - 1)


def check_group_name(group: str | None) -> str | None:
    """Validators.checkGroup: the remark refusing ``group``, or None when it is valid."""
    if group in _VALID_GROUPS:  # every pull names its group: most names are checked once
        return None
    if not group or not group.strip():
        return "The specified group is blank."
    if len(group) > GROUP_MAX_LENGTH:
        return f"The specified group is longer than group max length {GROUP_MAX_LENGTH}."
    if not _VALID_NAME.fullmatch(group):
        return "The specified group contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"
    if len(_VALID_GROUPS) >= _VALID_GROUPS_MAX:  # bounded whatever clients send
        _VALID_GROUPS.clear()
    _VALID_GROUPS.add(group)
    return None


def group_refusal(field: str, group: str | None) -> str | None:
    """``check_group_name`` with the field named, for a request's group."""
    bad = check_group_name(group)
    return None if bad is None else f"{field}: {bad}"


def retry_topics_refusal(field: str, group: str) -> str | None:
    """None when ``group``'s %RETRY% and %DLQ% topics are valid topic names (the store holds
    names of at most 127 bytes); else why not, naming the field, the group and the limit."""
    for prefix in (RETRY_GROUP_TOPIC_PREFIX, DLQ_GROUP_TOPIC_PREFIX):
        if check_topic_name(prefix + group) is not None:
            return (
                f"{field}: the group {group} ({len(group)} characters) cannot have a {prefix} "
                "topic: "
                f"{prefix}<group> would exceed the topic max length {TOPIC_MAX_LENGTH}; only "
                f"groups of at most {RETRIED_GROUP_MAX_LENGTH} characters can be retried"
            )
    return None


def topic_config_refusal(config: TopicConfig, most: int = QUEUE_NUMS_MAX) -> str | None:
    """The numbers and filter type of a topic (UPDATE_AND_CREATE_TOPIC; topics.json with
    ``most`` STORED_QUEUE_NUMS_MAX); its name is checked by ``check_topic_name``."""
    return (
        queue_nums_refusal("readQueueNums", config.read_queue_nums, most)
        or queue_nums_refusal("writeQueueNums", config.write_queue_nums, most)
        or range_refusal("perm", config.perm, 0, PERM_MAX)
        or java_int_refusal("topicSysFlag", config.topic_sys_flag)
        or (
            None
            if config.topic_filter_type in TOPIC_FILTER_TYPES
            else f"topicFilterType is not one of {', '.join(TOPIC_FILTER_TYPES)}: "
            f"{config.topic_filter_type!r}"
        )
    )


def group_config_refusal(
    config: SubscriptionGroupConfig, *, retried: bool = True, most: int = QUEUE_NUMS_MAX
) -> str | None:
    """A SubscriptionGroupConfig (UPDATE_AND_CREATE_SUBSCRIPTIONGROUP; subscriptionGroup.json
    with ``most`` STORED_QUEUE_NUMS_MAX). With ``retried``, a group that has retry queues must
    also be able to have its retry topic (an operator asking for one is told it cannot be); a
    stored group is loaded without that check, since nothing is derived from it until a
    heartbeat or send-back, which check."""
    name = config.group_name
    return (
        group_refusal("groupName", name)
        or (
            retry_topics_refusal("groupName", name)
            if retried and config.retry_queue_nums > 0
            else None
        )
        or queue_nums_refusal("retryQueueNums", config.retry_queue_nums, most)
        or java_int_refusal("retryMaxTimes", config.retry_max_times)
        or java_long_refusal("brokerId", config.broker_id)
        or java_long_refusal(
            "whichBrokerWhenConsumeSlowly", config.which_broker_when_consume_slowly
        )
    )


def heartbeat_refusal(data: HeartbeatData) -> str | None:
    """HeartbeatData: every group name (Validators.checkGroup, which Java clients apply before
    they send), and the numbers of each subscription (Java types: they come back in
    GET_CONSUMER_CONNECTION_LIST answers)."""
    for i, group in enumerate(data.producers):
        bad = group_refusal(f"producerDataSet[{i}].groupName", group)
        if bad is not None:
            return bad
    for i, consumer in enumerate(data.consumers):
        bad = group_refusal(f"consumerDataSet[{i}].groupName", consumer.group_name)
        if bad is not None:
            return bad
        for j, sub in enumerate(consumer.subscriptions):
            where = f"consumerDataSet[{i}].subscriptionDataSet[{j}]"
            bad = java_long_refusal(f"{where}.subVersion", sub.sub_version)
            for code in sub.code_set:
                bad = bad or java_int_refusal(f"{where}.codeSet", code)
            if bad is not None:
                return bad
    return None


def order_topic_conf_refusal(value: str) -> str | None:
    """An ORDER_TOPIC_CONFIG value, ``broker:queues;broker:queues``: every client turns it
    into that many MessageQueues (MQClientInstance.topicRouteData2TopicPublishInfo parses
    each count with Integer.parseInt), so each count is a queue count."""
    items = value.split(";")
    if items and not items[-1]:
        items.pop()  # a trailing ";" (Java's split drops it)
    if not items:
        return "an order topic config names no broker"
    for item in items:
        name, colon, count = item.partition(":")
        if not name or not colon:
            return f"order topic config {item!r} is not broker:queues"
        try:
            queues = parse_int(count)
        except ValueError:
            return f"order topic config {item!r}: {count!r} is not a number"
        bad = queue_nums_refusal("queues", queues)
        if bad is not None:
            return f"order topic config {item!r}: {bad}"
    return None


def lock_body_refusal(body: LockBatchBody) -> str | None:
    """LockBatchRequestBody / UnlockBatchRequestBody: the group and each queue id."""
    bad = group_refusal("consumerGroup", body.consumer_group)
    for i, mq in enumerate(body.mq_set):
        bad = bad or queue_id_refusal(f"mqSet[{i}].queueId", mq.queue_id)
    return bad
