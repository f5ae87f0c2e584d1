"""Trace records as OpenTelemetry spans (ours; client/trace/otel.py, the ``otel`` extra):
4.9.8's OpenTracing hooks' span names and tags, OpenTelemetry's messaging attributes, the
times of the records. Skipped without opentelemetry-sdk (the dev extra has it)."""

from __future__ import annotations

from typing import Any

import pytest

from aiorocketmq.client.trace.encoder import MessageType, TraceBean, TraceContext, TraceType
from aiorocketmq.client.trace.otel import SpanBridge

sdk_trace = pytest.importorskip("opentelemetry.sdk.trace")
export = pytest.importorskip("opentelemetry.sdk.trace.export")
in_memory = pytest.importorskip("opentelemetry.sdk.trace.export.in_memory_span_exporter")
api = pytest.importorskip("opentelemetry.trace")

MS = 1_000_000


def recorder() -> tuple[SpanBridge, Any]:
    exporter = in_memory.InMemorySpanExporter()
    provider = sdk_trace.TracerProvider()
    provider.add_span_processor(export.SimpleSpanProcessor(exporter))
    return SpanBridge(api, provider), exporter


def test_pub_sub_and_end_transaction_become_spans() -> None:
    bridge, exporter = recorder()
    bean = TraceBean(topic="T", msg_id="ID1", tags="TagA", keys="k1 k2", store_host="h:1",
                     body_length=5, msg_type=MessageType.Normal_Msg)  # fmt: skip
    bridge(TraceContext(TraceType.Pub, 1000, "DefaultRegion", "pg", 7, True, beans=[bean]))
    consumed = [TraceBean(topic="T", msg_id="ID1", keys="k1 k2", retry_times=1)]
    bridge(TraceContext(TraceType.SubBefore, 2000, None, "cg", request_id="R", beans=consumed))
    bridge(TraceContext(TraceType.SubAfter, 2050, None, "cg", 50, False, request_id="R",
                        context_code=4, beans=consumed))  # fmt: skip
    end = TraceBean(
        topic="T",
        msg_id="ID1",
        transaction_id="ID1",
        transaction_state="COMMIT_MESSAGE",
        msg_type=MessageType.Trans_msg_Commit,
    )
    bridge(TraceContext(TraceType.EndTransaction, 3000, "DefaultRegion", "pg", beans=[end]))
    spans = {s.name: s for s in exporter.get_finished_spans()}
    assert set(spans) == {"To_T", "From_T", "EndTransaction"}
    send, process, settle = spans["To_T"], spans["From_T"], spans["EndTransaction"]
    assert (send.kind, send.start_time, send.end_time) == (
        api.SpanKind.PRODUCER,
        1000 * MS,
        1007 * MS,
    )
    wanted = {
        "messaging.system": "rocketmq",
        "messaging.destination.name": "T",
        "messaging.message.id": "ID1",
        "messaging.rocketmq.client_group": "pg",
        "messaging.rocketmq.message.tag": "TagA",
        "messaging.rocketmq.message.keys": ("k1", "k2"),
        "rocketmq.store_host": "h:1",
        "rocketmq.body_length": 5,
        "rocketmq.mgs_type": "Normal_Msg",
        "rocketmq.region_id": "DefaultRegion",
        "rocketmq.success": True,
    }
    assert wanted.items() <= dict(send.attributes).items()
    assert send.status.is_ok
    # the consumption: from the SubBefore (the listener call's start) to the SubAfter, failed
    assert (process.kind, process.start_time, process.end_time) == (
        api.SpanKind.CONSUMER, 2000 * MS, 2050 * MS)  # fmt: skip
    assert process.status.status_code is api.StatusCode.ERROR
    assert process.attributes["rocketmq.retry_times"] == 1
    assert "rocketmq.region_id" not in process.attributes  # null in the record: left out
    assert settle.attributes["rocketmq.transaction_state"] == "COMMIT_MESSAGE"
    assert bridge.errors == 0


def test_a_failing_tracer_is_counted_never_raised() -> None:
    class Broken:
        def get_tracer(self, name: str) -> Any:
            return self

        def start_span(self, *args: object, **kwargs: object) -> Any:
            raise RuntimeError("exporter down")

    bridge = SpanBridge(api, Broken())
    bridge(TraceContext(TraceType.Pub, 1, "r", "g", beans=[TraceBean(topic="T")]))
    assert bridge.errors == 1
