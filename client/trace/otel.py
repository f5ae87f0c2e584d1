"""Trace records as OpenTelemetry spans (ours; the ``otel`` extra): when ``opentelemetry-api``
can be imported, a traced client's dispatcher hands each record here as it leaves its queue,
and it becomes a span of the tracer provider the program set up (none set: the API's no-op).

The spans are 4.9.8's OpenTracing hooks' (SendMessageOpenTracingHookImpl,
ConsumeMessageOpenTracingHookImpl, EndTransactionOpenTracingHookImpl), with their names and
tags, plus OpenTelemetry's messaging attributes:

- a Pub record: ``To_<topic>``, kind PRODUCER, from the send's start for its cost;
- a SubAfter record: ``From_<topic>`` per message, kind CONSUMER, from its SubBefore (the
  listener call) to its end;
- an EndTransaction record: ``EndTransaction``, kind PRODUCER.

A record that did not succeed gets status ERROR. Built off the send and consume paths, in
the dispatcher's task; a failure of the bridge is counted (``errors``) and never raised.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, Final

from aiorocketmq.client.trace.encoder import TraceBean, TraceContext, TraceType

SUB_BEFORE_KEPT: Final = 4096  # SubBefore start times remembered for their SubAfter
_NS: Final = 1_000_000  # ns a ms


def span_listener() -> SpanBridge | None:
    """A bridge to the global tracer provider, or None without opentelemetry-api."""
    try:
        from opentelemetry import trace  # optional: the ``otel`` extra
    except ImportError:
        return None
    return SpanBridge(trace)


class SpanBridge:
    """Called with each record a dispatcher sends (TraceDispatcher.listeners)."""

    def __init__(self, api: Any, provider: Any = None) -> None:
        """``api`` is ``opentelemetry.trace``; ``provider`` a TracerProvider (default: the
        global one, as the program sets it, even later)."""
        self._tracer = (provider or api).get_tracer("aiorocketmq")
        self._kind = api.SpanKind
        self._error = api.Status(api.StatusCode.ERROR)
        self._started: OrderedDict[str, int] = OrderedDict()  # request id -> SubBefore ms
        self.errors = 0

    def __call__(self, ctx: TraceContext) -> None:
        try:
            self._emit(ctx)
        except Exception:  # noqa: BLE001 -- a telemetry failure must not stop the trace task
            self.errors += 1

    def _emit(self, ctx: TraceContext) -> None:
        t = ctx.type
        if t is TraceType.SubBefore:
            self._started[ctx.request_id] = ctx.timestamp
            if len(self._started) > SUB_BEFORE_KEPT:
                self._started.popitem(last=False)
            return
        if t is TraceType.Pub:
            b = ctx.beans[0]
            attrs = _common(ctx, b, "publish")
            attrs["rocketmq.store_host"] = b.store_host
            attrs["rocketmq.body_length"] = b.body_length
            attrs["rocketmq.mgs_type"] = b.msg_type.name if b.msg_type is not None else None
            attrs["rocketmq.region_id"] = ctx.region_id
            start = ctx.timestamp
            self._span(f"To_{b.topic}", self._kind.PRODUCER, start, start + ctx.cost_time,
                       attrs, ctx.success)  # fmt: skip
        elif t is TraceType.SubAfter:
            start = self._started.pop(ctx.request_id, ctx.timestamp - ctx.cost_time)
            for b in ctx.beans:
                attrs = _common(ctx, b, "process")
                attrs["rocketmq.body_length"] = b.body_length
                attrs["rocketmq.retry_times"] = b.retry_times
                attrs["rocketmq.region_id"] = ctx.region_id
                self._span(f"From_{b.topic}", self._kind.CONSUMER, start, ctx.timestamp,
                           attrs, ctx.success)  # fmt: skip
        else:
            b = ctx.beans[0]
            attrs = _common(ctx, b, "settle")
            attrs["rocketmq.store_host"] = b.store_host
            attrs["rocketmq.mgs_type"] = "Trans_msg_Commit"
            attrs["rocketmq.transaction_id"] = b.transaction_id
            attrs["rocketmq.transaction_state"] = b.transaction_state
            attrs["rocketmq.is_from_transaction_check"] = b.from_transaction_check
            self._span("EndTransaction", self._kind.PRODUCER, ctx.timestamp, ctx.timestamp,
                       attrs, ctx.success)  # fmt: skip

    def _span(
        self, name: str, kind: Any, start_ms: int, end_ms: int, attrs: dict[str, Any], ok: bool
    ) -> None:
        clean = {k: v for k, v in attrs.items() if v is not None}
        span = self._tracer.start_span(name, kind=kind, attributes=clean,
                                       start_time=start_ms * _NS)  # fmt: skip
        if not ok:
            span.set_status(self._error)
        span.end(end_time=max(start_ms, end_ms) * _NS)


def _common(ctx: TraceContext, b: TraceBean, operation: str) -> dict[str, Any]:
    """The tags every hook sets (Tags.PEER_SERVICE, MESSAGE_BUS_DESTINATION, TraceConstants'
    rocketmq.*) and OpenTelemetry's messaging attributes."""
    keys = b.keys.split() if b.keys else None
    return {
        "peer.service": "rocketmq",
        "message_bus.destination": b.topic,
        "rocketmq.mgs_id": b.msg_id,
        "rocketmq.tags": b.tags,
        "rocketmq.keys": b.keys,
        "rocketmq.success": ctx.success,
        "messaging.system": "rocketmq",
        "messaging.operation": operation,
        "messaging.destination.name": b.topic,
        "messaging.message.id": b.msg_id,
        "messaging.rocketmq.client_group": ctx.group,
        "messaging.rocketmq.message.tag": b.tags,
        "messaging.rocketmq.message.keys": keys,
    }
