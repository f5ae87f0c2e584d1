"""The header fast paths (issue 20) against plain references of the rules they implement.

Typed headers parse numbers inline (Java's Integer.parseInt / Long.parseLong: sign and ASCII
digits only, within range; protocol.md 2.5) and are filled in without the frozen ``__init__``;
the JSON codec (protocol.md 2.1) reads the usual header without ``json.loads``'s wrapper, checks
for lone surrogates only when some kept text is not ASCII, and writes the top level directly;
the ROCKETMQ decoder (2.2) reads plain ext entries in one pass. Each test compares with a
straightforward reading of the rule on generated input.
"""

from __future__ import annotations

import dataclasses
import json
import re
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aiorocketmq.remoting.errors import FrameError, RemotingCommandError
from aiorocketmq.remoting.protocol import serialize
from aiorocketmq.remoting.protocol.codes import LanguageCode, ResponseCode
from aiorocketmq.remoting.protocol.command import RemotingCommand
from aiorocketmq.remoting.protocol.headers.consumer import PullMessageRequestHeader
from aiorocketmq.remoting.protocol.headers.send import SendMessageHeader, SendMessageResponseHeader
from aiorocketmq.remoting.protocol.text import unencodable

V2_EXT = {"a": "g", "b": "T", "c": "TBW102", "d": "4", "e": "0", "f": "0", "g": "1", "h": "0"}
BOUNDS = [str(n + d) for n in (2**31, -(2**31), 2**63, -(2**63), 10**9, 10**18) for d in (-1, 0)]
NUMBER_TEXT = st.one_of(
    st.integers(-(2**65), 2**65).map(str),
    st.sampled_from([*BOUNDS, "0000000001", "+0", "-0", "+", "", "1_0", " 1", "1 ", "1e3"]),
    # digits Python's int() reads and Java's parseInt refuses: Arabic-Indic, superscript, fullwidth
    st.text(alphabet="0123456789+- _\u0663\u00b2\uff11\u0660", max_size=21),
)


def java_number(wire: str, text: str, bits: int) -> int | str:
    """Integer.parseInt / Long.parseLong, and the error text naming the field."""
    if not re.fullmatch(r"[+-]?[0-9]+", text):
        return f"the custom field <{wire}> is invalid: {text!r}"
    value = int(text)
    if not -(2**63) <= value < 2**63:
        return f"the custom field <{wire}> is invalid: {text!r}"
    if not -(2 ** (bits - 1)) <= value < 2 ** (bits - 1):
        return f"the custom field <{wire}> is invalid: {str(value)!r}"
    return value


def decoded(ext: dict[str, str], attr: str) -> int | str:
    try:
        return int(getattr(SendMessageHeader.from_ext(ext, v2=True), attr))
    except RemotingCommandError as exc:
        return str(exc)


@settings(max_examples=300)
@given(NUMBER_TEXT)
def test_number_fields_parse_as_java_does(text: str) -> None:
    """Required Integer (queueId "e"), required Long (bornTimestamp "g") and optional Integer
    (reconsumeTimes "j") fields accept exactly what Java accepts, with the same values."""
    assert decoded({**V2_EXT, "e": text}, "queue_id") == java_number("e", text, 32)
    assert decoded({**V2_EXT, "g": text}, "born_timestamp") == java_number("g", text, 64)
    assert decoded({**V2_EXT, "j": text}, "reconsume_times") == java_number("j", text, 32)


def any_case(word: str) -> st.SearchStrategy[str]:
    return st.tuples(*(st.sampled_from([c, c.upper()]) for c in word)).map("".join)


@given(any_case("true") | any_case("false") | st.text(alphabet="tTrRuUeEfFaAlLsS ", max_size=6))
def test_bool_fields_parse_as_java_does(text: str) -> None:
    """Boolean.parseBoolean: "true" in any case, anything else false (also the fast spellings)."""
    header = SendMessageHeader.from_ext({**V2_EXT, "k": text, "m": text}, v2=True)
    assert header.unit_mode is header.batch is (text.lower() == "true")


def reference_ext(header: object, v2: bool) -> list[tuple[str, str]]:
    """to_ext as protocol.md 2.5 has it: fields in order, None left out, values as text."""
    out = []
    for f in dataclasses.fields(header):  # type: ignore[arg-type]
        value = getattr(header, f.name)
        if value is not None:
            key = f.metadata.get("v2", f.metadata["key"]) if v2 else f.metadata["key"]
            out.append((key, ("true" if value else "false") if type(value) is bool else str(value)))
    return out


