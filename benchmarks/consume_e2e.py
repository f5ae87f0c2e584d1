"""Push consumer end to end: draining a backlog, and send -> listener latency, one broker.

Run ``python -m benchmarks.consume_e2e [--messages N] [--seconds S] [--repeat N] [--quick]``.

A name server and one ASYNC_FLUSH broker run as processes; this process is the client. A
backlog of 200,000 x 1 KiB messages on 8 queues is sent first in batches of 32 (outside the
timing). Drain: a ``aiorocketmq.client.consumer.push.consumer.PushConsumer`` of a new group (its
defaults, an async listener, CONSUME_FROM_FIRST_OFFSET) reads the whole backlog; timed from
``start()`` to the listener's last message. Baseline in the same run: the remoting-level pull of
benchmarks/consume.py draining the same queues (32 per pull, one pull in flight per queue,
records counted, not decoded); also shown, for reference, the same pull decoding every
record with ``decode_records``. Target: SDK >= 70 % of the raw pull. CPU is % of one core
over the drain, for the broker and for this process.

Latency: on a fresh topic a ``client.Producer`` sends one message at a time at a fixed
2,000 msg/s (paced, its send time in the body) while a PushConsumer listens; the time from
before ``send`` to the listener call gives p50 / p99 / p99.9 over the measurement window (a
warm-up is sent first and not counted). The same group each repeat, resuming where the last
one stopped.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import struct
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import count

import uvloop

from aiorocketmq.client import Message, Producer
from aiorocketmq.client.consumer.push.consumer import PushConsumer
from aiorocketmq.client.consumer.types import ConcurrentListener, ConsumeFromWhere, ConsumeStatus
from aiorocketmq.client.core import api
from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.protocol.heartbeat import ConsumerData, SubscriptionData
from aiorocketmq.remoting.protocol.message import MessageExt, decode_records
from benchmarks.common import Listening, listening_process, quiet_logging
from benchmarks.consume import GROUP, count_records, pull_request, send_batch

TOPIC, LAT_TOPIC, QUEUES, BODY, RATE = "BenchE2E", "BenchE2ELatency", 8, bytes(1024), 2000
# run, message index, time.perf_counter_ns() before send: a new group may start at a queue's
# first offset even from CONSUME_FROM_LAST_OFFSET (the broker's queryConsumerOffset answers 0
# while offset 0 is still in memory), so messages of earlier runs are told apart
STAMP = struct.Struct(">qqq")
QUANTILES = {"p50": 0.5, "p99": 0.99, "p99.9": 0.999}
_groups, _runs = count(), count()


def new_group(prefix: str) -> str:
    return f"{prefix}_{next(_groups)}_{time.time_ns() % 10**9}"


# -- backlog and raw pull ------------------------------------------------------------------


async def fill(cli: RemotingClient, addr: str, topic: str, messages: int) -> None:
    """``messages`` 1 KiB messages spread evenly over the queues, batches of 32 at a time."""
    per_queue, batch = messages // QUEUES, 32

    async def one_queue(qid: int) -> None:
        left = per_queue
        while left:
            n = min(batch, left)
            resp = await cli.invoke(addr, send_batch(topic, qid, [BODY] * n), 30)
            assert resp.code == 0, resp.remark
            left -= n

    await asyncio.gather(*(one_queue(q) for q in range(QUEUES)))


async def raw_drain(cli: RemotingClient, addr: str, topic: str, decode: bool) -> tuple[int, float]:
    """(messages, seconds) pulling every queue from offset 0 to its end, 32 per pull."""
    got = 0

    async def one_queue(qid: int) -> None:
        nonlocal got
        offset = 0
        while True:
            resp = await cli.invoke(addr, pull_request(topic, qid, offset), 10)
            if resp.code != 0:
                return  # PULL_NOT_FOUND: the queue's end
            got += len(decode_records(resp.body)) if decode else count_records(resp.body)
            offset = int(resp.ext_fields["nextBeginOffset"])

    began = time.perf_counter()
    await asyncio.gather(*(one_queue(q) for q in range(QUEUES)))
    return got, time.perf_counter() - began


# -- the SDK consumer ----------------------------------------------------------------------


def consumer(namesrv: str, group: str, topic: str, listener: ConcurrentListener,
             where: ConsumeFromWhere) -> PushConsumer:  # fmt: skip
    c = PushConsumer(group, namesrv_addr=namesrv, consume_from_where=where)
    c.subscribe(topic, "*")
    c.register_message_listener(listener)
    return c


async def sdk_drain(namesrv: str, topic: str, messages: int) -> tuple[float, float]:
    """(seconds to the last message, to the first) for a new group reading ``topic``."""
    got, first, done = 0, 0.0, asyncio.Event()

    async def on_messages(msgs: list[MessageExt], _ctx: object) -> ConsumeStatus:
        nonlocal got, first
        if not got:
            first = time.perf_counter()
        got += len(msgs)
        if got >= messages:
            done.set()
        return ConsumeStatus.CONSUME_SUCCESS

    c = consumer(namesrv, new_group("bench_e2e"), topic, on_messages,
                 ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)  # fmt: skip
    began = time.perf_counter()
    async with c:
        await asyncio.wait_for(done.wait(), 300)
        elapsed = time.perf_counter() - began
    return elapsed, first - began


async def sdk_latency(
    namesrv: str, warm: float, seconds: float, rate: int = RATE, topic: str = LAT_TOPIC
) -> list[int]:
    """ns from before ``send`` to the listener, for the messages sent after ``warm`` s."""
    skip, n = int(warm * rate), int(seconds * rate)
    window = Window(skip, n)

    async def on_messages(msgs: list[MessageExt], _ctx: object) -> ConsumeStatus:
        window.arrived(m.body for m in msgs)
        return ConsumeStatus.CONSUME_SUCCESS

    # one group for every run: each resumes where the last one stopped (its offsets are
    # committed at shutdown), so it never reads through earlier runs' messages
    c = consumer(namesrv, "bench_e2e_lat", topic, on_messages,
                 ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET)  # fmt: skip
    async with Producer("bench_e2e_pg", namesrv_addr=namesrv) as producer, c:
        await paced(lambda body: producer.send(Message(topic, body)), window, rate)
        return await window.result()


class Window:
    """Latencies (ns) of this run's messages after the first ``skip`` (bodies from ``paced``)."""

    def __init__(self, skip: int, n: int) -> None:
        self.skip, self.n, self.run = skip, n, next(_runs)
        self.lat: list[int] = []
        self.all_in = asyncio.Event()

    def body(self, i: int) -> bytes:
        return STAMP.pack(self.run, i, time.perf_counter_ns()) + BODY[STAMP.size :]

    def arrived(self, bodies: Iterable[bytes]) -> None:
        now = time.perf_counter_ns()
        for body in bodies:
            run, i, sent = STAMP.unpack_from(body)
            if run == self.run and i >= self.skip:
                self.lat.append(now - sent)
        if len(self.lat) >= self.n:
            self.all_in.set()

    async def result(self, timeout: float = 30.0) -> list[int]:
        await asyncio.wait_for(self.all_in.wait(), timeout)
        return self.lat[: self.n]


