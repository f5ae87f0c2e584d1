"""Message ids, host packing and tags codes.

protocol.md 7.1 (host = address + int32 port), 7.5 (offsetMsgId, UNIQ_KEY) and 8.1 (tags code =
Java's String.hashCode over UTF-16 code units, wrapped to int32; 0 without tags).
"""

from __future__ import annotations

import contextlib
import os
import re
import time
from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aiorocketmq.remoting.errors import MessageDecodeError
from aiorocketmq.remoting.protocol.msgid import (
    UniqKeyGenerator,
    java_hash,
    offset_msg_id,
    pack_host,
    parse_offset_msg_id,
    tags_code,
    unpack_host,
)


def utf16_hash(text: str) -> int:
    """String.hashCode from its definition, with surrogate pairs built by hand."""
    units: list[int] = []
    for ch in text:
        cp = ord(ch)
        if cp > 0xFFFF:
            cp -= 0x10000
            units += (0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3FF))
        else:
            units.append(cp)
    h = 0
    for unit in units:
        h = (31 * h + unit) % 2**32
    return h - 2**32 if h >= 2**31 else h


# ---------------------------------------------------------------- tags code (8.1)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("TagA", 2598919),
        ("TagB", 2598920),
        ("*", 42),
        ("", 0),
        ("hello", 99162322),
        ("polygenelubricants", -(2**31)),  # wraps to Integer.MIN_VALUE
        ("\u00e9", 233),  # é: one UTF-16 unit, two UTF-8 bytes
        ("\u4e2d\u6587", 646394),  # 中文: 0x4E2D * 31 + 0x6587
        ("\U0001f600", 1772899),  # 😀: surrogate pair D83D DE00 -> 0xD83D * 31 + 0xDE00
        ("\ud83d\ude00", 1772899),  # the same two code units, held separately
        ("\ud800", 0xD800),  # a lone surrogate: a JSON "\ud800" escape can carry one
    ],
)
def test_java_hash_examples(text, expected):
    """protocol.md 8.1: h = 31*h + unit over UTF-16 code units, signed 32 bits (TagA 2598919)."""
    assert java_hash(text) == expected
    assert utf16_hash(text) == expected


@settings(max_examples=100)
@given(st.text(st.characters(), max_size=30))  # surrogates included
def test_java_hash_matches_utf16_definition(text):
    """protocol.md 8.1: the tags code for any text, non-BMP included, is String.hashCode."""
    assert java_hash(text) == utf16_hash(text)
    assert -(2**31) <= java_hash(text) < 2**31


def test_tags_code():
    """protocol.md 8.1: the tags code is the hash of TAGS, or 0 without tags."""
    assert tags_code(None) == 0
    assert tags_code("") == 0
    assert tags_code("TagA") == 2598919


# ---------------------------------------------------------------- hosts (7.1)


def test_pack_host():
    """protocol.md 7.1: BORNHOST/STOREHOST are a 4-byte IPv4 (or 16-byte IPv6) + int32 port."""
    assert pack_host("127.0.0.1:50000") == bytes.fromhex("7f000001 0000c350")
    assert pack_host("[::1]:10911") == bytes(15) + b"\x01" + bytes.fromhex("00002a9f")
    assert unpack_host(bytes.fromhex("7f000001 00002a9f")) == "127.0.0.1:10911"
    assert unpack_host(bytes(15) + b"\x01" + bytes.fromhex("00002a9f")) == "[::1]:10911"


@pytest.mark.parametrize(
    "addr", ["", "nonsense", "127.0.0.1", "127.0.0.1:", "127.0.0.1:x", "999.0.0.1:1", "[::g]:1"]
)
def test_pack_host_rejects(addr):
    """protocol.md 7.1: a host must be ip:port; anything else is a ValueError."""
    with pytest.raises(ValueError, match="ip:port"):
        pack_host(addr)


# ---------------------------------------------------------------- offsetMsgId (7.5)


def test_offset_msg_id_example():
    """protocol.md 7.2/7.5: 127.0.0.1:10911 + offset 4096 is 7F00000100002A9F0000000000001000."""
    msg_id = offset_msg_id(pack_host("127.0.0.1:10911"), 4096)
    assert msg_id == "7F00000100002A9F0000000000001000"
    assert parse_offset_msg_id(msg_id) == ("127.0.0.1:10911", 4096)
    assert parse_offset_msg_id(msg_id.lower()) == ("127.0.0.1:10911", 4096)


