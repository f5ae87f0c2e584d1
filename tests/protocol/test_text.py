"""Text a peer sends must be storable (issue 12 item 3): a JSON ``\\ud800`` escape decodes
to a lone surrogate, which no later write of shared state could encode. Header decoders and
body parsers must refuse such text at the edge; everything else decodes as before."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aiorocketmq.remoting.errors import FrameError
from aiorocketmq.remoting.protocol import fastjson, text
from aiorocketmq.remoting.protocol.command import RemotingCommand
from aiorocketmq.remoting.protocol.serialize import (
    decode_json,
    decode_msgpack,
    decode_rocketmq,
    encode_json,
    encode_msgpack,
    encode_rocketmq,
)

# any code point, surrogates included (hypothesis leaves them out of text() by default)
ANY_TEXT = st.text(alphabet=st.characters(blacklist_categories=()), max_size=8)


def json_header(ext: dict[str, str], remark: str | None = None) -> bytes:
    """What a peer may put on the wire: ASCII JSON with \\u escapes for everything else."""
    obj: dict[str, object] = {"code": 10, "opaque": 5, "flag": 0, "extFields": ext}
    if remark is not None:
        obj["remark"] = remark
    return json.dumps(obj, ensure_ascii=True).encode()


@settings(max_examples=300)
@given(st.dictionaries(ANY_TEXT, ANY_TEXT, max_size=4), st.none() | ANY_TEXT)
def test_json_headers_with_unencodable_text_are_refused_not_dropped(
    ext: dict[str, str], remark: str | None
) -> None:
    """Any JSON header decodes; one carrying a lone surrogate in an ext key or value is marked
    refused (answered with an error, never handled), and what remains of it -- which a
    response is built from -- always encodes again."""
    cmd = decode_json(json_header(ext, remark))
    bad = any(text.unencodable(k) or text.unencodable(v) for k, v in ext.items())
    assert (cmd.refusal is not None) == bad
    if cmd.refusal is not None:
        cmd.refusal.encode()  # the remark we answer with is itself writable
    else:
        assert cmd.ext_fields == ext
    encode_json(cmd)  # never raises: nothing unencodable survives decoding
    if remark is not None and not text.unencodable(remark):
        assert cmd.remark == remark


@given(st.binary(max_size=12))
def test_binary_and_msgpack_headers_hold_only_valid_text(raw: bytes) -> None:
    """The ROCKETMQ and msgpack decoders are strict UTF-8: bytes that are not text are a
    FrameError; what decodes always encodes again."""
    header = RemotingCommand(code=10, ext_fields={"k": "v"}, remark="r")
    binary = bytearray(encode_rocketmq(header))
    binary[17:18] = raw[:1] or b"r"  # the remark's one byte
    for decode, data in ((decode_rocketmq, bytes(binary)), (decode_msgpack, raw)):
        try:
            cmd = decode(data)
        except FrameError:
            continue
        encode_msgpack(cmd)
        encode_rocketmq(cmd) if cmd.code <= 0x7FFF else None


def test_a_surrogate_pair_is_text_and_a_lone_surrogate_is_not() -> None:
    r"""A valid pair (\ud83d\ude00) decodes to one character and is kept; a lone half is
    refused, in headers and in bodies (text.loads and fastjson.loads)."""
    assert decode_json(json_header({"k": "\U0001f600"})).refusal is None
    assert decode_json(b'{"code":1,"extFields":{"k":"\\ud83d\\ude00"}}').ext_fields == {
        "k": "\U0001f600"
    }
    assert decode_json(b'{"code":1,"extFields":{"k":"\\ud800"}}').refusal is not None
    for loads in (text.loads, fastjson.loads):
        assert loads(b'{"a":["\\ud83d\\ude00"]}') == {"a": ["\U0001f600"]}
        with pytest.raises(ValueError, match="not valid UTF-8"):
            loads(b'{"a":[{"b":"\\udfff"}]}')
        with pytest.raises(ValueError, match="not valid UTF-8"):
            loads(b'{"\\ud800":1}')


def test_refused_header_keeps_its_frame_fields() -> None:
    """The refusal is answered on the same opaque, in the same header type."""
    cmd = decode_json(b'{"code":34,"opaque":77,"extFields":{"consumerGroup":"\\ud800"}}')
    assert (cmd.code, cmd.opaque, cmd.serialize_type) == (34, 77, 0)
    assert "consumerGroup" in (cmd.refusal or "")
