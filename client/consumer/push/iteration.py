"""``async for delivery in consumer``: consumption by iteration instead of a listener.

Each message arrives as a Delivery; ``ack()`` consumes it, ``reconsume_later()`` gives it
back for a retry (as RECONSUME_LATER). Asking for the next delivery acknowledges the previous
one if it was left unsettled. Up to ``consume_concurrency`` deliveries wait at a time, so a
slow loop pauses the pulls (flow control) rather than growing memory.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from aiorocketmq.client.consumer.types import ConsumeConcurrentlyContext, ConsumeStatus
from aiorocketmq.client.core.message import MessageQueue
from aiorocketmq.remoting.protocol.message import MessageExt

_CLOSED = object()


@dataclass(slots=True)
class Delivery:
    """One message from ``async for delivery in consumer``: ``message``, its ``queue``; settle
    it with ``ack()`` or ``nack()`` (which sends it back for a later retry)."""

    message: MessageExt
    queue: MessageQueue
    _settled: asyncio.Future[ConsumeStatus] = field(repr=False)

    def ack(self) -> None:
        if not self._settled.done():
            self._settled.set_result(ConsumeStatus.CONSUME_SUCCESS)

    def reconsume_later(self) -> None:
        if not self._settled.done():
            self._settled.set_result(ConsumeStatus.RECONSUME_LATER)

    @property
    def settled(self) -> bool:
        return self._settled.done()


class Inbox:
    def __init__(self, size: int) -> None:
        self.queue: asyncio.Queue[object] = asyncio.Queue(max(1, size))
        self.closed = False

    async def listener(
        self, msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext
    ) -> ConsumeStatus:
        """A concurrent listener: hands each message to the iterator, waits for its fate."""
        loop = asyncio.get_running_loop()
        status = ConsumeStatus.CONSUME_SUCCESS
        for m in msgs:
            if self.closed:
                return ConsumeStatus.RECONSUME_LATER
            delivery = Delivery(m, ctx.message_queue, loop.create_future())
            await self.queue.put(delivery)
            if self.closed:  # put after close(): nobody will read it
                delivery.reconsume_later()
            if await delivery._settled is ConsumeStatus.RECONSUME_LATER:
                status = ConsumeStatus.RECONSUME_LATER
        return status

    def close(self) -> None:
        """Shutdown: the iteration ends; deliveries nobody took are left unconsumed (not
        committed: they are delivered again after a restart or rebalance)."""
        self.closed = True
        while not self.queue.empty():
            item = self.queue.get_nowait()
            if isinstance(item, Delivery):
                item.reconsume_later()
        self.queue.put_nowait(_CLOSED)

    async def __aiter__(self) -> AsyncIterator[Delivery]:
        previous: Delivery | None = None
        while True:
            if previous is not None:
                previous.ack()
            item = await self.queue.get()
            if item is _CLOSED:
                self.queue.put_nowait(_CLOSED)  # other iterators end too
                return
            assert isinstance(item, Delivery)
            previous = item
            yield item
