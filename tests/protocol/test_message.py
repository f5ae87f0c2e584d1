"""Stored message record, properties string and batch body.

protocol.md 7.1 (record layout, V2 magic, IPv6 hosts), 7.2 (worked example), 7.3 (properties),
7.4 (batch body), 7.6 (compression), 10.1 (sysFlag bits).
"""

from __future__ import annotations

import contextlib
import dataclasses
import struct
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aiorocketmq.remoting.errors import MessageDecodeError
from aiorocketmq.remoting.protocol.batch import BatchItem, decode_batch, encode_batch
from aiorocketmq.remoting.protocol.message import (
    MAGIC_V1,
    MAGIC_V2,
    MessageExt,
    Prop,
    SysFlag,
    decode_properties,
    decode_record,
    decode_records,
    encode_properties,
    encode_record,
)
from aiorocketmq.remoting.protocol.msgid import pack_host, unpack_host

# protocol.md 7.2, field by field
EXAMPLE_HEX = """
000000a5 daa320a7 3610a686 00000001 00000000 0000000000000007 0000000000001000 00000000
0000018bcfe56800 7f000001 0000c350 0000018bcfe5687b 7f000001 00002a9f 00000000
0000000000000000 00000005 68656c6c6f 09 546f70696354657374
003c 4b455953016b310254414753015461674102554e49515f4b455901
374630303030303130433245314236453442324131443443334535463030303102
"""
EXAMPLE_BYTES = bytes.fromhex(EXAMPLE_HEX)
UNIQ = "7F0000010C2E1B6E4B2A1D4C3E5F0001"


def example() -> MessageExt:
    return MessageExt(
        topic="TopicTest",
        body=b"hello",
        properties={"KEYS": "k1", "TAGS": "TagA", "UNIQ_KEY": UNIQ},
        queue_id=1,
        queue_offset=7,
        commit_log_offset=4096,
        born_timestamp=1700000000000,
        born_host="127.0.0.1:50000",
        store_timestamp=1700000000123,
        store_host="127.0.0.1:10911",
    )


# ---------------------------------------------------------------- worked example (7.2)


def test_worked_example_encodes_exactly():
    """protocol.md 7.2: the 165-byte record of the worked example, byte for byte."""
    assert len(EXAMPLE_BYTES) == 165
    assert encode_record(example()) == EXAMPLE_BYTES


def test_worked_example_decodes():
    """protocol.md 7.2: every field decodes; offsetMsgId 7F00000100002A9F0000000000001000."""
    msg = decode_record(EXAMPLE_BYTES)
    assert msg == dataclasses.replace(example(), body_crc=907060870, store_size=165)
    assert msg.msg_id == "7F00000100002A9F0000000000001000"
    assert msg.body_crc == 907060870
    assert msg.tags == "TagA"
    assert msg.keys == ["k1"]
    assert msg.properties[Prop.UNIQ_KEY] == UNIQ


def test_layout_offsets():
    """protocol.md 7.1: total size = 91 + B + T + P; the fixed fields sit at their offsets."""
    rec = EXAMPLE_BYTES
    assert struct.unpack_from(">I", rec, 4)[0] == MAGIC_V1 == 0xDAA320A7
    assert struct.unpack_from(">q", rec, 20)[0] == 7  # QUEUEOFFSET
    assert struct.unpack_from(">q", rec, 28)[0] == 4096  # PHYSICALOFFSET
    assert rec[48:56] == pack_host("127.0.0.1:50000")  # BORNHOST
    assert rec[64:72] == pack_host("127.0.0.1:10911")  # STOREHOST
    assert len(rec) == 91 + 5 + 9 + 60


def test_decode_records_concatenated():
    """protocol.md 7: a pull body is records back to back; each decodes in order."""
    msgs = [dataclasses.replace(example(), body=b"m%d" % i, queue_offset=i) for i in range(4)]
    data = b"".join(encode_record(m) for m in msgs)
    out = decode_records(data)
    assert [(m.body, m.queue_offset) for m in out] == [
        (b"m0", 0),
        (b"m1", 1),
        (b"m2", 2),
        (b"m3", 3),
    ]
    assert decode_record(data, len(EXAMPLE_BYTES) - 3).body == b"m1"  # 2-byte body, not 5
    assert decode_records(b"") == []


