"""Replication: SYNC_MASTER vs ASYNC_MASTER sends, the slave's lag under load, and how fast a
restarted slave catches up.

Run ``python -m benchmarks.replication [--seconds S] [--repeat N] [--quick] [--catchup-mb M]``.

Brokers are processes on port 0 with no name server, ASYNC_FLUSH; a slave (brokerId 1,
brokerRole SLAVE) follows its master's HA port (listenPort + 1) by ``haMasterAddress``. 1 KiB
bodies in SEND_MESSAGE_V2 with JSON headers (what a Java client sends), an 8-queue topic.
Only code-0 answers count; any other answer is reported. Before a pair is measured, a send
must answer 0 and the slave's CommitLog must end where the master's does (a SYNC_MASTER
answers SLAVE_NOT_AVAILABLE, 11, until its slave is connected).

1. Sends/s with 64 in flight to a SYNC_MASTER (each send answered once its slave has it)
   vs an ASYNC_MASTER, each with one connected slave, both pairs up in the same run; each
   repeat alternates them in 4 slices of ``--seconds / 4`` (the load of a shared machine
   drifts). Target: sync/async >= 0.50. Also the brokers' CPU (master + slave) per message,
   async/sync: the same comparison, less sensitive to what else runs on the machine.
2. Lag under sustained load, ASYNC_MASTER + slave: 64 sends in flight, then an open-loop
   load at half the ASYNC_MASTER rate of 1 (there this client keeps up, so the answer times
   it sees are close to the broker's). A child process samples the CommitLog max offsets
   (GET_BROKER_RUNTIME_INFO commitLogMaxOffset): the master's every 50 ms with the slave's
   beside it (lag in bytes), the slave's every 5 ms. Lag in ms: from a send's answer
   reaching this client until the slave's max offset passed the message's end (its offset +
   the record size), interpolated between the two slave samples around that (so +/- 5 ms);
   "early": the share of messages the slave had before their answer got here (this client's
   own queueing; their lag counts as 0).
3. Catch-up: the slave is stopped (SIGTERM), ``--catchup-mb`` (200 MB; 20 with --quick) is
   sent to the master, the slave is started on its store again; timed from its ``listening``
   until its max offset equals the master's (polled every 20 ms). Baseline, same run:
   reading those same bytes of the master's CommitLog files with os.read in 1 MiB chunks,
   page cache not dropped (its residency, by mincore, is printed: the master just wrote
   them, so they are warm).
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import itertools
import json
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TypeVar

import uvloop

from aiorocketmq.remoting.client import RemotingClient
from benchmarks.common import parse_args, quantile_us, quiet_logging
from benchmarks.repl_common import (
    Pair,
    Sampler,
    caught_up,
    create_topic,
    fill,
    max_offset,
    paced,
    pair,
    read_rate,
    resident,
    sends,
    settle,
)
from benchmarks.tx_common import JSON_CLIENT

DEPTH, FINE, COARSE, MB, PACED, SLICES = 64, 0.005, 0.05, 1e6, 0.5, 4
T = TypeVar("T", "Rate", "Lag", "CatchUp")
OTHERS: Counter[str] = Counter()  # "<case>: code N" -> answers other than 0, all sections


def median_of(runs: list[T]) -> T:
    """Field by field."""
    cls = type(runs[0])
    return cls(*(statistics.median(getattr(r, f.name) for r in runs) for f in fields(cls)))


# ------------------------------------------------------------ 1. sync vs async


@dataclass(frozen=True)
class Rate:
    msgs: float  # code-0 answers per second
    p50_us: float
    p99_us: float
    master_cpu_us: float  # per message
    slave_cpu_us: float


async def ready(p: Pair, case: str) -> None:
    async with RemotingClient(JSON_CLIENT) as cli:
        await create_topic(cli, p.master.addr)
        for code, n in (await settle(cli, p)).items():
            OTHERS[f"{case} before its slave was up: code {code}"] += n


@dataclass
class Slices:
    """One case's slices of one repeat, summed."""

    ok: int = 0
    answers: int = 0  # any code
    seconds: float = 0.0
    cpu_m: float = 0.0
    cpu_s: float = 0.0
    lat: list[int] = field(default_factory=list)

    def rate(self) -> Rate:
        lat, n = sorted(self.lat), self.answers
        return Rate(self.ok / self.seconds, quantile_us(lat, 0.5), quantile_us(lat, 0.99),
                    1e6 * self.cpu_m / n, 1e6 * self.cpu_s / n)  # fmt: skip