INT32 = st.integers(-(2**31), 2**31 - 1)
send_headers = st.builds(
    SendMessageHeader,
    producer_group=st.text(max_size=5),
    topic=st.text(max_size=5),
    default_topic=st.just("TBW102"),
    default_topic_queue_nums=st.integers(0, 2000),
    queue_id=INT32,
    sys_flag=st.integers(0, 2000),
    born_timestamp=st.integers(-(2**63), 2**63 - 1),
    flag=INT32,
    properties=st.none() | st.text(max_size=5),
    reconsume_times=st.none() | st.integers(-1, 2000),
    unit_mode=st.booleans(),
    max_reconsume_times=st.none() | INT32,
    batch=st.booleans(),
    broker_name=st.none() | st.text(max_size=5),
)


@given(send_headers, st.booleans())
def test_to_ext_writes_fields_in_order_as_text(header: SendMessageHeader, v2: bool) -> None:
    """Key order matters: msgpack and ROCKETMQ headers carry extFields in this order."""
    assert list(header.to_ext(v2=v2).items()) == reference_ext(header, v2)
    assert SendMessageHeader.from_ext(header.to_ext(v2=v2), v2=v2) == header


def test_built_and_decoded_headers_stay_frozen_dataclasses() -> None:
    """The fast __init__ and the decoders give the same frozen, hashable objects as before."""
    built = SendMessageResponseHeader(msg_id="m", queue_id=1, queue_offset=2)
    decoded = SendMessageResponseHeader.from_ext({"msgId": "m", "queueId": "1", "queueOffset": "2"})
    pull = PullMessageRequestHeader.from_ext(
        {"consumerGroup": "g", "topic": "T", "queueId": "1", "queueOffset": "0", "maxMsgNums": "32"}
        | {"sysFlag": "0", "commitOffset": "0", "suspendTimeoutMillis": "0", "subVersion": "0"}
    )
    for header in (built, decoded, pull):
        assert type(header).__name__ in ("SendMessageResponseHeader", "PullMessageRequestHeader")
        assert hash(header) == hash(dataclasses.replace(header))
        with pytest.raises(dataclasses.FrozenInstanceError):
            header.queue_id = 9  # type: ignore[misc]
    assert type(built) is type(decoded) is SendMessageResponseHeader
    assert built == decoded and (built.transaction_id, built.trace_on) == (None, None)
    with pytest.raises(TypeError):
        SendMessageResponseHeader(msg_id="m", queue_id=1)  # type: ignore[call-arg]


# ---------------------------------------------------------------- JSON

# any code point, lone surrogates often (text() all but never yields them, whatever alphabet)
ANY_TEXT = st.lists(
    st.characters(blacklist_categories=()) | st.sampled_from("\ud800\udbff\udc00\udfff\x01\xe9"),
    max_size=6,
).map("".join)
EXT_VALUE = st.one_of(ANY_TEXT, st.integers(-5, 5), st.booleans(), st.none(), st.floats(-2, 2))


def json_reference(data: bytes) -> tuple[object, ...] | None:
    """protocol.md 2.1 read plainly: json.loads, ext scalars as text (None dropped); a kept
    string that cannot be UTF-8 is dropped and refuses the request. None: not a header."""
    try:
        obj = json.loads(data)
    except (ValueError, RecursionError):
        return None
    ext = {
        k: ("true" if v else "false") if type(v) is bool else v if type(v) is str else str(v)
        for k, v in (obj.get("extFields") or {}).items()
        if v is not None
    }
    bad = [k for k, v in ext.items() if unencodable(k) or unencodable(v)]
    remark = None if obj.get("remark") is None or unencodable(obj["remark"]) else obj["remark"]
    ext = {k: v for k, v in ext.items() if k not in bad}
    return obj["code"], obj.get("opaque", 0), remark, ext, bool(bad)