def test_inflate_compressed_body():
    """protocol.md 7.6: the broker stores zlib bytes with sysFlag 0x1; pullers inflate them."""
    raw = b"0123456789" * 500
    packed = zlib.compress(raw, 5)
    rec = encode_record(dataclasses.replace(example(), body=packed, sys_flag=SysFlag.COMPRESSED))
    assert decode_record(rec).body == packed
    assert decode_record(rec).body_crc == zlib.crc32(packed) & 0x7FFFFFFF  # over stored bytes
    assert decode_record(rec, inflate=True).body == raw
    assert decode_records(rec + rec, inflate=True)[1].body == raw
    plain = encode_record(dataclasses.replace(example(), body=packed))  # no 0x1: left alone
    assert decode_record(plain, inflate=True).body == packed


def test_inflate_garbage_is_decode_error():
    """protocol.md 7.6: a body flagged compressed that is not zlib is a MessageDecodeError."""
    rec = encode_record(dataclasses.replace(example(), body=b"not zlib", sys_flag=1))
    with pytest.raises(MessageDecodeError):
        decode_record(rec, inflate=True)


def test_v2_magic_record():
    """protocol.md 7.1: V2 magic 0xDAA320AB makes the topic length an int16."""
    v1 = EXAMPLE_BYTES
    topic_at = 84 + 4 + 5
    v2 = (
        struct.pack(">iI", len(v1) + 1, MAGIC_V2)
        + v1[8:topic_at]
        + struct.pack(">h", 9)
        + v1[topic_at + 1 :]
    )
    assert decode_record(v2) == dataclasses.replace(example(), body_crc=907060870, store_size=166)
    long_topic = b"T" * 200  # what V2 is for: topics over 127 bytes
    rest = v2[8:84] + struct.pack(">i", 0) + struct.pack(">h", 200) + long_topic + b"\x00\x00"
    rec = struct.pack(">iI", 8 + len(rest), MAGIC_V2) + rest
    assert decode_record(rec).topic == long_topic.decode()
    assert decode_record(rec).body == b""


def test_ipv6_born_host():
    """protocol.md 7.1 + 10.1: sysFlag 0x10 makes BORNHOST 16 + 4 bytes (0x20: STOREHOST)."""
    msg = dataclasses.replace(example(), born_host="[2001:db8::7]:50000")
    rec = encode_record(msg)
    assert len(rec) == 165 + 12
    assert struct.unpack_from(">i", rec, 36)[0] == SysFlag.BORNHOST_V6 == 0x10
    assert rec[48:68] == bytes.fromhex("20010db8000000000000000000000007 0000c350")
    back = decode_record(rec)
    assert back.born_host == "[2001:db8::7]:50000"
    assert back.store_host == "127.0.0.1:10911"
    assert back.msg_id == "7F00000100002A9F0000000000001000"
    both = decode_record(encode_record(dataclasses.replace(msg, store_host="[::1]:10911")))
    assert both.sys_flag == 0x30
    assert both.msg_id == "00000000000000000000000000000001" + "00002A9F" + "0000000000001000"


def test_v6_flags_follow_the_addresses():
    """protocol.md 10.1: the writer sets 0x10/0x20 from the hosts, keeping the other bits."""
    msg = dataclasses.replace(example(), sys_flag=0x30 | SysFlag.TRANSACTION_COMMIT | 0x1)
    assert decode_record(encode_record(msg)).sys_flag == 0x9


def test_topic_and_properties_limits():
    """protocol.md 7.1: TOPIC length is int8 (<= 127), PROPERTIES int16 (<= 32767)."""
    longest = encode_record(dataclasses.replace(example(), topic="t" * 127))
    assert longest[93] == 127
    assert decode_record(longest).topic == "t" * 127
    with pytest.raises(ValueError, match="topic"):
        encode_record(dataclasses.replace(example(), topic="t" * 128))
    with pytest.raises(ValueError, match="topic"):
        encode_record(dataclasses.replace(example(), topic="\u00e9" * 64))  # 128 UTF-8 bytes
    fits = {"k": "v" * (32767 - 3)}  # "k" \x01 "v..." \x02 = 32767 bytes
    assert (
        decode_record(encode_record(dataclasses.replace(example(), properties=fits))).properties
        == fits
    )
    with pytest.raises(ValueError, match="properties"):
        encode_record(dataclasses.replace(example(), properties={"k": "v" * (32767 - 2)}))
    with pytest.raises(ValueError):
        encode_record(dataclasses.replace(example(), born_host="localhost:1"))


