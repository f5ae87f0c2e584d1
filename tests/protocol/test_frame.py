"""Frame codec: FrameDecoder.feed(chunk) -> commands and encode(cmd) -> (head, body).

protocol.md 1 (frame layout, maximum frame, unknown type) and 1.1 (golden frames); design.md 5
(any malformed input raises FrameError and nothing else; bodies copied out as bytes).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import struct
from dataclasses import replace

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aiorocketmq.remoting.errors import FrameError, RemotingCommandError
from aiorocketmq.remoting.protocol.codes import LanguageCode, SerializeType
from aiorocketmq.remoting.protocol.command import RemotingCommand
from aiorocketmq.remoting.protocol.frame import DEFAULT_MAX_FRAME, FrameDecoder, encode
from tests.protocol.test_serialize import GOLDEN_BINARY, GOLDEN_JSON, any_command, route_request

GOLDEN_JSON_FRAME = bytes.fromhex("00000087 00000083") + GOLDEN_JSON
GOLDEN_BINARY_FRAME = bytes.fromhex("0000002d 01000029") + GOLDEN_BINARY

bodies = st.binary(max_size=64)
framed_commands = st.builds(lambda cmd, body: replace(cmd, body=body), any_command, bodies)


def frame(stype: int, header: bytes, body: bytes = b"") -> bytes:
    """A well-formed prefix around arbitrary header bytes."""
    return (
        struct.pack(">II", 4 + len(header) + len(body), stype << 24 | len(header)) + header + body
    )


def wire(cmd: RemotingCommand, max_frame: int = DEFAULT_MAX_FRAME) -> bytes:
    head, body = encode(cmd, max_frame)
    return head + body


def feed_chunks(decoder: FrameDecoder, data: bytes, cuts: list[int]) -> list[RemotingCommand]:
    out: list[RemotingCommand] = []
    start = 0
    for cut in [*sorted(cuts), len(data)]:
        out += decoder.feed(data[start:cut])
        start = cut
    return out


# ---------------------------------------------------------------- golden frames (1.1)


@pytest.mark.parametrize(
    ("stype", "golden"),
    [(SerializeType.JSON, GOLDEN_JSON_FRAME), (SerializeType.ROCKETMQ, GOLDEN_BINARY_FRAME)],
)
def test_golden_frame(stype, golden):
    """protocol.md 1.1: both GET_ROUTEINFO_BY_TOPIC frames decode and encode byte for byte."""
    expected = route_request(stype)
    assert FrameDecoder().feed(golden) == [expected]
    head, body = encode(expected)
    assert (head, body) == (golden, b"")


def test_golden_frame_prefixes():
    """protocol.md 1: length counts 4 + H + B; bytes 4-7 are (type << 24) | H."""
    assert len(GOLDEN_JSON_FRAME) == 4 + 0x87
    assert len(GOLDEN_BINARY_FRAME) == 4 + 0x2D
    cmd = route_request(SerializeType.ROCKETMQ)
    cmd.body = b"xyz"
    head, body = encode(cmd)
    assert head[:8] == bytes.fromhex("00000030 01000029")
    assert body == b"xyz"


def test_language_code_is_java_in_golden():
    """protocol.md 2.4: JAVA is 0 in the binary header and "JAVA" in JSON."""
    assert FrameDecoder().feed(GOLDEN_BINARY_FRAME)[0].language == 0
    assert b'"language":"JAVA"' in GOLDEN_JSON_FRAME
    assert int(LanguageCode.JAVA) == 0


# ---------------------------------------------------------------- round trips and chunking


@settings(max_examples=100)
@given(st.lists(framed_commands, max_size=4))
def test_frames_round_trip_with_bodies(cmds):
    """protocol.md 1: header and body (B = length - 4 - H, maybe 0) survive framing."""
    decoder = FrameDecoder()
    stream = b"".join(wire(c) for c in cmds)
    decoded = decoder.feed(stream)
    assert decoded == cmds
    assert decoder.buffered == 0
    assert all(type(c.body) is bytes for c in decoded)


@settings(max_examples=100)
@given(st.lists(framed_commands, min_size=1, max_size=4), st.data())
def test_any_chunking_gives_same_commands(cmds, data):
    """design.md 5: the decoder takes arbitrary chunks and returns complete commands in order."""
    stream = b"".join(wire(c) for c in cmds)
    cuts = data.draw(st.lists(st.integers(0, len(stream)), max_size=12))
    decoder = FrameDecoder()
    assert feed_chunks(decoder, stream, cuts) == cmds
    assert decoder.buffered == 0


@settings(max_examples=20)
@given(st.lists(framed_commands, min_size=1, max_size=3))
def test_one_byte_chunks(cmds):
    """design.md 5: feeding one byte at a time yields each command when its last byte arrives."""
    stream = b"".join(wire(c) for c in cmds)
    decoder = FrameDecoder()
    out: list[RemotingCommand] = []
    ends = list(itertools.accumulate(len(wire(c)) for c in cmds))
    for i in range(len(stream)):
        got = decoder.feed(stream[i : i + 1])
        assert len(got) == (1 if i + 1 in ends else 0)
        out += got
        assert decoder.buffered == i + 1 - max([0, *(e for e in ends if e <= i + 1)])
    assert out == cmds


def test_bodies_are_copied_out():
    """design.md 5: bodies are bytes, not views pinning the decoder's buffer."""
    cmd = RemotingCommand(code=11, body=b"b" * 100, serialize_type=SerializeType.JSON)
    data = wire(cmd)
    decoder = FrameDecoder()
    assert decoder.feed(data[:50]) == []
    (first,) = decoder.feed(data[50:] + data[:10])
    assert decoder.buffered == 10
    (second,) = decoder.feed(data[10:] + b"\x00" * 3)  # the buffer is rewritten and resized
    assert type(first.body) is bytes
    assert first == second == cmd
    assert decoder.buffered == 3


