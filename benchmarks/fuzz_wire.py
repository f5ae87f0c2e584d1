"""The fuzzer's own wire client: any header in any of the three formats, answers by opaque.

Our RemotingClient refuses to write what a server must refuse to read (text that is not valid
UTF-8, codes past the binary header's 16 bits); a hostile peer has no such scruples, so the
fuzzer frames its requests itself. Strings are written with ``surrogatepass``: a lone
surrogate goes out as JSON's ``\\ud800`` escape, or as the bytes ED A0 80 (not UTF-8) in the
binary and msgpack headers. Responses are read with the project's FrameDecoder.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import struct
from dataclasses import dataclass, field
from typing import Final

import msgpack

from aiorocketmq.remoting.errors import FrameError
from aiorocketmq.remoting.protocol.codes import CURRENT_VERSION, LanguageCode
from aiorocketmq.remoting.protocol.command import RemotingCommand
from aiorocketmq.remoting.protocol.frame import FrameDecoder

JSON, ROCKETMQ, MSGPACK = 0, 1, 2
FORMATS: Final = {JSON: "json", ROCKETMQ: "rocketmq", MSGPACK: "msgpack"}
_FIXED = struct.Struct(">hbhii")
_packer = msgpack.Packer(use_bin_type=True, unicode_errors="surrogatepass")


@dataclass
class Req:
    """One request as the fuzzer sends it (and prints it in a reproducer)."""

    code: int
    ext: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    stype: int = MSGPACK
    language: int = LanguageCode.JAVA
    version: int = CURRENT_VERSION
    flag: int = 0
    sent_len: int = 0  # the body's length when sent, if it was cut down afterwards

    def forget_body(self, keep: int = 65536) -> None:
        """Keep only the start of a big body once sent (the run remembers every request)."""
        if len(self.body) > keep:
            self.sent_len, self.body = len(self.body), self.body[:256]

    def show(self) -> dict[str, object]:
        size = self.sent_len or len(self.body)
        body: object = self.body.decode(errors="replace") if size <= 600 else (
            f"<{size} bytes: {self.body[:120]!r}...>"
        )  # fmt: skip
        ext = {k: (v if len(v) <= 400 else f"<{len(v)} chars: {v[:60]!r}...>")
               for k, v in self.ext.items()}  # fmt: skip
        out: dict[str, object] = {"code": self.code, "format": FORMATS.get(self.stype)}
        out |= {"ext": ext, "body": body}
        if self.language != LanguageCode.JAVA or self.version != CURRENT_VERSION or self.flag:
            out |= {"language": self.language, "version": self.version, "flag": self.flag}
        return out


def _utf8(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def encode_header(req: Req, opaque: int) -> bytes:
    if req.stype == JSON:
        try:
            language: object = LanguageCode(req.language).name
        except ValueError:
            language = req.language
        obj = {"code": req.code, "extFields": req.ext, "flag": req.flag, "language": language,
               "opaque": opaque, "serializeTypeCurrentRPC": "JSON",
               "version": req.version}  # fmt: skip
        return json.dumps(obj, ensure_ascii=True, separators=(",", ":")).encode()
    if req.stype == ROCKETMQ:
        parts = [_FIXED.pack(req.code, req.language, req.version, opaque, req.flag), bytes(4)]
        ext = b"".join(
            struct.pack(">h", len(k)) + k + struct.pack(">i", len(v)) + v
            for k, v in ((_utf8(k), _utf8(v)) for k, v in req.ext.items())
        )
        parts += (struct.pack(">i", len(ext)), ext)
        return b"".join(parts)
    packed: bytes = _packer.pack(
        (req.code, req.language, req.version, opaque, req.flag, None, req.ext)
    )
    return packed


def encode_frame(req: Req, opaque: int) -> bytes:
    header = encode_header(req, opaque)
    return struct.pack(">II", 4 + len(header) + len(req.body), (req.stype << 24) | len(header)) + (
        header + req.body
    )


def fits(req: Req) -> bool:
    """Whether ``req`` can be written in its format at all (the binary header's code,
    language, version and key lengths are 16, 8, 16 and 16 bits)."""
    if req.stype == ROCKETMQ:
        return -(2**15) <= req.code < 2**15 and -128 <= req.language < 128 and (
            -(2**15) <= req.version < 2**15
        ) and all(len(_utf8(k)) < 2**15 for k in req.ext)  # fmt: skip
    return -(2**31) <= req.code < 2**31


class Closed(Exception):
    """The server closed the connection before answering."""


class Conn:
    """One connection to one server; ``call`` sends a frame and awaits the answer with the
    same opaque. A closed connection is reopened by the next call."""

    def __init__(self, addr: str) -> None:
        self.addr = addr
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._pending: dict[int, asyncio.Future[RemotingCommand]] = {}
        self._opaque = 0
        self._task: asyncio.Task[None] | None = None
        self.closes = 0  # how often the server closed it on us

    async def _open(self) -> None:
        host, _, port = self.addr.rpartition(":")
        self._reader, self._writer = await asyncio.open_connection(host, int(port))
        self._task = asyncio.get_running_loop().create_task(self._read(self._reader, self._writer))

    async def _read(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        decoder = FrameDecoder(64 * 1024 * 1024)
        try:
            while chunk := await reader.read(1 << 16):
                for cmd in decoder.feed(chunk):
                    if not cmd.is_response:  # the broker asking a "client" (307, 309, 221)
                        self._refuse(cmd)
                        continue
                    fut = self._pending.pop(cmd.opaque, None)
                    if fut is not None and not fut.done():
                        fut.set_result(cmd)
        except (OSError, FrameError):
            pass
        finally:
            self.closes += 1
            writer.close()
            if self._writer is writer:
                self._writer, self._reader = None, None
            for fut in self._pending.values():
                if not fut.done():
                    fut.set_exception(Closed())
                    fut.exception()  # its caller may be gone (timed out): no "never retrieved"
            self._pending.clear()

    def _refuse(self, request: RemotingCommand) -> None:
        """Answer a server's request at once (REQUEST_CODE_NOT_SUPPORTED), so the broker's
        call to this "client" ends now rather than at its 10 s timeout."""
        if self._writer is None or request.is_oneway:
            return
        stype = request.serialize_type if request.serialize_type in FORMATS else JSON
        self._writer.write(encode_frame(Req(3, stype=stype, flag=1), request.opaque))  # a response

    async def call(self, req: Req, timeout: float) -> RemotingCommand:
        """The answer; raises TimeoutError (none in ``timeout`` s) or Closed."""
        if self._writer is None:
            await self._open()
        assert self._writer is not None
        self._opaque = (self._opaque + 1) & 0x7FFFFFFF
        opaque = self._opaque
        fut = asyncio.get_running_loop().create_future()
        self._pending[opaque] = fut
        try:
            self._writer.write(encode_frame(req, opaque))
            async with asyncio.timeout(timeout):
                await self._writer.drain()
                answer: RemotingCommand = await fut
                return answer
        except TimeoutError:
            raise  # an OSError too, but no answer is not a closed connection
        except (ConnectionError, OSError) as exc:
            raise Closed() from exc
        finally:
            self._pending.pop(opaque, None)

    async def close(self) -> None:
        writer, task = self._writer, self._task
        if writer is not None:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