def test_offset_msg_id_ipv6():
    """protocol.md 7.5: 56 hex characters for IPv6 store hosts."""
    msg_id = offset_msg_id(pack_host("[2001:db8::1]:10911"), 2**40)
    assert msg_id == "20010DB8000000000000000000000001" + "00002A9F" + "0000010000000000"
    assert parse_offset_msg_id(msg_id) == ("[2001:db8::1]:10911", 2**40)


hosts = st.builds(
    lambda ip, port: f"{ip}:{port}" if ip.version == 4 else f"[{ip}]:{port}",
    st.ip_addresses(),
    st.integers(0, 65535),
)


@settings(max_examples=100)
@given(hosts, st.integers(-(2**63), 2**63 - 1))
def test_offset_msg_id_round_trip(host, offset):
    """protocol.md 7.5: uppercase hex of store host + int64 offset; clients decode it back."""
    msg_id = offset_msg_id(pack_host(host), offset)
    assert re.fullmatch(r"[0-9A-F]{32}|[0-9A-F]{56}", msg_id)
    assert len(msg_id) == (56 if host.startswith("[") else 32)
    store, back = parse_offset_msg_id(msg_id)
    assert back == offset
    assert pack_host(store) == pack_host(host)


@pytest.mark.parametrize(
    "msg_id",
    [
        "",
        "xyz",
        "7F00",
        "7F00000100002A9F000000000000100",  # odd length
        "7F00000100002A9F000000000000100000",  # 17 bytes
        "7F00000100002A9F00000000000010G0",  # not hex
        "\u0661" * 32,  # Arabic-Indic digits
        "7F000001" * 5,  # 20 bytes
    ],
)
def test_parse_offset_msg_id_rejects(msg_id):
    """protocol.md 7.5: an id that is not 16 or 28 bytes of hex is a MessageDecodeError."""
    with pytest.raises(MessageDecodeError):
        parse_offset_msg_id(msg_id)


@settings(max_examples=200)
@given(st.text(max_size=60) | st.text("0123456789abcdefABCDEF ", max_size=60))
def test_fuzz_parse_offset_msg_id(msg_id):
    """protocol.md 7.5: garbage ids raise MessageDecodeError and nothing else."""
    with contextlib.suppress(MessageDecodeError):
        store, offset = parse_offset_msg_id(msg_id)
        assert pack_host(store)
        assert -(2**63) <= offset < 2**63


# ---------------------------------------------------------------- UNIQ_KEY (7.5)


def _month_ms(now_ms: int) -> int:
    now = datetime.fromtimestamp(now_ms / 1000, UTC)
    start = now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    return now_ms - int(start.timestamp() * 1000)


def test_uniq_key_layout():
    """protocol.md 7.5: ip(4) + pid(int16) + hash(int32) + ms in month(int32) + counter(int16)."""
    before = time.time_ns() // 1_000_000
    gen = UniqKeyGenerator("10.1.2.3")
    ids = [gen.next() for _ in range(3)]
    after = time.time_ns() // 1_000_000
    assert all(re.fullmatch(r"[0-9A-F]{32}", i) for i in ids)
    assert len(set(ids)) == 3
    assert all(i[:8] == "0A010203" for i in ids)
    assert all(int(i[8:12], 16) == os.getpid() & 0xFFFF for i in ids)
    assert len({i[:20] for i in ids}) == 1  # one generator, one prefix
    counters = [int(i[28:], 16) for i in ids]
    assert counters == [counters[0], counters[0] + 1, counters[0] + 2]
    low, high = _month_ms(before), _month_ms(after)
    if low <= high:  # the month did not roll over during the test
        assert all(low <= int(i[20:28], 16) <= high for i in ids)


def test_uniq_key_default_and_distinct_generators():
    """protocol.md 7.5: 32 uppercase hex characters; successive ids differ."""
    gen = UniqKeyGenerator()
    first, second = gen.next(), gen.next()
    assert re.fullmatch(r"7F000001[0-9A-F]{24}", first)
    assert first != second
    assert UniqKeyGenerator("not-an-ip").next().startswith("7F000001")
