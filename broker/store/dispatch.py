"""Dispatch (reput): what a stored record adds to its ConsumeQueue and to the index.

The put path dispatches each message as it is appended; recovery rebuilds ConsumeQueues and
index by dispatching records read back from the CommitLog -- both through ``Dispatch``.
"""

from __future__ import annotations

from typing import NamedTuple

from aiorocketmq.remoting.protocol.message import MessageExt, Prop, SysFlag
from aiorocketmq.remoting.protocol.msgid import tags_code
from aiorocketmq.remoting.protocol.timer import TimerProp
from aiorocketmq.remoting.protocol.topic import SCHEDULE_TOPIC, TIMER_TOPIC

# rmq_sys_wheel_timer units: the tags code is the slot (TIMER_OUT_MS), this bit set for a
# delete marker (TIMER_DEL_UNIQKEY), so the wheel indexes from the ConsumeQueue alone
TIMER_DELETE_BIT = 1 << 62

NO_QUEUE_TYPES = (SysFlag.TRANSACTION_PREPARED, SysFlag.TRANSACTION_ROLLBACK)


class Dispatch(NamedTuple):
    topic: str
    queue_id: int
    queue_offset: int
    phys: int
    size: int
    tags_code: int
    store_ts: int
    keys: list[str]
    sys_flag: int

    @property
    def queued(self) -> bool:
        return queued(self.sys_flag)

    @property
    def indexed(self) -> bool:
        return self.sys_flag & SysFlag.TRANSACTION_MASK != SysFlag.TRANSACTION_ROLLBACK


def queued(sys_flag: int) -> bool:
    """Prepared and rolled-back transaction records get no ConsumeQueue unit."""
    return sys_flag & SysFlag.TRANSACTION_MASK not in NO_QUEUE_TYPES


def index_keys(props: dict[str, str]) -> list[str]:
    """UNIQ_KEY and every KEYS word (space-separated), as IndexService.buildIndex keys them."""
    uniq, words = props.get(Prop.UNIQ_KEY), props.get(Prop.KEYS)
    keys = [uniq] if uniq else []
    if words:
        split = words.split(" ")
        keys += split if "" not in split else [k for k in split if k]
    return keys


def queue_tags_code(msg: MessageExt, delays: list[int]) -> int:
    """The ConsumeQueue tags code: Java's hash of TAGS, but for SCHEDULE_TOPIC_XXXX units the
    time the message is due (protocol.md 12.3), for rmq_sys_wheel_timer ones its slot."""
    if msg.topic == TIMER_TOPIC:
        return timer_tags_code(msg.properties)
    if msg.topic == SCHEDULE_TOPIC and delays:
        try:
            level = min(max(int(msg.properties.get(Prop.DELAY, "0")), 1), len(delays))
        except ValueError:
            level = 1
        return msg.store_timestamp + delays[level - 1]
    return tags_code(msg.properties.get(Prop.TAGS))


def dispatch_of(
    msg: MessageExt, phys: int, size: int, delays: list[int], keys: list[str] | None = None
) -> Dispatch:
    """What ``msg``, stored at ``phys``, adds (``keys``: its index keys, if known already)."""
    return Dispatch(
        msg.topic,
        msg.queue_id,
        msg.queue_offset,
        phys,
        size,
        queue_tags_code(msg, delays),
        msg.store_timestamp,
        index_keys(msg.properties) if keys is None else keys,
        msg.sys_flag,
    )


def timer_tags_code(props: dict[str, str]) -> int:
    """A wheel unit's tags code: TIMER_OUT_MS (0, due at once, if unreadable), with
    TIMER_DELETE_BIT for a delete marker."""
    try:
        slot = max(0, min(int(props.get(TimerProp.OUT_MS, "0")), TIMER_DELETE_BIT - 1))
    except ValueError:
        slot = 0
    return slot | (TIMER_DELETE_BIT if TimerProp.DEL_UNIQKEY in props else 0)
