"""Spark sink throughput: ``df.write.format("rocketmq")`` of N x 100-byte rows vs the SDK,
and the exactly-once sink vs the at-least-once one.

Run ``python -m benchmarks.spark_write [--messages N] [--repeat R] [--quick]``.

A name server and one ASYNC_FLUSH broker run as processes, with an 8-queue topic (the
broker's ``transactionTimeOut`` 10 minutes, so no half of a job is checked while it runs). Spark
(``local[2]``, the test suite's settings) writes a DataFrame of N rows (``spark.range`` with
a 100-byte binary ``body``, two partitions) with ``mode("append")``: rows/s from the start
of ``save()`` until it returns (every row stored, and visible). Three writers, each run in
turn, medians of R: the sink (at-least-once, the default), the sink with
``exactlyOnce=true`` (issue 34's target: at least 0.5 of the first), and the SDK's
``Producer.send_batch`` of the same N bodies, in this process, in batches of the sink's
default ``batchSize`` with as many batches in flight as the sink keeps. Each run checks that
the topic grew by N. Prints the rates, their ratios, and a JSON line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from typing import Any

import uvloop

from aiorocketmq.client import Message, Producer, PullConsumer
from aiorocketmq.client.core import api
from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.spark.sink import WriteOptions
from aiorocketmq.spark.sink_send import WINDOW
from benchmarks.common import listening_process, quiet_logging
from benchmarks.spark_common import start_spark as start_shared_spark

TOPIC, QUEUES, SIZE = "BenchSparkWrite", 8, 100
BATCH = WriteOptions("").batch_size


async def create_topic(namesrv: str, broker: str) -> None:
    async with RemotingClient() as cli:
        assert (await cli.invoke(broker, api.create_topic(TOPIC, QUEUES))).code == 0
        for _ in range(200):
            if (await cli.invoke(namesrv, api.get_route(TOPIC))).code == 0:
                return
            await asyncio.sleep(0.05)
    raise RuntimeError(f"{TOPIC} never routed")


async def stored(namesrv: str) -> int:
    """Messages in the topic (the sum of its queues' max offsets)."""
    consumer = PullConsumer("bench_spark_write_count", namesrv)
    async with consumer:
        queues = await consumer.fetch_message_queues(TOPIC)
        return sum([await consumer.max_offset(mq) for mq in queues])


async def sdk_rate(namesrv: str, bodies: list[bytes]) -> float:
    """Rows/s of send_batch runs of BATCH bodies, WINDOW in flight (the sink's shape)."""
    async with Producer("bench_sdk_batch", namesrv_addr=namesrv) as producer:
        slots = asyncio.Semaphore(WINDOW)

        async def one(start: int) -> None:
            async with slots:
                await producer.send_batch(
                    [Message(TOPIC, body) for body in bodies[start : start + BATCH]]
                )

        await producer.send_batch([Message(TOPIC, b"warm-up")])
        t0 = time.perf_counter()
        await asyncio.gather(*(one(i) for i in range(0, len(bodies), BATCH)))
        return len(bodies) / (time.perf_counter() - t0)


def spark_rate(session: Any, namesrv: str, n: int, *, exactly_once: bool = False) -> float:
    """Rows/s of one ``df.write`` of n rows (the rows are generated as the job runs)."""
    body = f"cast(rpad(cast(id as string), {SIZE}, 'x') as binary) as body"
    df = session.range(0, n, 1, 2).selectExpr(body)
    writer = df.write.format("rocketmq").mode("append").option("nameServer", namesrv)
    writer = writer.option("exactlyOnce", str(exactly_once).lower())
    t0 = time.perf_counter()
    writer.option("topic", TOPIC).save()
    return n / (time.perf_counter() - t0)


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=200_000, help="rows per write")
    parser.add_argument("--repeat", type=int, default=3, help="report the median of N")
    parser.add_argument("--quick", action="store_true", help="smoke run: 20,000 rows, once")
    args = parser.parse_args()
    if args.quick:
        args.messages, args.repeat = 20_000, 1
    quiet_logging()
    bodies = [str(i).encode().ljust(SIZE, b"x") for i in range(args.messages)]
    rates: dict[str, list[float]] = {"spark": [], "spark_exactly_once": [], "sdk": []}
    with (
        tempfile.TemporaryDirectory() as tmp,
        listening_process(["-m", "aiorocketmq.namesrv", "--listen-port", "0"]) as ns,
    ):
        namesrv = f"127.0.0.1:{ns.port}"
        # transactionTimeOut above the exactly-once jobs' length: no check-back about a
        # half still in flight (README "Spark": set it above the longest batch)
        sets = [f"storePathRootDir={tmp}", "brokerIP1=127.0.0.1", "transactionTimeOut=600000"]
        argv = ["-m", "aiorocketmq.broker", "-n", namesrv, "--listen-port", "0"]
        argv += [arg for kv in sets for arg in ("--set", kv)]
        with listening_process(argv) as broker:
            uvloop.run(create_topic(namesrv, f"127.0.0.1:{broker.port}"))
            session = start_shared_spark("aiorocketmq-bench-spark-write")
            try:
                spark_rate(session, namesrv, 1000)  # warm-up: JVM, Python workers, routes
                spark_rate(session, namesrv, 1000, exactly_once=True)
                for _ in range(args.repeat):
                    for who in rates:
                        before = uvloop.run(stored(namesrv))
                        if who == "sdk":
                            rate = uvloop.run(sdk_rate(namesrv, bodies))
                        else:
                            eo = who == "spark_exactly_once"
                            rate = spark_rate(session, namesrv, args.messages, exactly_once=eo)
                        grew = uvloop.run(stored(namesrv)) - before
                        assert grew >= args.messages, (who, grew)
                        rates[who].append(rate)
            finally:
                session.stop()
    report({who: statistics.median(r) for who, r in rates.items()}, args.messages)
    runs = [eo / alo for eo, alo in zip(rates["spark_exactly_once"], rates["spark"], strict=True)]
    print("exactly-once / at-least-once of each run: " + ", ".join(f"{r:.2f}" for r in runs))
    return 0


def report(med: dict[str, float], n: int) -> None:
    ratio = med["spark"] / med["sdk"]
    eo_ratio = med["spark_exactly_once"] / med["spark"]
    print(f"\n{'writer':<40}{'rows/s':>12}")
    print(f"{'spark df.write (local[2])':<40}{med['spark']:>12,.0f}")
    print(f"{'spark df.write, exactlyOnce=true':<40}{med['spark_exactly_once']:>12,.0f}")
    print(f"{f'sdk send_batch {BATCH} x {WINDOW} in flight':<40}{med['sdk']:>12,.0f}")
    print(f"spark / sdk: {ratio:.2f}  ({n:,} x {SIZE}-byte rows)")
    print(f"exactly-once / at-least-once sink: {eo_ratio:.2f}  (target >= 0.5)")
    print(
        json.dumps(
            {
                "bench": "spark_write",
                "rows": n,
                "rows_per_s": {k: round(v) for k, v in med.items()},
                "ratio": round(ratio, 3),
                "exactly_once_ratio": round(eo_ratio, 3),
            }
        )
    )


if __name__ == "__main__":
    sys.exit(main())
