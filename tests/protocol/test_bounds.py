"""The bounds the edges check (remoting.protocol.bounds, issue 29): each rule on its own,
and the SDK and the broker refusing the same group names with the same words."""

from __future__ import annotations

import re

import pytest

from aiorocketmq.client.core.errors import MQClientError
from aiorocketmq.client.core.validate import check_group
from aiorocketmq.remoting.protocol.bounds import (
    QUEUE_NUMS_MAX,
    RETRIED_GROUP_MAX_LENGTH,
    check_group_name,
    group_config_refusal,
    heartbeat_refusal,
    lock_body_refusal,
    retry_topics_refusal,
    topic_config_refusal,
)
from aiorocketmq.remoting.protocol.group import SubscriptionGroupConfig
from aiorocketmq.remoting.protocol.heartbeat import (
    ConsumerData,
    HeartbeatData,
    LockBatchBody,
    MessageQueue,
    SubscriptionData,
)
from aiorocketmq.remoting.protocol.topic import TopicConfig
from aiorocketmq.remoting.throttle import Throttle

GROUPS = [
    ("g", None),
    ("CID_ONS-HTTP-PROXY", None),
    ("ns%grp|x_1", None),
    ("", "The specified group is blank."),
    ("  ", "The specified group is blank."),
    ("g" * 255, None),
    ("g" * 256, "The specified group is longer than group max length 255."),
    ("a/b", "The specified group contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"),
    ("..", "The specified group contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"),
    (
        "%DLQ%..",
        "The specified group contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$",
    ),
    ("g\n", "The specified group contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"),
]


@pytest.mark.parametrize(("group", "remark"), GROUPS)
def test_group_names_as_validators_check_group(group: str, remark: str | None) -> None:
    """Blank, then longer than 255, then the charset (Validators.checkGroup's order); the
    SDK raises the broker's remark."""
    assert check_group_name(group) == remark
    if remark is None:
        check_group(group)
    else:
        with pytest.raises(MQClientError, match=f"^{re.escape(remark)}$"):
            check_group(group)


def test_retry_topics_fit_only_groups_of_120_characters() -> None:
    """%RETRY%<group> is a topic: at most 127 characters, so a group of at most 120."""
    assert RETRIED_GROUP_MAX_LENGTH == 120
    assert retry_topics_refusal("group", "g" * 120) is None
    remark = retry_topics_refusal("group", "g" * 121)
    assert remark is not None and remark.startswith("group: the group " + "g" * 121)
    assert "topic max length 127" in remark


TOPICS = [
    ({}, None),
    ({"read_queue_nums": 0, "write_queue_nums": 0, "perm": 0}, None),
    ({"read_queue_nums": QUEUE_NUMS_MAX, "perm": 15}, None),
    ({"read_queue_nums": QUEUE_NUMS_MAX + 1}, "readQueueNums"),
    ({"write_queue_nums": 2**40}, "writeQueueNums"),
    ({"write_queue_nums": -1}, "writeQueueNums"),
    ({"perm": 16}, "perm"),
    ({"perm": -1}, "perm"),
    ({"topic_sys_flag": 2**31}, "topicSysFlag"),
    ({"topic_filter_type": "ALL"}, "topicFilterType"),
]


@pytest.mark.parametrize(("fields", "field"), TOPICS)
def test_topic_config_numbers(fields: dict[str, object], field: str | None) -> None:
    refusal = topic_config_refusal(TopicConfig(topic_name="T", **fields))  # type: ignore[arg-type]
    assert refusal is None if field is None else (refusal or "").startswith(field + " ")


GROUP_CONFIGS = [
    ({}, None),
    ({"retry_queue_nums": 0, "retry_max_times": -1}, None),
    ({"retry_queue_nums": 2**40}, "retryQueueNums"),
    ({"retry_max_times": 2**31}, "retryMaxTimes"),
    ({"broker_id": 2**63}, "brokerId"),
    ({"which_broker_when_consume_slowly": -(2**63) - 1}, "whichBrokerWhenConsumeSlowly"),
    ({"group_name": "a/b"}, "groupName"),
    ({"group_name": "L" * 200}, "groupName"),  # retry queues, and no retry topic can exist
    ({"group_name": "L" * 200, "retry_queue_nums": 0}, None),  # nothing to derive
]


@pytest.mark.parametrize(("fields", "field"), GROUP_CONFIGS)
def test_group_config_numbers_and_name(fields: dict[str, object], field: str | None) -> None:
    config = SubscriptionGroupConfig(**{"group_name": "g", **fields})  # type: ignore[arg-type]
    refusal = group_config_refusal(config)
    assert refusal is None if field is None else (refusal or "").startswith(field)


def test_a_stored_group_is_not_refused_for_its_retry_topic() -> None:
    """At load nothing is derived yet: a long (Java-legal) group stays."""
    assert (
        group_config_refusal(SubscriptionGroupConfig(group_name="L" * 200), retried=False) is None
    )


def test_heartbeat_and_lock_bodies_name_the_field() -> None:
    sub = SubscriptionData(topic="T", sub_version=2**63)
    data = HeartbeatData(
        client_id="c", consumers=[ConsumerData(group_name="g", subscriptions=[sub])]
    )
    assert (heartbeat_refusal(data) or "").startswith(
        "consumerDataSet[0].subscriptionDataSet[0].subVersion is out of range"
    )
    data = HeartbeatData(client_id="c", producers=["ok", "a b"])
    assert (heartbeat_refusal(data) or "").startswith("producerDataSet[1].groupName: ")
    queues = [MessageQueue("T", "b", 65534), MessageQueue("T", "b", 65535)]
    body = LockBatchBody(consumer_group="g", client_id="c", mq_set=queues)
    assert (lock_body_refusal(body) or "").startswith("mqSet[1].queueId is out of range: 65535")
    assert lock_body_refusal(LockBatchBody(consumer_group="g", client_id="c")) is None


def test_throttle_logs_once_a_period_and_counts_the_rest() -> None:
    now = [0.0]
    throttle = Throttle(60.0, clock=lambda: now[0])
    assert throttle.allow("k") == 0
    assert throttle.allow("k") is None
    assert throttle.allow("other") == 0
    now[0] = 59.9
    assert throttle.allow("k") is None
    now[0] = 60.0
    assert throttle.allow("k") == 2  # two left out since the last line
    assert throttle.allow("k") is None
