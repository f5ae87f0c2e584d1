"""Message store: put throughput, SYNC_FLUSH group commit, get of 32, crash recovery.

Run ``python -m benchmarks.store [--seconds S] [--repeat N] [--quick] [--recovery-mib M]``.

1 KiB bodies with the properties real clients send (UNIQ_KEY, TAGS, KEYS: the index is fed),
8 queues, 1 GiB CommitLog segments, all in this process on one filesystem (a temporary
directory). Baselines in the same run, on the same record bytes:

- ASYNC_FLUSH: ``await store.put`` in a loop vs raw ``os.write`` appends (target >= 40 %);
- SYNC_FLUSH, 64 concurrent writers vs one ``pwrite`` + ``fsync`` per message on a
  preallocated file (target >= 10x: group commit), and vs ASYNC_FLUSH;
- ``get`` of 32 from one queue vs 32 ``os.pread`` of the same records (target >= 80 %);
- recovery after a crash with no checkpoint (every record re-verified and re-dispatched to
  ConsumeQueues and index) over --recovery-mib of CommitLog, scaled to seconds per GiB. The
  page cache is warm (the data was just written): cold, the scan is bounded by disk reads.
  Not in the figure: the zero check after the end of the log (up to the high-water mark, a
  cost per crash rather than per GiB: benchmarks/restart.py), kept out by sizing that
  store's segment to its data. A crash with a checkpoint re-verifies only what came after
  it (at most ~16 MiB under load: broker.store.flush.Rounds).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable
from itertools import cycle
from pathlib import Path

import uvloop

from aiorocketmq.broker.store import MessageStore, PutResult, PutStatus
from aiorocketmq.broker.store.config import FlushDiskType, StoreConfig
from aiorocketmq.remoting.protocol.message import MessageExt, encode_record
from benchmarks.common import Sample, drive, median_sample, parse_args, quiet_logging

TOPIC, QUEUES, BODY, DEPTH = "BenchStore", 8, bytes(range(256)) * 4, 64
HOST = "127.0.0.1:10911"
HOUR_MS = 3_600_000


def messages(n: int = 4096, queues: int = QUEUES) -> list[MessageExt]:
    """A pool of distinct messages (the store overwrites their store-side fields per put)."""
    return [
        MessageExt(
            topic=TOPIC,
            body=BODY,
            queue_id=i % queues,
            born_host="127.0.0.1:50000",
            born_timestamp=1_700_000_000_000,
            properties={"UNIQ_KEY": f"7F0000010C2E1B6E4B2A{i:012X}", "TAGS": "TagA", "KEYS": "k"},
        )
        for i in range(n)
    ]


def config(
    root: Path, flush: FlushDiskType = FlushDiskType.ASYNC_FLUSH, segment: int = 1 << 30
) -> StoreConfig:
    # the loops that write checkpoints and run retention stay out of the measurements
    return StoreConfig(
        store_path_root_dir=str(root),
        flush_disk_type=flush,
        mapped_file_size_commit_log=segment,
        flush_interval_consume_queue=HOUR_MS,
        clean_resource_interval=HOUR_MS,
    )


def record() -> bytes:
    msg = messages(1)[0]
    msg.store_host, msg.store_timestamp = HOST, time.time_ns() // 1_000_000
    return encode_record(msg)


def timed(op: object, seconds: float, batch: int = 256) -> float:
    """Calls of ``op()`` per second over ``seconds`` (checked every ``batch`` calls)."""
    assert callable(op)
    n, t0 = 0, time.perf_counter()
    deadline = t0 + seconds
    while (now := time.perf_counter()) < deadline:
        for _ in range(batch):
            op()
        n += batch
    return n / (now - t0)


# ---------------------------------------------------------------- puts


async def async_puts(root: Path, warm: float, seconds: float) -> float:
    """ASYNC_FLUSH ``await store.put`` in one loop; yields to the loop every 256 puts, so the
    500 ms flush runs alongside as in a broker."""
    store = MessageStore(config(root), store_host=HOST)
    await store.start()
    pool = cycle(messages())

    async def run(span: float) -> float:
        n, t0 = 0, time.perf_counter()
        while (now := time.perf_counter()) < t0 + span:
            for _ in range(256):
                result = await store.put(next(pool))
            assert result.status is PutStatus.PUT_OK
            n += 256
            await asyncio.sleep(0)
        return n / (now - t0)

    await run(warm)
    rate = await run(seconds)
    await store.shutdown()
    return rate


def raw_appends(path: Path, seconds: float) -> float:
    data = record()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        return timed(lambda: os.write(fd, data), seconds)
    finally:
        os.close(fd)
        path.unlink()


async def sync_puts(root: Path, warm: float, seconds: float) -> Sample:
    """SYNC_FLUSH: ``DEPTH`` writers, each put returning once its bytes are fsynced."""
    store = MessageStore(config(root, FlushDiskType.SYNC_FLUSH), store_host=HOST)
    await store.start()
    pool = cycle(messages())

    def call() -> Awaitable[PutResult]:
        return store.put(next(pool))

    sample = await drive(call, DEPTH, warm, seconds)
    await store.shutdown()
    return sample


def fsync_each(path: Path, seconds: float) -> float:
    """One pwrite + fsync per message on a preallocated file (no group commit)."""
    data = record()
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        os.posix_fallocate(fd, 0, 64 << 20)
        pos = 0

        def op() -> None:
            nonlocal pos
            os.pwrite(fd, data, pos)
            os.fsync(fd)
            pos = (pos + len(data)) % ((64 << 20) - len(data))

        return timed(op, seconds, batch=8)
    finally:
        os.close(fd)
        path.unlink()


# ---------------------------------------------------------------- reads


async def filled(root: Path, count: int, queues: int, segment: int = 1 << 30) -> MessageStore:
    store = MessageStore(config(root, segment=segment), store_host=HOST)
    await store.start()
    pool = cycle(messages(queues=queues))
    for _ in range(count):
        await store.put(next(pool))
    return store


def gets(store: MessageStore, seconds: float) -> tuple[float, float]:
    """Messages/s of ``get(.., 32)`` over queue 0, and of 32 ``os.pread`` of the same records."""
    high = store.max_offset(TOPIC, 0)
    offsets = cycle(range(0, high - 32, 32))

    def get() -> None:
        result = store.get(TOPIC, 0, next(offsets), 32)
        assert len(result.sizes) == 32

    cq = store.queues[(TOPIC, 0)]
    spans = [(u.phys, u.size) for u in cq.units(0, high)]
    seg = store.commitlog.queue.segments[0]
    fd = os.open(seg.path, os.O_RDONLY)
    batches = cycle([spans[k : k + 32] for k in range(0, high - 32, 32)])

    def pread() -> None:
        for phys, size in next(batches):
            os.pread(fd, size, phys - seg.start)

    try:
        return 32 * timed(get, seconds, 16), 32 * timed(pread, seconds, 16)
    finally:
        os.close(fd)


async def get_rates(root: Path, warm: float, seconds: float) -> tuple[float, float]:
    store = await filled(root, 32 * 2048, 1)
    gets(store, warm)
    rates = gets(store, seconds)
    await store.shutdown()
    return rates


# ---------------------------------------------------------------- recovery


async def recovery(root: Path, mib: int, repeat: int) -> tuple[list[float], int, int]:
    """Seconds for ``start()`` after a crash, re-scanning ``mib`` MiB from the log's start.
    The segment is ``mib`` + 1 MiB, so the log ends near its end: the zero check after the
    end (``recovery._cut``), a cost per crash rather than per GiB, stays out of the figure;
    the checkpoint is removed, so every record is re-verified."""
    count = mib * 2**20 // len(record())
    segment = (mib + 1) << 20
    store = await filled(root, count, QUEUES, segment)
    await store.abandon()  # a crash: abort file left
    (root / "checkpoint").unlink(missing_ok=True)  # (an early round may have written one)
    times, records, size = [], 0, 0
    for _ in range(repeat):
        store = MessageStore(config(root, segment=segment), store_host=HOST)
        t0 = time.perf_counter()
        await store.start()
        times.append(time.perf_counter() - t0)
        assert store.recovery is not None and store.recovery.records == count
        records, size = store.recovery.records, store.max_phys_offset
        await store.abandon()  # so the next start recovers the same log again
    return times, records, size


# ---------------------------------------------------------------- main


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--recovery-mib", type=int, default=256, help="CommitLog to recover")
    args, warm = parse_args(__doc__ or "", parser)
    mib = min(args.recovery_mib, 32) if args.quick else args.recovery_mib
    quiet_logging()
    runs: dict[str, list[float]] = {}
    syncs: list[Sample] = []

    def add(key: str, value: float) -> None:
        runs.setdefault(key, []).append(value)

    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_DIR")) as tmp:
        base = Path(tmp)
        for r in range(args.repeat):  # interleaved, so drift hits store and baseline alike
            add("async_put", uvloop.run(async_puts(base / f"async{r}", warm, args.seconds)))
            add("raw_write", raw_appends(base / "raw", args.seconds))
            syncs.append(uvloop.run(sync_puts(base / f"sync{r}", warm, args.seconds)))
            add("fsync_each", fsync_each(base / "fsync", args.seconds))
            get, pread = uvloop.run(get_rates(base / f"get{r}", warm, args.seconds))
            add("get32", get)
            add("pread32", pread)
        times, records, size = uvloop.run(recovery(base / "recovery", mib, args.repeat))
    med = {k: statistics.median(v) for k, v in runs.items()}
    report(med, median_sample(syncs), statistics.median(times), records, size)
    return 0


def report(med: dict[str, float], sync: Sample, seconds: float, records: int, size: int) -> None:
    ratios = {
        "async_put/raw_write": (med["async_put"] / med["raw_write"], 0.40),
        "sync_put@64/fsync_each": (sync.ops / med["fsync_each"], 10.0),
        "sync_put@64/async_put": (sync.ops / med["async_put"], None),
        "get32/pread32": (med["get32"] / med["pread32"], 0.80),
    }
    print(f"\n{'case':<36}{'msgs/s':>12}")
    rows = [
        ("ASYNC_FLUSH put", med["async_put"]),
        ("raw os.write append", med["raw_write"]),
        (f"SYNC_FLUSH put @{DEPTH}", sync.ops),
        ("pwrite + fsync per message", med["fsync_each"]),
        ("get 32", med["get32"]),
        ("32 x os.pread", med["pread32"]),
    ]
    for name, rate in rows:
        print(f"{name:<36}{rate:>12,.0f}")
    print(f"SYNC_FLUSH put latency @{DEPTH}: p50 {sync.p50_us:,.0f} us, p99 {sync.p99_us:,.0f} us")
    print(f"\n{'ratio':<36}{'value':>12}{'target':>10}")
    for name, (value, target) in ratios.items():
        goal = f">= {target:g}" if target is not None else "-"
        print(f"{name:<36}{value:>12.2f}{goal:>10}")
    per_gib = seconds * 2**30 / size
    print(
        f"\nrecovery after a crash: {size / 2**20:,.0f} MiB, {records:,} records in "
        f"{seconds:.2f} s -> {per_gib:.1f} s per GiB (scaled; warm page cache)"
    )
    line = {
        "bench": "store",
        "msgs_per_s": {k: round(v) for k, v in med.items()} | {"sync_put@64": round(sync.ops)},
        "sync_p50_us": round(sync.p50_us),
        "sync_p99_us": round(sync.p99_us),
        "ratios": {k: round(v, 3) for k, (v, _) in ratios.items()},
        "recovery": {
            "mib": round(size / 2**20),
            "records": records,
            "seconds": round(seconds, 3),
            "s_per_gib": round(per_gib, 2),
        },
    }
    print(json.dumps(line))


if __name__ == "__main__":
    sys.exit(main())
