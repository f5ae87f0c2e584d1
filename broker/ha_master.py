"""HAService, master side: stream CommitLog bytes to slaves, track what they have
(HAService, HAConnection; protocol.md 12.8, fidelity.md 3.2).

Each slave connection reads the slave's reports (its CommitLog max offset) and writes the
CommitLog from where the first report said, in frames of at most ``haTransferBatchSize``
bytes, with an empty frame as a heartbeat after ``haSendHeartbeatInterval`` idle. What the
slaves acknowledged is what a SYNC_MASTER send waits for (``wait_acked``).

compat: a first report of 0 (an empty slave) starts at the master's first CommitLog byte, so
the slave's copy is whole (4.9.8 starts at its last file); a report beyond the master's end
gets an empty frame naming the master's end (4.9.8 closes the connection), so a slave that
diverged can cut back to it and report again.

With ``enableControllerMode`` (``epoch_mode``) a slave's epoch hello is answered with this
broker's epoch entries and max offset (ha_frames; 5.x AutoSwitchHAConnection's handshake),
and only a master serves slaves (``serving``): a broker the controller made a slave, or has
not given a role yet, closes every HA connection, so nothing copies from a stale master.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import socket
import ssl
import time
from collections.abc import Callable

import structlog

from aiorocketmq.broker.ha_auth import HEADER_SIZE, MAGIC, Admit, Hello, body_size, parse
from aiorocketmq.broker.ha_frames import (
    EPOCH_HELLO,
    EPOCH_HELLO_SIZE,
    HAProtocolError,
    decode_epoch_hello,
    encode_epochs,
    encode_transfer,
    take_last_report,
)
from aiorocketmq.broker.store import MessageStore

log = structlog.get_logger(__name__)

READ_CHUNK = 64 * 1024
TLS_HANDSHAKE_SECONDS = 10.0  # a slave that stalls its handshake is closed after this


class HAMaster:
    """The slaves' connections and the highest offset any of them acknowledged."""

    def __init__(
        self,
        store: MessageStore,
        settings: Callable[[], tuple[int, int, int]],
        *,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self.store = store
        self.tls = tls  # ours (tls.ha.enable): the HA port speaks TLS only
        # (haTransferBatchSize, haSendHeartbeatInterval ms, haHousekeepingInterval ms)
        self.settings = settings
        self.connections: set[HAConnection] = set()
        self.acked = 0  # push2SlaveMaxOffset: the most any slave has
        # SYNC_MASTER sends waiting for a slave: (end, deadline in loop time, future). One
        # timer, armed for the earliest deadline, expires them (not one timer per send).
        self._waiters: list[tuple[int, float, asyncio.Future[bool]]] = []
        self._timer: asyncio.TimerHandle | None = None
        self._server: asyncio.Server | None = None
        self.admit: Admit | None = None  # set when ACL is on: who may replicate (ha_auth)
        self.epoch_mode = False  # enableControllerMode: epoch hellos are answered
        self.serving = True  # False: every slave connection is closed (not a master)
        self.ever_connected = False  # a slave has connected since start (broker.meta_stream)
        # controller mode (broker.failover): only these slaves' acks count, and a put waits
        # until ``needed`` of them hold it (``acked`` is then the needed-th highest of theirs);
        # None: any slave's, the highest (4.9.8)
        self.counted: frozenset[int] | None = None
        self.needed = 1
        # controller mode: the most ``acked`` has been since this broker became master, so
        # the end of every put a slave's ack let it acknowledge (``acked`` may go down)
        self.confirmed = -1
        store.add_dispatch_listener(self._arrived)

    async def start(self, sock: socket.socket) -> None:
        self._server = await asyncio.start_server(
            self._accept,
            sock=sock,
            ssl=self.tls,
            ssl_handshake_timeout=None if self.tls is None else TLS_HANDSHAKE_SECONDS,
        )

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for conn in list(self.connections):
            conn.close()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        for _end, _deadline, fut in self._waiters:
            if not fut.done():
                fut.cancel()
        self._waiters.clear()

    def drop_slaves(self) -> None:
        """Close every slave connection (a role change: the slaves connect again, to
        whichever master they are told of, and agree on epochs anew)."""
        for conn in list(self.connections):
            conn.close()

    def fail_waiters(self) -> None:
        """Answer every SYNC_MASTER send waiting for a slave: not acknowledged (demoted)."""
        for _end, _deadline, fut in self._waiters:
            if not fut.done():
                fut.set_result(False)
        self._waiters.clear()

    def _arrived(self, *_args: object) -> None:
        for conn in self.connections:
            conn.wake.set()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if not self.serving:
            writer.close()
            return
        conn = HAConnection(self, reader, writer)
        self.connections.add(conn)
        self.ever_connected = True
        log.info("ha_slave_connected", peer=conn.peer)
        try:
            await conn.run()
        finally:
            self.connections.discard(conn)
            conn.close()
            log.info("ha_slave_disconnected", peer=conn.peer, acked=conn.acked)

    # ------------------------------------------------------------ SYNC_MASTER

    def slave_ok(self, end: int, max_gap: int) -> bool:
        """HAService.isSlaveOK: a slave connected, and not more than ``max_gap`` behind."""
        return bool(self.connections) and end - self.acked < max_gap

    def count(self, slaves: frozenset[int], needed: int) -> None:
        """Controller mode: count the acks of ``slaves`` (SyncStateSet members), ``needed``
        of them per put; ``acked`` recomputed (it may go down)."""
        self.counted, self.needed = slaves, needed
        self.acked = -1
        self.on_ack(self._counted_acked())

    def counted_connected(self) -> int:
        """Counted slaves connected now (controller mode)."""
        counted = self.counted or frozenset()
        return sum(1 for c in self.connections if c.slave_id in counted)

    def _counted_acked(self) -> int:
        counted = self.counted or frozenset()
        acks = sorted((c.acked for c in self.connections if c.slave_id in counted), reverse=True)
        if self.needed <= 0:
            return self.store.max_phys_offset
        return acks[self.needed - 1] if len(acks) >= self.needed else -1

    def on_ack(self, offset: int) -> None:
        if self.counted is not None:
            offset = self._counted_acked()
        if offset <= self.acked:
            return
        self.acked = offset
        if offset > self.confirmed:
            self.confirmed = offset
        still = []
        for waiter in self._waiters:
            end, _deadline, fut = waiter
            if fut.done():
                continue  # expired, or its sender was cancelled
            if end <= offset:
                fut.set_result(True)
            else:
                still.append(waiter)
        self._waiters = still

    async def wait_acked(self, end: int, timeout: float) -> bool:
        """GroupTransferService: until a slave has every byte before ``end`` (True), or
        ``timeout`` seconds (False)."""
        if self.acked >= end:
            return True
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[bool] = loop.create_future()
        deadline = loop.time() + timeout
        self._waiters.append((end, deadline, fut))
        if self._timer is None or deadline < self._timer.when():
            if self._timer is not None:
                self._timer.cancel()
            self._timer = loop.call_at(deadline, self._expire)
        return await fut

    def _expire(self) -> None:
        """The timer: answer False to every waiter past its deadline; re-arm for the next."""
        self._timer = None
        now = asyncio.get_running_loop().time() + 0.001  # a timer may fire a hair early
        still = []
        for waiter in self._waiters:
            _end, deadline, fut = waiter
            if fut.done():
                continue
            if deadline <= now:
                fut.set_result(False)
            else:
                still.append(waiter)
        self._waiters = still
        if still:
            first = min(deadline for _end, deadline, _fut in still)
            self._timer = asyncio.get_running_loop().call_at(first, self._expire)


class HAConnection:
    def __init__(
        self, master: HAMaster, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        self.master = master
        self.reader = reader
        self.writer = writer
        self.peer = str(writer.get_extra_info("peername"))
        self.wake = asyncio.Event()
        self.requested: int | None = None  # where streaming starts (the first report)
        self.acked = -1
        self.slave_id: int | None = None  # the brokerId of its epoch hello (controller mode)
        # caught up: when the slave last held everything the master had (monotonic; 0.0:
        # never). ``_ends``: (offset, when) at each time this connection had sent the master's
        # whole log; a report reaching one dates the catch-up (5.x AutoSwitchHAConnection
        # .lastCaughtUpTimeMs)
        self.caught_up_at = 0.0
        self._ends: collections.deque[tuple[int, float]] = collections.deque(maxlen=4096)
        self._started = asyncio.Event()

    def close(self) -> None:
        self.writer.close()

    async def run(self) -> None:
        try:
            initial = await self._hello()
        except (OSError, HAProtocolError, asyncio.IncompleteReadError, TimeoutError) as exc:
            log.info("ha_connection_closed", peer=self.peer, error=str(exc) or type(exc).__name__)
            return
        if initial is None:
            return
        try:
            async with asyncio.TaskGroup() as tg:
                reading = tg.create_task(self._read_reports(initial))
                writing = tg.create_task(self._transfer())
                reading.add_done_callback(lambda _t: writing.cancel())
        except* (OSError, ValueError) as group:
            log.info("ha_connection_closed", peer=self.peer, error=str(group.exceptions[0]))

    async def _hello(self) -> bytes | None:
        """The slave's hellos, if it sent any -- ha_auth's, checked when ACL is on, then an
        epoch hello (answered with this broker's epochs): the bytes read past them, or None
        when the connection is to close."""
        hello: Hello | None = None
        async with asyncio.timeout(self.master.settings()[2] / 1000):
            first = await self.reader.read(1)
            magic = first + await self.reader.readexactly(3) if first == MAGIC[:1] else b""
            if magic == MAGIC:
                head = magic + await self.reader.readexactly(HEADER_SIZE - len(MAGIC))
                hello = parse(await self.reader.readexactly(body_size(head)))
                first = await self.reader.read(1)
                magic = first + await self.reader.readexactly(3) if first == MAGIC[:1] else b""
            if magic == EPOCH_HELLO:
                rest = await self.reader.readexactly(EPOCH_HELLO_SIZE - len(EPOCH_HELLO))
                self.slave_id = decode_epoch_hello(magic + rest)
                first = b""
            elif magic:
                raise HAProtocolError("bad HA hello")
        if not first and hello is None and self.slave_id is None:
            return None  # closed before a byte
        admit = self.master.admit
        if admit is not None and not admit(self.ip, hello):
            return None
        if self.slave_id is not None:
            if not self.master.epoch_mode:
                log.warning("ha_epoch_hello_refused", peer=self.peer,
                            reason="enableControllerMode is off")  # fmt: skip
                return None
            store = self.master.store
            self.writer.write(encode_epochs(store.max_phys_offset, store.epochs.entries))
            await self.writer.drain()
        return first

    @property
    def ip(self) -> str:
        peer = self.writer.get_extra_info("peername")
        return str(peer[0]) if isinstance(peer, tuple) else str(peer)

    async def _read_reports(self, initial: bytes = b"") -> None:
        """The slave's offsets; silent for haHousekeepingInterval, or EOF, ends it."""
        buf = bytearray(initial)
        store = self.master.store
        while True:
            housekeeping = self.master.settings()[2] / 1000
            try:
                async with asyncio.timeout(housekeeping):
                    data = await self.reader.read(READ_CHUNK)
            except TimeoutError:
                log.warning("ha_slave_silent", peer=self.peer, seconds=housekeeping)
                return
            if not data:
                return
            buf += data
            offset = take_last_report(buf)
            if offset is None:
                continue
            if offset > store.max_phys_offset:
                # the slave is ahead: tell it where we end, wait for its next report
                log.warning("ha_slave_ahead", peer=self.peer, slave=offset,
                            master=store.max_phys_offset)  # fmt: skip
                self.requested = None
                self._started.clear()
                self.writer.write(encode_transfer(store.max_phys_offset, b""))
                continue
            if self.requested is None:
                self.requested = offset if offset > 0 else store.min_phys_offset
                self._started.set()
                self.wake.set()
            self.acked = offset
            ends = self._ends
            while ends and ends[0][0] <= offset:
                self.caught_up_at = ends.popleft()[1]
            self.master.on_ack(offset)

    def _sent_all(self, position: int) -> None:
        """Everything the master has before ``position`` was sent, now."""
        now, ends = time.monotonic(), self._ends
        if ends and ends[-1][0] == position:
            ends[-1] = (position, now)  # still the master's end: caught up as of now
        else:
            ends.append((position, now))

    async def _transfer(self) -> None:
        """CommitLog bytes from the requested offset on; a heartbeat when idle."""
        store = self.master.store
        while True:
            await self._started.wait()
            assert self.requested is not None
            position, last_write = self.requested, time.monotonic()
            while self._started.is_set():
                batch, heartbeat_ms, _ = self.master.settings()
                self.wake.clear()
                data = store.read_raw(position, batch)
                if not data:
                    self._sent_all(position)
                if data:
                    self.writer.write(encode_transfer(position, data))
                    position += len(data)
                elif time.monotonic() - last_write >= heartbeat_ms / 1000:
                    self.writer.write(encode_transfer(position, b""))
                else:
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(heartbeat_ms / 1000):
                            await self.wake.wait()
                    continue
                last_write = time.monotonic()
                await self.writer.drain()
