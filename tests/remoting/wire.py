"""A raw-socket peer for tests: writes frames or arbitrary bytes, reads frames back."""

from __future__ import annotations

import asyncio
import contextlib

from aiorocketmq.remoting.protocol.command import RemotingCommand
from aiorocketmq.remoting.protocol.frame import FrameDecoder, encode


class RawPeer:
    """asyncio streams + our frame codec, with no RemotingClient logic in between."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self._decoder = FrameDecoder()
        self._ready: list[RemotingCommand] = []

    @classmethod
    async def connect(cls, port: int) -> RawPeer:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        return cls(reader, writer)

    def send(self, *commands: RemotingCommand) -> None:
        for cmd in commands:
            head, body = encode(cmd)
            self.writer.write(head + body)

    def send_raw(self, data: bytes) -> None:
        self.writer.write(data)

    async def read(self, timeout: float = 5.0) -> RemotingCommand:
        async with asyncio.timeout(timeout):
            while not self._ready:
                data = await self.reader.read(65536)
                if not data:
                    raise ConnectionError("peer closed the connection")
                self._ready.extend(self._decoder.feed(data))
        return self._ready.pop(0)

    async def closed_by_peer(self, timeout: float = 5.0) -> bool:
        """True once the server has closed this connection (EOF or reset)."""
        async with asyncio.timeout(timeout):
            try:
                while await self.reader.read(65536):
                    pass
            except ConnectionResetError:
                pass
        await self.close()
        return True

    async def close(self) -> None:
        self.writer.close()
        with contextlib.suppress(ConnectionError):
            await self.writer.wait_closed()


def request(code: int, opaque: int, serialize_type: int = 2, **ext: str) -> RemotingCommand:
    return RemotingCommand(code=code, opaque=opaque, ext_fields=ext, serialize_type=serialize_type)
