"""Trace records in 4.9.8's text (client/trace/encoder.py against TraceDataEncoder's rules):
golden strings built field by field from encoderFromContextBean, the older shapes
decoderFromTraceDataString still reads, and the dispatcher's bounded queue."""

from __future__ import annotations

from aiorocketmq.client.producer.options import ProducerOptions
from aiorocketmq.client.trace.dispatcher import QUEUE_SIZE, TraceDispatcher
from aiorocketmq.client.trace.encoder import (
    ConsumeReturnType,
    MessageType,
    TraceBean,
    TraceContext,
    TraceType,
    decode,
    encode,
)

C, F = "\x01", "\x02"  # TraceConstants.CONTENT_SPLITOR, FIELD_SPLITOR


def java(*fields: object) -> str:
    """One record as Java's StringBuilder writes it: fields joined by \\x01, then \\x02."""
    return C.join(str(f) for f in fields) + F


def pub() -> TraceContext:
    bean = TraceBean(topic="T", msg_id="7F00000100002A9F0000000000000001", tags="TagA",
                     keys="k1 k2", store_host="127.0.0.1:10911", body_length=11,
                     msg_type=MessageType.Normal_Msg,
                     offset_msg_id="7F00000100002A9F0000000000001234")  # fmt: skip
    return TraceContext(TraceType.Pub, 1700000000123, "DefaultRegion", "pg", 7, True,
                        beans=[bean])  # fmt: skip


def test_pub_golden() -> None:
    """Pub: type, timestamp, regionId, group, topic, msgId, tags, keys, storeHost, bodyLength,
    costTime, msgType ordinal, offsetMsgId, success; the keys are the id and its own keys."""
    text, keys = encode(pub())
    assert text == java("Pub", 1700000000123, "DefaultRegion", "pg", "T",
                        "7F00000100002A9F0000000000000001", "TagA", "k1 k2", "127.0.0.1:10911",
                        11, 7, 0, "7F00000100002A9F0000000000001234", "true")  # fmt: skip
    assert keys == {"7F00000100002A9F0000000000000001", "k1", "k2"}


def test_missing_tags_and_keys_are_written_as_java_writes_null() -> None:
    ctx = pub()
    ctx.beans[0].tags = ctx.beans[0].keys = None
    ctx.success = False
    text, keys = encode(ctx)
    fields = text[:-1].split(C)
    assert (fields[6], fields[7], fields[13]) == ("null", "null", "false")
    assert keys == {"7F00000100002A9F0000000000000001"}


def test_sub_before_and_after_golden() -> None:
    """One record per message of the batch; SubAfter shares the SubBefore's request id, and
    carries the ConsumeReturnType ordinal, then the timestamp and the group."""
    beans = [TraceBean(msg_id="A", keys="ka", retry_times=0), TraceBean(msg_id="B", keys=None,
                                                                        retry_times=2)]  # fmt: skip
    before = TraceContext(TraceType.SubBefore, 5, None, "cg", request_id="REQ", beans=beans)
    after = TraceContext(TraceType.SubAfter, 9, None, "cg", 2, False, request_id="REQ",
                         context_code=int(ConsumeReturnType.FAILED), beans=beans)  # fmt: skip
    assert encode(before)[0] == java("SubBefore", 5, "null", "cg", "REQ", "A", 0, "ka") + java(
        "SubBefore", 5, "null", "cg", "REQ", "B", 2, "null"
    )
    assert encode(after)[0] == java("SubAfter", "REQ", "A", 2, "false", "ka", 4, 9, "cg") + java(
        "SubAfter", "REQ", "B", 2, "false", "null", 4, 9, "cg"
    )
    assert encode(after)[1] == {"A", "B", "ka"}


def test_end_transaction_golden() -> None:
    bean = TraceBean(topic="T", msg_id="ID", tags="t", keys="k", store_host="127.0.0.1:10911",
                     msg_type=MessageType.Trans_msg_Commit, transaction_id="ID",
                     transaction_state="ROLLBACK_MESSAGE", from_transaction_check=True)  # fmt: skip
    ctx = TraceContext(TraceType.EndTransaction, 3, "DefaultRegion", "pg", beans=[bean])
    wanted = java("EndTransaction", 3, "DefaultRegion", "pg", "T", "ID", "t", "k",
                  "127.0.0.1:10911", 2, "ID", "ROLLBACK_MESSAGE", "true")  # fmt: skip
    assert encode(ctx)[0] == wanted


def test_decode_round_trips_and_reads_older_shapes() -> None:
    """decoderFromTraceDataString: every record of a body; a Pub of 13 fields (no
    offsetMsgId) or 15 (a client host), a SubAfter of 7 (before 4.9) are read too."""
    body = encode(pub())[0] + java("SubBefore", 5, "r", "cg", "REQ", "A", 1, "ka")
    body += java("Pub", 1, "r", "pg", "T", "OLD", "t", "k", "h:1", 3, 4, 3, "false")
    body += java("Pub", 1, "r", "pg", "T", "NEW", "t", "k", "h:1", 3, 4, 1, "OFF", "true", "ch")
    body += java("SubAfter", "REQ", "A", 6, "true", "ka", 0)[:-1] + F
    got = decode(body)
    assert [c.type for c in got] == [TraceType.Pub, TraceType.SubBefore, TraceType.Pub,
                                     TraceType.Pub, TraceType.SubAfter]  # fmt: skip
    first = got[0]
    assert (first.timestamp, first.group, first.cost_time, first.success) == (
        1700000000123, "pg", 7, True)  # fmt: skip
    assert first.beans[0].offset_msg_id == "7F00000100002A9F0000000000001234"
    assert (got[1].request_id, got[1].beans[0].retry_times) == ("REQ", 1)
    assert (got[2].beans[0].msg_type, got[2].success) == (MessageType.Delay_Msg, False)
    assert (got[3].beans[0].offset_msg_id, got[3].beans[0].client_host) == ("OFF", "ch")
    assert (got[4].cost_time, got[4].group, got[4].timestamp) == (6, "", 0)
    assert decode("") == [] and decode("Nope" + C + "x" + F) == []


def test_a_full_queue_drops_and_counts() -> None:
    """AsyncTraceDispatcher.append: a full queue refuses the record (counted), never waits."""
    d = TraceDispatcher("g", "PRODUCE", ["127.0.0.1:9876"], ProducerOptions(trace=True))
    for _ in range(QUEUE_SIZE + 5):
        d.append(pub())
    assert (len(d.contexts), d.dropped) == (QUEUE_SIZE, 5)
    assert d.group.startswith("_INNER_TRACE_PRODUCER-g-PRODUCE-")
