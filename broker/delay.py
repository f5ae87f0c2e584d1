"""Delayed messages: parked in SCHEDULE_TOPIC_XXXX, one queue per level (protocol.md 12.3)."""

from __future__ import annotations

from aiorocketmq.remoting.protocol.message import MessageExt, Prop, SysFlag
from aiorocketmq.remoting.protocol.topic import SCHEDULE_TOPIC

DELIVERABLE_TYPES = (SysFlag.TRANSACTION_NOT_TYPE, SysFlag.TRANSACTION_COMMIT)


def delay_level(msg: MessageExt) -> int:
    try:
        return int(msg.properties.get(Prop.DELAY, "0") or 0)
    except ValueError:
        return 0


def apply_delay(msg: MessageExt, max_level: int) -> None:
    """A message with DELAY=n>0 (normal or committed) is rewritten to SCHEDULE_TOPIC_XXXX queue
    n-1, its real topic and queue saved; n is clamped to the highest level (CommitLog)."""
    level = delay_level(msg)
    if level <= 0 or msg.sys_flag & SysFlag.TRANSACTION_MASK not in DELIVERABLE_TYPES:
        return
    level = min(level, max_level)
    msg.properties[Prop.DELAY] = str(level)
    msg.properties[Prop.REAL_TOPIC] = msg.topic
    msg.properties[Prop.REAL_QID] = str(msg.queue_id)
    msg.topic, msg.queue_id = SCHEDULE_TOPIC, level - 1
