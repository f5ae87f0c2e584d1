"""Typed headers <-> extFields: Header.from_ext / to_ext and SendMessageHeader's two key sets.

protocol.md 2.5 (extFields: values are toString() text, missing required field is an error
naming it, unknown keys ignored) and 5.1 (SEND_MESSAGE long names, V2 one-letter keys).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aiorocketmq.remoting.errors import RemotingCommandError
from aiorocketmq.remoting.protocol.codes import RequestCode
from aiorocketmq.remoting.protocol.headers.base import Header, wire
from aiorocketmq.remoting.protocol.headers.send import SendMessageHeader, SendMessageResponseHeader
from aiorocketmq.remoting.protocol.serialize import decode_json

PROPS = "KEYS\x01o-17\x02TAGS\x01created\x02WAIT\x01true\x02"

# protocol.md 5.1, "Example V2 request", as it appears on the wire
EXAMPLE_V2_FRAME_HEADER = (
    b'{"code":310,"extFields":{"a":"pg_orders","b":"Orders","c":"TBW102","d":"4","e":"2",'
    b'"f":"0","g":"1732300000000","h":"0",'
    b'"i":"KEYS\\u0001o-17\\u0002TAGS\\u0001created\\u0002WAIT\\u0001true\\u0002",'
    b'"j":"0","k":"false","m":"false"},"flag":0,"language":"JAVA","opaque":42,'
    b'"serializeTypeCurrentRPC":"JSON","version":409}'
)
EXAMPLE_V2_EXT = {
    "a": "pg_orders",
    "b": "Orders",
    "c": "TBW102",
    "d": "4",
    "e": "2",
    "f": "0",
    "g": "1732300000000",
    "h": "0",
    "i": PROPS,
    "j": "0",
    "k": "false",
    "m": "false",
}
EXAMPLE_V1_EXT = {
    "producerGroup": "pg_orders",
    "topic": "Orders",
    "defaultTopic": "TBW102",
    "defaultTopicQueueNums": "4",
    "queueId": "2",
    "sysFlag": "0",
    "bornTimestamp": "1732300000000",
    "flag": "0",
    "properties": PROPS,
    "reconsumeTimes": "0",
    "unitMode": "false",
    "batch": "false",
}
EXAMPLE = SendMessageHeader(
    producer_group="pg_orders",
    topic="Orders",
    default_topic="TBW102",
    default_topic_queue_nums=4,
    queue_id=2,
    sys_flag=0,
    born_timestamp=1732300000000,
    flag=0,
    properties=PROPS,
    reconsume_times=0,
    unit_mode=False,
    max_reconsume_times=None,
    batch=False,
    broker_name=None,
)
V2_REQUIRED = ["a", "b", "c", "d", "e", "f", "g", "h"]
V1_REQUIRED = [
    "producerGroup",
    "topic",
    "defaultTopic",
    "defaultTopicQueueNums",
    "queueId",
    "sysFlag",
    "bornTimestamp",
    "flag",
]


def test_v2_example_from_the_wire():
    """protocol.md 5.1: the example SEND_MESSAGE_V2 request decodes to every field."""
    cmd = decode_json(EXAMPLE_V2_FRAME_HEADER)
    assert cmd.code == RequestCode.SEND_MESSAGE_V2
    assert cmd.opaque == 42
    assert cmd.ext_fields == EXAMPLE_V2_EXT
    assert SendMessageHeader.from_ext(cmd.ext_fields, v2=True) == EXAMPLE


def test_v2_example_round_trip():
    """protocol.md 5.1: to_ext(v2=True) writes exactly the one-letter keys the example carries."""
    assert SendMessageHeader.from_ext(EXAMPLE_V2_EXT, v2=True).to_ext(v2=True) == EXAMPLE_V2_EXT


def test_ali_ons_numbers_and_booleans():
    """protocol.md 2.1 + 5.1: ali-ons sends "d":4,"k":false; the header reads them as 4, False."""
    cmd = decode_json(
        EXAMPLE_V2_FRAME_HEADER.replace(b'"d":"4"', b'"d":4').replace(b'"k":"false"', b'"k":false')
    )
    assert SendMessageHeader.from_ext(cmd.ext_fields, v2=True) == EXAMPLE


def test_long_names_for_code_10():
    """protocol.md 5.1: SEND_MESSAGE (10) carries the same header under the long field names."""
    assert SendMessageHeader.from_ext(EXAMPLE_V1_EXT) == EXAMPLE
    assert EXAMPLE.to_ext() == EXAMPLE_V1_EXT


def test_key_sets_are_distinct():
    """protocol.md 5.1: long names are not read as V2 keys, nor V2 keys as long names."""
    with pytest.raises(RemotingCommandError, match="<a>"):
        SendMessageHeader.from_ext(EXAMPLE_V1_EXT, v2=True)
    with pytest.raises(RemotingCommandError, match="<producerGroup>"):
        SendMessageHeader.from_ext(EXAMPLE_V2_EXT)


def test_optional_fields_written_when_set():
    """protocol.md 5.1: l (maxReconsumeTimes), m (batch) and n (brokerName) when present."""
    header = dataclasses.replace(EXAMPLE, max_reconsume_times=16, batch=True, broker_name="b-0")
    ext = header.to_ext(v2=True)
    assert (ext["l"], ext["m"], ext["n"]) == ("16", "true", "b-0")
    assert header.to_ext()["maxReconsumeTimes"] == "16"
    assert header.to_ext()["brokerName"] == "b-0"
    assert SendMessageHeader.from_ext(ext, v2=True) == header


def test_absent_optional_fields_take_defaults():
    """protocol.md 2.5: non-required fields may be absent (None, or the primitive's default)."""
    ext = {k: EXAMPLE_V2_EXT[k] for k in V2_REQUIRED}
    header = SendMessageHeader.from_ext(ext, v2=True)
    assert (header.properties, header.reconsume_times, header.max_reconsume_times) == (None,) * 3
    assert (header.unit_mode, header.batch, header.broker_name) == (False, False, None)
    assert header.to_ext(v2=True) == {**ext, "k": "false", "m": "false"}


@pytest.mark.parametrize(
    ("ext", "v2", "missing"),
    [(EXAMPLE_V2_EXT, True, k) for k in V2_REQUIRED]
    + [(EXAMPLE_V1_EXT, False, k) for k in V1_REQUIRED],
)
def test_missing_required_field_names_it(ext, v2, missing):
    """protocol.md 2.5: a missing required field is an error whose text names the field."""
    partial = {k: v for k, v in ext.items() if k != missing}
    with pytest.raises(RemotingCommandError) as info:
        SendMessageHeader.from_ext(partial, v2=v2)
    assert str(info.value) == f"the custom field <{missing}> is null"


@pytest.mark.parametrize(
    ("wire_key", "text"),
    [("d", "four"), ("e", ""), ("g", "1.5e12"), ("h", "0x10"), ("j", "zero"), ("l", "-")],
)
def test_unparsable_int_is_a_command_error(wire_key, text):
    """protocol.md 2.5: numbers parse with int/long semantics; anything else is an error."""
    ext = {**EXAMPLE_V2_EXT, wire_key: text}
    with pytest.raises(RemotingCommandError, match=f"<{wire_key}>"):
        SendMessageHeader.from_ext(ext, v2=True)


def test_negative_numbers_parse():
    """protocol.md 5.1: a negative queueId (broker picks a queue) is a valid int."""
    header = SendMessageHeader.from_ext({**EXAMPLE_V2_EXT, "e": "-1", "h": "-2147483648"}, v2=True)
    assert (header.queue_id, header.flag) == (-1, -(2**31))


def test_unknown_keys_ignored():
    """protocol.md 2.5: 5.x clients add bname, ns, nsd, oway, lo; ACL adds AccessKey etc."""
    extra = {"bname": "broker-a", "ns": "", "nsd": "false", "oway": "true", "lo": "x"}
    extra |= {"AccessKey": "ak", "Signature": "s", "OnsChannel": "ALIYUN"}
    assert SendMessageHeader.from_ext({**EXAMPLE_V2_EXT, **extra}, v2=True) == EXAMPLE


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("true", True),
        ("TRUE", True),
        ("True", True),
        ("tRuE", True),
        ("false", False),
        ("FALSE", False),
        ("1", False),
        ("yes", False),
        ("t", False),
        ("", False),
        (" true", False),
    ],
)
def test_bools_parse_like_java(text, value):
    """protocol.md 2.5: booleans parse as Java's Boolean.parseBoolean (only "true", any case)."""
    header = SendMessageHeader.from_ext({**EXAMPLE_V2_EXT, "k": text, "m": text}, v2=True)
    assert (header.unit_mode, header.batch) == (value, value)


