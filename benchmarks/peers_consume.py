"""The consume shapes of benchmarks/peers.py: draining a backlog, and send -> consumer latency.

Drain: ``--messages`` (200,000) x 1 KiB are stored first, outside the timing, once per peer;
each repeat a new consumer reads them all from the start, timed from its creation to the
last message:

- ours: ``aiorocketmq.client.consumer.push.consumer.PushConsumer`` as benchmarks/consume_e2e.py
  runs it (its defaults: pulls of 32 on each of 8 queues, an async listener called once per
  message, offsets committed in the background; a new group at CONSUME_FROM_FIRST_OFFSET); the
  backlog is sent with ``Producer.send_batch`` of 32, 8 batches in flight;
- NATS: a push consumer as nats-py sets one up by default (``js.subscribe`` with a callback,
  deliver all, explicit acks sent by nats-py after each callback); the backlog is published
  with ``publish_async``, 1,000 acks awaited at a time;
- Redis: a consumer group created at id 0; ``XREADGROUP COUNT 256`` then one ``XACK`` of that
  batch, in a loop; the backlog is ``XADD``ed in pipelines of 1,000.

Latency: one sender at a fixed 2,000 msg/s (one message at a time, its index and send time in
the body: ``Producer.send``, ``js.publish``, ``XADD``) while the consumer above listens on a
fresh stream/topic (Redis: ``XREADGROUP BLOCK``); send -> consumer over the measurement window
(after a 0.5 s warm-up), p50 / p99 / p99.9.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import uvloop

from aiorocketmq.client import Message, Producer
from benchmarks.common import Listening
from benchmarks.consume_e2e import (
    QUANTILES,
    RATE,
    Window,
    new_group,
    paced,
    quantile_ms,
    sdk_drain,
    sdk_latency,
)

BODY = bytes(range(256)) * 4
DRAIN_TOPIC, LAT_TOPIC = "BenchPeersDrain", "BenchPeersLatency"  # ours, 8 queues each
DRAIN_STREAM, DRAIN_SUBJECT, LAT_STREAM, LAT_SUBJECT = (
    "BENCH_DRAIN", "bench.drain", "BENCH_LAT", "bench.lat"
)  # fmt: skip
DRAIN_KEY, LAT_KEY = "bench:drain", "bench:lat"
WARM = 0.5  # s of latency messages sent before the window


class ServerLike(Protocol):
    """peers.Server: the address clients use, the process whose CPU is reported."""

    @property
    def addr(self) -> str: ...
    @property
    def proc(self) -> Listening: ...


# -- ours ----------------------------------------------------------------------------------


async def fill_ours(namesrv: str, messages: int) -> None:
    async with Producer("bench_peers_fill", namesrv_addr=namesrv) as producer:
        batch = [Message(DRAIN_TOPIC, BODY) for _ in range(32)]

        async def sender(n: int) -> None:
            for _ in range(n):
                await producer.send_batch(batch)

        calls = messages // 32
        await asyncio.gather(*(sender(calls // 8 + (i < calls % 8)) for i in range(8)))


async def drain_ours(namesrv: str, messages: int) -> float:
    return (await sdk_drain(namesrv, DRAIN_TOPIC, messages))[0]


async def latency_ours(namesrv: str, seconds: float) -> list[int]:
    return await sdk_latency(namesrv, WARM, seconds, RATE, LAT_TOPIC)


# -- NATS JetStream ------------------------------------------------------------------------


async def fill_nats(url: str, messages: int) -> None:
    import nats
    from nats.js.api import StorageType

    nc = await nats.connect(url)
    try:
        js = nc.jetstream()
        for name, subject in ((DRAIN_STREAM, DRAIN_SUBJECT), (LAT_STREAM, LAT_SUBJECT)):
            await js.add_stream(name=name, subjects=[subject], storage=StorageType.FILE)
        for start in range(0, messages, 1000):
            n = min(1000, messages - start)
            await asyncio.gather(*[await js.publish_async(DRAIN_SUBJECT, BODY) for _ in range(n)])
    finally:
        await nc.close()


async def drain_nats(url: str, messages: int) -> float:
    import nats
    from nats.js.api import DeliverPolicy

    nc = await nats.connect(url)
    got, done = 0, asyncio.Event()

    async def on_message(_msg: Any) -> None:
        nonlocal got
        got += 1
        if got >= messages:
            done.set()

    try:
        began = time.perf_counter()
        sub = await nc.jetstream().subscribe(
            DRAIN_SUBJECT, cb=on_message, stream=DRAIN_STREAM, deliver_policy=DeliverPolicy.ALL
        )
        await asyncio.wait_for(done.wait(), 300)
        elapsed = time.perf_counter() - began
        await sub.unsubscribe()
        return elapsed
    finally:
        await nc.close()


async def latency_nats(url: str, seconds: float) -> list[int]:
    import nats
    from nats.js.api import DeliverPolicy

    window = Window(int(WARM * RATE), int(seconds * RATE))
    nc = await nats.connect(url)

    async def on_message(msg: Any) -> None:
        window.arrived((msg.data,))

    try:
        js = nc.jetstream()
        sub = await js.subscribe(
            LAT_SUBJECT, cb=on_message, stream=LAT_STREAM, deliver_policy=DeliverPolicy.NEW
        )
        await paced(lambda body: js.publish(LAT_SUBJECT, body), window, RATE)
        lat = await window.result()
        await sub.unsubscribe()
        return lat
    finally:
        await nc.close()


# -- Redis Streams -------------------------------------------------------------------------


def redis_client(addr: str) -> Any:
    from redis.asyncio import Redis

    host, port = addr.rsplit(":", 1)
    return Redis(host=host, port=int(port))


async def fill_redis(addr: str, messages: int) -> None:
    r = redis_client(addr)
    try:
        await r.delete(DRAIN_KEY)
        fields: dict[Any, Any] = {"body": BODY}
        for start in range(0, messages, 1000):
            async with r.pipeline(transaction=False) as pipe:
                for _ in range(min(1000, messages - start)):
                    pipe.xadd(DRAIN_KEY, fields)
                await pipe.execute()
    finally:
        await r.aclose()


async def drain_redis(addr: str, messages: int) -> float:
    r, group, got = redis_client(addr), new_group("bench_peers"), 0
    try:
        began = time.perf_counter()
        await r.xgroup_create(DRAIN_KEY, group, id="0")
        while got < messages:
            [(_key, entries)] = await r.xreadgroup(group, "c", {DRAIN_KEY: ">"}, count=256)
            got += len(entries)
            await r.xack(DRAIN_KEY, group, *(entry_id for entry_id, _ in entries))
        return time.perf_counter() - began
    finally:
        await r.aclose()


async def latency_redis(addr: str, seconds: float) -> list[int]:
    window = Window(int(WARM * RATE), int(seconds * RATE))
    r, group = redis_client(addr), new_group("bench_peers_lat")

    async def consume() -> None:
        while not window.all_in.is_set():
            got = await r.xreadgroup(group, "c", {LAT_KEY: ">"}, count=256, block=100)
            for _key, entries in got or ():
                window.arrived(entry[b"body"] for _id, entry in entries)
                await r.xack(LAT_KEY, group, *(entry_id for entry_id, _ in entries))

    try:
        await r.xgroup_create(LAT_KEY, group, id="$", mkstream=True)
        consumer = asyncio.ensure_future(consume())
        await paced(lambda body: r.xadd(LAT_KEY, {"body": body}), window, RATE)
        lat = await window.result()
        await consumer
        return lat
    finally:
        await r.aclose()


# -- running and reporting -----------------------------------------------------------------


@dataclass(frozen=True)
class Consumer:
    fill: Callable[[str, int], Coroutine[Any, Any, None]]
    drain: Callable[[str, int], Coroutine[Any, Any, float]]  # -> seconds
    latency: Callable[[str, float], Coroutine[Any, Any, list[int]]]  # -> ns


CONSUMERS = {
    "ours": Consumer(fill_ours, drain_ours, latency_ours),
    "nats": Consumer(fill_nats, drain_nats, latency_nats),
    "redis": Consumer(fill_redis, drain_redis, latency_redis),
}


@dataclass(frozen=True)
class ConsumeResult:
    drain: float  # msgs/s
    server_cpu: float  # % of one core during the drain
    client_cpu: float
    lat_ms: dict[str, float]  # p50, p99, p99.9


def measure_consume(name: str, server: ServerLike, messages: int, seconds: float) -> ConsumeResult:
    """One drain of the (already stored) backlog, then one latency window."""
    c = CONSUMERS[name]
    srv0, cli0, t0 = server.proc.cpu_seconds(), time.process_time(), time.perf_counter()
    secs = uvloop.run(c.drain(server.addr, messages))
    wall = time.perf_counter() - t0
    srv, cli = server.proc.cpu_seconds() - srv0, time.process_time() - cli0
    lat = sorted(uvloop.run(c.latency(server.addr, seconds)))
    q = {k: quantile_ms(lat, v) for k, v in QUANTILES.items()}
    return ConsumeResult(messages / secs, 100 * srv / wall, 100 * cli / wall, q)


def run_consume(
    servers: Mapping[str, ServerLike], messages: int, repeat: int, seconds: float
) -> dict[str, list[ConsumeResult]]:
    """Store each peer's backlog, then per repeat each peer in turn: drain, latency."""
    for name, server in servers.items():
        uvloop.run(CONSUMERS[name].fill(server.addr, messages))
    runs: dict[str, list[ConsumeResult]] = {}
    for _ in range(repeat):
        for name, server in servers.items():
            runs.setdefault(name, []).append(measure_consume(name, server, messages, seconds))
    return runs


