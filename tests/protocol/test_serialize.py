"""Header codecs: JSON (type 0), ROCKETMQ binary (type 1), msgpack (type 2).

protocol.md 2.1 (JSON), 2.2 (binary), 1 (unknown type); design.md 5 (msgpack, FrameError only).
The command strategies here are shared with test_frame.py.
"""

from __future__ import annotations

import json
import struct

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aiorocketmq.remoting.errors import FrameError, RemotingCommandError
from aiorocketmq.remoting.protocol.codes import LanguageCode, SerializeType
from aiorocketmq.remoting.protocol.command import RemotingCommand
from aiorocketmq.remoting.protocol.serialize import (
    decode_header,
    decode_json,
    decode_msgpack,
    decode_rocketmq,
    encode_header,
    encode_json,
    encode_msgpack,
    encode_rocketmq,
)

INT32 = st.integers(-(2**31), 2**31 - 1)
INT16 = st.integers(-(2**15), 2**15 - 1)
TEXT = st.text(max_size=12)
NONEMPTY = st.text(min_size=1, max_size=12)

json_commands = st.builds(
    RemotingCommand,
    code=INT32,
    language=st.sampled_from(list(LanguageCode)),  # JSON carries the name (2.4)
    version=INT32,
    opaque=INT32,
    flag=INT32,
    remark=st.none() | TEXT,
    ext_fields=st.dictionaries(TEXT, TEXT, max_size=4),
    serialize_type=st.just(SerializeType.JSON),
)
# a zero-length string reads as null (2.2): no empty remark, keys or values in the round trip
binary_commands = st.builds(
    RemotingCommand,
    code=INT16,
    language=st.integers(0, 127),
    version=INT16,
    opaque=INT32,
    flag=INT32,
    remark=st.none() | NONEMPTY,
    ext_fields=st.dictionaries(NONEMPTY, NONEMPTY, max_size=4),
    serialize_type=st.just(SerializeType.ROCKETMQ),
)
msgpack_commands = st.builds(
    RemotingCommand,
    code=INT32,
    language=st.integers(0, 127),
    version=INT32,
    opaque=INT32,
    flag=INT32,
    remark=st.none() | TEXT,
    ext_fields=st.dictionaries(TEXT, TEXT, max_size=4),
    serialize_type=st.just(SerializeType.MSGPACK),
)
any_command = st.one_of(json_commands, binary_commands, msgpack_commands)

GOLDEN_JSON = (
    b'{"code":105,"extFields":{"topic":"TopicTest"},"flag":0,"language":"JAVA","opaque":1,'
    b'"serializeTypeCurrentRPC":"JSON","version":479}'
)
GOLDEN_BINARY = bytes.fromhex(
    "0069 00 01df 00000001 00000000 00000000 00000014 0005 746f706963 00000009 546f70696354657374"
)


def route_request(serialize_type: int) -> RemotingCommand:
    return RemotingCommand(
        code=105,
        language=LanguageCode.JAVA,
        version=479,
        opaque=1,
        ext_fields={"topic": "TopicTest"},
        serialize_type=serialize_type,
    )


def binary_header(
    code: int = 105, remark: bytes = b"", ext: bytes = b"", *, rlen: int | None = None
) -> bytes:
    fixed = struct.pack(">hbhii", code, 0, 479, 1, 0)
    rl = len(remark) if rlen is None else rlen
    return fixed + struct.pack(">i", rl) + remark + struct.pack(">i", len(ext)) + ext


def ext_entry(k: bytes, v: bytes) -> bytes:
    return struct.pack(">h", len(k)) + k + struct.pack(">i", len(v)) + v


# ---------------------------------------------------------------- round trips


@settings(max_examples=150)
@given(any_command)
def test_every_header_type_round_trips(cmd):
    """protocol.md 2.1/2.2, design.md 5: decode(encode(header)) is the same command."""
    assert decode_header(cmd.serialize_type, memoryview(encode_header(cmd))) == cmd


