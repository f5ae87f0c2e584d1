"""aiorocketmq.client.api: the SDK's request layer, public (Java's MQClientAPIImpl). mqadmin
and tools build their requests here.

Typed builders for every request the SDK sends (``send_message``, ``pull_message``,
``get_route``, ``create_topic``, ``request`` for any code), parsers for the answers (they
raise MQBrokerError for a refusal), ``Remote``: connections that raise MQConnectionError and
MQTimeoutError, never the remoting layer's own errors; the group name check
``check_group``; and ``commit_offsets``, a group's consumer offsets written through a
``PullConsumer``'s connections.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from aiorocketmq.client.consumer.offsets import RemoteOffsetStore
from aiorocketmq.client.core.api import *  # noqa: F403 -- the request layer's names
from aiorocketmq.client.core.api import __all__ as _requests
from aiorocketmq.client.core.message import MessageQueue
from aiorocketmq.client.core.validate import check_group

if TYPE_CHECKING:
    from aiorocketmq.client.consumer.lite.consumer import PullConsumer

__all__ = [*_requests, "check_group", "commit_offsets"]


async def commit_offsets(
    consumer: PullConsumer, group: str, offsets: Mapping[MessageQueue, int]
) -> None:
    """Write ``offsets`` as ``group``'s consumer offsets on each queue's master
    (UPDATE_CONSUMER_OFFSET, oneway, best effort) over ``consumer``'s connections: a reader
    that keeps its own checkpoints (the Spark source) shows its progress to admin tools."""
    store = RemoteOffsetStore(consumer.instance, group)
    for mq, offset in offsets.items():
        store.update(mq, offset, False)
    await store.persist_all(list(offsets))