@pytest.mark.parametrize(
    "data",
    [
        EXAMPLE_BYTES[:47],
        EXAMPLE_BYTES[:-1],
        EXAMPLE_BYTES[:4] + b"\xda\xa3\x20\xa8" + EXAMPLE_BYTES[8:],  # bad magic
        struct.pack(">i", 166) + EXAMPLE_BYTES[4:] + b"\x00",  # one stray byte
        struct.pack(">i", 40) + EXAMPLE_BYTES[4:],  # size below the fixed part
        struct.pack(">i", -1) + EXAMPLE_BYTES[4:],
        EXAMPLE_BYTES[:84] + struct.pack(">i", 500) + EXAMPLE_BYTES[88:],  # body past record
        EXAMPLE_BYTES[:84] + struct.pack(">i", -5) + EXAMPLE_BYTES[88:],
        EXAMPLE_BYTES[:93] + b"\x7f" + EXAMPLE_BYTES[94:],  # topic past record
        EXAMPLE_BYTES[:94] + b"\xff" + EXAMPLE_BYTES[95:],  # topic not UTF-8
        EXAMPLE_BYTES + EXAMPLE_BYTES[:50],  # second record truncated (decode_records)
    ],
)
def test_malformed_records(data):
    """protocol.md 7.1: malformed record bytes raise MessageDecodeError, nothing else."""
    with pytest.raises(MessageDecodeError):
        decode_records(data)


# ---------------------------------------------------------------- properties (7.3)


def test_properties_string():
    """protocol.md 7.3: name U+0001 value U+0002 for every pair, the last one included."""
    assert encode_properties({}) == ""
    assert (
        encode_properties({"TAGS": "TagA", "KEYS": "k1 k2"}) == "TAGS\x01TagA\x02KEYS\x01k1 k2\x02"
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (None, {}),
        ("", {}),
        ("A\x011\x02", {"A": "1"}),
        ("A\x011", {"A": "1"}),  # no trailing separator
        ("A\x011\x02\x02\x02B\x012\x02", {"A": "1", "B": "2"}),  # empty pairs
        ("\x01x\x02A\x011\x02", {"A": "1"}),  # empty name
        ("A\x01\x02B\x012\x02", {"B": "2"}),  # empty value
        ("A\x02B\x012\x02", {"B": "2"}),  # no value separator
        ("A\x011\x012\x02B\x01b\x02", {"B": "b"}),  # two value separators
        ("A\x011\x02A\x012\x02", {"A": "2"}),  # the last one wins
    ],
)
def test_properties_decode_skips_malformed(text, expected):
    """protocol.md 7.3: readers skip empty names and values, and malformed pairs."""
    assert decode_properties(text) == expected


prop_text = st.text(
    st.characters(codec="utf-8", exclude_characters="\x01\x02"), min_size=1, max_size=8
)


@settings(max_examples=100)
@given(st.dictionaries(prop_text, prop_text, max_size=5))
def test_properties_round_trip(props):
    """protocol.md 7.3: keys and values without U+0001/U+0002 survive; order does not matter."""
    text = encode_properties(props)
    assert text.count("\x02") == len(props)
    assert decode_properties(text) == props


# ---------------------------------------------------------------- record round trip


INT32 = st.integers(-(2**31), 2**31 - 1)
INT64 = st.integers(-(2**63), 2**63 - 1)
hosts = st.builds(
    lambda ip, port: f"{ip}:{port}" if ip.version == 4 else f"[{ip}]:{port}",
    st.ip_addresses(),
    st.integers(0, 65535),
)
messages = st.builds(
    MessageExt,
    topic=st.text(max_size=31),  # <= 124 UTF-8 bytes
    body=st.binary(max_size=64),
    flag=INT32,
    properties=st.dictionaries(prop_text, prop_text, max_size=4),
    queue_id=INT32,
    sys_flag=st.integers(0, 0x3FF),
    born_timestamp=INT64,
    born_host=hosts,
    store_timestamp=INT64,
    store_host=hosts,
    reconsume_times=INT32,
    prepared_transaction_offset=INT64,
    queue_offset=INT64,
    commit_log_offset=INT64,
)


