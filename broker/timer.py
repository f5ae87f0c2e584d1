"""TimerService: the broker's timer wheel (5.x TimerMessageStore's services: enqueue, dequeue,
roll, delete; features.md 4.1), over the durable TimerStore (broker/store/timerstore.py).

A timer message is a CommitLog record under ``rmq_sys_wheel_timer`` queue 0 (timer_rules
rewrote it at the send), so it replicates and survives as any record does. This service:

- **indexes** that ConsumeQueue, in order, on every role: each unit is chained into the slot
  of its TIMER_OUT_MS (the ConsumeQueue's tags code, broker.store.dispatch), or, beyond the
  roll window, into the window's last slot flagged ROLL; a slot the wheel has passed (or is
  delivering) is never chosen: such a unit waits in the next one, due at once;
- **delivers** (a master only: ``run``) each slot once the clock is past it (5.x reads slot T
  once floor(now) > T, so delivery lands in [due, due + precision)): a ROLL unit's message is
  put back into the wheel topic with TIMER_ROLL_TIMES + 1; a delete marker (TIMER_DEL_UNIQKEY,
  RECALL_MESSAGE) cancels the slot's message of that key; any other is stored again under its
  REAL_TOPIC / REAL_QID with TIMER_ENQUEUE_MS / TIMER_DEQUEUE_MS. A restart resumes at the
  checkpoint, so what fell due while the broker was down is delivered then.

Exactly once across a SIGKILL: before each chunk's append the checkpoint says (slot, units
done, the CommitLog's end); after a restart the records past that end are read, and a unit whose
message is among the deliveries found there is not put again.

No stall: a slot of 100,000 messages is delivered CHUNK at a time (one append each),
ROUND_MESSAGES per round, yielding to the loop whenever a TimeSlice runs out (other
clients' round trips stay short).
"""

from __future__ import annotations

import array
import asyncio
import itertools
import time
from collections.abc import Callable
from typing import Any, Final

import structlog

from aiorocketmq.broker.store import MessageStore, PutStatus
from aiorocketmq.broker.store.config import StoreConfig
from aiorocketmq.broker.store.dispatch import TIMER_DELETE_BIT
from aiorocketmq.broker.store.results import NEVER_STORED
from aiorocketmq.broker.store.timercheck import Progress
from aiorocketmq.broker.store.timerlog import FLAG_ROLL, UNIT_SIZE
from aiorocketmq.broker.store.timerstore import TimerStore
from aiorocketmq.broker.timer_convert import (
    Identity,
    identity,
    source_identity,
    to_delivered,
    to_rolled,
    wheel_message,
)
from aiorocketmq.broker.timer_rates import TimerRates
from aiorocketmq.remoting.errors import MessageDecodeError
from aiorocketmq.remoting.protocol.message import (
    MessageExt,
    Prop,
    decode_record,
    now_ms,
    record_size,
)
from aiorocketmq.remoting.protocol.timer import TIMER_TOPIC, TimerProp, delete_key
from aiorocketmq.remoting.tasks import TimeSlice
from aiorocketmq.remoting.warnlimit import WarnLimiter

log = structlog.get_logger(__name__)

FLAG_DELETE: Final = 4  # compat: TimerMessageStore.MAGIC_DELETE
FLAG_BITS: Final = 3  # a slot's units in memory: phys << FLAG_BITS | flags
FLAG_MASK: Final = (1 << FLAG_BITS) - 1
ROUND_MESSAGES: Final = 2048  # per round: the loop is given way between rounds too
CHUNK: Final = 32  # messages put in one append (and one checkpoint write)
INDEX_BATCH: Final = 4096
RETRY_FIRST_SECONDS: Final = 0.1
RETRY_MAX_SECONDS: Final = 10.0
IDLE_SECONDS: Final = 1.0  # the longest sleep: a clock step is noticed within it
EMPTY_STEPS: Final = 10_000  # empty slots passed per round (a restart after a long stop)


