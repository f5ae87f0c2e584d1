"""Header codecs: JSON (type 0), ROCKETMQ binary (type 1) and msgpack (type 2, ours).

``encode_header`` / ``decode_header`` cover the header only; bodies keep RocketMQ's formats.
Every decoding fault raises ``FrameError`` and nothing else (protocol.md 2, design.md 5).
"""

from __future__ import annotations

import json
import struct
from collections.abc import Callable
from typing import Any, Final

import msgpack

from remoting.errors import FrameError, RemotingCommandError
from remoting.protocol.codes import LanguageCode, SerializeType
from remoting.protocol.command import RemotingCommand
from remoting.protocol.text import unencodable

_LANG_NAMES: Final = {m.value: m.name for m in LanguageCode}
_LANG_CODES: Final = {m.name: m.value for m in LanguageCode}
_INT32: Final = range(-(2**31), 2**31)

# ---------------------------------------------------------------- JSON (type 0)

_json_encoder = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, sort_keys=True)


def encode_json(cmd: RemotingCommand) -> bytes:
    """fastjson's shape: keys sorted, nulls and empty extFields left out, ext values strings."""
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
    try:
        return _json_encoder.encode(obj).encode()
    except UnicodeEncodeError as exc:  # a lone surrogate (e.g. from a peer's "\ud800" escape)
        raise RemotingCommandError(f"command does not fit the JSON header: {exc}") from exc


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


def _json_ext(raw: object) -> dict[str, str]:
    if raw is None:
        return {}
    if type(raw) is not dict:
        raise FrameError("extFields is not an object")
    if all(type(v) is str for v in raw.values()):
        return raw
    ext = {}
    for key, value in raw.items():
        text = _ext_text(key, value)
        if text is not None:
            ext[key] = text
    return ext


def _int_field(obj: dict[str, Any], key: str) -> int:
    value = obj.get(key, 0)
    if type(value) is not int or value not in _INT32:
        raise FrameError(f"header field {key!r} is not an int32: {value!r}")
    return value


def decode_json(data: bytes) -> RemotingCommand:
    """Read a JSON header; only ``code`` is required (protocol.md 2.1)."""
    try:
        obj = json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise FrameError(f"invalid JSON header: {exc}") from exc
    if type(obj) is not dict or "code" not in obj:
        raise FrameError("JSON header is not an object with a code")
    language = obj.get("language", "JAVA")
    if isinstance(language, str):
        language = _LANG_CODES.get(language, LanguageCode.OTHER)
    elif type(language) is not int:
        raise FrameError(f"header field 'language' is invalid: {language!r}")
    remark = obj.get("remark")
    if remark is not None and type(remark) is not str:
        raise FrameError("header field 'remark' is not a string")
    cmd = RemotingCommand(
        code=_int_field(obj, "code"),
        language=language,
        version=_int_field(obj, "version"),
        opaque=_int_field(obj, "opaque"),
        flag=_int_field(obj, "flag"),
        remark=remark,
        ext_fields=_json_ext(obj.get("extFields")),
        serialize_type=SerializeType.JSON,
    )
    if b"\\u" in data:  # only an escape can smuggle in a lone surrogate
        _refuse_unencodable(cmd)
    return cmd


def _refuse_unencodable(cmd: RemotingCommand) -> None:
    """A JSON ``\\ud800`` escape decodes to text no one can write back: such a request is
    answered with an error (its connection stays) and never reaches a handler, so nothing
    it names can enter shared state (remoting.protocol.text)."""
    if cmd.remark is not None and unencodable(cmd.remark):
        cmd.remark = None
    for key, value in list(cmd.ext_fields.items()):
        if unencodable(key) or unencodable(value):
            del cmd.ext_fields[key]
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
    end = len(data)
    code, language, version, opaque, flag = _FIXED.unpack_from(data, 0)
    (rlen,) = _I32.unpack_from(data, 13)
    remark = _read_str(data, 17, rlen, end)
    pos = 17 + rlen
    (xlen,) = _I32.unpack_from(data, pos)
    pos += 4
    xend = pos + xlen
    if xlen < 0 or xend > end:
        raise FrameError("ROCKETMQ header: ext block runs past the header")
    ext: dict[str, str] = {}
    while pos < xend:
        (klen,) = _I16.unpack_from(data, pos)
        key = _read_str(data, pos + 2, klen, xend)
        pos += 2 + klen
        if pos + 4 > xend:
            raise FrameError("ROCKETMQ header: ext entry runs past its block")
        (vlen,) = _I32.unpack_from(data, pos)
        value = _read_str(data, pos + 4, vlen, xend)
        pos += 4 + vlen
        if key is not None and value is not None:
            ext[key] = value
    return RemotingCommand(
        code=code,
        language=language,
        version=version,
        opaque=opaque,
        flag=flag,
        remark=remark,
        ext_fields=ext,
        serialize_type=SerializeType.ROCKETMQ,
    )


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
        obj = msgpack.unpackb(data, raw=False, use_list=True, strict_map_key=True)
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
        "".join(ext)
        "".join(ext.values())
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