async def paced(send: Callable[[bytes], Awaitable[object]], window: Window, rate: int) -> None:
    """The window's messages, message i at ``i / rate`` s (at once when late, as consume.py's
    sender)."""
    interval, began = 1 / rate, time.perf_counter()
    for i in range(window.skip + window.n):
        delay = began + i * interval - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        await send(window.body(i))


# -- running -------------------------------------------------------------------------------


@dataclass
class Drain:
    rate: float  # msgs/s
    server_cpu: float  # % of one core
    client_cpu: float
    first_s: float = 0.0  # SDK: start() to the first message


@contextmanager
def cpu_of(broker: Listening, out: list[float]) -> Iterator[None]:
    srv0, cli0, t0 = broker.cpu_seconds(), time.process_time(), time.perf_counter()
    yield
    wall = time.perf_counter() - t0
    out += [100 * (broker.cpu_seconds() - srv0) / wall, 100 * (time.process_time() - cli0) / wall]


def run_drains(broker: Listening, namesrv: str, messages: int) -> dict[str, Drain]:
    addr, out = f"127.0.0.1:{broker.port}", {}
    for name, decode in (("raw", False), ("raw_decode", True)):
        cpu: list[float] = []

        async def raw(decode: bool = decode) -> tuple[int, float]:
            async with RemotingClient() as cli:
                return await raw_drain(cli, addr, TOPIC, decode)

        with cpu_of(broker, cpu):
            got, secs = uvloop.run(raw())
        assert got == messages, f"raw pull read {got} of {messages}"
        out[name] = Drain(got / secs, cpu[0], cpu[1])
    cpu = []
    with cpu_of(broker, cpu):
        secs, first = uvloop.run(sdk_drain(namesrv, TOPIC, messages))
    out["sdk"] = Drain(messages / secs, cpu[0], cpu[1], first)
    return out


