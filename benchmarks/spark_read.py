"""Spark source throughput: a batch read of N x 100-byte messages vs the SDK and an in-memory
source; and what an idle streaming trigger costs vs Spark's ``rate`` source.

Run ``python -m benchmarks.spark_read [--messages N] [--repeat R] [--quick] [--pull-batch P]``.

A name server and one ASYNC_FLUSH broker run as processes, with an 8-queue topic filled
first, outside the timing, by ``client.Producer.send_batch`` (128 per batch, 8 in flight:
real producer messages with a UNIQ_KEY). Spark runs ``local[2]`` as the test suite's;
warmed up first. Each case is timed from the start of the action until it returns:

- ``rocketmq``: ``spark.read.format("rocketmq")`` (earliest to latest, one partition per
  queue, the default options: pullBatchSize 1,024, bulk pulls, so this broker serves up to
  256 KiB a pull) then ``write.format("noop")`` of the whole DataFrame, every column produced;
- ``memory``: the same over a trivial Python data source defined here (8 partitions, the
  connector's schema) yielding Arrow batches of 32,768 rows made from pre-made columns
  (the topic's first 32,768 rows as the connector decodes them, read once per partition):
  Spark's side of a Python source alone, the ceiling (target: rocketmq >= 0.50 x memory);
  its rows are the connector's (checked: ``starts_batch`` of the same pulls equals them);
- ``sdk poll``: in this process, ``client.PullConsumer`` assigned the 8 queues, seeked to 0
  (pull_batch_size 32, other options default), ``poll()`` until N messages;
- ``sdk raw``: in this process, every queue at once, ``pull_raw`` (bulk pulls of up to
  1,024, as the connector's) + ``decode_starts`` + ``aiorocketmq.spark.rows.starts_batch``:
  the connector's work without Spark.

Neither Spark read is timed with a row count (``observe`` costs ~8 % of the in-memory
read, all of it on the JVM): the warm-up reads the whole topic through the connector once,
counted by ``observe`` (checked == N). The CPU each role spent per row (broker, Spark's
JVM, Spark's Python workers: /proc) is printed too.

The broker sends at most 32 messages per plain pull (maxTransferCountOnMessageInMemory,
Java's default), and a bulk pull (ours: the connector's) up to 256 KiB;
``--pull-batch P`` raises that count to P and sets pullBatchSize to P for every case.

Streaming: a ``readStream`` on an empty 8-queue topic, and Spark's ``rate`` source at 1 row/s
as the baseline, into a ``noop`` sink with ``trigger(processingTime="0 seconds")`` for ~10 s
(``noDataProgressEventInterval`` 0: every trigger is in ``recentProgress``). Of the triggers
after batch 0 that read no row: median and mean ``durationMs.triggerExecution``. Prints a
table and a JSON line.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import uvloop
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from aiorocketmq.client import Message, MessageQueue, Producer, PullConsumer
from aiorocketmq.client.consumer.lite.raw import (
    Columns,
    PullStatus,
    Starts,
    decode_columns,
    decode_starts,
)
from aiorocketmq.client.core import api
from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.spark.rows import starts_batch
from aiorocketmq.spark.schema import arrow_schema, spark_schema, to_batch
from benchmarks.common import listening_process, quiet_logging
from benchmarks.spark_common import start_spark as start_shared_spark

TOPIC, IDLE_TOPIC, QUEUES, SIZE = "BenchSparkRead", "BenchSparkIdle", 8, 100
# the connector's Arrow batch rows; the SDK's default pull_batch_size (also the broker's default
# maxTransferCountOnMessageInMemory, Java's: at most 32 messages per plain pull); the
# connector's default pullBatchSize (its pulls are bulk pulls)
BATCH_ROWS, PULL, BULK = 32_768, 32, 1024
FILL_BATCH, FILL_WINDOW = 128, 8
CPU_ROLES = ("broker", "jvm", "py_workers")


async def prepare(namesrv: str, broker: str, n: int) -> dict[str, dict[str, int]]:
    """Both topics routed; ``n`` messages in TOPIC, spread by the producer; its max offsets
    ({brokerName: {queueId: offset}})."""
    async with RemotingClient() as cli:
        for topic in (TOPIC, IDLE_TOPIC):
            assert (await cli.invoke(broker, api.create_topic(topic, QUEUES))).code == 0
            for _ in range(200):
                if (await cli.invoke(namesrv, api.get_route(topic))).code == 0:
                    break
                await asyncio.sleep(0.05)
    body = bytes(SIZE)
    async with Producer("bench_spark_read_fill", namesrv_addr=namesrv) as producer:
        slots = asyncio.Semaphore(FILL_WINDOW)

        async def one(k: int) -> None:
            async with slots:
                await producer.send_batch([Message(TOPIC, body)] * k)

        sizes = [min(FILL_BATCH, n - i) for i in range(0, n, FILL_BATCH)]
        await asyncio.gather(*(one(k) for k in sizes))
    async with PullConsumer("bench_spark_read_count", namesrv) as c:
        ends = {mq: await c.max_offset(mq) for mq in await c.fetch_message_queues(TOPIC)}
    assert sum(ends.values()) == n, ends
    out: dict[str, dict[str, int]] = {}
    for mq, end in ends.items():
        out.setdefault(mq.broker_name, {})[str(mq.queue_id)] = end
    return out


async def sample_batch(namesrv: str, path: Path) -> None:
    """The topic's first BATCH_ROWS rows (queue by queue) as the connector builds them, to
    ``path`` (Arrow IPC): the in-memory source's pre-made data, checked equal to the
    connector's own batches of those rows (``starts_batch``: same rows, same schema)."""
    async with PullConsumer("bench_spark_read_sample", namesrv) as c:
        cols, layouts = Columns(), list[pa.RecordBatch]()
        for mq in await c.fetch_message_queues(TOPIC):
            offset, end, layout, bodies = 0, await c.max_offset(mq), Starts(), list[bytes]()
            while offset < end and len(cols) < BATCH_ROWS:
                raw = await c.pull_raw(mq, offset, PULL)
                assert raw.status is PullStatus.FOUND, raw.status
                decode_columns(raw.body, cols)
                decode_starts(raw.body, layout)
                bodies.append(raw.body)
                offset = raw.next_begin_offset
            layouts.append(starts_batch(layout, bodies, mq.broker_name, topic=TOPIC))
    batch = to_batch(cols, mq.broker_name).slice(0, BATCH_ROWS)
    ours = pa.Table.from_batches(layouts).slice(0, BATCH_ROWS).combine_chunks()
    assert ours.equals(pa.Table.from_batches([batch])), "the sources' rows differ"
    with pa.OSFile(str(path), "wb") as f, pa.ipc.new_file(f, batch.schema) as w:
        w.write_batch(batch)