# ---------------------------------------------------------------- malformed frames (1)


def test_limit_detected_from_prefix_alone():
    """protocol.md 1: a length prefix over 16 MiB is rejected as soon as the prefix arrives."""
    decoder = FrameDecoder()
    over = struct.pack(">I", DEFAULT_MAX_FRAME - 3)  # 4 + length = 16 MiB + 1
    assert decoder.feed(over[:3]) == []
    with pytest.raises(FrameError, match="exceeds"):
        decoder.feed(over[3:])
    at_limit = FrameDecoder()
    assert at_limit.feed(struct.pack(">I", DEFAULT_MAX_FRAME - 4)) == []
    assert at_limit.buffered == 4
    with pytest.raises(FrameError):
        FrameDecoder().feed(b"\xff\xff\xff\xff")


def test_configurable_limit():
    """protocol.md 1: the limit (frameMaxLength) is configurable; it counts prefix + length."""
    body = b"x" * (1024 - 8 - len(GOLDEN_BINARY))
    cmd = route_request(SerializeType.ROCKETMQ)
    cmd.body = body
    exact = wire(cmd)
    assert len(exact) == 1024
    assert FrameDecoder(max_frame=1024).feed(exact) == [cmd]
    cmd.body += b"x"
    with pytest.raises(FrameError):
        FrameDecoder(max_frame=1024).feed(wire(cmd)[:4])


@pytest.mark.parametrize(
    "data",
    [
        struct.pack(">I", 0),
        struct.pack(">I", 3) + b"\x00\x00\x00",
        struct.pack(">II", 4, 1),  # H = 1 but no room for it
        struct.pack(">II", 10, 7) + bytes(6),  # H = 7 > 10 - 4
        frame(7, GOLDEN_JSON),  # unknown serialize type
        frame(3, GOLDEN_JSON),
        frame(255, GOLDEN_JSON),
        frame(0, b"{not json"),
        frame(0, b"[105]"),
        frame(0, b'{"opaque":1}'),
        frame(0, b'{"code":1,"extFields":{"topic":{"a":"b"}}}'),
        frame(0, b""),
        frame(2, b"\xc1"),
        frame(2, msgpack.packb([1, 2, 3])),
        frame(2, msgpack.packb([1, 0, 0, 0, 0, 5, {}])),
        frame(1, GOLDEN_BINARY[:10]),
        frame(1, GOLDEN_BINARY[:-1], b"body"),  # ext block runs into the body: still rejected
        frame(1, GOLDEN_BINARY[:13] + struct.pack(">i", 1000) + GOLDEN_BINARY[17:]),
    ],
)
def test_malformed_frame_raises_frame_error(data):
    """protocol.md 1 + 2: every malformed frame raises FrameError, whole or byte by byte."""
    with pytest.raises(FrameError):
        FrameDecoder().feed(data)
    decoder = FrameDecoder()
    with pytest.raises(FrameError):
        for i in range(len(data)):
            decoder.feed(data[i : i + 1])


