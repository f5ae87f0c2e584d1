"""The property match a pull hands the store (ExpressionMessageFilter.isMatchedByCommitLog and,
with filterSupportRetry, ExpressionForRetryMessageFilter): None when the pull needs none, so
a tag or unfiltered pull never reads a property."""

from __future__ import annotations

from aiorocketmq.broker.filter.memo import Memo
from aiorocketmq.broker.filter.registry import ConsumerFilters
from aiorocketmq.broker.store.props import CallFilter, find_property
from aiorocketmq.broker.store.results import RecordMatch
from aiorocketmq.remoting.protocol.message import Prop
from aiorocketmq.remoting.protocol.topic import RETRY_GROUP_TOPIC_PREFIX


def pull_match(
    topic: str, compiled: Memo | None, filters: ConsumerFilters, *, support_retry: bool
) -> RecordMatch | None:
    """What the store evaluates for a pull of ``topic`` whose own filter is ``compiled``."""
    if support_retry and topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
        owner = topic[len(RETRY_GROUP_TOPIC_PREFIX) :]
        if filters.of_group(owner):
            return CallFilter(RetryMatch(filters, owner).matches)
        # the group filters nothing: every retry passes, as 4.9.8 finds no filter data
        return None
    return compiled  # a Memo reads the properties where they lie


class RetryMatch:
    """A %RETRY%<group> message is evaluated with the group's filter of the topic it was
    first sent to (its RETRY_TOPIC property); without one it passes."""

    __slots__ = ("filters", "group")

    def __init__(self, filters: ConsumerFilters, group: str) -> None:
        self.filters, self.group = filters, group

    def matches(self, raw: bytes) -> bool:
        real = find_property(raw, _RETRY_TOPIC)
        data = self.filters.get(real.decode("utf-8", "replace"), self.group) if real else None
        return True if data is None else data.compiled.matches(raw)


_RETRY_TOPIC = b"\x02" + Prop.RETRY_TOPIC.encode() + b"\x01"
