"""Header codecs: JSON (type 0), ROCKETMQ binary (type 1) and msgpack (type 2, ours).

``encode_header`` / ``decode_header`` cover the header only; bodies keep RocketMQ's formats.
Every decoding fault raises ``FrameError`` and nothing else (protocol.md 2, design.md 5).
"""

from __future__ import annotations

import json
import struct
from _json import make_encoder
from collections.abc import Callable
from json.encoder import encode_basestring
from typing import Any, Final

import msgpack

from aiorocketmq.remoting.errors import FrameError, RemotingCommandError
from aiorocketmq.remoting.protocol.codes import LanguageCode, SerializeType
from aiorocketmq.remoting.protocol.command import RemotingCommand
from aiorocketmq.remoting.protocol.text import unencodable

_LANG_NAMES: Final = {m.value: m.name for m in LanguageCode}
_LANG_CODES: Final = {m.name: m.value for m in LanguageCode}
_OTHER: Final = LanguageCode.OTHER
_JSON: Final = SerializeType.JSON
_ROCKETMQ: Final = SerializeType.ROCKETMQ

# ---------------------------------------------------------------- JSON (type 0)

_json_encoder = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, sort_keys=True)


def _unserializable(value: object) -> object:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


# the C encoder ``_json_encoder`` runs, built once (JSONEncoder.encode builds one per call):
# sorted keys, compact, non-ASCII as is; no circular check (ext values are text)
_ext_encoder: Final = make_encoder(
    None, _unserializable, encode_basestring, None, ":", ",", True, False, True
)
_LANG_JSON: Final = {m.value: f'"{m.name}"' for m in LanguageCode}
# the top level in sorted key order; extFields and remark (with their commas) when present
_JSON_SHAPE: Final = (
    '{"code":%d,%s"flag":%d,"language":%s,"opaque":%d,%s'
    '"serializeTypeCurrentRPC":"JSON","version":%d}'
)


def encode_json(cmd: RemotingCommand) -> bytes:
    """fastjson's shape: keys sorted, nulls and empty extFields left out, ext values strings."""
    try:
        text = _json_text(cmd)
    except TypeError:  # a field of an unexpected type: the general encoder decides
        text = _json_encoder.encode(_json_obj(cmd))
    try:
        return text.encode()
    except UnicodeEncodeError as exc:  # a lone surrogate (e.g. from a peer's "\ud800" escape)
        raise RemotingCommandError(f"command does not fit the JSON header: {exc}") from exc


def _json_text(cmd: RemotingCommand) -> str:
    """The header written out directly: the top-level keys are fixed, so only extFields is
    sorted (byte for byte what ``_json_encoder`` writes for ``_json_obj``)."""
    ext = cmd.ext_fields
    ext_text = '"extFields":' + "".join(_ext_encoder(ext, 0)) + "," if ext else ""
    remark = "" if cmd.remark is None else '"remark":' + encode_basestring(cmd.remark) + ","
    language = _LANG_JSON.get(cmd.language, '"OTHER"')
    shape = (cmd.code, ext_text, cmd.flag, language, cmd.opaque, remark, cmd.version)
    return _JSON_SHAPE % shape  # %d writes an IntEnum code as its number, as json does


def _json_obj(cmd: RemotingCommand) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "code": cmd.code,
        "flag": cmd.flag,
        "language": _LANG_NAMES.get(cmd.language, "OTHER"),
        "opaque": cmd.opaque,
        "serializeTypeCurrentRPC": "JSON",
        "version": cmd.version,
    }
    if cmd.ext_fields:
        obj["extFields"] = cmd.ext_fields
    if cmd.remark is not None:
        obj["remark"] = cmd.remark
    return obj


def _ext_text(key: str, value: object) -> str | None:
    # compat: ali-ons sends numbers and booleans ("d":4,"k":false); Java reads them as text
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if value is None:
        return None
    raise FrameError(f"extFields[{key!r}] is a {type(value).__name__}, not a scalar")


def _json_ext(raw: object) -> tuple[dict[str, str], bool]:
    """extFields as text, and whether all of it (keys and values) is ASCII."""
    if raw is None:
        return {}, True
    if type(raw) is not dict:
        raise FrameError("extFields is not an object")
    try:  # every value a str (JSON keys always are), checked in C
        joined = "".join([*raw, *raw.values()])
    except TypeError:
        raw = {k: text for k, v in raw.items() if (text := _ext_text(k, v)) is not None}
        joined = "".join([*raw, *raw.values()])
    return raw, joined.isascii()


def _int_field(obj: dict[str, Any], key: str) -> int:
    value = obj.get(key, 0)
    if type(value) is not int or not -0x80000000 <= value <= 0x7FFFFFFF:
        raise FrameError(f"header field {key!r} is not an int32: {value!r}")
    return value


_raw_decode: Final = json.JSONDecoder().raw_decode


