"""Timer messages (issue 36): scheduling rate, delivery lateness, and a wheel's recovery,
against a real `python -m aiorocketmq.broker`.

Run ``python -m benchmarks.timer [--seconds S] [--repeat N] [--timers N] [--quick]``.

One ASYNC_FLUSH broker (no name server), 1 KiB messages, msgpack headers, SEND_MESSAGE_V2 at 64
in flight, as benchmarks/send.py's send@64. Three shapes, each the median of --repeat:

- **scheduling**: plain sends and timer sends (the same message plus TIMER_DELIVER_MS an
  hour ahead: it waits in rmq_sys_wheel_timer) alternating in each round; the ratio timer /
  plain messages/s. Target >= 0.7.
- **lateness**: 5,000 timers a second falling due for --seconds x 2 (their TIMER_DELIVER_MS
  spread evenly, sent ahead of the first), four pull loops long-polling the real topic;
  lateness = the time a pull returned the message - its TIMER_DELIVER_MS. The figures beside
  it: the same pull loops' lateness for plain messages (the baseline: what the pull path
  alone costs) and the broker's timerPrecisionMs (1 s). Target: p99 <= precision + 100 ms.
- **recovery**: --timers (default 1,000,000) timer messages an hour ahead in one store, and
  as many plain messages in another (the baseline: the same CommitLog without a wheel); each
  broker stopped (SIGTERM) and started again on its store: spawn to ``listening`` with the
  wheel loaded (its ``timer_wheel_loaded`` event), and the wheel's own load seconds. Target:
  the wheel's restart <= 2 s.
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
from pathlib import Path
from typing import Any

import uvloop

from aiorocketmq.client.core import api
from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.config import ClientConfig
from aiorocketmq.remoting.protocol.codes import RequestCode as C
from aiorocketmq.remoting.protocol.codes import SerializeType
from aiorocketmq.remoting.protocol.command import RemotingCommand
from aiorocketmq.remoting.protocol.message import encode_properties, now_ms
from aiorocketmq.remoting.protocol.timer import TimerProp
from benchmarks.common import Sample, drive, median_sample, parse_args, quiet_logging
from benchmarks.restart import spawn, stop
from benchmarks.send import bench_broker

TOPIC, QUEUES, BODY, DEPTH = "BenchTimer", 8, bytes(range(256)) * 4, 64
HOUR_MS = 3_600_000
DUE_RATE = 5000  # timers falling due a second
PRECISION_MS = 1000  # timerPrecisionMs, the broker's default
_seq = iter(range(1 << 62))


def send(addr_topic: str, timer_ms: int | None, queue_id: int = -1) -> RemotingCommand:
    """A send@64 request as benchmarks/send.py's, with TIMER_DELIVER_MS when ``timer_ms``."""
    props = {"UNIQ_KEY": f"7F0000010C2E1B6E4B2B{next(_seq):012X}", "TAGS": "TagA", "KEYS": "k"}
    if timer_ms is not None:
        props[TimerProp.DELIVER_MS] = str(timer_ms)
    return api.send_message(addr_topic, BODY, group="bench_timer_pg", queue_id=queue_id,
                            properties=encode_properties(props))  # fmt: skip


def client() -> RemotingClient:
    return RemotingClient(ClientConfig(serialize_type=SerializeType.MSGPACK))


async def checked(pending: Awaitable[RemotingCommand]) -> RemotingCommand:
    resp = await pending
    if resp.code not in (0, 2):  # SYSTEM_BUSY is flow control at work, not a failure
        raise RuntimeError(f"send failed: {resp.code} {resp.remark}")
    return resp


async def create_topic(addr: str) -> None:
    async with RemotingClient() as cli:
        resp = await cli.invoke(addr, api.create_topic(TOPIC, QUEUES))
        assert resp.code == 0, resp.remark


# ------------------------------------------------------------------ scheduling rate


async def measure_send(addr: str, timer: bool, warm: float, seconds: float) -> Sample:
    async with client() as cli:

        def call() -> Awaitable[RemotingCommand]:
            at = now_ms() + HOUR_MS if timer else None
            return checked(cli.invoke(addr, send(TOPIC, at), 10))

        return await drive(call, DEPTH, warm, seconds)


def scheduling(addr: str, args: argparse.Namespace, warm: float) -> dict[str, list[Sample]]:
    out: dict[str, list[Sample]] = {}
    for _ in range(args.repeat):
        for label, timer in (("plain", False), ("timer", True)):
            sample = uvloop.run(measure_send(addr, timer, warm, args.seconds))
            out.setdefault(f"send@64 {label}", []).append(sample)
    return out


# ------------------------------------------------------------------ lateness


