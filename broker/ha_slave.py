"""HAClient, slave side: follow the master's CommitLog byte for byte (HAService.HAClient;
protocol.md 12.8, fidelity.md 3.2).

The slave connects to the master's HA address (``haMasterAddress``, else the one the name
server's REGISTER_BROKER answer names), reports its CommitLog max offset at once, after each
batch it appends and every ``haSendHeartbeatInterval`` when idle, and appends what the master
sends exactly as sent; the store replays the records into ConsumeQueues and index. A frame
behind the slave's end means the slave diverged (it holds bytes the master does not): it cuts
its CommitLog back to the master's end, says so, and reports again. A connection that breaks
is made again after a pause; the slave resumes from its own offset.

With ``enableControllerMode`` (``broker_id`` set) the slave agrees on epochs first (5.x
AutoSwitchHAClient.doTruncate): it sends an epoch hello, reads the master's epoch entries
and max offset, and cuts its log back to the consistent point of the two epoch files
(crash-safe: broker.store.cutmark) and its epoch file with it; then it copies, appending each
of the master's epoch entries once its log reaches the entry's start. A slave with no epoch
entries (a new replica) cuts nothing. No consistent point (the files share no epoch) is
logged and the connection tried again, as 5.x does.
"""

from __future__ import annotations

import asyncio
import ssl
import time
from collections.abc import Callable

import structlog

from aiorocketmq.broker.ha_auth import hello
from aiorocketmq.broker.ha_frames import (
    EPOCHS_HEADER,
    HAProtocolError,
    TransferParser,
    decode_epochs,
    decode_epochs_header,
    encode_epoch_hello,
    encode_report,
)
from aiorocketmq.broker.store import MessageStore
from aiorocketmq.broker.store.epochs import EpochEntry, consistent_point
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
        *,
        tls: ssl.SSLContext | None = None,
        credentials: Credentials | None = None,
        broker_id: int | None = None,
    ) -> None:
        """``broker_id``: this slave's id, sent in an epoch hello (controller mode); None:
        the static-role protocol, unchanged."""
        self.store = store
        self.broker_id = broker_id
        self.master_epochs: list[EpochEntry] = []  # what the master answered the hello with
        self.tls = tls  # ours (tls.ha.enable): dial the master's HA port with TLS
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
                except (OSError, HAProtocolError, ValueError, EOFError) as exc:
                    log.warning("ha_master_connection_lost", master=addr, error=str(exc))
                finally:
                    self.connected_to = None
            await asyncio.sleep(RECONNECT_SECONDS)

    async def _follow(self, addr: str) -> None:
        host, _, port = addr.rpartition(":")
        reader, writer = await asyncio.open_connection(
            host, int(port), ssl=self.tls, ssl_handshake_timeout=10.0 if self.tls else None
        )
        if self.credentials is not None:
            writer.write(hello(self.credentials, now_ms()))
        try:
            if self.broker_id is not None:
                writer.write(encode_epoch_hello(self.broker_id))
                await self._agree(reader)
            self.connected_to = addr
            log.info("ha_master_connected", master=addr, offset=self.store.max_phys_offset)
            await self._session(reader, writer)
        finally:
            writer.close()

    async def _agree(self, reader: asyncio.StreamReader) -> None:
        """Read the master's epochs; cut this log back to the consistent point."""
        async with asyncio.timeout(self.settings()[2] / 1000):
            size, master_end = decode_epochs_header(await reader.readexactly(EPOCHS_HEADER))
            entries = decode_epochs(await reader.readexactly(size))
        store = self.store
        local = store.epochs.entries
        if local:
            point = consistent_point(local, store.dispatched_phys_offset, entries, master_end)
            if point < 0:
                log.error("ha_no_consistent_point", mine=[tuple(e) for e in local],
                          master=[tuple(e) for e in entries])  # fmt: skip
                raise HAProtocolError("no epoch in common with the master")
            if point < store.max_phys_offset:
                log.warning("ha_slave_truncated", slave=store.max_phys_offset, master=master_end,
                            consistent=point, dropped=store.max_phys_offset - point)  # fmt: skip
                store.truncate_to(point)
                self.truncations += 1
            store.epochs.truncate_suffix_by_offset(point)
        self.master_epochs = entries
        self._learn_epochs()

    def _learn_epochs(self) -> None:
        """Append the master's epoch entries this log has reached (AutoSwitchHAClient: an
        epoch the transfer header names for the first time)."""
        epochs, end = self.store.epochs, self.store.max_phys_offset
        for entry in self.master_epochs:
            if entry.epoch > epochs.last_epoch and entry.start_offset <= end:
                epochs.append(entry)

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
        if changed and self.master_epochs:
            self._learn_epochs()
        return changed