def test_send_response_header():
    """protocol.md 5.1: response extFields msgId, queueId, queueOffset, MSG_REGION, TRACE_ON."""
    ext = {
        "msgId": "7F00000100002A9F0000000000001000",
        "queueId": "1",
        "queueOffset": "7",
        "MSG_REGION": "DefaultRegion",
        "TRACE_ON": "true",
    }
    header = SendMessageResponseHeader.from_ext(ext)
    assert header == SendMessageResponseHeader(
        msg_id="7F00000100002A9F0000000000001000",
        queue_id=1,
        queue_offset=7,
        msg_region="DefaultRegion",
        trace_on="true",
    )
    assert header.transaction_id is None
    assert header.to_ext() == ext


INT64 = st.integers(-(2**63), 2**63 - 1)
INT32 = st.integers(-(2**31), 2**31 - 1)
send_headers = st.builds(
    SendMessageHeader,
    producer_group=st.text(max_size=10),
    topic=st.text(max_size=10),
    default_topic=st.text(max_size=10),
    default_topic_queue_nums=INT32,
    queue_id=INT32,
    sys_flag=INT32,
    born_timestamp=INT64,
    flag=INT32,
    properties=st.none() | st.text(max_size=10),
    reconsume_times=st.none() | INT32,
    unit_mode=st.booleans(),
    max_reconsume_times=st.none() | INT32,
    batch=st.booleans(),
    broker_name=st.none() | st.text(max_size=10),
)