def test_golden_json_header():
    """protocol.md 1.1: the JSON GET_ROUTEINFO_BY_TOPIC header, byte for byte, both ways."""
    assert len(GOLDEN_JSON) == 131
    assert encode_json(route_request(SerializeType.JSON)) == GOLDEN_JSON
    assert decode_json(GOLDEN_JSON) == route_request(SerializeType.JSON)


def test_golden_binary_header():
    """protocol.md 1.1: the 41-byte ROCKETMQ header, byte for byte, both ways."""
    assert len(GOLDEN_BINARY) == 41
    assert encode_rocketmq(route_request(SerializeType.ROCKETMQ)) == GOLDEN_BINARY
    assert decode_rocketmq(GOLDEN_BINARY) == route_request(SerializeType.ROCKETMQ)


# ---------------------------------------------------------------- JSON specifics (2.1)


def test_json_ext_numbers_and_booleans_become_text():
    """protocol.md 2.1: ext values may arrive as numbers or booleans (ali-ons: "d":4,"k":false)."""
    cmd = decode_json(b'{"code":310,"extFields":{"a":"pg","d":4,"k":false,"x":true,"n":-7}}')
    assert cmd.ext_fields == {"a": "pg", "d": "4", "k": "false", "x": "true", "n": "-7"}


def test_json_only_code_is_required():
    """protocol.md 2.1: readers require no key but code; everything else has a default."""
    cmd = decode_json(b'{"code":34}')
    assert cmd == RemotingCommand(
        code=34,
        language=LanguageCode.JAVA,
        version=0,
        opaque=0,
        flag=0,
        remark=None,
        ext_fields={},
        serialize_type=SerializeType.JSON,
    )


def test_json_go_client_shape_and_unknown_keys():
    """protocol.md 2.1: "remark":"", another language, no serializeTypeCurrentRPC, unknown keys."""
    cmd = decode_json(
        b'{"code":11,"language":"GO","opaque":0,"flag":2,"remark":"","version":317,'
        b'"somethingNew":{"x":[1,2]},"extFields":null}'
    )
    assert (cmd.code, cmd.language, cmd.flag, cmd.remark, cmd.version) == (11, 9, 2, "", 317)
    assert cmd.ext_fields == {}


def test_json_unknown_language_name_is_other():
    """protocol.md 2.4: an unknown language name reads as LanguageCode.OTHER."""
    assert decode_json(b'{"code":1,"language":"COBOL"}').language == LanguageCode.OTHER


def test_json_output_shape():
    """protocol.md 2.1: ext values written as strings, keys sorted, no null remark, no empty ext."""
    bare = RemotingCommand(code=0, language=LanguageCode.GO, version=409, opaque=-5, flag=1)
    assert encode_json(bare) == (
        b'{"code":0,"flag":1,"language":"GO","opaque":-5,'
        b'"serializeTypeCurrentRPC":"JSON","version":409}'
    )
    full = RemotingCommand(
        code=17, opaque=3, remark="r\u00e9", ext_fields={"z": "1", "a": "true", "m": ""}
    )
    assert (
        encode_json(full)
        == (
            '{"code":17,"extFields":{"a":"true","m":"","z":"1"},"flag":0,"language":"PYTHON",'
            '"opaque":3,"remark":"r\u00e9","serializeTypeCurrentRPC":"JSON","version":409}'
        ).encode()
    )