async def pull_loops(
    addr: str, count: int, due_of: Callable[[bytes, dict[str, str]], int], start: list[int]
) -> list[int]:
    """Long-poll every queue of TOPIC from ``start`` until ``count`` messages came; each
    one's lateness (ms): received - due."""
    late: list[int] = []

    async def loop(cli: RemotingClient, qid: int) -> None:
        offset = start[qid]
        while len(late) < count:
            req = api.pull_message("bench_timer_cg", TOPIC, qid, offset, max_nums=256,
                                   sys_flag=api.FLAG_SUSPEND | api.FLAG_SUBSCRIPTION,
                                   suspend_ms=1000, subscription="*")  # fmt: skip
            reply = api.parse_pull(await cli.invoke(addr, req, 5))
            got = now_ms()
            late.extend(got - due_of(m.body, m.properties) for m in reply.messages())
            offset = reply.next_begin_offset

    async with client() as cli:
        await asyncio.gather(*(loop(cli, q) for q in range(QUEUES)))
    return late


async def queue_ends(addr: str) -> list[int]:
    async with client() as cli:
        reqs = [api.queue_request(C.GET_MAX_OFFSET, TOPIC, q) for q in range(QUEUES)]
        return [api.parse_offset(await cli.invoke(addr, req)) for req in reqs]