def test_bad_frame_after_a_good_one_in_one_chunk():
    """protocol.md 1: any decoding error closes the connection, even after a valid frame."""
    with pytest.raises(FrameError):
        FrameDecoder().feed(GOLDEN_JSON_FRAME + frame(7, b"x"))


# ---------------------------------------------------------------- fuzzing


def _assert_well_typed(cmds: list[RemotingCommand]) -> None:
    for c in cmds:
        assert all(type(v) is int for v in (c.code, c.language, c.version, c.opaque, c.flag))
        assert c.remark is None or type(c.remark) is str
        assert all(type(k) is str and type(v) is str for k, v in c.ext_fields.items())
        assert type(c.body) is bytes


@settings(max_examples=200)
@given(st.binary(max_size=200), st.data())
def test_fuzz_arbitrary_bytes(data, draw):
    """design.md 5: arbitrary bytes in any chunking raise FrameError and nothing else."""
    cuts = draw.draw(st.lists(st.integers(0, len(data)), max_size=6))
    with contextlib.suppress(FrameError):
        _assert_well_typed(feed_chunks(FrameDecoder(), data, cuts))


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=8,
)
json_headers = st.fixed_dictionaries(
    {},
    optional={
        "code": json_values,
        "language": json_values,
        "version": json_values,
        "opaque": json_values,
        "flag": json_values,
        "remark": json_values,
        "extFields": json_values | st.dictionaries(st.text(max_size=4), json_values),
    },
).map(lambda obj: json.dumps(obj).encode())
msgpack_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)
    | st.binary(max_size=4)
    | st.text(max_size=4),
    lambda inner: (
        st.lists(inner, max_size=7)
        | st.dictionaries(st.text(max_size=3) | st.binary(max_size=3), inner, max_size=3)
    ),
    max_leaves=10,
)
msgpack_headers = msgpack_values.map(lambda obj: msgpack.packb(obj, use_bin_type=True))
binary_headers = st.builds(
    lambda fixed, parts: fixed + b"".join(parts),
    st.binary(min_size=13, max_size=13),
    st.lists(
        st.integers(-2, 12).map(lambda n: struct.pack(">i", n))
        | st.integers(-2, 12).map(lambda n: struct.pack(">h", n))
        | st.binary(max_size=6),
        max_size=8,
    ),
)


@settings(max_examples=300)
@given(
    st.integers(0, 3),
    json_headers | msgpack_headers | binary_headers | st.binary(max_size=40),
    bodies,
    st.data(),
)
def test_fuzz_headers_behind_valid_prefix(stype, header, body, draw):
    """design.md 5: a well-framed but arbitrary header of any type raises only FrameError."""
    data = frame(stype, header, body)
    cuts = draw.draw(st.lists(st.integers(0, len(data)), max_size=4))
    try:
        cmds = feed_chunks(FrameDecoder(), data, cuts)
    except FrameError:
        return
    _assert_well_typed(cmds)
    assert len(cmds) == 1
    assert cmds[0].body == body


# ---------------------------------------------------------------- encode errors


def test_encode_code_over_int16_in_binary():
    """protocol.md 2.2: a code over 32767 cannot be framed in ROCKETMQ binary."""
    cmd = RemotingCommand(code=32768, serialize_type=SerializeType.ROCKETMQ)
    with pytest.raises(RemotingCommandError):
        encode(cmd)
    cmd.code = 32767
    assert FrameDecoder().feed(wire(cmd)) == [cmd]


def test_encode_over_max_frame():
    """protocol.md 1: a frame over the maximum cannot be sent (prefix + length counted)."""
    cmd = RemotingCommand(code=1, serialize_type=SerializeType.MSGPACK)
    size = len(wire(cmd))
    cmd.body = b"x" * (1000 - size)
    assert len(wire(cmd, max_frame=1000)) == 1000
    cmd.body += b"x"
    with pytest.raises(RemotingCommandError):
        encode(cmd, max_frame=1000)
    with pytest.raises(RemotingCommandError):
        encode(RemotingCommand(code=1, body=bytes(DEFAULT_MAX_FRAME)))