class TimerService:
    def __init__(self, store: MessageStore, config: Callable[[], StoreConfig]) -> None:
        cfg = config()
        self.store = store
        self.config = config
        self.precision = cfg.timer_precision_ms
        self.timers = TimerStore(
            store.root,
            precision_ms=cfg.timer_precision_ms,
            window_slots=cfg.timer_roll_window_slot,
            segment_units=max(1, cfg.mapped_file_size_timer_log // UNIT_SIZE),
        )
        self.busy = False  # delivering slot ``read_ms`` (new units go to the next one)
        self._wake = asyncio.Event()
        self._slice = TimeSlice()
        self._seen: set[Identity] = set()  # deliveries found past the checkpoint's mark
        self._seen_until = -1  # ... kept until the wheel has passed this slot
        self._following = False  # progress taken from a master (a slave's)
        self._slot_began = -1  # the CommitLog's end when the slot being delivered began
        # the slot being delivered, read once: (slot, units then, its units, their
        # ConsumeQueue offsets, delete keys)
        self._cache: tuple[int, int, array.array[int], array.array[int], set[str]] | None = None
        self._cuts = 0  # log cuts seen: a slot read across one is read again
        self._backoff = 0.0
        self._warnings = WarnLimiter(10.0)
        self.counts: dict[str, int] = {"delivered": 0, "rolled": 0, "recalled": 0,
                                       "skipped": 0, "indexed": 0}  # fmt: skip
        self.failures: dict[str, int] = {}
        self.rates = TimerRates()
        self.loaded = False
        self.delivering = False  # the delivery loop runs (a master)
        store.add_dispatch_listener(self._arrived)
        store.add_cut_listener(self._cut)

    # ------------------------------------------------------------ start / stop

    def load(self) -> None:
        """After the store's recovery: the wheel's files checked and its slots rebuilt, what
        a crash left half done found, the ConsumeQueue's new units indexed."""
        started = time.monotonic()
        cq_min = self.store.min_offset(TIMER_TOPIC, 0)
        cq_max = self.store.max_offset(TIMER_TOPIC, 0)
        self.timers.recover(cq_min, cq_max, self.store.max_phys_offset, now_ms())
        mark = self.timers.progress.phy_mark
        if mark >= 0:
            self._seen = self._deliveries_since(mark)
            self._seen_until = self.timers.progress.read_ms
        self.loaded = True
        self._index()
        log.info("timer_wheel_loaded", pending=self.timers.pending,
                 read_ms=self.timers.progress.read_ms, next_cq=self.timers.next_cq,
                 seconds=round(time.monotonic() - started, 3))  # fmt: skip

    def close(self) -> None:
        self.timers.flush()
        self.timers.close()

    async def flush(self) -> None:
        """timerFlushIntervalMs: the wheel's files to disk (power loss; a SIGKILL loses none)."""
        await asyncio.to_thread(self.timers.flush)

    def _deliveries_since(self, mark: int) -> set[Identity]:
        """Identities of the wheel's puts in the CommitLog from ``mark`` on (a few at most)."""
        found: set[Identity] = set()
        phys, end = mark, self.store.max_phys_offset
        size = self.store.config.mapped_file_size_commit_log
        while phys < end:
            record = self.store.read(phys)
            if record is None:  # a segment's blank end: on to the next segment
                phys = (phys // size + 1) * size
                continue
            try:
                msg = decode_record(record)
            except MessageDecodeError:
                break
            if TimerProp.DEQUEUE_MS in msg.properties:
                found.add(source_identity(msg))
            phys += record_size(record)
        return found

    def _cut(self, end: int) -> None:
        """The store cut its log back to ``end`` (broker.roles, broker.ha_slave: a failover):
        the units of the messages cut go, else their slots would deliver whatever record
        comes to lie at their CommitLog offsets (``reload``); indexing resumes at the cut
        ConsumeQueue's end."""
        if not self.loaded:
            return
        before = self.timers.pending
        cq_min = self.store.min_offset(TIMER_TOPIC, 0)
        cq_max = self.store.max_offset(TIMER_TOPIC, 0)
        self.timers.reload(cq_min, cq_max, end)
        self._cache = None
        self._cuts += 1
        if self._slot_began > end:
            self._slot_began = end
        log.warning("timer_wheel_cut", end=end, pending=self.timers.pending,
                    dropped=max(0, before - self.timers.pending),
                    next_cq=self.timers.next_cq)  # fmt: skip
        self._index()

    # ------------------------------------------------------------ index

    def _arrived(self, topic: str, _qid: int, _offset: int, _tags: int, _stamp: int) -> None:
        if topic == TIMER_TOPIC and self.loaded:
            self._index()

    def _index(self) -> None:
        try:
            self._index_new()
        except OSError as exc:  # no space for a TimerLog segment: the next dispatch retries
            held = self._warnings.hit("index")
            if held is not None:
                log.warning("timer_index_failed", error=str(exc), suppressed=held)

    def _index_new(self) -> None:
        cq = self.store.queues.get((TIMER_TOPIC, 0))
        if cq is None:
            return
        ts = self.timers
        if ts.next_cq < cq.min_offset:
            ts.next_cq = cq.min_offset
        if ts.next_cq > cq.max_offset:  # the queue was deleted or cut back
            log.warning("timer_queue_behind_index", next_cq=ts.next_cq, queue_max=cq.max_offset)
            ts.next_cq = cq.max_offset
        while ts.next_cq < cq.max_offset:
            at = ts.next_cq
            for offset, (phys, size, tags) in enumerate(cq.raw_units(at, INDEX_BATCH), at):
                slot, flags = self._slot_of(tags)
                ts.add(slot, phys, size, offset, flags)
            if ts.next_cq == at:  # a missing segment: nothing more to read
                break
            self.counts["indexed"] += ts.next_cq - at
            self._wake.set()
        self._tick()

    def _slot_of(self, tags: int) -> tuple[int, int]:
        """The slot a unit waits in and its flags."""
        flags = FLAG_DELETE if tags & TIMER_DELETE_BIT else 0
        read_ms = self.timers.progress.read_ms
        slot = max(tags & ~TIMER_DELETE_BIT, read_ms + self.precision if self.busy else read_ms)
        now = now_ms() // self.precision * self.precision
        window = self.timers.window_ms  # the ring holds two windows from read_ms on
        horizon = min(max(now, read_ms) + window, read_ms + 2 * window) - self.precision
        if slot > horizon:
            return horizon, flags | FLAG_ROLL
        return slot // self.precision * self.precision, flags

    # ------------------------------------------------------------ deliver

    async def run(self) -> None:
        """A master's delivery loop: deliver what is due, sleep until the next slot."""
        self.delivering = True
        if self._following:  # a slave taking over: what its master delivered is not again
            self._following = False
            mark = self.timers.progress.phy_mark
            self._seen = self._deliveries_since(mark) if mark >= 0 else set()
            self._seen_until = now_ms()
            log.info("timer_wheel_taken_over", read_ms=self.timers.progress.read_ms,
                     delivered_since_sync=len(self._seen))  # fmt: skip
        try:
            await self._deliver_forever()
        finally:  # a demotion cancels the loop: a slave delivers nothing, busy with nothing
            self.busy = self.delivering = False
            self._cache = None

    async def _deliver_forever(self) -> None:
        while True:
            self._wake.clear()
            try:
                wait = await self._round()
            except Exception:  # a bug on one message must not stop the wheel for good
                if self._warnings.hit("crashed") is not None:
                    log.exception("timer_delivery_crashed")
                self.busy = False
                wait = self._back_off("crashed")
            if wait <= 0:  # more to do: other requests first (a round may not have yielded)
                await asyncio.sleep(0)
                continue
            try:
                async with asyncio.timeout(wait):
                    await self._wake.wait()
            except TimeoutError:
                pass

    async def _round(self) -> float:
        """Deliver up to ROUND_MESSAGES; seconds until a look is needed (0: more to do)."""
        ts = self.timers
        read_ms, done, _mark = ts.progress
        steps = 0
        while ts.slot_count(read_ms) == 0:  # empty slots: passed without a write each
            if now_ms() < read_ms + self.precision or steps >= EMPTY_STEPS:
                ts.save(Progress(read_ms, 0, -1))
                return 0.0 if steps >= EMPTY_STEPS else self._until(read_ms)
            read_ms, done, steps = read_ms + self.precision, 0, steps + 1
        if now_ms() < read_ms + self.precision:
            ts.save(Progress(read_ms, done, -1))
            await self._slot(read_ms)  # read ahead: when it falls due, the puts start
            return self._until(read_ms)
        self.busy = True
        if self._slot_began < 0:
            self._slot_began = self.store.max_phys_offset
        units, offsets, deletes = await self._slot(read_ms)
        moved = 0
        while done < len(units) and moved < ROUND_MESSAGES:
            chunk = units[done : done + CHUNK]
            ts.save(Progress(read_ms, done, self.store.max_phys_offset))
            stopped = self._put_chunk(chunk, offsets[done : done + CHUNK], deletes)
            if stopped is not None:
                at, status = stopped
                ts.save(Progress(read_ms, done + at, -1))
                ts.delivered(at)
                self.busy = False
                return self._back_off(status.name)
            done += len(chunk)
            moved += len(chunk)
            ts.delivered(len(chunk))
            await self._slice.tick()
        self._tick()
        if done < len(units):
            ts.save(Progress(read_ms, done, -1))
            return 0.0
        self._backoff = 0.0
        if read_ms >= self._seen_until:
            self._seen.clear()
        self._cache = None
        self._slot_began = -1
        ts.save(Progress(read_ms + self.precision, 0, -1))
        self.busy = False
        ts.clean()
        return 0.0

    def _put_chunk(
        self, chunk: array.array[int], offsets: array.array[int], deletes: set[str]
    ) -> tuple[int, PutStatus] | None:
        """Put a chunk's messages where they go now, in one append; None once all are done
        (or skipped for good), else the index of the first one the store refused for now
        and its status (a later one it took is remembered in ``_seen``: not put again).
        Per message: its record read and decoded once, the decoded message put
        (broker.timer_convert, compiled)."""
        now_text = str(now_ms())
        read, counts, seen = self.store.commitlog.read_record, self.counts, self._seen
        at: list[int] = []
        outs: list[MessageExt] = []
        kinds: list[str] = []
        for k, packed in enumerate(chunk):
            flags = packed & FLAG_MASK
            if flags & FLAG_DELETE and not flags & FLAG_ROLL:
                continue  # a marker: it did its work in ``_slot``
            msg = self._message(packed >> FLAG_BITS, offsets[k], read)
            if msg is None:  # retention took it, it is corrupt or not the unit's
                counts["skipped"] += 1
                continue
            if deletes and self._recalled(msg, deletes):
                counts["recalled"] += 1
                continue
            if seen and identity(msg) in seen:  # put before the crash
                continue
            if flags & FLAG_ROLL:
                to_rolled(msg, now_text)
                kinds.append("rolled")
            elif to_delivered(msg, now_text):
                kinds.append("delivered")
            else:  # no real topic and queue: nothing to deliver
                counts["skipped"] += 1
                continue
            at.append(k)
            outs.append(msg)
        results = self.store.put_many(outs) if outs else []
        stopped: tuple[int, PutStatus] | None = None
        for k, msg, kind, result in zip(at, outs, kinds, results, strict=True):
            if result.status is PutStatus.PUT_OK:
                counts[kind] += 1
                if stopped is not None:
                    seen.add(source_identity(msg))
            elif result.status in NEVER_STORED:
                counts["skipped"] += 1
            elif stopped is None:
                stopped = (k, result.status)
        return stopped

    @staticmethod
    def _recalled(msg: MessageExt, deletes: set[str]) -> bool:
        """A delete marker of its slot names it (not itself a marker)."""
        props = msg.properties
        uniq = props.get(Prop.UNIQ_KEY)
        return (bool(uniq) and delete_key(props.get(Prop.REAL_TOPIC, ""), uniq or "") in deletes
                and TimerProp.DEL_UNIQKEY not in props)  # fmt: skip

    def _until(self, read_ms: int) -> float:
        return min(IDLE_SECONDS, max(0.001, (read_ms + self.precision - now_ms()) / 1000))

    def _back_off(self, why: str) -> float:
        self._backoff = min(RETRY_MAX_SECONDS, max(RETRY_FIRST_SECONDS, self._backoff * 2))
        self.failures[why] = self.failures.get(why, 0) + 1
        held = self._warnings.hit(("failed", why))
        if held is not None:
            log.warning("timer_delivery_failed", status=why, retry_in=self._backoff,
                        suppressed=held)  # fmt: skip
        return self._backoff

    async def _slot(self, read_ms: int) -> tuple[array.array[int], array.array[int], set[str]]:
        """A slot's units, first indexed first, each ``phys << FLAG_BITS | flags`` in one
        array (100,000 of them are 800 KB and nothing for the garbage collector to walk),
        the ConsumeQueue offsets they index, and the keys its delete markers cancel: read
        once per slot (kept across rounds; units chained since are read on their own, the
        newest of the chain), giving the loop way as it goes. Read ahead, while the slot
        is not due yet (``_round``): its delivery starts with the puts."""
        num = self.timers.slot_count(read_ms)
        cache = self._cache
        if cache is not None and cache[0] == read_ms and cache[1] <= num:
            known, units, offsets, keys = cache[1], cache[2], cache[3], cache[4]
        else:
            known, units, offsets, keys = 0, array.array("q"), array.array("q"), set()
        if known == num:
            return units, offsets, keys
        new_units = array.array("q")
        new_offsets = array.array("q")
        cuts = self._cuts
        for unit in itertools.islice(self.timers.walk(read_ms), num - known):
            new_units.append(unit.phys << FLAG_BITS | unit.flags)
            new_offsets.append(unit.cq_offset)
            if unit.flags & FLAG_DELETE and not unit.flags & FLAG_ROLL:
                msg = self._message(unit.phys, unit.cq_offset)
                key = msg.properties.get(TimerProp.DEL_UNIQKEY) if msg is not None else None
                if key:
                    keys.add(key)
            await self._slice.tick()
            if cuts != self._cuts:  # the wheel was read again meanwhile (``_cut``)
                return await self._slot(read_ms)
        new_units.reverse()
        new_offsets.reverse()
        units.extend(new_units)
        offsets.extend(new_offsets)
        self._cache = (read_ms, num, units, offsets, keys)
        return units, offsets, keys

    def _message(
        self, phys: int, cq_offset: int, read: Callable[[int], bytes | None] | None = None
    ) -> MessageExt | None:
        """The wheel's message a unit indexes; None if the record there is gone, corrupt
        or another one -- not the wheel topic's ConsumeQueue unit ``cq_offset`` (a log cut
        back by a failover and written again; ``_cut`` drops such units, this guards)."""
        # as a pull trusts its ConsumeQueue unit: the record's header checked, not its CRC
        record = (read or self.store.commitlog.read_record)(phys)
        msg = wheel_message(record, cq_offset)
        if msg is None and record is not None:
            held = self._warnings.hit("mismatch")
            if held is not None:
                log.warning("timer_unit_not_its_record", phys=phys, cq_offset=cq_offset,
                            suppressed=held)  # fmt: skip
        return msg

    def follow(self, read_ms: int, slot_began: int) -> None:
        """A slave takes its master's progress (SlaveSync, every few seconds): slot
        ``read_ms`` is the one the master delivers, begun when its CommitLog ended at
        ``slot_began``; a take-over resumes there, skipping what the master delivered since
        (found in the replicated CommitLog)."""
        self.timers.save(Progress(read_ms, 0, slot_began))
        self._following = True

    # ------------------------------------------------------------ recall

    def delivered_already(self, slot_ms: int) -> bool:
        """Whether the wheel has passed (or is delivering) ``slot_ms``."""
        read_ms = self.timers.progress.read_ms
        return slot_ms < read_ms or (slot_ms == read_ms and self.busy)

    def marker(self, topic: str, msg_id: str, slot_ms: int) -> MessageExt:
        """compat: RecallMessageProcessor.buildMessage -- a delete marker in the message's
        slot (its TIMER_OUT_MS, taken as it is: no rounding again)."""
        props = {
            TimerProp.DEL_UNIQKEY: delete_key(topic, msg_id),
            TimerProp.OUT_MS: str(slot_ms),
            Prop.REAL_TOPIC: topic,
            Prop.REAL_QID: "0",
            Prop.UNIQ_KEY: msg_id,
        }
        return MessageExt(topic=TIMER_TOPIC, body=b"0", properties=props, queue_id=0,
                          born_timestamp=now_ms())  # fmt: skip

    # ------------------------------------------------------------ figures

    def lag_ms(self) -> int:
        """How late the wheel is: 0 while it keeps up with the clock (or delivers nothing:
        a slave)."""
        if not self.delivering:
            return 0
        return max(0, now_ms() - self.timers.progress.read_ms - 2 * self.precision)

    def _tick(self) -> None:
        counts = self.counts
        self.rates.tick(time.monotonic(), counts["indexed"], counts["delivered"] + counts["rolled"])

    def runtime_info(self) -> dict[str, str]:
        """compat: DefaultMessageStore.getRuntimeInfo's timer keys (5.x, with the wheel on):
        timerReadBehind (s since the slot being read: getDequeueBehind), timerOffsetBehind
        (wheel-topic units not yet indexed: getEnqueueBehindMessages), timerCongestNum (what
        waits in the wheel: getAllCongestNum), timerEnqueueTps / timerDequeueTps (the wheel
        topic's units indexed, and deliveries and rolls put, per second)."""
        counts = self.counts
        enq, deq = self.rates.tps(time.monotonic(), counts["indexed"],
                                  counts["delivered"] + counts["rolled"])  # fmt: skip
        behind = self.store.max_offset(TIMER_TOPIC, 0) - self.timers.next_cq
        return {
            "timerReadBehind": str(max(0, now_ms() - self.timers.progress.read_ms) // 1000),
            "timerOffsetBehind": str(max(0, behind)),
            "timerCongestNum": str(self.timers.pending),
            "timerEnqueueTps": _java_float(enq),
            "timerDequeueTps": _java_float(deq),
        }

    def checkpoint(self) -> dict[str, Any]:
        """GET_TIMER_CHECK_POINT's body (TimerCheckpoint's names, JSON)."""
        ts = self.timers
        return {
            "lastReadTimeMs": ts.progress.read_ms,
            "lastReadDone": ts.progress.done,
            "lastTimerLogFlushPos": ts.log.end,
            "lastTimerQueueOffset": ts.next_cq,
            "masterTimerQueueOffset": self.store.max_offset(TIMER_TOPIC, 0),
            "precisionMs": self.precision,
            "slotBeganPhys": self._slot_began
            if self._slot_began >= 0
            else self.store.max_phys_offset,
        }

    def metrics(self) -> dict[str, Any]:
        """GET_TIMER_METRICS's body."""
        return {
            "pending": self.timers.pending,
            "lagMs": self.lag_ms(),
            "readTimeMs": self.timers.progress.read_ms,
            **self.counts,
            "failures": dict(self.failures),
        }


def _java_float(x: float) -> str:
    """A rate as Java's Float.toString writes a small one ("0.0", "1.5"); 2 decimals."""
    return repr(round(x, 2) + 0.0)
