"""Blocking facades for programs without asyncio: ``aiorocketmq.client.sync.Producer``,
``aiorocketmq.client.sync.TransactionProducer`` and ``aiorocketmq.client.sync.PushConsumer`` /
``aiorocketmq.client.sync.PullConsumer`` have the async classes' methods, run on one event-loop
thread this module starts on first use and shares between every facade of the process.

    with client.sync.Producer("my_group", namesrv_addr="127.0.0.1:9876") as producer:
        producer.send(Message("Topic", b"hello"))

or ``start()`` / ``shutdown()`` (RocketMQ's names). Safe to call from any number of threads.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import (
    AsyncIterator,
    Callable,
    Coroutine,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from typing import Any, Literal, TypeVar, Unpack, overload

from aiorocketmq.client.consumer.lite.consumer import PullConsumer as AsyncPullConsumer
from aiorocketmq.client.consumer.lite.options import PullOptions
from aiorocketmq.client.consumer.lite.raw import RawPull
from aiorocketmq.client.consumer.push.consume import is_async
from aiorocketmq.client.consumer.push.consumer import PushConsumer as AsyncPushConsumer
from aiorocketmq.client.consumer.push.iteration import Delivery
from aiorocketmq.client.consumer.selector import MessageSelector
from aiorocketmq.client.consumer.types import ConcurrentListener, OrderlyListener, PushOptions
from aiorocketmq.client.core.api import SendStatus
from aiorocketmq.client.core.message import Message, MessageQueue, SendResult
from aiorocketmq.client.core.timer import RecallHandle
from aiorocketmq.client.producer.options import ProducerSettings
from aiorocketmq.client.producer.producer import Producer as AsyncProducer
from aiorocketmq.client.producer.producer import Selector
from aiorocketmq.client.producer.transaction import TransactionProducer as AsyncTransactionProducer
from aiorocketmq.client.producer.transaction_types import (
    LocalTransactionState,
    TransactionListener,
    TransactionSendResult,
    as_state,
)
from aiorocketmq.remoting.protocol.message import MessageExt

T = TypeVar("T")

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None


def _background_loop() -> asyncio.AbstractEventLoop:
    """The shared loop, started on a daemon thread the first time it is needed."""
    global _loop
    with _lock:
        if _loop is None:
            loop = asyncio.new_event_loop()
            thread = threading.Thread(target=loop.run_forever, name="rocketmq-client", daemon=True)
            thread.start()
            _loop = loop
        return _loop


def run(coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
    """Run ``coro`` on the shared loop and wait for its result."""
    return asyncio.run_coroutine_threadsafe(coro, _background_loop()).result(timeout)


class Producer:
    """The async Producer's methods, blocking. Options as ``Producer``'s keywords
    (ProducerSettings)."""

    def __init__(
        self, group: str, namesrv_addr: str | None = None, **options: Unpack[ProducerSettings]
    ) -> None:
        self._producer = AsyncProducer(group, namesrv_addr, **options)

    @property
    def group(self) -> str:
        return self._producer.group

    def start(self) -> None:
        run(self._producer.start())

    def shutdown(self) -> None:
        run(self._producer.shutdown())

    def __enter__(self) -> Producer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()

    def send(
        self, msg: Message, *, selector: Selector | None = None, arg: object = None,
        queue: MessageQueue | None = None, timeout_ms: int | None = None,
    ) -> SendResult:  # fmt: skip
        return run(
            self._producer.send(msg, selector=selector, arg=arg, queue=queue, timeout_ms=timeout_ms)
        )

    def send_orderly(self, msg: Message, key: object) -> SendResult:
        return run(self._producer.send_orderly(msg, key))

    def send_oneway(self, msg: Message) -> None:
        run(self._producer.send_oneway(msg))

    def send_batch(self, msgs: Sequence[Message]) -> SendResult:
        return run(self._producer.send_batch(msgs))

    def request(
        self, msg: Message, timeout_ms: int = 3000, *, selector: Selector | None = None,
        arg: object = None, queue: MessageQueue | None = None,
    ) -> MessageExt:  # fmt: skip
        """Send ``msg`` as a request and wait for its reply (``Producer.request``)."""
        return run(self._producer.request(msg, timeout_ms, selector=selector, arg=arg, queue=queue))

    def send_reply(
        self, request: MessageExt, body: bytes, *, timeout_ms: int | None = None
    ) -> SendResult:
        """Answer a request a consumer received (``Producer.send_reply``)."""
        return run(self._producer.send_reply(request, body, timeout_ms=timeout_ms))

    def recall(
        self, topic: str, handle: str | RecallHandle | SendResult, *, timeout_ms: int | None = None
    ) -> str:
        """Cancel a timer message that still waits; the recalled message's id
        (``Producer.recall``)."""
        return run(self._producer.recall(topic, handle, timeout_ms=timeout_ms))


class TransactionProducer(Producer):
    """The async TransactionProducer, blocking. A plain ``execute_local_transaction`` runs
    in the thread that calls ``send_message_in_transaction`` (as in Java), an ``async def``
    one on the shared loop; check-backs are answered as the async class does."""

    def __init__(
        self, group: str, listener: TransactionListener, namesrv_addr: str | None = None, *,
        check_thread_pool_max_size: int = 1, check_request_hold_max: int = 2000,
        **options: Unpack[ProducerSettings],
    ) -> None:  # fmt: skip
        self._tx = AsyncTransactionProducer(
            group, listener, namesrv_addr, check_thread_pool_max_size=check_thread_pool_max_size,
            check_request_hold_max=check_request_hold_max, **options,
        )  # fmt: skip
        self._producer = self._tx

    def __enter__(self) -> TransactionProducer:
        self.start()
        return self

    def send_message_in_transaction(
        self, msg: Message, arg: object = None
    ) -> TransactionSendResult:
        fn = self._tx.listener.execute_local_transaction
        if is_async(fn):
            return run(self._tx.send_message_in_transaction(msg, arg))
        half, sent = run(self._tx.send_half(msg))
        state, error = LocalTransactionState.ROLLBACK_MESSAGE, None
        if sent.status is SendStatus.SEND_OK:
            try:
                state = as_state(fn(half, arg))
            except Exception as exc:  # noqa: BLE001 - Java catches Throwable: UNKNOW
                state, error = LocalTransactionState.UNKNOW, exc
        return run(self._tx.finish(half, sent, state, error))


class PushConsumer:
    """The async PushConsumer, blocking: listeners (plain functions run in its thread pool,
    ``async def`` on the shared loop) or ``for delivery in consumer`` with ``ack()``."""

    def __init__(
        self, group: str, namesrv_addr: str | None = None, **options: Unpack[PushOptions]
    ) -> None:
        self._consumer = AsyncPushConsumer(group, namesrv_addr, **options)

    @property
    def group(self) -> str:
        return self._consumer.group

    def subscribe(self, topic: str, expression: str | MessageSelector = "*") -> None:
        run(_on_loop(self._consumer.subscribe, topic, expression))

    @overload
    def register_message_listener(
        self, listener: ConcurrentListener, *, orderly: Literal[False] = False
    ) -> None: ...
    @overload
    def register_message_listener(
        self, listener: OrderlyListener, *, orderly: Literal[True]
    ) -> None: ...
    def register_message_listener(
        self, listener: ConcurrentListener | OrderlyListener, *, orderly: bool = False
    ) -> None:
        # the overloads above pair the listener with ``orderly``, as the async class's do
        self._consumer.register_message_listener(listener, orderly=orderly)  # type: ignore[call-overload]

    def start(self) -> None:
        run(self._consumer.start())

    def shutdown(self) -> None:
        run(self._consumer.shutdown())

    def __enter__(self) -> PushConsumer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()

    def __iter__(self) -> Iterator[SyncDelivery]:
        """Deliveries until shutdown; ``ack()`` / ``reconsume_later()`` each (moving on acks)."""
        loop = _background_loop()
        it = run(_aiter(self._consumer))
        while True:
            try:
                delivery = run(_next(it))
            except StopAsyncIteration:
                return
            yield SyncDelivery(delivery, loop)


async def _on_loop(fn: Callable[..., None], *args: object) -> None:
    fn(*args)


async def _next(it: AsyncIterator[Delivery]) -> Delivery:
    return await anext(it)


async def _aiter(consumer: AsyncPushConsumer) -> AsyncIterator[Delivery]:
    return consumer.__aiter__()


class SyncDelivery:
    """A Delivery settled from any thread."""

    def __init__(self, delivery: Delivery, loop: asyncio.AbstractEventLoop) -> None:
        self.delivery = delivery
        self.message = delivery.message
        self.queue = delivery.queue
        self._loop = loop

    def ack(self) -> None:
        self._loop.call_soon_threadsafe(self.delivery.ack)

    def reconsume_later(self) -> None:
        self._loop.call_soon_threadsafe(self.delivery.reconsume_later)


async def _call(fn: Callable[..., T], *args: Any) -> T:
    """A plain method of an async client, run on the shared loop (it may start tasks)."""
    return fn(*args)


class PullConsumer:
    """The async PullConsumer's methods, blocking. Options as ``client.PullConsumer``;
    ``poll`` may be called from any thread."""

    def __init__(
        self, group: str, namesrv_addr: str | None = None, **options: Unpack[PullOptions]
    ) -> None:
        self._c = AsyncPullConsumer(group, namesrv_addr, **options)

    @property
    def group(self) -> str:
        return self._c.group

    def start(self) -> None:
        run(self._c.start())

    def shutdown(self) -> None:
        run(self._c.shutdown())

    def __enter__(self) -> PullConsumer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()

    def subscribe(self, topic: str, expression: str | MessageSelector = "*") -> None:
        run(_call(self._c.subscribe, topic, expression))

    def unsubscribe(self, topic: str) -> None:
        run(_call(self._c.unsubscribe, topic))

    def assign(self, queues: Iterable[MessageQueue]) -> None:
        run(_call(self._c.assign, list(queues)))

    def set_sub_expression_for_assign(self, topic: str, expression: str) -> None:
        run(_call(self._c.set_sub_expression_for_assign, topic, expression))

    def assignment(self) -> set[MessageQueue]:
        return run(_call(self._c.assignment))

    def fetch_message_queues(self, topic: str) -> list[MessageQueue]:
        return run(self._c.fetch_message_queues(topic))

    def poll(self, timeout: float | None = None) -> list[MessageExt]:
        return run(self._c.poll(timeout))

    def pause(self, queues: Iterable[MessageQueue]) -> None:
        run(_call(self._c.pause, list(queues)))

    def resume(self, queues: Iterable[MessageQueue]) -> None:
        run(_call(self._c.resume, list(queues)))

    def commit(
        self, offsets: Mapping[MessageQueue, int] | None = None, *, persist: bool = True
    ) -> None:
        run(self._c.commit(offsets, persist=persist))

    def committed(self, queue: MessageQueue) -> int:
        return run(self._c.committed(queue))

    def seek(self, queue: MessageQueue, offset: int) -> None:
        run(self._c.seek(queue, offset))

    def seek_to_begin(self, queue: MessageQueue) -> None:
        run(self._c.seek_to_begin(queue))

    def seek_to_end(self, queue: MessageQueue) -> None:
        run(self._c.seek_to_end(queue))

    def min_offset(self, queue: MessageQueue) -> int:
        return run(self._c.min_offset(queue))

    def max_offset(self, queue: MessageQueue) -> int:
        return run(self._c.max_offset(queue))

    def offset_for_timestamp(self, queue: MessageQueue, timestamp_ms: int) -> int:
        return run(self._c.offset_for_timestamp(queue, timestamp_ms))

    def offsets_for_times(self, timestamps: Mapping[MessageQueue, int]) -> dict[MessageQueue, int]:
        return run(self._c.offsets_for_times(timestamps))

    def pull_raw(
        self, queue: MessageQueue, offset: int, max_nums: int | None = None,
        timeout: float | None = None, *, expression: str | MessageSelector = "*",
        suspend_ms: int = 0,
    ) -> RawPull:  # fmt: skip
        return run(self._c.pull_raw(queue, offset, max_nums, timeout, expression=expression,
                                    suspend_ms=suspend_ms))  # fmt: skip
