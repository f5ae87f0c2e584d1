"""Raw uvloop length-prefixed echo, with and without a msgpack header: the floor that
benchmarks/remoting_rtt.py (and later benchmarks) measure our remoting layer against."""

from __future__ import annotations

import asyncio
import itertools
import struct
import time
import typing
from collections import deque

import msgpack

from aiorocketmq.remoting.protocol.codes import CURRENT_VERSION, LanguageCode
from benchmarks.common import Recorder

_LEN = struct.Struct(">I")
_LEN2 = struct.Struct(">II")
_UNPACK = {"raw": False, "use_list": True, "strict_map_key": True}  # as serialize.py


class Framed(asyncio.Protocol):
    """``length(4) | payload`` framing; ``frame(view, start, end)`` sees each payload."""

    def __init__(self) -> None:
        self.buf = bytearray()
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = typing.cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        buf = self.buf
        buf += data
        pos, end = 0, len(buf)
        with memoryview(buf) as view:
            while end - pos >= 4:
                (length,) = _LEN.unpack_from(view, pos)
                if end - pos - 4 < length:
                    break
                self.frame(view, pos + 4, pos + 4 + length)
                pos += 4 + length
        del buf[:pos]

    def frame(self, view: memoryview, start: int, end: int) -> None:
        raise NotImplementedError


def mp_frame(header: bytes, body: bytes) -> tuple[bytes, bytes]:
    return _LEN2.pack(4 + len(header) + len(body), len(header)) + header, body


class RawEcho(Framed):
    """Echoes each payload; with ``with_header``, a msgpack header in and a fresh one out."""

    def __init__(self, with_header: bool) -> None:
        super().__init__()
        self.with_header = with_header
        self.packer = msgpack.Packer(use_bin_type=True, autoreset=True)

    def frame(self, view: memoryview, start: int, end: int) -> None:
        transport = typing.cast(asyncio.Transport, self.transport)
        if not self.with_header:
            body = bytes(view[start:end])
            transport.writelines((_LEN.pack(len(body)), body))
            return
        (hlen,) = _LEN.unpack_from(view, start)
        hend = start + 4 + hlen
        header = msgpack.unpackb(view[start + 4 : hend], **_UNPACK)
        _code, language, version, opaque, flag, _remark, ext = header
        body = bytes(view[hend:end])
        response = self.packer.pack((0, language, version, opaque, flag | 1, None, ext))
        transport.writelines(mp_frame(response, body))


class RawClient(Framed):
    """Keeps its window full: every response sends the next request (``send`` opens it)."""

    def __init__(self, with_header: bool, code: int, ext: dict[str, str], body: bytes) -> None:
        super().__init__()
        self.with_header = with_header
        self.code, self.ext, self.body = code, ext, body
        self.rec = Recorder()
        self.sent: deque[int] = deque()
        self.opaques = itertools.count()
        self.packer = msgpack.Packer(use_bin_type=True, autoreset=True)
        self.drained: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def send(self) -> None:
        transport = typing.cast(asyncio.Transport, self.transport)
        self.sent.append(time.perf_counter_ns())
        if self.with_header:
            header = self.packer.pack(
                (self.code, LanguageCode.PYTHON, CURRENT_VERSION, next(self.opaques), 0, None,
                 self.ext)
            )  # fmt: skip
            transport.writelines(mp_frame(header, self.body))
        else:
            transport.writelines((_LEN.pack(len(self.body)), self.body))

    def frame(self, view: memoryview, start: int, end: int) -> None:
        if self.with_header:
            (hlen,) = _LEN.unpack_from(view, start)
            msgpack.unpackb(view[start + 4 : start + 4 + hlen], **_UNPACK)
            start += 4 + hlen
        bytes(view[start:end])  # the body, copied out as a receiver would
        took = time.perf_counter_ns() - self.sent.popleft()
        if self.rec.measuring:
            self.rec.lat.append(took)
        if not self.rec.stopping:
            self.send()
        elif not self.sent and not self.drained.done():
            self.drained.set_result(None)
