"""Blocking facades for programs without asyncio: ``client.sync.Producer`` has the async
Producer's methods, run on one event-loop thread this module starts on first use and shares
between every facade of the process.

    with client.sync.Producer("my_group", namesrv_addr="127.0.0.1:9876") as producer:
        producer.send(Message("Topic", b"hello"))

or ``start()`` / ``shutdown()`` (RocketMQ's names). Safe to call from any number of threads.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine, Sequence
from typing import Any, TypeVar

from client.message import Message, MessageQueue, SendResult
from client.producer import Producer as AsyncProducer
from client.producer import Selector

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
    """The async Producer's methods, blocking. Options as ``client.Producer``."""

    def __init__(self, group: str, namesrv_addr: str | None = None, **options: object) -> None:
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
