"""A stored record's properties, read where they lie (MessageDecoder.decodeProperties): the
body is stepped over, never copied, so a property filter pays for the properties alone."""

from __future__ import annotations

import struct
from typing import Final

from aiorocketmq.remoting.protocol.message import (
    BORNHOST_POS,
    MAGIC_V1,
    SYSFLAG_POS,
    Buffer,
    SysFlag,
)

_I: Final = struct.Struct(">i")
_H: Final = struct.Struct(">h")
_U: Final = struct.Struct(">I")
_MAGIC_POS: Final = 4


def record_properties(buf: Buffer, at: int, size: int) -> dict[str, str]:
    """The properties of the ``size``-byte record at ``at`` in ``buf`` (a mapping of the
    CommitLog); empty when they do not lie inside the record (a damaged record matches
    nothing that needs a property)."""
    end = at + size
    (sys_flag,) = _I.unpack_from(buf, at + SYSFLAG_POS)
    pos = at + BORNHOST_POS
    pos += 20 if sys_flag & SysFlag.BORNHOST_V6 else 8
    pos += 8  # STORETIMESTAMP
    pos += 20 if sys_flag & SysFlag.STOREHOST_V6 else 8
    pos += 12  # RECONSUMETIMES, PREPAREDTRANSACTIONOFFSET
    (body_len,) = _I.unpack_from(buf, pos)
    pos += 4 + body_len
    if body_len < 0 or pos + 3 > end:
        return {}
    if _U.unpack_from(buf, at + _MAGIC_POS)[0] == MAGIC_V1:
        pos += 1 + int(buf[pos])
    else:
        pos += 2 + int(_H.unpack_from(buf, pos)[0])
    if pos + 2 > end:
        return {}
    (props_len,) = _H.unpack_from(buf, pos)
    pos += 2
    if props_len <= 0 or pos + props_len > end:
        return {}
    return parse_properties(bytes(buf[pos : pos + props_len]).decode("utf-8", "replace"))


def parse_properties(text: str) -> dict[str, str]:
    """MessageDecoder.string2messageProperties: ``name\\x01value`` items split at their
    first ``\\x01``; an item with an empty name or value is skipped."""
    out: dict[str, str] = {}
    for item in text.split("\x02"):
        name, _sep, value = item.partition("\x01")
        if name and value:
            out[name] = value
    return out