async def one_slice(p: Pair, case: str, warm: float, seconds: float, acc: Slices) -> None:
    async with RemotingClient(JSON_CLIENT) as cli:
        cpu_m, cpu_s = p.master.cpu_seconds(), p.slave.cpu_seconds()
        tally, elapsed = await sends(cli, p.master.addr, DEPTH, warm, seconds)
        acc.cpu_m += p.master.cpu_seconds() - cpu_m
        acc.cpu_s += p.slave.cpu_seconds() - cpu_s
        await caught_up(cli, p, await max_offset(cli, p.master.addr))  # the next starts even
    for code, n in tally.others.items():
        OTHERS[f"{case}: code {code}"] += n
    acc.ok, acc.seconds, acc.lat = acc.ok + tally.ok, acc.seconds + elapsed, acc.lat + tally.lat
    acc.answers += tally.ok + sum(tally.others.values())


def throughput(root: Path, warm: float, seconds: float, repeat: int) -> dict[str, list[Rate]]:
    """Each repeat: SLICES rounds of async then sync, ``seconds / SLICES`` each (a shared
    machine's load drifts: interleaved, both cases see the same)."""
    out: dict[str, list[Rate]] = {"async": [], "sync": []}
    with pair(root, "ASYNC_MASTER") as a, pair(root, "SYNC_MASTER") as s:
        uvloop.run(ready(a, "async"))
        uvloop.run(ready(s, "sync"))
        for _ in range(repeat):
            acc = {"async": Slices(), "sync": Slices()}
            for _ in range(SLICES):
                for case, p in (("async", a), ("sync", s)):
                    uvloop.run(one_slice(p, case, warm / 2, seconds / SLICES, acc[case]))
            for case, sums in acc.items():
                out[case].append(sums.rate())
    return out


# ------------------------------------------------------------ 2. lag under load


@dataclass(frozen=True)
class Lag:
    msgs: float  # sends/s meanwhile
    bytes_p50: float
    bytes_p99: float
    bytes_max: float
    ms_p50: float
    ms_p99: float
    ms_max: float
    early: float  # fraction of messages the slave had before their answer got here
    gap_p99_ms: float  # between two slave samples (the sampler's own delays: resolution)
    gap_max_ms: float


async def lag_run(p: Pair, warm: float, seconds: float, rate: float | None) -> Lag:
    """One load (``rate`` msgs/s, else DEPTH in flight) with the sampler beside it."""
    sampler = await asyncio.to_thread(Sampler.start, p.master.addr, p.slave.addr, FINE, COARSE)
    try:
        async with RemotingClient(JSON_CLIENT) as cli:
            if rate is None:
                tally, elapsed = await sends(cli, p.master.addr, DEPTH, warm, seconds, keep=True)
            else:
                tally, elapsed = await paced(cli, p.master.addr, rate, warm, seconds)
            await caught_up(cli, p, await max_offset(cli, p.master.addr))
            await asyncio.sleep(2 * FINE)
    finally:
        samples = await asyncio.to_thread(sampler.stop)
    OTHERS.update({f"lag: code {c}": n for c, n in tally.others.items()})
    first, last = tally.acks[0][0], tally.acks[-1][0]
    gaps = sorted(max(0, m - s) for t, m, s in samples if m >= 0 and first <= t <= last)
    ms, early = lag_ms(tally.acks, samples)
    times = [t for t, _m, _s in samples if first <= t <= last]
    _g50, g99, gmax = pick(sorted(b - a for a, b in itertools.pairwise(times)))
    (b50, b99, bmax), (m50, m99, mmax) = pick(gaps), pick(ms)
    return Lag(tally.ok / elapsed, b50, b99, bmax, m50 * 1e3, m99 * 1e3, mmax * 1e3, early,
               g99 * 1e3, gmax * 1e3)  # fmt: skip


