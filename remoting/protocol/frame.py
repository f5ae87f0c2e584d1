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
IDLE_KEEP: Final = 0  # a server's, when no frame is pending: many idle connections hold nothing
CLIENT_KEEP: Final = 1024 * 1024  # a client's: a pull's 256 KiB answers, a batch's bigger


class FrameDecoder:
    """Turns arbitrary byte chunks into complete commands.

    Any malformed input raises ``FrameError`` and nothing else; the decoder is then unusable
    (its connection is closed).

    An incomplete frame waits in a buffer (``_buf[_start:_end]``), kept while a stream of
    frames goes on: a bytearray trimmed in front after each frame would shrink to the next
    frame's first bytes and grow again in fresh pages, about 100 page faults for a 256 KiB
    frame arriving in 64 KiB pieces (17x the cost of one piece). It grows at most to 1.5 times
    what has arrived (a peer's declared length alone takes nothing) and is let go once no
    frame is pending if it is over ``keep`` bytes: a server's many connections keep nothing
    (``IDLE_KEEP``), a client's few keep what its answers need (``CLIENT_KEEP``).
    """

    __slots__ = ("_buf", "_end", "_keep", "_max_frame", "_start")

    def __init__(self, max_frame: int = DEFAULT_MAX_FRAME, keep: int = IDLE_KEEP) -> None:
        self._buf = bytearray()
        self._start = self._end = 0  # the bytes pending: _buf[_start:_end]
        self._max_frame = max_frame
        self._keep = keep

    @property
    def buffered(self) -> int:
        """Bytes held for an incomplete frame."""
        return self._end - self._start

    def clear(self) -> None:
        """Drop whatever is buffered and its memory (the connection is gone)."""
        self._buf = bytearray()
        self._start = self._end = 0

    def feed(self, data: bytes) -> list[RemotingCommand]:
        """Append ``data`` and return every command it completes, in order."""
        out: list[RemotingCommand] = []
        start, end, n = self._start, self._end, len(data)
        if start == end:  # common case: parse the chunk in place, keep only a tail
            with memoryview(data) as view:
                pos = self._parse(view, out)
                if pos < n:
                    buf = self._room(view[pos : pos + 4], n - pos)
                    buf[: n - pos] = view[pos:]
                    self._start, self._end = 0, n - pos
            return out
        buf, pending = self._buf, end - start
        if end + n > len(buf):
            if pending + n <= len(buf):  # room enough once the pending bytes move to the front
                buf[:pending] = buf[start:end]
            else:
                with memoryview(buf) as old:
                    grown = self._room(old[start : start + 4], pending + n)
                    grown[:pending] = old[start:end]
                buf = grown
            start, end = 0, pending
        buf[end : end + n] = data
        end += n
        with memoryview(buf) as whole, whole[start:end] as view:
            start += self._parse(view, out)
        if start == end:
            start = end = 0
            if len(buf) > self._keep:
                self._buf = bytearray()
        self._start, self._end = start, end
        return out

    def _room(self, head: memoryview, need: int) -> bytearray:
        """A buffer of ``need`` bytes or more (this one if it is that big, else a new one,
        which becomes this): half again its size, or the pending frame's declared size when
        its prefix ``head`` is there, but never past 1.5 times ``need``."""
        buf = self._buf
        if len(buf) >= need:
            return buf
        size = len(buf) + len(buf) // 2
        if len(head) == 4:
            size = max(size, 4 + _U32.unpack_from(head, 0)[0])
        buf = self._buf = bytearray(max(need, min(size, need + need // 2)))
        return buf

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