def _json_loads(data: bytes) -> Any:
    """``json.loads(data)``, raising only FrameError."""
    try:  # the usual header: strict UTF-8, one JSON value and nothing around it
        text = data.decode()
        obj, end = _raw_decode(text)
        if end == len(text):
            return obj
    except (ValueError, RecursionError):
        pass
    try:  # anything else reads (or fails) exactly as json.loads has it
        return json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise FrameError(f"invalid JSON header: {exc}") from exc


def decode_json(data: bytes) -> RemotingCommand:
    """Read a JSON header; only ``code`` is required (protocol.md 2.1)."""
    obj = _json_loads(data)
    if type(obj) is not dict or "code" not in obj:
        raise FrameError("JSON header is not an object with a code")
    language = obj.get("language", "JAVA")
    if isinstance(language, str):
        language = _LANG_CODES.get(language, _OTHER)
    elif type(language) is not int:
        raise FrameError(f"header field 'language' is invalid: {language!r}")
    remark = obj.get("remark")
    if remark is not None and type(remark) is not str:
        raise FrameError("header field 'remark' is not a string")
    get = obj.get
    code, version, opaque, flag = obj["code"], get("version", 0), get("opaque", 0), get("flag", 0)
    if not (
        type(code) is type(version) is type(opaque) is type(flag) is int
        and -0x80000000 <= code <= 0x7FFFFFFF
        and -0x80000000 <= version <= 0x7FFFFFFF
        and -0x80000000 <= opaque <= 0x7FFFFFFF
        and -0x80000000 <= flag <= 0x7FFFFFFF
    ):
        for key in ("code", "version", "opaque", "flag"):
            _int_field(obj, key)  # raises, naming the first bad one
    ext, ascii_only = _json_ext(get("extFields"))
    cmd = RemotingCommand(code, language, version, opaque, flag, remark, ext, b"", _JSON)
    # a lone surrogate (from a "\ud800" escape, or raw in bytes json.loads lets through) is
    # never ASCII: ASCII text -- every usual header, \u0001 escapes included -- is writable
    if not (ascii_only and (remark is None or remark.isascii())):
        _refuse_unencodable(cmd)
    return cmd


def _refuse_unencodable(cmd: RemotingCommand) -> None:
    """A JSON ``\\ud800`` escape decodes to text no one can write back: such a request is
    answered with an error (its connection stays) and never reaches a handler, so nothing
    it names can enter shared state (remoting.protocol.text)."""
    ext = cmd.ext_fields
    try:  # all the text at once, in C; field by field only when some of it is unencodable
        "".join((cmd.remark or "", *ext, *ext.values())).encode()
        return
    except UnicodeEncodeError:
        pass
    if cmd.remark is not None and unencodable(cmd.remark):
        cmd.remark = None
    for key, value in list(ext.items()):
        if unencodable(key) or unencodable(value):
            del ext[key]
            cmd.refusal = (
                f"the header field {key!a} holds text that is not valid UTF-8 "
                "(a lone surrogate); refused"
            )


# ---------------------------------------------------------------- ROCKETMQ binary (type 1)

_FIXED = struct.Struct(">hbhii")  # code, language, version, opaque, flag
_I32 = struct.Struct(">i")
_I16 = struct.Struct(">h")


def encode_rocketmq(cmd: RemotingCommand) -> bytes:
    """RocketMQSerializable's layout; codes over 32767 cannot be written (they need JSON)."""
    try:
        return _encode_rocketmq(cmd)
    except (struct.error, UnicodeEncodeError) as exc:
        raise RemotingCommandError(f"command does not fit the ROCKETMQ header: {exc}") from exc


def _encode_rocketmq(cmd: RemotingCommand) -> bytes:
    parts = [_FIXED.pack(cmd.code, cmd.language, cmd.version, cmd.opaque, cmd.flag)]
    remark = cmd.remark.encode() if cmd.remark else b""
    parts += (_I32.pack(len(remark)), remark)
    ext: list[bytes] = []
    for key, value in cmd.ext_fields.items():
        k, v = key.encode(), value.encode()
        ext += (_I16.pack(len(k)), k, _I32.pack(len(v)), v)
    blob = b"".join(ext)
    parts += (_I32.pack(len(blob)), blob)
    return b"".join(parts)


def _read_str(data: bytes | memoryview, pos: int, size: int, end: int) -> str | None:
    if size < 0 or pos + size > end:
        raise FrameError("ROCKETMQ header: string runs past its block")
    # compat: RocketMQSerializable.readStr -- a zero length reads as null
    return bytes(data[pos : pos + size]).decode() if size else None


def decode_rocketmq(data: bytes | memoryview) -> RemotingCommand:
    """Read a ROCKETMQ binary header (protocol.md 2.2)."""
    try:
        return _decode_rocketmq(data)
    except (struct.error, UnicodeDecodeError) as exc:
        raise FrameError(f"invalid ROCKETMQ header: {exc}") from exc