def pick(ordered: list[float] | list[int]) -> tuple[float, float, float]:
    n = len(ordered)
    return ordered[n // 2], ordered[min(n - 1, int(n * 0.99))], ordered[-1]


def lag_ms(
    acks: list[tuple[float, int]], samples: list[tuple[float, int, int]]
) -> tuple[list[float], float]:
    """Per acknowledged message: seconds from its answer until the slave's max offset passed
    its end (its offset + the records' size, which is the same for all), sorted; and the
    fraction the slave had before the answer got here."""
    times = [t for t, _m, _s in samples]
    slave = [s for _t, _m, s in samples]  # never decreasing: no truncation here
    offsets = sorted(phys for _t, phys in acks)
    size = Counter(b - a for a, b in itertools.pairwise(offsets)).most_common(1)[0][0]
    out, early = [], 0
    for acked, phys in acks:
        j = bisect.bisect_left(slave, phys + size)
        if j == 0 or j == len(slave):
            raise RuntimeError("the sampler did not see the slave pass a message")
        s0, s1, t0, t1 = slave[j - 1], slave[j], times[j - 1], times[j]
        reached = t0 + (t1 - t0) * (phys + size - s0) / (s1 - s0)
        early += reached < acked
        out.append(max(0.0, reached - acked))
    return sorted(out), early / len(out)


def lag(root: Path, warm: float, seconds: float, repeat: int, rate: float) -> dict[str, list[Lag]]:
    """Each repeat: DEPTH in flight, then ``rate`` msgs/s; one pair for all."""
    out: dict[str, list[Lag]] = {f"{DEPTH} in flight": [], f"{rate:,.0f} msgs/s": []}
    with pair(root, "ASYNC_MASTER") as p:
        uvloop.run(ready(p, "lag"))
        for _ in range(repeat):
            for key, paced_at in zip(out, (None, rate), strict=True):
                out[key].append(uvloop.run(lag_run(p, warm, seconds, paced_at)))
    return out


# ------------------------------------------------------------ 3. catch-up


@dataclass(frozen=True)
class CatchUp:
    mb: float  # the slave missed
    fill_s: float  # sending them took
    start_s: float  # from spawning the slave to its `listening`
    early_mb: float  # copied before `listening` (the HA client starts first)
    catchup_s: float  # from `listening` to its max offset = the master's
    rate: float  # MB/s: what was left at `listening` / catchup_s
    slave_cpu: float  # the slave's CPU seconds per second meanwhile
    master_cpu: float
    read_rate: float  # MB/s, os.read of the same bytes of the master's files
    resident: float  # of the master's CommitLog bytes, in the page cache before the read


async def stop_and_fill(p: Pair, volume: int) -> tuple[int, float]:
    """The slave caught up and stopped, then ``volume`` bytes sent; where the slave stopped
    and the seconds the sends took."""
    async with RemotingClient(JSON_CLIENT) as cli:
        stopped = await max_offset(cli, p.master.addr)
        await caught_up(cli, p, stopped)
        await asyncio.to_thread(p.slave.stop)
        t0 = time.perf_counter()
        OTHERS.update({f"catch-up fill: code {c}": n for c, n in
                       (await fill(cli, p.master.addr, volume)).items()})  # fmt: skip
        return stopped, time.perf_counter() - t0


@dataclass(frozen=True)
class Restart:
    end: int  # the master's
    at: int  # the slave's at `listening`
    start_s: float
    took: float
    slave_cpu: float
    master_cpu: float


async def restart_and_time(p: Pair) -> Restart:
    """The slave started again and timed until it ends where the master does."""
    async with RemotingClient(JSON_CLIENT) as cli:
        end = await max_offset(cli, p.master.addr)
        t0 = time.perf_counter()
        await asyncio.to_thread(p.slave.start)
        t1, cpu_s, cpu_m = time.perf_counter(), p.slave.cpu_seconds(), p.master.cpu_seconds()
        at = await max_offset(cli, p.slave.addr)
        async with asyncio.timeout(600):  # polled every 20 ms: each poll costs the slave CPU
            await caught_up(cli, p, end, 0.02)
        t2 = time.perf_counter()
        busy_s, busy_m = p.slave.cpu_seconds() - cpu_s, p.master.cpu_seconds() - cpu_m
    return Restart(end, at, t1 - t0, t2 - t1, busy_s / (t2 - t1), busy_m / (t2 - t1))


def catchup_once(root: Path, volume: int) -> CatchUp:
    with pair(root, "ASYNC_MASTER") as p:
        uvloop.run(ready(p, "catch-up"))
        stopped, fill_s = uvloop.run(stop_and_fill(p, volume))
        r = uvloop.run(restart_and_time(p))
        cached = resident(p.master, stopped, r.end)
        base = read_rate(p.master, stopped, r.end)
    mb, early = (r.end - stopped) / MB, (r.at - stopped) / MB
    return CatchUp(mb, fill_s, r.start_s, early, r.took, (mb - early) / r.took, r.slave_cpu,
                   r.master_cpu, base, cached)  # fmt: skip


def catchup(root: Path, volume: int, repeat: int) -> list[CatchUp]:
    out = []
    for i in range(repeat):
        out.append(catchup_once(root / f"catchup{i}", volume))
        shutil.rmtree(root / f"catchup{i}", ignore_errors=True)
    return out


# ------------------------------------------------------------ report


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--catchup-mb", type=float, default=None, help="200; 20 with --quick")
    args, warm = parse_args(__doc__ or "", parser)
    volume = int((args.catchup_mb or (20 if args.quick else 200)) * MB)
    quiet_logging()
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bench-repl-") as tmp:
        rates = throughput(Path(tmp) / "rate", warm, args.seconds, args.repeat)
        half = PACED * median_of(rates["async"]).msgs
        lags = lag(Path(tmp) / "lag", warm, args.seconds, args.repeat, half)
        catches = catchup(Path(tmp), volume, args.repeat)
    report(rates, lags, catches)
    print(f"({args.repeat} repeats, {time.perf_counter() - t0:.0f} s)")
    return 0


def report(
    rates: dict[str, list[Rate]], lags: dict[str, list[Lag]], catches: list[CatchUp]
) -> None:
    """Medians; sync/async is the median of the repeats' own ratios (the two measured one
    after the other), so a drift in the machine's load between repeats cancels out."""
    ratios = [s.msgs / a.msgs for s, a in zip(rates["sync"], rates["async"], strict=True)]
    med = {k: median_of(v) for k, v in rates.items()}
    print(f"\nsends, {DEPTH} in flight (1 KiB, JSON headers), each master with one slave")
    print(f"{'case':<8}{'msgs/s':>10}{'p50 us':>9}{'p99 us':>9}{'master cpu us':>15}"
          f"{'slave cpu us':>14}")  # fmt: skip
    for kind, r in med.items():
        print(f"{kind:<8}{r.msgs:>10,.0f}{r.p50_us:>9.0f}{r.p99_us:>9.0f}{r.master_cpu_us:>15.1f}"
              f"{r.slave_cpu_us:>14.1f}")  # fmt: skip
    ratio = statistics.median(ratios)
    cost = statistics.median(
        (a.master_cpu_us + a.slave_cpu_us) / (s.master_cpu_us + s.slave_cpu_us)
        for s, a in zip(rates["sync"], rates["async"], strict=True)
    )
    print(f"sync/async {ratio:.2f}, target >= 0.50 (each repeat: "
          f"{' '.join(f'{x:.2f}' for x in ratios)}); broker CPU per message async/sync "
          f"{cost:.2f}")  # fmt: skip
    print(
        "\nslave lag, ASYNC_MASTER: in bytes (master sampled every "
        f"{COARSE * 1000:.0f} ms), in ms (slave sampled every {FINE * 1000:.0f} ms)"
    )
    print(
        f"{'load':<18}{'msgs/s':>9}{'bytes p50':>11}{'p99':>9}{'max':>9}{'ms p50':>8}"
        f"{'p99':>7}{'max':>7}{'early':>7}{'sampler gap p99/max ms':>24}"
    )
    med_lag = {k: median_of(v) for k, v in lags.items()}
    for key, lg in med_lag.items():
        print(
            f"{key:<18}{lg.msgs:>9,.0f}{lg.bytes_p50:>11,.0f}{lg.bytes_p99:>9,.0f}"
            f"{lg.bytes_max:>9,.0f}{lg.ms_p50:>8.1f}{lg.ms_p99:>7.1f}{lg.ms_max:>7.1f}"
            f"{lg.early:>7.0%}{lg.gap_p99_ms:>17.0f} / {lg.gap_max_ms:.0f}"
        )
    cu = median_of(catches)
    print(f"\nslave catch-up after a restart: {cu.mb:.0f} MB (sent in {cu.fill_s:.1f} s)")
    print(f"{cu.rate:,.1f} MB/s: {cu.mb - cu.early_mb:.0f} MB in {cu.catchup_s:.2f} s after "
          f"`listening` ({cu.start_s:.2f} s to start, {cu.early_mb:.1f} MB copied by then); "
          f"slave cpu {cu.slave_cpu:.2f}, master cpu {cu.master_cpu:.2f} s/s")  # fmt: skip
    print(f"raw read of the same bytes: {cu.read_rate:,.0f} MB/s (page cache warm: "
          f"{cu.resident:.0%} resident); catch-up/read {cu.rate / cu.read_rate:.3f} "
          f"(each repeat: {' '.join(f'{c.rate:.1f}' for c in catches)} MB/s)")  # fmt: skip
    if OTHERS:
        print("answers other than 0: " + ", ".join(f"{k} x{n}" for k, n in OTHERS.items()))
    line = {
        "bench": "replication",
        "cases": {
            k: {f.name: round(getattr(v, f.name), 1) for f in fields(Rate)} for k, v in med.items()
        },
        "ratios": {"sync/async": round(ratio, 3), "cpu async/sync": round(cost, 3)},
        "lag": {
            k: {f.name: round(getattr(v, f.name), 3) for f in fields(Lag)}
            for k, v in med_lag.items()
        },
        "catchup": {f.name: round(getattr(cu, f.name), 3) for f in fields(CatchUp)},
        "other_answers": dict(OTHERS),
    }
    print(json.dumps(line))


if __name__ == "__main__":
    sys.exit(main())
