"""TracedListener: a push consumer's listener with message trace around each call
(ConsumeMessageConcurrentlyService / ConsumeMessageOrderlyService running
ConsumeMessageTraceHookImpl): a SubBefore record before the call, a SubAfter record after it
with the call's outcome (ConsumeReturnType) and cost."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

from aiorocketmq.client.consumer.push.consume import Listener
from aiorocketmq.client.consumer.types import ConsumeOrderlyStatus, ConsumerOptions, ConsumeStatus
from aiorocketmq.client.trace.encoder import ConsumeReturnType
from aiorocketmq.client.trace.hooks import ConsumeTrace
from aiorocketmq.remoting.protocol.message import MessageExt

SUCCESS = (ConsumeStatus.CONSUME_SUCCESS, ConsumeOrderlyStatus.SUCCESS)


class TracedListener(Listener):
    def __init__(
        self, fn: Callable[..., Any], options: ConsumerOptions, trace: ConsumeTrace
    ) -> None:
        super().__init__(fn, options)
        self.trace = trace
        self._timeout = options.consume_timeout * 60.0  # s: a longer call is TIME_OUT

    def call(self, msgs: list[MessageExt], ctx: object) -> Awaitable[Any]:
        return self._traced(msgs, ctx)

    async def _traced(self, msgs: list[MessageExt], ctx: object) -> Any:
        before = self.trace.before(msgs)
        begin = time.monotonic()
        try:
            status = await super().call(msgs, ctx)
        except Exception:
            self.trace.after(before, len(msgs), False, ConsumeReturnType.EXCEPTION)
            raise
        ok = status in SUCCESS
        if status is None:
            code = ConsumeReturnType.RETURNNULL
        elif time.monotonic() - begin >= self._timeout:
            code = ConsumeReturnType.TIME_OUT
        else:
            code = ConsumeReturnType.SUCCESS if ok else ConsumeReturnType.FAILED
        self.trace.after(before, len(msgs), ok, code)
        return status