@settings(max_examples=100)
@given(send_headers, st.booleans())
def test_send_header_round_trips(header, v2):
    """protocol.md 2.5 + 5.1: to_ext writes text (None left out); from_ext reads it back."""
    ext = header.to_ext(v2=v2)
    assert all(type(v) is str for v in ext.values())
    assert len(ext) == 10 + sum(
        getattr(header, f) is not None
        for f in ("properties", "reconsume_times", "max_reconsume_times", "broker_name")
    )
    assert SendMessageHeader.from_ext(ext, v2=v2) == header


@pytest.mark.parametrize("key", ["f", "h", "j", "l", "e", "d"])
@pytest.mark.parametrize("value", [2**31, -(2**31) - 1, 2**63 - 1])
def test_java_integer_fields_refuse_values_outside_int32(key: str, value: int) -> None:
    """Issue 12: sysFlag, flag, reconsumeTimes, queueId ... are Java Integers: a value
    outside int32 is a clean RemotingCommandError naming the field (it reached the record
    encoder before, and a struct error leaked into the remark)."""
    ext = {"a": "g", "b": "T", "c": "TBW102", "d": "4", "e": "0", "f": "0", "g": "1", "h": "0",
           key: str(value)}  # fmt: skip
    with pytest.raises(RemotingCommandError, match=f"<{key}> is invalid"):
        SendMessageHeader.from_ext(ext, v2=True)
    ext[key] = str(2**31 - 1)
    assert SendMessageHeader.from_ext(ext, v2=True).to_ext(v2=True)[key] == str(2**31 - 1)


@pytest.mark.parametrize("text", [" 4", "4 ", "1_000", "0x10", "", "9223372036854775808"])
def test_ints_parse_like_java(text: str) -> None:
    """protocol.md 2.5: numbers parse with Java's int/long semantics (no spaces, no '_',
    within int64); anything else is a RemotingCommandError naming the field."""
    ext = {"topic": "T", "queueId": text}
    with pytest.raises(RemotingCommandError, match="queueId"):
        _QueueHeader.from_ext(ext)
    assert _QueueHeader.from_ext({"topic": "T", "queueId": "+7"}).queue_id == 7
    assert _QueueHeader.from_ext({"topic": "T", "queueId": "-9223372036854775808"}).queue_id < 0


@dataclass(frozen=True, slots=True, kw_only=True)
class _QueueHeader(Header):
    topic: str = field(metadata=wire("topic"))
    queue_id: int = field(metadata=wire("queueId"))