class MemorySource(DataSource):
    """``rows`` rows in ``partitions`` partitions, as Arrow batches of the file's batch."""

    @classmethod
    def name(cls) -> str:
        return "bench_memory"

    def schema(self) -> StructType:
        return spark_schema()

    def reader(self, schema: StructType) -> DataSourceReader:
        return MemoryReader(self.options["path"], int(self.options["rows"]), QUEUES)


class MemoryReader(DataSourceReader):
    def __init__(self, path: str, rows: int, parts: int) -> None:
        self.path, self.rows, self.parts = path, rows, parts

    def partitions(self) -> list[InputPartition]:
        each = [self.rows // self.parts + (i < self.rows % self.parts) for i in range(self.parts)]
        return [InputPartition(n) for n in each]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        with pa.OSFile(self.path, "rb") as f:  # once per partition: a few ms
            template = pa.ipc.open_file(f).get_batch(0)
        schema = arrow_schema()
        left: int = partition.value
        while left > 0:
            n = min(left, template.num_rows)
            yield pa.RecordBatch.from_arrays(template.slice(0, n).columns, schema=schema)
            left -= n


def start_spark() -> Any:
    session = start_shared_spark(
        "aiorocketmq-bench-spark-read",
        **{
            "spark.sql.streaming.noDataProgressEventInterval": "0",
            "spark.sql.streaming.numRecentProgressUpdates": "100000",
        },
    )
    session.dataSource.register(MemorySource)
    return session


def spark_rate(df: Any, n: int, count: bool = True) -> float:
    """Rows/s of a noop write of the whole DataFrame; with ``count`` its rows are counted by
    ``observe`` (checked == n), which costs the in-memory source ~8 %: not in a timed run."""
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    seen = Observation("rows")
    if count:
        df = df.observe(seen, F.count(F.lit(1)).alias("n"))
    t0 = time.perf_counter()
    df.write.format("noop").mode("overwrite").save()
    elapsed = time.perf_counter() - t0
    assert not count or seen.get["n"] == n, (seen.get, n)
    return n / elapsed


def _proc_cpu() -> dict[int, tuple[int, str, float]]:
    """Every process: pid -> (parent pid, name, CPU seconds of it and its reaped children)."""
    tick, out = os.sysconf("SC_CLK_TCK"), {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            raw = (entry / "stat").read_text()
            name, rest = raw[raw.index("(") + 1 : raw.rindex(")")], raw.rsplit(")", 1)[1].split()
            out[int(entry.name)] = (int(rest[1]), name, sum(map(int, rest[11:15])) / tick)
    return out


def cpu_by_role(broker_pid: int) -> dict[str, float]:
    """CPU seconds so far of the broker, the JVM(s) this process started and the Python
    workers below them (Linux /proc): where a read's cost goes."""
    procs, me = _proc_cpu(), os.getpid()
    roles = {"broker": 0.0, "jvm": 0.0, "py_workers": 0.0}
    for pid, (_, name, cpu) in procs.items():
        chain, at = [], pid
        while at in procs and at not in (me, 1, 0):
            chain.append(procs[at][1])
            at = procs[at][0]
        if pid == broker_pid:
            roles["broker"] += cpu
        elif at == me and name == "java":
            roles["jvm"] += cpu
        elif at == me and "java" in chain[1:]:
            roles["py_workers"] += cpu
    return roles


def measured(rate: Callable[[], float], n: int, broker_pid: int) -> tuple[float, dict[str, float]]:
    """``rate()`` and the CPU µs per row each role spent meanwhile."""
    before = cpu_by_role(broker_pid)
    got = rate()
    after = cpu_by_role(broker_pid)
    return got, {k: (after[k] - before[k]) / n * 1e6 for k in after}


def rocketmq_df(session: Any, namesrv: str, pull: int | None, end: str = "latest") -> Any:
    """The connector's read of the topic; ``pull``: pullBatchSize (None: its default)."""
    reader = session.read.format("rocketmq").option("nameServer", namesrv)
    reader = reader.option("subscribe", TOPIC).option("startingOffsets", "earliest")
    if pull is not None:
        reader = reader.option("pullBatchSize", str(pull))
    return reader.option("endingOffsets", end).load()


def memory_df(session: Any, path: Path, n: int) -> Any:
    reader = session.read.format("bench_memory").option("path", str(path))
    return reader.option("rows", str(n)).load()


async def sdk_poll(namesrv: str, n: int, pull: int) -> float:
    """Rows/s of a PullConsumer assigned every queue, polling from offset 0 until n."""
    c = PullConsumer("bench_spark_read_poll", namesrv, pull_batch_size=pull, auto_commit=False)
    async with c:
        mqs = await c.fetch_message_queues(TOPIC)
        t0 = time.perf_counter()
        c.assign(mqs)
        for mq in mqs:
            await c.seek(mq, 0)
        got = 0
        while got < n:
            msgs = await c.poll(10)
            assert msgs, f"poll gave nothing after {got} of {n}"
            got += len(msgs)
        elapsed = time.perf_counter() - t0
    assert got == n, (got, n)
    return n / elapsed


async def sdk_raw(namesrv: str, n: int, pull: int) -> float:
    """Rows/s of pull_raw + decode_starts + starts_batch, every queue at once (one loop)."""
    rows = 0

    async def one(c: PullConsumer, mq: MessageQueue, end: int) -> None:
        nonlocal rows
        layout, bodies, offset = Starts(), list[bytes](), 0
        while offset < end:
            raw = await c.pull_raw(mq, offset, min(pull, end - offset), bulk=True)
            assert raw.status is PullStatus.FOUND, raw.status
            decode_starts(raw.body, layout, stop_at=end)
            bodies.append(raw.body)
            offset = raw.next_begin_offset
            if len(layout) >= BATCH_ROWS or offset >= end:
                rows += starts_batch(layout, bodies, mq.broker_name, topic=mq.topic).num_rows
                layout, bodies = Starts(), []

    async with PullConsumer("bench_spark_read_raw", namesrv, auto_commit=False) as c:
        mqs = await c.fetch_message_queues(TOPIC)
        t0 = time.perf_counter()
        ends = [await c.max_offset(mq) for mq in mqs]
        await asyncio.gather(*(one(c, mq, end) for mq, end in zip(mqs, ends, strict=True)))
        elapsed = time.perf_counter() - t0
    assert rows == n, (rows, n)
    return n / elapsed


def idle_triggers(make_df: Callable[[], Any], seconds: float, checkpoint: str) -> dict[str, float]:
    """Of the triggers after batch 0 that read no row: how many, median and mean
    triggerExecution, median latestOffset (ms); and batch 0's triggerExecution."""
    q = (
        make_df()
        .writeStream.format("noop")
        .option("checkpointLocation", checkpoint)
        .trigger(processingTime="0 seconds")
        .start()
    )
    try:
        time.sleep(seconds)
    finally:
        q.stop()
    progress = [p for p in q.recentProgress if "triggerExecution" in p["durationMs"]]
    first, rest = progress[0]["durationMs"], progress[1:]
    idle = [p["durationMs"] for p in rest if not p["numInputRows"]]
    assert idle, "no idle trigger was reported"
    ms = [d["triggerExecution"] for d in idle]
    return {
        "idle": len(idle),
        "median_ms": float(statistics.median(ms)),
        # whole ms each (differences of a ms clock): the mean is unbiased below 1 ms
        "mean_ms": statistics.fmean(ms),
        "latest_offset_ms": float(statistics.median(d.get("latestOffset", 0) for d in idle)),
        "batch0_ms": float(first["triggerExecution"]),
    }


def streaming(session: Any, namesrv: str, seconds: float, tmp: str) -> dict[str, dict[str, float]]:
    def ours() -> Any:
        reader = session.readStream.format("rocketmq").option("nameServer", namesrv)
        return reader.option("subscribe", IDLE_TOPIC).load()

    def rate() -> Any:
        return session.readStream.format("rate").option("rowsPerSecond", "1").load()

    return {
        "rocketmq": idle_triggers(ours, seconds, f"{tmp}/cp-rocketmq"),
        "rate": idle_triggers(rate, seconds, f"{tmp}/cp-rate"),
    }


def run_reads(session: Any, namesrv: str, path: Path, n: int, pull: int | None,
              broker_pid: int) -> dict[str, float]:  # fmt: skip
    """One run of each case (rows/s), and the CPU µs per row of the two Spark reads by role
    (``rocketmq.jvm`` ...); ``pull``: ``--pull-batch`` (None: each case's default)."""
    ours, ours_cpu = measured(
        lambda: spark_rate(rocketmq_df(session, namesrv, pull), n, count=False), n, broker_pid
    )
    mem, mem_cpu = measured(
        lambda: spark_rate(memory_df(session, path, n), n, count=False), n, broker_pid
    )
    return {
        "rocketmq": ours,
        "memory": mem,
        "sdk_poll": uvloop.run(sdk_poll(namesrv, n, pull or PULL)),
        "sdk_raw": uvloop.run(sdk_raw(namesrv, n, pull or BULK)),
        **{f"rocketmq.{k}": v for k, v in ours_cpu.items()},
        **{f"memory.{k}": v for k, v in mem_cpu.items()},
    }


def warm_up(session: Any, namesrv: str, path: Path, ends: dict[str, dict[str, int]],
            args: argparse.Namespace) -> None:  # fmt: skip
    """The JVM's JIT (the in-memory read of N rows), the workers and their consumers; the
    connector's read of the whole topic, its rows counted (== N)."""
    spark_rate(memory_df(session, path, args.messages), args.messages, count=False)
    n = sum(sum(qs.values()) for qs in ends.values())
    spark_rate(rocketmq_df(session, namesrv, args.pull_batch), n)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=1_000_000, help="rows per read")
    parser.add_argument("--seconds", type=float, default=10.0,
                        help="per streaming query (0: no streaming part)")  # fmt: skip
    parser.add_argument("--repeat", type=int, default=3, help="report the median of N")
    parser.add_argument("--quick", action="store_true", help="smoke run: 50,000 rows, once")
    parser.add_argument("--pull-batch", type=int, default=None,
                        help="messages per pull for every case (pullBatchSize; above 32 the "
                        "broker's maxTransferCountOnMessageInMemory is raised to match; "
                        "default: each case's, the connector's 1024 and the SDK's 32)")  # fmt: skip
    args = parser.parse_args()
    if args.quick:
        args.messages, args.seconds, args.repeat = 50_000, 4.0, 1
    return args


def broker_argv(namesrv: str, store: str, pull: int | None) -> list[str]:
    sets = [f"storePathRootDir={store}", "brokerIP1=127.0.0.1", "flushDiskType=ASYNC_FLUSH"]
    if pull is not None and pull > PULL:
        sets += [f"maxTransferCountOnMessageInMemory={pull}",
                 f"maxTransferBytesOnMessageInMemory={max(256, pull) * 1024}"]  # fmt: skip
    argv = ["-m", "aiorocketmq.broker", "-n", namesrv, "--listen-port", "0"]
    return argv + [arg for kv in sets for arg in ("--set", kv)]


def main() -> int:
    args = parse_args()
    quiet_logging()
    runs: list[dict[str, float]] = []
    with (
        tempfile.TemporaryDirectory() as tmp,
        listening_process(["-m", "aiorocketmq.namesrv", "--listen-port", "0"]) as ns,
    ):
        namesrv = f"127.0.0.1:{ns.port}"
        with listening_process(broker_argv(namesrv, f"{tmp}/store", args.pull_batch)) as broker:
            t0 = time.perf_counter()
            ends = uvloop.run(prepare(namesrv, f"127.0.0.1:{broker.port}", args.messages))
            fill_s = time.perf_counter() - t0
            path = Path(tmp) / "sample.arrow"
            uvloop.run(sample_batch(namesrv, path))
            session = start_spark()
            try:
                warm_up(session, namesrv, path, ends, args)
                runs += [run_reads(session, namesrv, path, args.messages, args.pull_batch,
                                   broker.pid) for _ in range(args.repeat)]  # fmt: skip
                stream = streaming(session, namesrv, args.seconds, tmp) if args.seconds else {}
            finally:
                session.stop()
    report(runs, stream, args, fill_s)
    return 0


def report(runs: list[dict[str, float]], stream: dict[str, dict[str, float]],
           args: argparse.Namespace, fill_s: float) -> None:  # fmt: skip
    labels = {
        "rocketmq": "spark read rocketmq -> noop",
        "memory": "spark read in-memory source -> noop",
        "sdk_poll": "sdk PullConsumer assign + poll",
        "sdk_raw": "sdk pull_raw+decode_starts+starts_batch",
    }
    med = {k: float(statistics.median(r[k] for r in runs)) for k in labels}
    print(
        f"\nbatch read of {args.messages:,} x {SIZE}-byte messages, {QUEUES} queues, "
        f"{args.pull_batch or 'default'}/pull, local[2] (medians of {len(runs)}; "
        f"fill {fill_s:.1f} s)"
    )
    print(f"{'reader':<40}{'rows/s':>12}")
    for k, label in labels.items():
        print(f"{label:<40}{med[k]:>12,.0f}")
    ratios = {f"rocketmq/{k}": med["rocketmq"] / med[k] for k in ("memory", "sdk_poll", "sdk_raw")}
    print("; ".join(f"{k}: {v:.2f}" for k, v in ratios.items()) + " (target: /memory >= 0.50)")
    same = [r["rocketmq"] / r["memory"] for r in runs]
    print("rocketmq/memory of each run: " + ", ".join(f"{v:.2f}" for v in same))
    print(f"\nCPU µs per row (medians), {'broker':>8}{'JVM':>8}{'Python workers':>16}")
    for case in ("rocketmq", "memory"):
        cpu = [float(statistics.median(r[f"{case}.{k}"] for r in runs)) for k in CPU_ROLES]
        print(f"{'spark read ' + case:<27}" + "".join(f"{v:>8.2f}" for v in cpu[:2])
              + f"{cpu[2]:>16.2f}")  # fmt: skip
    out: dict[str, Any] = {
        "bench": "spark_read",
        "rows": args.messages,
        "pull_batch": args.pull_batch,
        "rows_per_s": {k: round(v) for k, v in med.items()},
        "ratios": {k: round(v, 3) for k, v in ratios.items()},
        "same_run_ratios": [round(v, 3) for v in same],
        "runs": [{k: round(v, 2) for k, v in r.items()} for r in runs],
    }
    if stream:
        out.update(idle_report(stream, args.seconds))
    print(json.dumps(out))


def idle_report(stream: dict[str, dict[str, float]], seconds: float) -> dict[str, Any]:
    print(f"\nidle triggers of a stream, noop sink, processingTime 0, {seconds:g} s")
    print(
        f"{'source':<10}{'idle':>6}{'median ms':>11}{'mean ms':>9}{'latestOffset':>14}"
        f"{'batch 0 ms':>12}"
    )
    for k, st in stream.items():
        print(
            f"{k:<10}{st['idle']:>6.0f}{st['median_ms']:>11.1f}{st['mean_ms']:>9.2f}"
            f"{st['latest_offset_ms']:>14.1f}{st['batch0_ms']:>12.0f}"
        )
    idle = stream["rocketmq"]["mean_ms"] / max(stream["rate"]["mean_ms"], 0.01)
    print(f"rocketmq / rate, mean idle trigger: {idle:.1f} (rate's median is under 1 ms)")
    return {
        "idle_trigger_ms": {
            k: {m: round(st[m], 2) for m in ("median_ms", "mean_ms")} for k, st in stream.items()
        },
        "idle_trigger_ratio": round(idle, 2),
    }


if __name__ == "__main__":
    sys.exit(main())