def test_json_unnamed_language_is_written_as_other():
    """protocol.md 2.4: JSON carries the language name; a number without a name goes as OTHER."""
    assert b'"language":"OTHER"' in encode_json(RemotingCommand(code=1, language=99))


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"{",
        b'{"code":1',
        b"\xff\xfe\x00",
        b"[1,2]",
        b'"code"',
        b"105",
        b"null",
        b'{"opaque":1}',
        b'{"code":"105"}',
        b'{"code":1.5}',
        b'{"code":true}',
        b'{"code":2147483648}',
        b'{"code":1,"opaque":-2147483649}',
        b'{"code":1,"extFields":{"k":{"nested":"object"}}}',
        b'{"code":1,"extFields":{"k":[1]}}',
        b'{"code":1,"extFields":["k","v"]}',
        b'{"code":1,"extFields":"k=v"}',
        b'{"code":1,"remark":5}',
        b'{"code":1,"language":["JAVA"]}',
        b"[" * 100_000,
    ],
)
def test_json_malformed_raises_frame_error(data):
    """protocol.md 2.1 + design.md 5: a JSON header that is not a valid command is FrameError."""
    with pytest.raises(FrameError):
        decode_header(SerializeType.JSON, memoryview(data))


# ---------------------------------------------------------------- binary specifics (2.2)


def test_binary_zero_length_strings_read_as_null():
    """protocol.md 2.2: a length of 0 decodes as null: empty remark/ext values do not survive."""
    cmd = RemotingCommand(
        code=1,
        remark="",
        ext_fields={"keep": "v", "empty": "", "": "no-key"},
        serialize_type=SerializeType.ROCKETMQ,
    )
    back = decode_rocketmq(encode_rocketmq(cmd))
    assert back.remark is None
    assert back.ext_fields == {"keep": "v"}


def test_binary_code_over_int16_cannot_be_encoded():
    """protocol.md 2.2: codes above 32767 (POP, 200050) do not fit int16 and must use JSON."""
    cmd = RemotingCommand(code=200050, serialize_type=SerializeType.ROCKETMQ)
    with pytest.raises(RemotingCommandError):
        encode_header(cmd)
    cmd.serialize_type = SerializeType.JSON
    assert decode_json(encode_header(cmd)).code == 200050


def test_binary_key_over_int16_cannot_be_encoded():
    """protocol.md 2.2: an ext key length is an int16; a longer key is a RemotingCommandError."""
    cmd = RemotingCommand(code=1, ext_fields={"k" * 40_000: "v"}, serialize_type=1)
    with pytest.raises(RemotingCommandError):
        encode_header(cmd)


@pytest.mark.parametrize("stype", list(SerializeType))
def test_unencodable_text_is_a_command_error(stype):
    """design.md 5: encoding raises RemotingCommandError (here: a lone surrogate, not UTF-8)."""
    for cmd in (
        RemotingCommand(code=1, remark="\ud800", serialize_type=stype),
        RemotingCommand(code=1, ext_fields={"k": "\udfff"}, serialize_type=stype),
    ):
        with pytest.raises(RemotingCommandError):
            encode_header(cmd)


@pytest.mark.parametrize(
    "data",
    [
        b"",
        GOLDEN_BINARY[:12],  # inside the fixed fields
        GOLDEN_BINARY[:16],  # inside the remark length
        GOLDEN_BINARY[:19],  # inside the ext block length
        GOLDEN_BINARY[:-1],  # ext block runs past the header
        GOLDEN_BINARY[:-12],  # cut inside an entry
        binary_header(remark=b"abc", rlen=40),  # remark length past the header
        binary_header(rlen=-1),  # negative remark length
        binary_header(remark=b"\xff\xfe"),  # remark not UTF-8
        binary_header(ext=ext_entry(b"k", b"v"))[:-1],  # ext block past the end
        binary_header(ext=struct.pack(">h", -2) + b"k" + struct.pack(">i", 1) + b"v"),
        binary_header(ext=struct.pack(">h", 1) + b"k" + struct.pack(">i", -1)),
        binary_header(ext=struct.pack(">h", 1) + b"k" + struct.pack(">i", 9) + b"v"),
        binary_header(ext=struct.pack(">h", 5) + b"k"),  # key past its block
        binary_header(ext=struct.pack(">h", 1) + b"k" + b"\x00\x00"),  # value length cut
        binary_header(ext=ext_entry(b"\xc3", b"v")),  # key not UTF-8
        binary_header(ext=ext_entry(b"k", b"\x80")),  # value not UTF-8
    ],
)
def test_binary_malformed_raises_frame_error(data):
    """protocol.md 2.2: reject a truncated header, or a remark/ext block longer than the header."""
    with pytest.raises(FrameError):
        decode_header(SerializeType.ROCKETMQ, memoryview(data))