async def prepare(addr: str, messages: int) -> None:
    async with RemotingClient() as cli:
        for topic in (TOPIC, LAT_TOPIC):
            assert (await cli.invoke(addr, api.create_topic(topic, QUEUES))).code == 0
        sub = ConsumerData(group_name=GROUP, subscriptions=[SubscriptionData.build(TOPIC, "*")])
        await cli.invoke(addr, api.heartbeat("bench@e2e", consumers=[sub]))
        await fill(cli, addr, TOPIC, messages)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=200_000)
    parser.add_argument("--seconds", type=float, default=2.0, help="latency window")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    if args.quick:
        args.messages, args.seconds, args.repeat = 40_000, 1.0, 1
    args.messages -= args.messages % QUEUES
    quiet_logging()
    drains: list[dict[str, Drain]] = []
    lats: list[list[int]] = []
    with (
        tempfile.TemporaryDirectory() as tmp,
        listening_process(["-m", "aiorocketmq.namesrv", "--listen-port", "0"]) as ns,
    ):
        namesrv = f"127.0.0.1:{ns.port}"
        sets = [f"storePathRootDir={tmp}", "brokerIP1=127.0.0.1", "flushDiskType=ASYNC_FLUSH"]
        argv = ["-m", "aiorocketmq.broker", "-n", namesrv, "--listen-port", "0"]
        argv += [arg for kv in sets for arg in ("--set", kv)]
        with listening_process(argv) as broker:
            uvloop.run(prepare(f"127.0.0.1:{broker.port}", args.messages))
            for _ in range(args.repeat):
                drains.append(run_drains(broker, namesrv, args.messages))
                lats.append(sorted(uvloop.run(sdk_latency(namesrv, 0.5, args.seconds))))
    report(drains, lats, args.messages)
    return 0


def quantile_ms(lat: list[int], q: float) -> float:
    return lat[min(len(lat) - 1, int(len(lat) * q))] / 1e6


def report(drains: list[dict[str, Drain]], lats: list[list[int]], messages: int) -> None:
    def med(name: str, field: str) -> float:
        return float(statistics.median(getattr(d[name], field) for d in drains))

    raw = med("raw", "rate")
    print(f"\ndrain of {messages:,} x 1 KiB on {QUEUES} queues (medians of {len(drains)})")
    print(f"{'case':<34}{'msgs/s':>10}{'/ raw pull':>12}{'broker CPU':>12}{'client CPU':>12}")
    for name, label in (("sdk", "PushConsumer (SDK)"), ("raw", "raw pull 32/queue (consume.py)"),
                        ("raw_decode", "raw pull + decode_records")):  # fmt: skip
        rate = med(name, "rate")
        cpu = f"{med(name, 'server_cpu'):>11.0f}%{med(name, 'client_cpu'):>11.0f}%"
        print(f"{label:<34}{rate:>10,.0f}{rate / raw:>12.2f}{cpu}")
    print(f"SDK start() to first message: {med('sdk', 'first_s') * 1000:.0f} ms; "
          "target: SDK / raw pull >= 0.70")  # fmt: skip
    q = {k: statistics.median(quantile_ms(lat, v) for lat in lats) for k, v in QUANTILES.items()}
    n = min(len(lat) for lat in lats)
    print(f"send -> listener latency at {RATE:,} msg/s (n={n:,} per run): p50 {q['p50']:.2f} ms, "
          f"p99 {q['p99']:.2f} ms, p99.9 {q['p99.9']:.2f} ms")  # fmt: skip
    out = {
        "bench": "consume_e2e",
        "drain_msgs_per_s": {k: round(med(k, "rate")) for k in ("sdk", "raw", "raw_decode")},
        "sdk_raw_ratio": round(med("sdk", "rate") / raw, 3),
        "latency_ms": {k: round(v, 3) for k, v in q.items()} | {"n": n},
    }
    print(json.dumps(out))


if __name__ == "__main__":
    sys.exit(main())
