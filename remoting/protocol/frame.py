"""Frame codec without I/O: ``FrameDecoder.feed(chunk) -> commands`` and ``encode(cmd)``.

A frame is ``length(4) | serializeType(1) headerLen(3) | header | body``, big-endian, where
``length`` counts everything after itself (protocol.md 1).
"""

from __future__ import annotations

import struct
from typing import Final

from aiorocketmq.remoting.errors import FrameError, RemotingCommandError
from aiorocketmq.remoting.protocol.command import RemotingCommand
from aiorocketmq.remoting.protocol.serialize import decode_header, decode_msgpack, encode_header

DEFAULT_MAX_FRAME: Final = 16 * 1024 * 1024  # Java's frameMaxLength: prefix + length
_PREFIX = struct.Struct(">II")
_U32 = struct.Struct(">I")
_HEADER_LEN_MAX: Final = 0xFFFFFF
_KEEP_CAPACITY: Final = 1 << 20


class FrameDecoder:
    """Turns arbitrary byte chunks into complete commands.

    Any malformed input raises ``FrameError`` and nothing else; the decoder is then unusable
    (its connection is closed).
    """

    __slots__ = ("_buf", "_max_frame")

    def __init__(self, max_frame: int = DEFAULT_MAX_FRAME) -> None:
        self._buf = bytearray()
        self._max_frame = max_frame

    @property
    def buffered(self) -> int:
        """Bytes held for an incomplete frame."""
        return len(self._buf)

    def clear(self) -> None:
        """Drop whatever is buffered and its memory (the connection is gone)."""
        self._buf = bytearray()

    def feed(self, data: bytes) -> list[RemotingCommand]:
        """Append ``data`` and return every command it completes, in order."""
        buf = self._buf
        if buf:
            buf += data
            src: bytes | bytearray = buf
        else:
            src = data  # common case: parse the chunk in place, keep only a tail
        out: list[RemotingCommand] = []
        with memoryview(src) as view:
            pos = self._parse(view, out)
        if src is buf:
            if pos:
                del buf[:pos]
                if not buf and buf.__alloc__() > _KEEP_CAPACITY:
                    self._buf = bytearray()  # a big frame is done: give its memory back
        elif pos < len(data):
            buf += data[pos:]
        return out

    def _parse(self, view: memoryview, out: list[RemotingCommand]) -> int:
        pos, end, limit = 0, len(view), self._max_frame
        while end - pos >= 4:
            (length,) = _U32.unpack_from(view, pos)
            if length + 4 > limit:
                raise FrameError(f"frame of {length + 4} bytes exceeds the {limit}-byte limit")
            if length < 4:
                raise FrameError(f"frame length {length} is shorter than its header prefix")
            if end - pos < 4 + length:
                break
            (word,) = _U32.unpack_from(view, pos + 4)
            hlen = word & _HEADER_LEN_MAX
            hstart = pos + 8
            bstart = hstart + hlen
            fend = pos + 4 + length
            if bstart > fend:
                raise FrameError(f"header length {hlen} exceeds the frame length {length}")
            stype = word >> 24
            if stype == 2:  # our own header: the hot path, no dispatch by type
                cmd = decode_msgpack(view[hstart:bstart])
            else:
                cmd = decode_header(stype, view[hstart:bstart])
            if fend > bstart:
                cmd.body = bytes(view[bstart:fend])
            out.append(cmd)
            pos = fend
        return pos


def encode(cmd: RemotingCommand, max_frame: int = DEFAULT_MAX_FRAME) -> tuple[bytes, bytes]:
    """``(prefix + header, body)``, ready for ``transport.writelines``.

    Raises ``RemotingCommandError`` when the command cannot be framed (too large, or a field
    its header type cannot carry).
    """
    header = encode_header(cmd)
    hlen, blen = len(header), len(cmd.body)
    if hlen > _HEADER_LEN_MAX or 8 + hlen + blen > max_frame:
        raise RemotingCommandError(f"frame of {8 + hlen + blen} bytes exceeds {max_frame}")
    return _PREFIX.pack(4 + hlen + blen, (cmd.serialize_type << 24) | hlen) + header, cmd.body