def _decode_rocketmq(data: bytes | memoryview) -> RemotingCommand:
    buf = bytes(data)  # one copy of the header: slices of bytes are cheaper than of a view
    end = len(buf)
    code, language, version, opaque, flag = _FIXED.unpack_from(buf, 0)
    (rlen,) = _I32.unpack_from(buf, 13)
    remark = _read_str(buf, 17, rlen, end)
    pos = 17 + rlen
    (xlen,) = _I32.unpack_from(buf, pos)
    pos += 4
    xend = pos + xlen
    if xlen < 0 or xend > end:
        raise FrameError("ROCKETMQ header: ext block runs past the header")
    ext = _ext_entries(buf, pos, xend)
    if ext is None:  # an empty or malformed entry: read (or refuse) as the general loop has it
        ext = _ext_entries_checked(buf, pos, xend)
    return RemotingCommand(code, language, version, opaque, flag, remark, ext, b"", _ROCKETMQ)


def _ext_entries(buf: bytes, pos: int, xend: int) -> dict[str, str] | None:
    """The ext block in one pass, or None at the first entry that is not a plain pair of
    non-empty strings within the block (``_ext_entries_checked`` then decides)."""
    ext: dict[str, str] = {}
    i16, i32 = _I16.unpack_from, _I32.unpack_from
    while pos < xend:
        (klen,) = i16(buf, pos)
        kpos = pos + 2
        vlenpos = kpos + klen
        if klen <= 0 or vlenpos + 4 > xend:
            return None
        (vlen,) = i32(buf, vlenpos)
        vpos = vlenpos + 4
        pos = vpos + vlen
        if vlen <= 0 or pos > xend:
            return None
        ext[buf[kpos:vlenpos].decode()] = buf[vpos:pos].decode()
    return ext


def _ext_entries_checked(buf: bytes, pos: int, xend: int) -> dict[str, str]:
    ext: dict[str, str] = {}
    while pos < xend:
        (klen,) = _I16.unpack_from(buf, pos)
        key = _read_str(buf, pos + 2, klen, xend)
        pos += 2 + klen
        if pos + 4 > xend:
            raise FrameError("ROCKETMQ header: ext entry runs past its block")
        (vlen,) = _I32.unpack_from(buf, pos)
        value = _read_str(buf, pos + 4, vlen, xend)
        pos += 4 + vlen
        if key is not None and value is not None:
            ext[key] = value
    return ext


# ---------------------------------------------------------------- msgpack (type 2, ours)
# One array per header, packed and unpacked in a single call each:
#   [code, language, version, opaque, flag, remark | nil, {ext}]

_packer = msgpack.Packer(use_bin_type=True, autoreset=True)


def encode_msgpack(cmd: RemotingCommand) -> bytes:
    try:
        packed: bytes = _packer.pack(
            (cmd.code, cmd.language, cmd.version, cmd.opaque, cmd.flag, cmd.remark, cmd.ext_fields)
        )
    except (TypeError, ValueError, OverflowError) as exc:
        raise RemotingCommandError(f"command does not fit the msgpack header: {exc}") from exc
    return packed


def decode_msgpack(data: bytes | memoryview) -> RemotingCommand:
    try:
        obj = msgpack.unpackb(data)  # msgpack >= 1.0: raw=False, use_list, strict_map_key
    except (ValueError, msgpack.UnpackException, RecursionError) as exc:
        raise FrameError(f"invalid msgpack header: {exc}") from exc
    if type(obj) is not list or len(obj) != 7:
        raise FrameError("msgpack header is not a 7-element array")
    code, language, version, opaque, flag, remark, ext = obj
    if not (
        type(code) is type(language) is type(version) is type(opaque) is type(flag) is int
        and (remark is None or type(remark) is str)
        and type(ext) is dict
        and -0x80000000 <= code <= 0x7FFFFFFF
        and -0x80000000 <= opaque <= 0x7FFFFFFF
        and -0x80000000 <= flag <= 0x7FFFFFFF
    ):
        raise FrameError("msgpack header has a field of the wrong type")
    try:  # every key and value a str, checked in C
        "".join([*ext, *ext.values()])
    except TypeError:
        raise FrameError("msgpack header has a non-text ext field") from None
    return RemotingCommand(code, language, version, opaque, flag, remark, ext, b"", 2)


# ---------------------------------------------------------------- dispatch by type

_ENCODERS: Final[dict[int, Callable[[RemotingCommand], bytes]]] = {
    SerializeType.JSON: encode_json,
    SerializeType.ROCKETMQ: encode_rocketmq,
    SerializeType.MSGPACK: encode_msgpack,
}


def encode_header(cmd: RemotingCommand) -> bytes:
    """The header of ``cmd`` in its own ``serialize_type``."""
    encoder = _ENCODERS.get(cmd.serialize_type)
    if encoder is None:
        raise RemotingCommandError(f"unknown serialize type {cmd.serialize_type}")
    return encoder(cmd)


def decode_header(serialize_type: int, data: memoryview) -> RemotingCommand:
    """A command (without body) from a header of the given type; raises only FrameError."""
    if serialize_type == SerializeType.MSGPACK:
        return decode_msgpack(data)
    if serialize_type == SerializeType.JSON:
        return decode_json(bytes(data))
    if serialize_type == SerializeType.ROCKETMQ:
        return decode_rocketmq(data)
    raise FrameError(f"unknown serialize type {serialize_type}")
