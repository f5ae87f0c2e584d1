"""TopicConfig, permission bits, topic-name rules and system topic names (protocol.md 6.3, 10.3).

Mirrors TopicValidator / PermName / TopicConfig of RocketMQ 4.9.8.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Final, Self

AUTO_CREATE_TOPIC_KEY_TOPIC: Final = "TBW102"
SCHEDULE_TOPIC: Final = "SCHEDULE_TOPIC_XXXX"
# compat: TimerMessageStore.TIMER_TOPIC -- timer messages wait here (5.x); only the broker writes
TIMER_TOPIC: Final = "rmq_sys_wheel_timer"
BENCHMARK_TOPIC: Final = "BenchmarkTest"
SELF_TEST_TOPIC: Final = "SELF_TEST_TOPIC"
OFFSET_MOVED_EVENT: Final = "OFFSET_MOVED_EVENT"
TRANS_HALF_TOPIC: Final = "RMQ_SYS_TRANS_HALF_TOPIC"
TRANS_OP_HALF_TOPIC: Final = "RMQ_SYS_TRANS_OP_HALF_TOPIC"
TRANS_CHECK_MAX_TIME_TOPIC: Final = "TRANS_CHECK_MAX_TIME_TOPIC"
TRACE_TOPIC: Final = "RMQ_SYS_TRACE_TOPIC"
REPLY_TOPIC_POSTFIX: Final = "REPLY_TOPIC"
SYSTEM_TOPIC_PREFIX: Final = "rmq_sys_"
RETRY_GROUP_TOPIC_PREFIX: Final = "%RETRY%"
DLQ_GROUP_TOPIC_PREFIX: Final = "%DLQ%"

TOPIC_MAX_LENGTH: Final = 127
_VALID_TOPIC = re.compile(r"[%|a-zA-Z0-9_-]+")  # whole name (fullmatch: "$" accepts "\n")

# topics a client may never send to (TopicValidator.NOT_ALLOWED_SEND_TOPIC_SET)
NOT_ALLOWED_SEND_TOPICS: Final = frozenset(
    {SCHEDULE_TOPIC, TRANS_HALF_TOPIC, TRANS_OP_HALF_TOPIC, TRANS_CHECK_MAX_TIME_TOPIC,
     SELF_TEST_TOPIC, OFFSET_MOVED_EVENT, TIMER_TOPIC}
)  # fmt: skip
# TopicValidator.SYSTEM_TOPIC_SET's static part; the broker adds its cluster and broker names
# and <cluster>_REPLY_TOPIC (is_system_topic)
SYSTEM_TOPICS: Final = frozenset(
    {AUTO_CREATE_TOPIC_KEY_TOPIC, SCHEDULE_TOPIC, BENCHMARK_TOPIC, TRANS_HALF_TOPIC, TRACE_TOPIC,
     TRANS_OP_HALF_TOPIC, TRANS_CHECK_MAX_TIME_TOPIC, SELF_TEST_TOPIC, OFFSET_MOVED_EVENT}
)  # fmt: skip


class TopicSysFlag:
    """TopicSysFlag bits: a unit topic, a topic with unit subscriptions (retry topics)."""

    UNIT: Final = 1
    UNIT_SUB: Final = 2

    @staticmethod
    def build(unit: bool, unit_sub: bool) -> int:
        return (TopicSysFlag.UNIT if unit else 0) | (TopicSysFlag.UNIT_SUB if unit_sub else 0)


class Perm:
    """PermName bits; a normal topic has 6 (read + write), TBW102 7 (plus inherit)."""

    PRIORITY: Final = 8
    READ: Final = 4
    WRITE: Final = 2
    INHERIT: Final = 1

    @staticmethod
    def readable(perm: int) -> bool:
        return bool(perm & Perm.READ)

    @staticmethod
    def writeable(perm: int) -> bool:
        return bool(perm & Perm.WRITE)

    @staticmethod
    def inherited(perm: int) -> bool:
        return bool(perm & Perm.INHERIT)


def check_topic_name(topic: str | None) -> str | None:
    """The remark refusing ``topic``, or None when the name is valid (TopicValidator)."""
    if not topic or not topic.strip():
        return "The specified topic is blank."
    if not _VALID_TOPIC.fullmatch(topic):
        return "The specified topic contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"
    if len(topic) > TOPIC_MAX_LENGTH:
        return "The specified topic is longer than topic max length."
    return None


def is_system_topic(topic: str, cluster: str = "", broker: str = "") -> bool:
    """System topics may not be created or changed by UPDATE_AND_CREATE_TOPIC; TopicValidator's
    set as a broker of ``cluster`` named ``broker`` fills it (TopicConfigManager)."""
    if topic in SYSTEM_TOPICS or topic.startswith(SYSTEM_TOPIC_PREFIX):
        return True
    return bool(topic) and topic in (cluster, broker, reply_topic(cluster) if cluster else "")


def reply_topic(cluster: str) -> str:
    """``<cluster>_REPLY_TOPIC``, where request-reply answers go (MixAll.REPLY_TOPIC_POSTFIX)."""
    return f"{cluster}_{REPLY_TOPIC_POSTFIX}"


def retry_topic(group: str) -> str:
    return RETRY_GROUP_TOPIC_PREFIX + group


def dlq_topic(group: str) -> str:
    return DLQ_GROUP_TOPIC_PREFIX + group


@dataclass(slots=True, kw_only=True)
class TopicConfig:
    """A topic as a broker hosts it; JSON keys as Java's TopicConfig."""

    topic_name: str
    read_queue_nums: int = 16
    write_queue_nums: int = 16
    perm: int = Perm.READ | Perm.WRITE
    topic_filter_type: str = "SINGLE_TAG"
    topic_sys_flag: int = 0
    order: bool = False
    attributes: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "attributes": self.attributes,
            "order": self.order,
            "perm": self.perm,
            "readQueueNums": self.read_queue_nums,
            "topicFilterType": self.topic_filter_type,
            "topicName": self.topic_name,
            "topicSysFlag": self.topic_sys_flag,
            "writeQueueNums": self.write_queue_nums,
        }

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> Self:
        """Lenient, as fastjson: numbers may come as strings, booleans as text."""
        return cls(
            topic_name=str(obj["topicName"]),
            read_queue_nums=int(obj.get("readQueueNums", 16)),
            write_queue_nums=int(obj.get("writeQueueNums", 16)),
            perm=int(obj.get("perm", 6)),
            topic_filter_type=str(obj.get("topicFilterType") or "SINGLE_TAG"),
            topic_sys_flag=int(obj.get("topicSysFlag", 0)),
            order=str(obj.get("order", False)).lower() == "true",
            attributes={str(k): str(v) for k, v in (obj.get("attributes") or {}).items()},
        )
