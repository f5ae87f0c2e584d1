"""HAClient, slave side: follow the master's CommitLog byte for byte (HAService.HAClient;
protocol.md 12.8, fidelity.md 3.2).

The slave connects to the master's HA address (``haMasterAddress``, else the one the name
server's REGISTER_BROKER answer names), reports its CommitLog max offset at once, after each
batch it appends and every ``haSendHeartbeatInterval`` when idle, and appends what the master
sends exactly as sent; the store replays the records into ConsumeQueues and index. A frame
behind the slave's end means the slave diverged (it holds bytes the master does not): it cuts
its CommitLog back to the master's end, says so, and reports again. A connection that breaks
is made again after a pause; the slave resumes from its own offset.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import structlog

from aiorocketmq.broker.ha_auth import hello
from aiorocketmq.broker.ha_frames import HAProtocolError, TransferParser, encode_report
from aiorocketmq.broker.store import MessageStore
from aiorocketmq.remoting.protocol.message import now_ms
from aiorocketmq.remoting.protocol.signature import Credentials

log = structlog.get_logger(__name__)

READ_CHUNK = 256 * 1024
RECONNECT_SECONDS = 1.0  # HAClient waits 5 s between attempts; 1 s resumes sooner


class HASlave:
    def __init__(
        self,
        store: MessageStore,
        master_addr: Callable[[], str | None],
        settings: Callable[[], tuple[int, int, int]],
        credentials: Credentials | None = None,
    ) -> None:
        self.store = store
        self.credentials = credentials  # inner credentials: a hello first (ha_auth)
        self.master_addr = master_addr  # the HA address to follow, when known
        self.settings = settings  # (batch, heartbeat ms, housekeeping ms), as HAMaster's
        self.connected_to: str | None = None
        self.truncations = 0

    async def run(self) -> None:
        """Follow the master for as long as the broker runs."""
        while True:
            addr = self.master_addr()
            if addr:
                try:
                    await self._follow(addr)
                except (OSError, HAProtocolError, ValueError) as exc:
                    log.warning("ha_master_connection_lost", master=addr, error=str(exc))
                finally:
                    self.connected_to = None
            await asyncio.sleep(RECONNECT_SECONDS)

    async def _follow(self, addr: str) -> None:
        host, _, port = addr.rpartition(":")
        reader, writer = await asyncio.open_connection(host, int(port))
        if self.credentials is not None:
            writer.write(hello(self.credentials, now_ms()))
        self.connected_to = addr
        log.info("ha_master_connected", master=addr, offset=self.store.max_phys_offset)
        try:
            await self._session(reader, writer)
        finally:
            writer.close()

    async def _session(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        parser = TransferParser()
        store = self.store
        writer.write(encode_report(store.max_phys_offset))
        last_report = last_read = time.monotonic()
        while True:
            _batch, heartbeat_ms, housekeeping_ms = self.settings()
            try:
                async with asyncio.timeout(heartbeat_ms / 1000):
                    data = await reader.read(READ_CHUNK)
            except TimeoutError:
                data = None
            now = time.monotonic()
            if data == b"":
                raise HAProtocolError("the master closed the connection")
            if data is None:
                if now - last_read > housekeeping_ms / 1000:
                    raise HAProtocolError(f"nothing from the master for {housekeeping_ms} ms")
            else:
                last_read = now
                if await self._apply(parser.feed(data)):
                    last_report = 0.0  # appended: report at once
            if now - last_report >= heartbeat_ms / 1000 or last_report == 0.0:
                writer.write(encode_report(store.max_phys_offset))
                await writer.drain()
                last_report = now

    async def _apply(self, frames: list[tuple[int, bytes]]) -> bool:
        """Append each frame where it belongs; True when anything changed the CommitLog."""
        changed = False
        store = self.store
        for phys, data in frames:
            mine = store.max_phys_offset
            if phys < mine:
                # the master ends before us: we hold bytes it never had (a failover, or a
                # master restarted from an older disk); keep its history, not ours
                log.warning("ha_slave_truncated", slave=mine, master=phys, dropped=mine - phys)
                store.truncate_to(phys)
                self.truncations += 1
                changed = True
            elif phys > mine and mine != 0:
                # an empty slave takes the master's first offset, whatever it is (HAClient:
                # "unless its max is 0"; the store accepts a segment start there)
                raise HAProtocolError(f"master sent offset {phys}, the slave ends at {mine}")
            if data:
                await store.append_raw(phys, data)
                changed = True
        return changed