async def lateness_round(addr: str, seconds: float, timer: bool, send_rate: float) -> list[int]:
    """``DUE_RATE`` x ``seconds`` messages falling due evenly (timers), or sent at that pace
    (plain: each due when sent); their lateness as the pull loops saw it."""
    count = int(DUE_RATE * seconds)
    start = await queue_ends(addr)
    # sent ahead of the first due time: twice what sending them all took in the scheduling shape
    lead_ms = int(2000 * count / max(send_rate, 1)) + 500
    first = now_ms() + lead_ms
    dues = [first + i * 1000 // DUE_RATE for i in range(count)]

    def due_of(body: bytes, props: dict[str, str]) -> int:
        return int(props[TimerProp.DELIVER_MS]) if timer else int(props["BENCH_SENT_MS"])

    pulling = asyncio.ensure_future(pull_loops(addr, count, due_of, start))
    async with client() as cli:
        if timer:
            sem = asyncio.Semaphore(DEPTH)

            async def one(i: int, due: int) -> None:
                async with sem:
                    await checked(cli.invoke(addr, send(TOPIC, due, i % QUEUES), 10))

            await asyncio.gather(*(one(i, d) for i, d in enumerate(dues)))
            if now_ms() > first:
                print(f"  warning: sending took past the first due time by {now_ms() - first} ms")
        else:  # plain messages at the same pace: each is due when it is sent
            for i, due in enumerate(dues):
                delay = (due - now_ms()) / 1000
                if delay > 0:
                    await asyncio.sleep(delay)
                props = {"UNIQ_KEY": f"P{i:031d}", "BENCH_SENT_MS": str(now_ms())}
                req = api.send_message(TOPIC, BODY, group="bench_timer_pg", queue_id=i % QUEUES,
                                       properties=encode_properties(props))  # fmt: skip
                await cli.invoke_oneway(addr, req, 10)
    return await asyncio.wait_for(pulling, timeout=seconds + lead_ms / 1000 + 60)


def quantile(values: list[int], q: float) -> float:
    ordered = sorted(values)
    return float(ordered[min(len(ordered) - 1, int(len(ordered) * q))])


def lateness(addr: str, args: argparse.Namespace, send_rate: float) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for _ in range(args.repeat):
        for label, timer in (("plain", False), ("timer", True)):
            late = uvloop.run(lateness_round(addr, args.seconds * 2, timer, send_rate))
            out.setdefault(f"{label} p50", []).append(quantile(late, 0.50))
            out.setdefault(f"{label} p99", []).append(quantile(late, 0.99))
            out.setdefault(f"{label} max", []).append(float(max(late)))
            out.setdefault(f"{label} early", []).append(float(sum(1 for x in late if x < 0)))
    return out


# ------------------------------------------------------------------ recovery


async def fill(addr: str, count: int, timer: bool) -> float:
    """``count`` messages (timers an hour ahead, or plain) at 256 in flight; seconds taken."""
    await create_topic(addr)
    started = time.perf_counter()
    async with client() as cli:
        sent = iter(range(count))

        async def sender() -> None:
            for i in sent:
                at = now_ms() + HOUR_MS if timer else None
                await checked(cli.invoke(addr, send(TOPIC, at, i % QUEUES), 30))

        await asyncio.gather(*(sender() for _ in range(256)))
    return time.perf_counter() - started


def restart_times(store: Path, repeat: int) -> tuple[list[float], list[float], int]:
    """Stop-and-start ``repeat`` times: spawn to listening, the wheel's load seconds, and the
    pending timers it found."""
    listen, wheel, pending = [], [], 0
    for _ in range(repeat):
        broker, took = spawn(store)
        try:
            t0 = time.perf_counter()
            loaded = broker.wait_for("timer_wheel_loaded", 120)
            listen.append(took + time.perf_counter() - t0)  # listening and the wheel loaded
            wheel.append(float(loaded.get("seconds", 0.0)))
            pending = int(loaded.get("pending", 0))
        finally:
            stop(broker)
    return listen, wheel, pending


def recovery(args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for label, timer in (("plain", False), ("timer", True)):
        with tempfile.TemporaryDirectory() as tmp:
            store = Path(tmp)
            broker, _ = spawn(store)
            try:
                fill_s = uvloop.run(fill(broker.addr, args.timers, timer))
            finally:
                stop(broker)
            listen, wheel, pending = restart_times(store, args.repeat)
            out[label] = {"fill_s": round(fill_s, 1), "listen_s": statistics.median(listen),
                          "wheel_load_s": statistics.median(wheel), "pending": pending}  # fmt: skip
    return out


# ------------------------------------------------------------------ report


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--timers", type=int, default=1_000_000,
                        help="pending timers in the recovery shape (--quick: 20,000)")  # fmt: skip
    parser.add_argument("--shapes", choices=("all", "scheduling", "lateness", "recovery"),
                        default="all")  # fmt: skip
    args, warm = parse_args(__doc__ or "", parser)
    if args.quick:
        args.timers = min(args.timers, 20_000)
    quiet_logging()
    ratios: dict[str, float] = {}
    line: dict[str, Any] = {"bench": "timer"}
    if args.shapes in ("all", "scheduling", "lateness"):
        with bench_broker("ASYNC_FLUSH", "metricsPort=-1") as broker:
            addr = f"127.0.0.1:{broker.port}"
            uvloop.run(create_topic(addr))
            sched = {k: median_sample(v) for k, v in scheduling(addr, args, warm).items()}
            plain, timer = sched["send@64 plain"], sched["send@64 timer"]
            print(f"\n{'scheduling (send@64, 1 KiB)':<30}{'msgs/s':>10}{'p50 us':>10}"
                  f"{'p99 us':>10}")  # fmt: skip
            for name, s in sched.items():
                print(f"{name:<30}{s.ops:>10,.0f}{s.p50_us:>10.1f}{s.p99_us:>10.1f}")
            ratios["timer/plain_send@64"] = timer.ops / plain.ops
            print(f"timer / plain sends: {ratios['timer/plain_send@64']:.2f} (target >= 0.70)")
            line["scheduling"] = {k: {"ops": round(v.ops, 1), "p50_us": v.p50_us,
                                      "p99_us": v.p99_us} for k, v in sched.items()}  # fmt: skip
            if args.shapes != "scheduling":
                late = {k: statistics.median(v)
                        for k, v in lateness(addr, args, timer.ops).items()}  # fmt: skip
                print(f"\nlateness at {DUE_RATE:,}/s falling due for {args.seconds * 2:g} s (ms): "
                      f"plain p50 {late['plain p50']:.0f}, p99 {late['plain p99']:.0f}; "
                      f"timer p50 {late['timer p50']:.0f}, p99 {late['timer p99']:.0f}, "
                      f"max {late['timer max']:.0f}, early {late['timer early']:.0f}")  # fmt: skip
                print(f"timer p99 {late['timer p99']:.0f} ms (target <= precision "
                      f"{PRECISION_MS} + 100 = {PRECISION_MS + 100} ms)")  # fmt: skip
                line["lateness_ms"] = late
    if args.shapes in ("all", "recovery"):
        rec = recovery(args)
        print(f"\nrecovery of {args.timers:,} messages (median of {args.repeat} restarts):")
        for label in ("plain", "timer"):
            r = rec[label]
            print(f"  {label:<6} filled in {r['fill_s']:.0f} s; spawn to listening "
                  f"{r['listen_s']:.2f} s, wheel load {r['wheel_load_s']:.3f} s, "
                  f"pending {r['pending']:,}")  # fmt: skip
        ratios["restart_timer/plain"] = rec["timer"]["listen_s"] / rec["plain"]["listen_s"]
        print(f"restart timer / plain: {ratios['restart_timer/plain']:.2f}; "
              f"the wheel's restart {rec['timer']['listen_s']:.2f} s (target <= 2 s)")  # fmt: skip
        line["recovery"] = rec
    line["ratios"] = {k: round(v, 3) for k, v in ratios.items()}
    print(json.dumps(line))
    return 0


if __name__ == "__main__":
    sys.exit(main())