@settings(max_examples=100)
@given(messages)
def test_record_round_trip(msg):
    """protocol.md 7.1: decode(encode(m)) gives m, with sizes, CRC and host flags computed."""
    rec = encode_record(msg)
    v6 = (0x10 if msg.born_host.startswith("[") else 0) | (
        0x20 if msg.store_host.startswith("[") else 0
    )
    expected = dataclasses.replace(
        msg,
        sys_flag=(msg.sys_flag & ~0x30) | v6,
        born_host=unpack_host(pack_host(msg.born_host)),
        store_host=unpack_host(pack_host(msg.store_host)),
        body_crc=zlib.crc32(msg.body) & 0x7FFFFFFF,
        store_size=len(rec),
    )
    assert decode_record(rec) == expected
    props = encode_properties(msg.properties).encode()
    extra = 12 * bin(v6).count("1")  # each IPv6 host adds 12 address bytes
    assert len(rec) == 91 + len(msg.body) + len(msg.topic.encode()) + len(props) + extra


@settings(max_examples=200)
@given(st.binary(max_size=300), st.booleans())
def test_fuzz_records(data, inflate):
    """protocol.md 7.1: arbitrary bytes raise MessageDecodeError and nothing else."""
    with contextlib.suppress(MessageDecodeError):
        assert all(type(m) is MessageExt for m in decode_records(data, inflate=inflate))


@settings(max_examples=200)
@given(st.integers(0, 164), st.integers(0, 255), st.booleans())
def test_fuzz_mutated_record(at, value, inflate):
    """protocol.md 7.1: a record with any byte changed decodes or raises MessageDecodeError."""
    data = bytearray(EXAMPLE_BYTES)
    data[at] = value
    with contextlib.suppress(MessageDecodeError):
        assert all(type(m) is MessageExt for m in decode_records(bytes(data), inflate=inflate))


def test_every_truncation_fails():
    """protocol.md 7.1: a record cut at any byte is a MessageDecodeError, never a short message."""
    for cut in range(len(EXAMPLE_BYTES)):
        with pytest.raises(MessageDecodeError):
            decode_record(EXAMPLE_BYTES[:cut])
        with pytest.raises(MessageDecodeError):
            decode_records(EXAMPLE_BYTES + EXAMPLE_BYTES[:cut]) if cut else decode_record(b"")


# ---------------------------------------------------------------- batch body (7.4)


def test_batch_item_layout():
    """protocol.md 7.4: size | magic 0 | bodyCRC 0 | flag | bodyLen | body | propsLen | props."""
    data = encode_batch([BatchItem(b"hi", 3, "a\x01b\x02")])
    assert data == bytes.fromhex("0000001c 00000000 00000000 00000003 00000002 6869 0004 61016202")
    assert decode_batch(data) == [BatchItem(b"hi", 3, "a\x01b\x02")]
    assert encode_batch([]) == b""
    assert decode_batch(b"") == []


@settings(max_examples=100)
@given(
    st.lists(st.builds(BatchItem, st.binary(max_size=32), INT32, st.text(max_size=16)), max_size=5)
)
def test_batch_round_trip(items):
    """protocol.md 7.4: the messages are concatenated; decode gives them back in order."""
    data = encode_batch(items)
    assert len(data) == sum(22 + len(i.body) + len(i.properties.encode()) for i in items)
    assert decode_batch(data) == items


@pytest.mark.parametrize(
    "data",
    [
        bytes.fromhex("0000001c 00000000 00000000 00000003 00000002 6869 0004 610162"),
        bytes.fromhex("00000015 00000000 00000000 00000003 00000000 00"),  # size < 22
        bytes.fromhex("0000001c 00000000 00000000 00000003 00000009 6869 0004 61016202"),
        bytes.fromhex("0000001c 00000000 00000000 00000003 00000002 6869 0009 61016202"),
        bytes.fromhex("0000001d 00000000 00000000 00000003 00000002 6869 0004 61016202 00"),
        bytes.fromhex("0000001c 00000000 00000000 00000003 00000002 6869 0004 ff016202"),
        bytes.fromhex("000000"),
    ],
)
def test_malformed_batch(data):
    """protocol.md 7.4: a malformed batch body raises MessageDecodeError."""
    with pytest.raises(MessageDecodeError):
        decode_batch(data)


@settings(max_examples=200)
@given(st.binary(max_size=120))
def test_fuzz_batch(data):
    """protocol.md 7.4: arbitrary bytes raise MessageDecodeError and nothing else."""
    try:
        items = decode_batch(data)
    except MessageDecodeError:
        return
    assert len(encode_batch(items)) == len(data)  # magic and CRC are ignored, the rest re-encodes