def test_binary_ext_block_length_past_header():
    """protocol.md 2.2: reject an ext block longer than the header."""
    data = binary_header(ext=ext_entry(b"k", b"v"))
    bad = data[:17] + struct.pack(">i", 100) + data[21:]
    with pytest.raises(FrameError, match="ext block"):
        decode_rocketmq(bad)


# ---------------------------------------------------------------- msgpack (type 2, ours)


def test_msgpack_layout():
    """design.md 5: type 2 is one array [code, language, version, opaque, flag, remark, {ext}]."""
    cmd = RemotingCommand(code=105, opaque=7, remark=None, ext_fields={"topic": "T"})
    assert msgpack.unpackb(encode_msgpack(cmd)) == [105, 3, 409, 7, 0, None, {"topic": "T"}]
    assert decode_msgpack(encode_msgpack(cmd)) == cmd


@pytest.mark.parametrize(
    "obj",
    [
        [1, 0, 0, 0, 0, None],  # 6 elements
        [1, 0, 0, 0, 0, None, {}, 0],  # 8 elements
        {"code": 1},
        "header",
        ["1", 0, 0, 0, 0, None, {}],
        [1, 0, 0, 0, 0, b"remark", {}],
        [1, 0, 0, 0, 0, None, []],
        [1, 0, 0, 0, 0, None, {"k": 1}],
        [1, 0, 0, 0, 0, None, {"k": None}],
        [1, 0, 0, 0, 0, None, {b"k": "v"}],  # bin key: ext_fields is dict[str, str]
        [1.0, 0, 0, 0, 0, None, {}],
        [True, 0, 0, 0, 0, None, {}],
        [2**31, 0, 0, 0, 0, None, {}],
        [1, 0, 0, -(2**31) - 1, 0, None, {}],
        [1, 0, 0, 0, 2**32, None, {}],
    ],
)
def test_msgpack_wrong_shape_or_types_raise_frame_error(obj):
    """design.md 5: a msgpack header of the wrong shape or field types is FrameError."""
    data = msgpack.packb(obj, use_bin_type=True)
    with pytest.raises(FrameError):
        decode_header(SerializeType.MSGPACK, memoryview(data))


@pytest.mark.parametrize(
    "data", [b"", b"\xc1", b"\x97\x01", b"\x97\x01\x00", b"\xdd\xff\xff\xff\xff"]
)
def test_msgpack_invalid_raises_frame_error(data):
    """design.md 5: bytes that are not msgpack (reserved 0xc1, truncated arrays) are FrameError."""
    with pytest.raises(FrameError):
        decode_header(SerializeType.MSGPACK, memoryview(data))


# ---------------------------------------------------------------- dispatch by type


@pytest.mark.parametrize("stype", [3, 7, 255])
def test_unknown_serialize_type(stype):
    """protocol.md 1: an unknown type byte is a framing error; encoding one is a command error."""
    with pytest.raises(FrameError):
        decode_header(stype, memoryview(GOLDEN_JSON))
    with pytest.raises(RemotingCommandError):
        encode_header(RemotingCommand(code=1, serialize_type=stype))


def test_serialize_type_numbers():
    """protocol.md 1: type 0 is JSON, 1 ROCKETMQ; design.md 5: 2 is our msgpack."""
    assert [int(t) for t in SerializeType] == [0, 1, 2]
    assert [t.name for t in SerializeType] == ["JSON", "ROCKETMQ", "MSGPACK"]
    assert json.loads(encode_json(RemotingCommand(code=1)))["serializeTypeCurrentRPC"] == "JSON"
