"""Message trace (4.9.8's client/trace): a traced producer or consumer (``trace=True``)
writes Java's trace records to the trace topic, where ``mqadmin queryMsgTraceById`` and
Apache's own tools find them; with ``opentelemetry-api`` installed, each record is also an
OpenTelemetry span (``otel``).

``encoder`` is the record format (pure), ``dispatcher`` the queue and the internal producer
that writes the records, ``hooks`` what a client records and when. This package imports the
producer's send path (for the internal producer); the send path knows only its ``SendHook``
protocol, so nothing imports back.
"""

from __future__ import annotations

from aiorocketmq.client.trace.dispatcher import TraceDispatcher, TraceSettings

__all__ = ["TraceDispatcher", "tracing"]


def tracing(
    group: str, kind: str, namesrv: list[str], options: TraceSettings
) -> TraceDispatcher | None:
    """The dispatcher of a client (``kind`` "PRODUCE" or "CONSUME") whose options say
    ``trace``, else None; with opentelemetry-api importable, its records also become spans."""
    if not options.trace:
        return None
    dispatcher = TraceDispatcher(group, kind, namesrv, options)
    from aiorocketmq.client.trace.otel import span_listener  # optional: loaded when tracing

    listener = span_listener()
    if listener is not None:
        dispatcher.listeners.append(listener)
    return dispatcher
