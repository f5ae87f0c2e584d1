"""Consume path: PULL_MESSAGE throughput against a real broker, and send -> long-poll latency.

Run ``python -m benchmarks.consume [--messages N] [--seconds S] [--repeat N] [--quick]``.

A broker (its own process) gets a backlog of 200,000 x 1 KiB messages on 8 queues (batches of
32). Pulls of 32 messages, from 1 queue and from 8 queues in turn, are timed as messages/s.
Baseline in the same run: the store's raw ``get`` of 32 from the same queues, in this
process, on the same files once the broker has stopped (target: pulls >= 50 %). Then, on a
fresh topic, a producer sends at a fixed 2,000 msg/s while a consumer long-polls; the time
from send to the pull that delivers it gives p50 / p99 latency (target p99 < 10 ms).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time

import uvloop

from aiorocketmq.broker.store import MessageStore
from aiorocketmq.broker.store.config import StoreConfig
from aiorocketmq.client.core import api
from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.protocol.batch import BatchItem, encode_batch
from aiorocketmq.remoting.protocol.command import RemotingCommand
from aiorocketmq.remoting.protocol.heartbeat import ConsumerData, SubscriptionData
from aiorocketmq.remoting.protocol.message import decode_records, encode_properties
from benchmarks.common import listening_process, quiet_logging

TOPIC, QUEUES, BODY, GROUP = "BenchConsume", 8, bytes(1024), "bench_cg"
FILTER_TOPIC, SQL, TAG = "BenchFilter", "a > 5 AND b = 'x' AND c IN ('p', 'q')", "hit"


def send_batch(
    topic: str, queue_id: int, bodies: list[bytes], props: list[str] | None = None
) -> RemotingCommand:
    props = props or [""] * len(bodies)
    body = encode_batch([BatchItem(b, 0, p) for b, p in zip(bodies, props, strict=True)])
    return api.send_message(
        topic, body, group="bench_pg", queue_id=queue_id, default_topic_queue_nums=8, batch=True
    )


def pull_request(
    topic: str,
    queue_id: int,
    offset: int,
    suspend: bool = False,
    subscription: str = "*",
    expression_type: str = "TAG",
) -> RemotingCommand:
    flags = api.FLAG_SUBSCRIPTION | (api.FLAG_SUSPEND if suspend else 0)
    return api.pull_message(GROUP, topic, queue_id, offset, sys_flag=flags,
                            subscription=subscription, expression_type=expression_type)  # fmt: skip


def filter_properties(i: int) -> str:
    """Message ``i`` of the SQL92 backlog: one in ten matches tag and expression; each other
    fails one of the three terms. UNIQ_KEY and WAIT as a producer sets them."""
    hit = i % 10 == 0
    a, b, c = ("7", "x", "p") if hit else (("3", "x", "q"), ("9", "y", "p"), ("6", "x", "r"))[i % 3]
    props = {"a": a, "b": b, "c": c, "KEYS": f"order-{i}", "TAGS": TAG if hit else "miss",
             "UNIQ_KEY": f"{i:032X}", "WAIT": "true"}  # fmt: skip
    return encode_properties(props)


async def fill_filtered(cli: RemotingClient, addr: str, messages: int) -> None:
    assert (await cli.invoke(addr, api.create_topic(FILTER_TOPIC, QUEUES))).code == 0
    per_queue, batch = messages // QUEUES, 32

    async def fill(qid: int) -> None:
        for start in range(0, per_queue - per_queue % batch, batch):
            props = [filter_properties(start + i) for i in range(batch)]
            resp = await cli.invoke(addr, send_batch(FILTER_TOPIC, qid, [BODY] * batch, props), 30)
            assert resp.code == 0, resp.remark

    await asyncio.gather(*(fill(q) for q in range(QUEUES)))


async def filtered_rate(
    cli: RemotingClient, addr: str, subscription: str, kind: str, seconds: float
) -> float:
    """Matched messages/s pulling 32 at a time, one pull in flight per queue of the 8; a
    queue read to its end starts over."""
    got, stop = 0, time.perf_counter() + seconds

    async def one_queue(qid: int) -> None:
        nonlocal got
        offset = 0
        while time.perf_counter() < stop:
            request = pull_request(FILTER_TOPIC, qid, offset, False, subscription, kind)
            resp = await cli.invoke(addr, request, 10)
            assert resp.code in (0, 19, 20), (resp.code, resp.remark)
            got += count_records(resp.body) if resp.code == 0 else 0
            offset = int(resp.ext_fields["nextBeginOffset"]) if resp.code != 19 else 0

    began = time.perf_counter()
    await asyncio.gather(*(one_queue(q) for q in range(QUEUES)))
    return got / (time.perf_counter() - began)


async def setup(cli: RemotingClient, addr: str, messages: int) -> None:
    for topic in (TOPIC, "BenchLatency"):
        assert (await cli.invoke(addr, api.create_topic(topic, QUEUES))).code == 0
    per_queue, batch = messages // QUEUES, 32

    async def fill(qid: int) -> None:
        for _ in range(per_queue // batch):
            resp = await cli.invoke(addr, send_batch(TOPIC, qid, [BODY] * batch), 30)
            assert resp.code == 0, resp.remark

    await asyncio.gather(*(fill(q) for q in range(QUEUES)))


def count_records(body: bytes) -> int:
    """Records in a pull body, by their TOTALSIZE fields (the client's decoding is not what
    this benchmark measures)."""
    count, pos = 0, 0
    while pos < len(body):
        pos += int.from_bytes(body[pos : pos + 4], "big")
        count += 1
    return count


async def pull_rate(cli: RemotingClient, addr: str, queues: int, seconds: float) -> float:
    """Messages/s pulling 32 at a time with one pull in flight per queue, as a consumer of
    ``queues`` queues does; a queue read to its end starts over."""
    got, stop = 0, time.perf_counter() + seconds

    async def one_queue(qid: int) -> None:
        nonlocal got
        offset = 0
        while time.perf_counter() < stop:
            resp = await cli.invoke(addr, pull_request(TOPIC, qid, offset), 10)
            found = count_records(resp.body) if resp.code == 0 else 0
            offset = int(resp.ext_fields["nextBeginOffset"]) if found else 0
            got += found

    began = time.perf_counter()
    await asyncio.gather(*(one_queue(q) for q in range(queues)))
    return got / (time.perf_counter() - began)


async def latency(cli: RemotingClient, addr: str, seconds: float, rate: int = 2000) -> list[float]:
    """Send at ``rate``/s to queue 0 while one consumer long-polls it: ms from send to pull."""
    sent_at: dict[bytes, float] = {}
    lat: list[float] = []
    done, all_in = asyncio.Event(), asyncio.Event()
    n = int(seconds * rate)

    async def consume() -> None:
        offset = 0
        while not done.is_set():
            resp = await cli.invoke(addr, pull_request("BenchLatency", 0, offset, True), 30)
            now = time.perf_counter()
            if resp.code == 0:
                lat.extend((now - sent_at[m.body]) * 1000 for m in decode_records(resp.body))
                if len(lat) >= n:
                    all_in.set()
            offset = int(resp.ext_fields["nextBeginOffset"])

    consumer = asyncio.ensure_future(consume())
    interval, began = 1 / rate, time.perf_counter()
    for i in range(n):
        delay = began + i * interval - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        body = f"{i:012d}".encode() + BODY[12:]
        sent_at[body] = time.perf_counter()
        await cli.invoke(addr, send_batch("BenchLatency", 0, [body]), 10)
    await asyncio.wait_for(all_in.wait(), 30)
    done.set()
    await cli.invoke(addr, send_batch("BenchLatency", 0, [b"stop" + BODY[4:]]), 10)
    sent_at[b"stop" + BODY[4:]] = time.perf_counter()
    await consumer
    return lat[:n]


def raw_get_rate(root: str, store_host: str, queues: int, seconds: float) -> float:
    async def run() -> float:
        store = MessageStore(StoreConfig(store_path_root_dir=root), store_host=store_host)
        await store.start()
        try:
            offsets, got, began = dict.fromkeys(range(queues), 0), 0, time.perf_counter()
            while time.perf_counter() - began < seconds:
                for qid in range(queues):
                    result = store.get(TOPIC, qid, offsets[qid], 32)
                    found = len(result.sizes)
                    offsets[qid] = result.next_begin_offset if found else 0  # wrap around
                    got += found
            return got / (time.perf_counter() - began)
        finally:
            await store.shutdown()

    return uvloop.run(run())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=200_000)
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--sql-only", action="store_true", help="the SQL92 shape alone")
    args = parser.parse_args()
    if args.quick:
        args.messages, args.seconds, args.repeat = 40_000, 0.5, 1
    quiet_logging()
    pulls: dict[int, list[float]] = {1: [], 8: []}
    raws: dict[int, list[float]] = {1: [], 8: []}
    filtered: dict[str, list[float]] = {"SQL92": [], "TAG": []}
    lat: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        sets = [f"storePathRootDir={tmp}", "brokerIP1=127.0.0.1", "brokerName=bench",
                "enablePropertyFilter=true"]  # fmt: skip
        argv = ["-m", "aiorocketmq.broker", "--listen-port", "0"] + [
            a for s in sets for a in ("--set", s)
        ]
        with listening_process(argv) as broker:
            addr = f"127.0.0.1:{broker.port}"

            async def run() -> list[float]:
                async with RemotingClient() as cli:
                    await fill_filtered(cli, addr, args.messages // 2)
                    for _ in range(args.repeat):  # same run, alternating: a fair ratio
                        for kind, expression in (("SQL92", SQL), ("TAG", TAG)):
                            rate = await filtered_rate(cli, addr, expression, kind, args.seconds)
                            filtered[kind].append(rate)
                    if args.sql_only:
                        return []
                    await setup(cli, addr, args.messages)
                    sub = SubscriptionData.build(TOPIC, "*")
                    group = ConsumerData(group_name=GROUP, subscriptions=[sub])
                    await cli.invoke(addr, api.heartbeat("bench@1", consumers=[group]))
                    for _ in range(args.repeat):
                        for queues in (1, 8):
                            pulls[queues].append(await pull_rate(cli, addr, queues, args.seconds))
                    return await latency(cli, addr, max(args.seconds, 2.0))

            lat = uvloop.run(run())
        if not args.sql_only:
            for _ in range(args.repeat):
                for queues in (1, 8):
                    raws[queues].append(raw_get_rate(tmp, addr, queues, args.seconds))
    if not args.sql_only:
        report(pulls, raws, sorted(lat))
    report_filtered(filtered)
    return 0


def report_filtered(filtered: dict[str, list[float]]) -> None:
    sql, tag = statistics.median(filtered["SQL92"]), statistics.median(filtered["TAG"])
    print(f"\n{'case (10 % matching)':<34}{'matched msgs/s':>16}")
    print(f"{'pull 32, SQL92 (3 terms)':<34}{sql:>16,.0f}")
    print(f"{'pull 32, tag':<34}{tag:>16,.0f}")
    print(f"SQL92 / tag {sql / tag:.2f} (target >= 0.50)")
    print(json.dumps({"bench": "consume_sql92", "sql92_per_s": round(sql),
                      "tag_per_s": round(tag), "ratio": round(sql / tag, 3)}))  # fmt: skip


def report(pulls: dict[int, list[float]], raws: dict[int, list[float]], lat: list[float]) -> None:
    print(f"\n{'case':<26}{'msgs/s':>12}{'raw get msgs/s':>16}{'ratio':>8}")
    ratios = {}
    for queues in (1, 8):
        p, r = statistics.median(pulls[queues]), statistics.median(raws[queues])
        ratios[queues] = p / r
        print(f"{f'pull 32 from {queues} queue(s)':<26}{p:>12,.0f}{r:>16,.0f}{p / r:>8.2f}")
    p50, p99 = lat[len(lat) // 2], lat[min(len(lat) - 1, int(len(lat) * 0.99))]
    print("\npull / raw get target >= 0.50")
    print(
        f"send -> long-poll latency at 2,000 msg/s: p50 {p50:.2f} ms, p99 {p99:.2f} ms"
        " (target p99 < 10 ms)"
    )
    print(
        json.dumps(
            {
                "bench": "consume",
                "pull_ratio": {str(k): round(v, 3) for k, v in ratios.items()},
                "latency_ms": {"p50": round(p50, 3), "p99": round(p99, 3), "n": len(lat)},
            }
        )
    )


if __name__ == "__main__":
    sys.exit(main())
