"""Request-reply round trip (issue 33: "a request gets its reply within 100 ms").

Run ``python -m benchmarks.request_reply [--requests N] [--repeat R] [--quick]``.

A name server and one ASYNC_FLUSH broker run as processes, and a replier in a third: a
push consumer answering each request with ``Producer.send_reply`` (325, pushed back as 326).
This process is the requester: ``Producer.request`` of a 128-byte body, one in flight, N
times; the baseline in the same run, process and producer is ``Producer.send`` of the same
message (the request's own first leg) to a topic like it that nobody consumes. Reported:
median and p99 of each, ms, and their ratio. A request is a send, a long-polling pull woken
by it, the replier's send and the broker's push, so expect a few sends' worth; target:
median < 100 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable

import uvloop

from aiorocketmq.client import (
    ConsumeFromWhere,
    ConsumeStatus,
    Message,
    MessageExt,
    Producer,
    PushConsumer,
)
from aiorocketmq.client.consumer.types import ConsumeConcurrentlyContext
from aiorocketmq.client.core import api
from aiorocketmq.remoting.client import RemotingClient
from benchmarks.common import listening_process, quiet_logging

TOPIC, SEND_TOPIC, BODY = "BenchRequest", "BenchRequestSend", bytes(range(128))


async def replier(namesrv: str) -> None:
    """The replier process: answers every request until it is stopped (SIGTERM)."""
    producer = Producer("bench_replier_pg", namesrv_addr=namesrv)

    async def answer(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeStatus:
        for msg in msgs:
            await producer.send_reply(msg, msg.body)
        return ConsumeStatus.CONSUME_SUCCESS

    consumer = PushConsumer("bench_replier_cg", namesrv_addr=namesrv,
                            consume_from_where=ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET,
                            rebalance_interval=1000)  # fmt: skip
    consumer.subscribe(TOPIC, "*")
    consumer.register_message_listener(answer)
    async with producer, consumer:
        # benchmarks.common.listening_process waits for this line
        print(json.dumps({"event": "listening", "port": 0}), flush=True)
        await asyncio.Event().wait()


async def measure(namesrv: str, n: int) -> dict[str, list[float]]:
    """Latencies (ms) of ``n`` sends and ``n`` requests, one at a time, alternating blocks."""
    out: dict[str, list[float]] = {"send": [], "request": []}
    async with Producer("bench_requester_pg", namesrv_addr=namesrv) as producer:
        msg, plain = Message(TOPIC, BODY, tags="TagA"), Message(SEND_TOPIC, BODY, tags="TagA")
        await producer.request(msg, 30_000)  # the replier's first rebalance; warms up
        calls: dict[str, Callable[[], Awaitable[object]]] = {
            "send": lambda: producer.send(plain),
            "request": lambda: producer.request(msg, 3000),
        }
        for _ in range(10):  # blocks of n/10 each, alternating, so drift hits both alike
            for name, call in calls.items():
                for _ in range(max(1, n // 10)):
                    t0 = time.perf_counter()
                    await call()
                    out[name].append((time.perf_counter() - t0) * 1000)
    return out


async def create_topic(broker: str) -> None:
    async with RemotingClient() as cli:
        for topic in (TOPIC, SEND_TOPIC):
            assert (await cli.invoke(broker, api.create_topic(topic, 4))).code == 0


def p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=1000, help="requests (and sends) a run")
    parser.add_argument("--repeat", type=int, default=3, help="report the median of N runs")
    parser.add_argument("--quick", action="store_true", help="smoke run: 100 requests, once")
    parser.add_argument("--replier", metavar="NAMESRV", help=argparse.SUPPRESS)
    args = parser.parse_args()
    quiet_logging()
    if args.replier:
        uvloop.run(replier(args.replier))
        return 0
    if args.quick:
        args.requests, args.repeat = 100, 1
    with (
        tempfile.TemporaryDirectory() as tmp,
        listening_process(["-m", "aiorocketmq.namesrv", "--listen-port", "0"]) as ns,
    ):
        namesrv = f"127.0.0.1:{ns.port}"
        argv = ["-m", "aiorocketmq.broker", "-n", namesrv, "--listen-port", "0"]
        argv += ["--set", f"storePathRootDir={tmp}", "--set", "brokerIP1=127.0.0.1"]
        with listening_process(argv) as broker:
            uvloop.run(create_topic(f"127.0.0.1:{broker.port}"))
            with listening_process(["-m", "benchmarks.request_reply", "--replier", namesrv]):
                runs = [uvloop.run(measure(namesrv, args.requests)) for _ in range(args.repeat)]
    report(runs)
    return 0


def report(runs: list[dict[str, list[float]]]) -> None:
    med = {
        name: (statistics.median(statistics.median(r[name]) for r in runs),
               statistics.median(p99(r[name]) for r in runs))
        for name in ("send", "request")
    }  # fmt: skip
    print(f"\n{'shape (1 in flight)':<22}{'p50 ms':>10}{'p99 ms':>10}")
    for name, (p50, p99_ms) in med.items():
        print(f"{name:<22}{p50:>10.2f}{p99_ms:>10.2f}")
    ratio = med["request"][0] / med["send"][0]
    print(f"request/send p50: {ratio:.2f}x; target: request p50 < 100 ms")
    ms = {k: [round(v, 3) for v in pair] for k, pair in med.items()}
    print(
        json.dumps({"bench": "request_reply", "ms": ms, "request_over_send_p50": round(ratio, 2)})
    )


if __name__ == "__main__":
    sys.exit(main())
