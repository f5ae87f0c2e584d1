"""Transactions: committed transactional messages/s, and a check-back round of 10,000.

Run ``python -m benchmarks.transactions [--seconds S] [--repeat N] [--quick]``.

One ASYNC_FLUSH broker process (no name server), 1 KiB bodies, an 8-queue topic, JSON
headers on every request (what a Java client sends). This process is the client.

1. Commits: a lean remoting-level transactional producer (what TransactionMQProducer does
   on the wire): the half message (SEND_MESSAGE_V2 with TRAN_MSG, PGROUP, prepared sysFlag),
   its answer awaited, then END_TRANSACTION 8 (commit) oneway, at 1 and 64 transactions in
   flight. Only messages that reached the real topic count: the clock stops once the
   topic's GET_MAX_OFFSET sum holds every committed message (ENDs in flight included), and
   that sum must equal the ENDs sent exactly. Baseline in the same run and broker: plain
   SEND_MESSAGE_V2 of the same messages at the same depth. Target: tx/plain >= 0.40.
2. Check-back round: a broker with transactionTimeOut 6000 ms (the 4.9.8 default) and
   transactionCheckInterval 1000 ms. A producer registers its group (HEART_BEAT), then
   stores 10,000 half messages (64 in flight) all born at the same instant: they become due
   together, so the first round after that checks all of them (real birth times would split
   them over two rounds). Its CHECK_TRANSACTION_STATE requests are counted and left
   unanswered: the round alone is measured, and the broker is stopped before it checks them
   again. The round's duration, checks and yields come from the broker's
   ``transaction_check`` log event. A probe in a child process sends GET_MAX_OFFSET back to
   back (1 in flight) all along: its answer times (p50, p99, longest) during the round vs
   before the halves were stored, with no round running (same broker, same run). The probe
   is closed-loop: its next request lands just after the round resumed, so its p50 during a
   round is about one of the round's time slices (remoting.tasks.SLICE_SECONDS).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import statistics
import sys
import time
from dataclasses import dataclass, field, fields
from datetime import datetime

import uvloop

from aiorocketmq.client.core import api
from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.dispatch import Route
from aiorocketmq.remoting.protocol.codes import RequestCode as C
from aiorocketmq.remoting.protocol.codes import ResponseCode as R
from aiorocketmq.remoting.protocol.command import RemotingCommand
from aiorocketmq.remoting.protocol.message import now_ms
from aiorocketmq.remoting.protocol.msgid import UniqKeyGenerator
from benchmarks.common import parse_args, quantile_us, quiet_logging
from benchmarks.tx_common import (
    GROUP,
    JSON_CLIENT,
    BrokerLog,
    Probe,
    commit_request,
    logged_broker,
    send_request,
    topic_total,
)

TOPIC, QUEUES, DEPTHS = "BenchTx", 8, (1, 64)
PENDING, TIMEOUT_MS, INTERVAL_MS = 10_000, 6000, 1000  # 6000: 4.9.8 default
_ids = UniqKeyGenerator()


# ------------------------------------------------------------ 1. committed messages/s


@dataclass
class Run:
    stored: int = 0  # plain sends stored / ENDs sent, since this measurement began
    counted: int = 0  # the same, completed after the warm-up
    lat: list[int] = field(default_factory=list)
    measuring: bool = False
    stopping: bool = False


@dataclass(frozen=True)
class Rate:
    msgs: float  # per second, landed in the real topic
    p50_us: float
    p99_us: float
    drain_ms: float  # from the stop to the last message landing
    cpu_us: float  # broker CPU per message


async def one(cli: RemotingClient, addr: str, queue_id: int, tx: bool) -> bool:
    """One plain send, or one transaction (half, then commit oneway); False when refused
    by flow control (SYSTEM_BUSY: nothing stored, nothing to end)."""
    uniq = _ids.next()
    resp = await cli.invoke(addr, send_request(TOPIC, queue_id, uniq, half=tx), 10)
    if resp.code == R.SYSTEM_BUSY:
        return False
    if resp.code != R.SUCCESS:
        raise RuntimeError(f"send failed: {resp.code} {resp.remark}")
    if tx:
        await cli.invoke_oneway(addr, commit_request(resp, uniq), 10)
    return True


async def measure(broker: BrokerLog, tx: bool, depth: int, warm: float, seconds: float) -> Rate:
    addr, run, queues = broker.addr, Run(), itertools.count()
    async with RemotingClient(JSON_CLIENT) as cli:
        base = await topic_total(cli, addr, TOPIC, QUEUES)

        async def worker() -> None:
            while not run.stopping:
                t0 = time.perf_counter_ns()
                if await one(cli, addr, next(queues) % QUEUES, tx):
                    run.stored += 1
                    if run.measuring:
                        run.counted += 1
                        run.lat.append(time.perf_counter_ns() - t0)

        workers = [asyncio.create_task(worker()) for _ in range(depth)]
        await asyncio.sleep(warm)
        cpu0, t0 = broker.listening.cpu_seconds(), time.perf_counter()
        run.measuring = True
        await asyncio.sleep(seconds)
        run.stopping, stop = True, time.perf_counter()
        await asyncio.gather(*workers)
        await landed(cli, addr, base + run.stored)
        done, cpu = time.perf_counter(), broker.listening.cpu_seconds() - cpu0
    lat = sorted(run.lat)
    return Rate(run.counted / (done - t0), quantile_us(lat, 0.5), quantile_us(lat, 0.99),
                (done - stop) * 1000, 1e6 * cpu / run.counted)  # fmt: skip


async def landed(cli: RemotingClient, addr: str, expected: int) -> None:
    """Until the real topic holds ``expected`` messages; more would be a duplicate commit."""
    async with asyncio.timeout(30):
        while (total := await topic_total(cli, addr, TOPIC, QUEUES)) < expected:  # noqa: ASYNC110
            await asyncio.sleep(0.002)  # the state of another process: polled
    if total != expected:
        raise RuntimeError(f"{total} messages in {TOPIC}, {expected} committed")


def commits(seconds: float, warm: float, repeat: int) -> dict[str, list[Rate]]:
    out: dict[str, list[Rate]] = {}
    with logged_broker([]) as broker:
        uvloop.run(create_topic(broker.addr, TOPIC))
        for _ in range(repeat):
            for depth in DEPTHS:
                for kind in ("plain", "tx"):
                    rate = uvloop.run(measure(broker, kind == "tx", depth, warm, seconds))
                    out.setdefault(f"{kind}@{depth}", []).append(rate)
    return out


async def create_topic(addr: str, topic: str) -> None:
    async with RemotingClient(JSON_CLIENT) as cli:
        resp = await cli.invoke(addr, api.create_topic(topic, QUEUES))
        assert resp.code == 0, resp.remark


# ------------------------------------------------------------ 2. a check-back round


@dataclass(frozen=True)
class RoundResult:
    checked: float  # by the broker's count
    received: float  # CHECK_TRANSACTION_STATE requests that reached the producer
    round_ms: float
    yields: float
    store_s: float  # storing the halves took
    base_p50_us: float
    base_p99_us: float
    base_max_us: float
    round_p50_us: float
    round_p99_us: float
    round_max_us: float
    round_probes: float  # probe answers that overlap the round


@dataclass
class Checks:
    count: int = 0

    def on(self, _req: RemotingCommand, _ch: object) -> None:
        self.count += 1  # unanswered: the half stays pending


async def store_halves(cli: RemotingClient, addr: str, born: int) -> None:
    """PENDING half messages, 64 in flight, all with the same born timestamp."""
    queues = itertools.count()

    async def worker() -> None:
        while (n := next(queues)) < PENDING:
            req = send_request(TOPIC, n % QUEUES, _ids.next(), half=True, born=born)
            resp = await cli.invoke(addr, req, 10)
            if resp.code != R.SUCCESS:
                raise RuntimeError(f"half not stored: {resp.code} {resp.remark}")

    await asyncio.gather(*(worker() for _ in range(64)))


async def check_round(broker: BrokerLog, seconds: float) -> RoundResult:
    addr, checks = broker.addr, Checks()
    routes: dict[int, Route] = {C.CHECK_TRANSACTION_STATE: Route(checks.on)}
    async with RemotingClient(JSON_CLIENT, routes) as cli:
        await create_topic(addr, TOPIC)
        resp = await cli.invoke(addr, api.heartbeat("127.0.0.1@bench_tx", producers=[GROUP]))
        assert resp.code == 0, resp.remark
        probe = await asyncio.to_thread(Probe.start, addr, TOPIC)
        try:
            base_from = time.time()
            await asyncio.sleep(seconds)
            base_to, born, t0 = time.time(), now_ms(), time.perf_counter()
            await store_halves(cli, addr, born)
            store_s = time.perf_counter() - t0
            if store_s * 1000 > TIMEOUT_MS - 200:
                raise RuntimeError(f"storing the halves took {store_s:.1f} s: some became due")
            event = await asyncio.to_thread(broker.wait_for, "transaction_check", 30)
            async with asyncio.timeout(10):
                while checks.count < event["checked"]:  # noqa: ASYNC110 -- the broker's sends
                    await asyncio.sleep(0.01)
        finally:
            samples = await asyncio.to_thread(probe.stop)
    end = datetime.fromisoformat(event["timestamp"]).timestamp()
    start = end - event["ms"] / 1000
    base = sorted(lat for wall, lat in samples if base_from <= wall <= base_to)
    during = sorted(lat for wall, lat in samples if wall <= end and wall + lat / 1e9 >= start)
    return RoundResult(
        event["checked"], checks.count, event["ms"], event["yields"], store_s,
        quantile_us(base, 0.5), quantile_us(base, 0.99), base[-1] / 1000,
        quantile_us(during, 0.5), quantile_us(during, 0.99), during[-1] / 1000, len(during),
    )  # fmt: skip


def rounds(seconds: float, repeat: int) -> list[RoundResult]:
    sets = [f"transactionTimeOut={TIMEOUT_MS}", f"transactionCheckInterval={INTERVAL_MS}"]
    out = []
    for _ in range(repeat):
        with logged_broker(sets) as broker:
            out.append(uvloop.run(check_round(broker, seconds)))
    return out


# ------------------------------------------------------------ report


def main() -> int:
    args, warm = parse_args(__doc__ or "")
    quiet_logging()
    t0 = time.perf_counter()
    rates = commits(args.seconds, warm, args.repeat)
    results = rounds(args.seconds, args.repeat)
    report(rates, RoundResult(*(statistics.median(getattr(r, f.name) for r in results)
                              for f in fields(RoundResult))))  # fmt: skip
    print(f"({args.repeat} repeats, {time.perf_counter() - t0:.0f} s)")
    return 0


def median_rate(runs: list[Rate]) -> Rate:
    return Rate(*(statistics.median(getattr(r, f.name) for r in runs) for f in fields(Rate)))


def report(rates: dict[str, list[Rate]], rr: RoundResult) -> None:
    """Medians; each ratio is the median of the repeats' own ratios (plain and tx measured
    one after the other), so a drift in the machine's load between repeats cancels out."""
    med = {k: median_rate(v) for k, v in rates.items()}
    print("\ncommitted transactions vs plain sends (1 KiB, JSON headers, ASYNC_FLUSH)")
    print(f"{'case':<10}{'msgs/s':>10}{'p50 us':>9}{'p99 us':>9}{'drain ms':>10}"
          f"{'cpu us/msg':>12}{'tx/plain':>10}")  # fmt: skip
    ratios = {}
    for depth in DEPTHS:
        pairs = zip(rates[f"tx@{depth}"], rates[f"plain@{depth}"], strict=True)
        ratio = ratios[f"tx/plain@{depth}"] = statistics.median(t.msgs / p.msgs for t, p in pairs)
        for kind in ("plain", "tx"):
            r = med[f"{kind}@{depth}"]
            shown = f"{ratio:>10.2f}" if kind == "tx" else ""
            print(f"{kind + '@' + str(depth):<10}{r.msgs:>10,.0f}{r.p50_us:>9.0f}{r.p99_us:>9.0f}"
                  f"{r.drain_ms:>10.1f}{r.cpu_us:>12.1f}{shown}")  # fmt: skip
    each = "; ".join(
        f"@{d} " + " ".join(f"{t.msgs / p.msgs:.2f}" for t, p in
                            zip(rates[f"tx@{d}"], rates[f"plain@{d}"], strict=True))
        for d in DEPTHS
    )  # fmt: skip
    print(f"target: tx/plain >= 0.40 (each repeat: {each})")
    print(f"\ncheck-back round, {PENDING:,} pending halves (checks left unanswered)")
    print(f"checked {rr.checked:,.0f} (received {rr.received:,.0f}) in {rr.round_ms:,.0f} ms: "
          f"{1000 * rr.round_ms / rr.checked:.1f} us/check, "
          f"{rr.checked / rr.round_ms * 1000:,.0f} checks/s, {rr.yields:.0f} yields "
          f"(halves stored in {rr.store_s:.2f} s)")  # fmt: skip
    print(f"{'GET_MAX_OFFSET probe':<24}{'p50 us':>9}{'p99 us':>9}{'max us':>10}")
    print(f"{'no round running':<24}{rr.base_p50_us:>9.0f}{rr.base_p99_us:>9.0f}"
          f"{rr.base_max_us:>10.0f}")  # fmt: skip
    print(f"{'during the round':<24}{rr.round_p50_us:>9.0f}{rr.round_p99_us:>9.0f}"
          f"{rr.round_max_us:>10.0f}"
          f"   ({rr.round_probes:.0f} probes)")  # fmt: skip
    line = {
        "bench": "transactions",
        "cases": {
            k: {f.name: round(getattr(v, f.name), 1) for f in fields(Rate)} for k, v in med.items()
        },
        "ratios": {k: round(v, 3) for k, v in ratios.items()},
        "check_round": {f.name: round(getattr(rr, f.name), 2) for f in fields(RoundResult)},
    }
    print(json.dumps(line))


if __name__ == "__main__":
    sys.exit(main())