def report_consume(
    labels: dict[str, str], runs: dict[str, list[ConsumeResult]], messages: int
) -> dict[str, Any]:
    """Print the consume table (medians); returns its figures for the JSON line."""
    names = [n for n in labels if n in runs]
    drain = {n: statistics.median(r.drain for r in runs[n]) for n in names}
    lat = {n: {q: statistics.median(r.lat_ms[q] for r in runs[n]) for q in QUANTILES}
           for n in names}  # fmt: skip
    others = [n for n in names if n != "ours"]
    print(f"\nconsume: drain of {messages:,} x 1 KiB, and latency at {RATE:,} msg/s (ms)")
    print(f"{'shape':<14}" + "".join(f"{labels[n]:>12}" for n in names)
          + "".join(f"{'ours/' + labels[n]:>12}" for n in others))  # fmt: skip
    rows = [("drain msgs/s", drain, ",.0f")]
    rows += [(f"latency {q}", {n: lat[n][q] for n in names}, ".2f") for q in QUANTILES]
    for title, values, fmt in rows:
        line = f"{title:<14}" + "".join(f"{format(values[n], fmt):>12}" for n in names)
        if "ours" in values:
            line += "".join(f"{values['ours'] / values[n]:>12.2f}" for n in others)
        print(line)
    cpu = {n: [statistics.median(r.server_cpu for r in runs[n]),
               statistics.median(r.client_cpu for r in runs[n])] for n in names}  # fmt: skip
    print("CPU % of one core during the drain, server / this process: "
          + ", ".join(f"{labels[n]} {cpu[n][0]:.0f} / {cpu[n][1]:.0f}" for n in names))  # fmt: skip
    print("targets (issue 15): drain >= 3x NATS; latency p50 and p99 below NATS")
    return {
        "drain_msgs_per_s": {n: round(v) for n, v in drain.items()},
        "consume_latency_ms": {n: {q: round(v, 3) for q, v in lat[n].items()} for n in names},
        "drain_cpu_pct": {n: [round(c) for c in v] for n, v in cpu.items()},
    }