@settings(max_examples=200)
@given(
    st.dictionaries(ANY_TEXT, EXT_VALUE, max_size=4),
    st.none() | ANY_TEXT,
    st.booleans(),
    st.sampled_from(["", " ", "\n\t"]),
)
def test_json_decode_matches_json_loads(
    ext: dict[str, object], remark: str | None, ascii_only: bool, space: str
) -> None:
    """Any header a peer may write -- escapes or raw UTF-8 (lone surrogates as raw bytes too,
    which json.loads lets through), whitespace around it -- decodes as the reference has it."""
    obj: dict[str, object] = {"code": 10, "opaque": 5, "extFields": ext}
    if remark is not None:
        obj["remark"] = remark
    text = space + json.dumps(obj, ensure_ascii=ascii_only) + space
    data = text.encode("utf-8", "surrogatepass")
    expected = json_reference(data)
    cmd = serialize.decode_json(data)
    assert (cmd.code, cmd.opaque, cmd.remark, cmd.ext_fields, cmd.refusal is not None) == expected


@pytest.mark.parametrize(
    ("data", "refused"),
    [
        (b'{"code":1,"extFields":{"k":"\\uD800"}}', True),  # upper-case hex
        (b'{"code":1,"extFields":{"k":"\\udFfF"}}', True),
        (b'{"code":1,"extFields":{"\\uDBFF":"v"}}', True),
        (b'{"code":1,"extFields":{"k":"\xed\xa0\x80"}}', True),  # raw (CESU-8) surrogate bytes
        (b'{"code":1,"extFields":{"k":"\\uD83D\\uDE00"}}', False),  # a pair is one character
        (b'{"code":1,"extFields":{"k":"\\u0001\\u00e9\\ud7ff"}}', False),
        (b'{"code":1,"extFields":{"k":"\xe4\xb8\xad"}}', False),  # raw UTF-8, not ASCII
    ],
)
def test_json_lone_surrogates_refused_in_any_spelling(data: bytes, refused: bool) -> None:
    assert (serialize.decode_json(data).refusal is not None) is refused


EXT_KEYS = st.text(max_size=6)
json_commands = st.builds(
    RemotingCommand,
    code=st.integers(-(2**31), 2**31 - 1) | st.sampled_from(list(ResponseCode)),
    language=st.integers(-1, 20) | st.sampled_from(list(LanguageCode)),
    opaque=st.integers(-(2**31), 2**31 - 1),
    flag=st.integers(0, 3),
    remark=st.none() | st.text(max_size=6),
    ext_fields=st.dictionaries(EXT_KEYS, st.text(max_size=6) | st.integers(), max_size=4),
)


@given(json_commands)
def test_json_encode_matches_the_general_encoder(cmd: RemotingCommand) -> None:
    """The fixed-shape writer is byte for byte json's sorted, compact, non-ASCII-kept output."""
    assert (
        serialize.encode_json(cmd)
        == serialize._json_encoder.encode(serialize._json_obj(cmd)).encode()
    )


# ---------------------------------------------------------------- ROCKETMQ


def ext_block(pairs: list[tuple[bytes, bytes]]) -> bytes:
    return b"".join(struct.pack(">h", len(k)) + k + struct.pack(">i", len(v)) + v for k, v in pairs)


ENTRY_BYTES = st.text(max_size=3).map(str.encode) | st.binary(max_size=3)


@given(st.lists(st.tuples(ENTRY_BYTES, ENTRY_BYTES), max_size=4), st.binary(max_size=3), st.data())
def test_rocketmq_ext_one_pass_matches_the_checked_loop(
    pairs: list[tuple[bytes, bytes]], junk: bytes, data: st.DataObject
) -> None:
    """Plain entries are read in one pass; anything else (empty strings, lengths past the
    block, bad UTF-8) reads or fails exactly as the checked loop has it."""
    whole = ext_block(pairs)
    cut = data.draw(st.integers(0, len(whole)))
    block = whole[:cut] + junk if cut < len(whole) else whole
    buf = b"\x00" * 5 + block + b"\x00" * 8  # padding: entries may look past the block

    def run(read: object) -> object:
        try:
            return read(buf, 5, 5 + len(block))  # type: ignore[operator]
        except (FrameError, struct.error, UnicodeDecodeError) as exc:
            return type(exc)

    fast = run(serialize._ext_entries)
    assert fast is None or fast == run(serialize._ext_entries_checked)
    if all(k and v for k, v in pairs) and cut == len(whole):
        assert fast is not None  # well-formed blocks take the fast path
