"""A judged cluster (name server + broker as processes, the judges' names made) and the
replay of one case on a fresh one: does it alone cause a lasting outage, and does that
outage survive a restart?

The broker runs from a config file with short periods so outages show in seconds: it
registers every second, the name server evicts a broker after ``EXPIRY_MS`` without one, and
the delay levels are those of fuzz_checks.DELAY_LEVELS.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from benchmarks.fuzz_checks import DELAY_LEVELS, Judge, Verdict
from benchmarks.fuzz_logs import by_event, signature
from benchmarks.fuzz_memory import SPIKE_MIB, growth, guard
from benchmarks.fuzz_procs import Server, broker, namesrv
from benchmarks.fuzz_run import Finding, Fuzzer, Sent
from benchmarks.fuzz_values import World
from benchmarks.fuzz_wire import Conn

EXPIRY_MS: Final = 5000
BROKER_NAME: Final = "judged_broker"


@dataclass
class Cluster:
    root: Path
    ns: Server
    broker: Server
    judge: Judge
    exit_codes: dict[str, int | None]
    killed: list[str]  # servers the memory guard killed

    async def restart(self, *, crash: bool) -> float:
        return await asyncio.to_thread(self.broker.restart, crash=crash)


def broker_conf(root: Path) -> dict[str, str]:
    return {
        "brokerName": BROKER_NAME,
        "brokerIP1": "127.0.0.1",
        "storePathRootDir": str(root / "store"),
        "registerNameServerPeriod": "1000",
        "mappedFileSizeCommitLog": str(16 * 1024 * 1024),
        "mappedFileSizeConsumeQueue": str(20 * 30_000),
        "messageDelayLevel": DELAY_LEVELS,
        "metricsPort": "0",
    }


@contextlib.asynccontextmanager
async def cluster(root: Path) -> AsyncIterator[Cluster]:
    await asyncio.to_thread(root.mkdir, parents=True, exist_ok=True)
    ns = namesrv(root, brokerChannelExpiredTime=str(EXPIRY_MS), scanNotActiveBrokerInterval="1000")
    await asyncio.to_thread(ns.start)
    br = broker(root, ns.addr, broker_conf(root))
    codes: dict[str, int | None] = {}
    killed: list[str] = []
    guarding = asyncio.ensure_future(guard([ns, br], killed))
    try:
        await asyncio.to_thread(br.start)
        judge = Judge(br.addr, ns.addr, EXPIRY_MS / 1000)
        try:
            await judge.setup()
            yield Cluster(root, ns, br, judge, codes, killed)
        finally:
            await judge.close()
    finally:
        guarding.cancel()
        codes["broker"] = await asyncio.to_thread(br.stop)
        codes["namesrv"] = await asyncio.to_thread(ns.stop)


async def replay_one(
    finding: Finding, server: str, index: int, root: Path, prelude: list[int] | None = None
) -> tuple[bool, str]:
    """Case ``index`` of ``server`` alone on a fresh cluster: (reproduced, what was seen).
    Reproduced: a judge fails, or the finding's log event shows again. On success the
    finding takes this case (and the steps sent here) as its reproducer. ``prelude``: cases
    of the same server replayed first (what built the state the case met)."""
    async with cluster(root) as c:
        target = c.broker if server == "broker" else c.ns
        world = World(scratch=str(root / "scratch"))
        fuzzer = Fuzzer(target, server, finding.seed, world, budget=1 << 30, workers=1)
        conn = Conn(target.addr)
        sent = []
        try:
            for before in prelude or []:
                sent += await fuzzer.run_case(conn, before)
            since = time.monotonic()
            grew = asyncio.ensure_future(growth(target, 15.0))
            sent += await fuzzer.run_case(conn, index)
        finally:
            await conn.close()
        mib = await grew
        if finding.kind == "memory" or not target.alive():
            return _memory_outcome(finding, server, index, fuzzer, sent, mib, target.alive())
        answers = ", ".join(str(s.code if s.outcome == "answer" else s.outcome) for s in sent)
        verdict = await c.judge.verdict()
        events = c.broker.notable + c.ns.notable
        parts = [f"replayed alone (answers {answers}): {verdict.text()}"]
        if not verdict.ok:
            await c.restart(crash=False)
            parts.append(f"after a clean restart: {(await c.judge.verdict()).text()}")
        seen = by_event(events, since, float("inf"))
        if seen:
            parts.append("warnings: " + ", ".join(f"{e} x{n}" for e, n in seen.most_common(3)))
        alike = sum(
            e.event == finding.event and signature(e) == finding.signature
            for e in events
            if e.at >= since
        )
        again = alike >= (3 if finding.storm else 1)  # a storm goes on: more than once
        if again:
            parts.append(f"logged {finding.event} again (x{alike})")
        # a log line is reproduced by the same line; anything else by an outage
        reproduced = again if finding.event else not verdict.ok
        if reproduced or (server, index) == (finding.server, finding.case_index):
            finding.server, finding.case_index = server, index
            finding.case = fuzzer.cases[index][0] if index in fuzzer.cases else finding.case
            if sent:
                finding.steps = [s.step for s in sent]
        return reproduced, "; ".join(parts)


def _memory_outcome(finding: Finding, server: str, index: int, fuzzer: Fuzzer, sent: list[Sent],
                    mib: float, alive: bool) -> tuple[bool, str]:  # fmt: skip
    """A memory finding is reproduced when the case alone takes as much (or kills it)."""
    reproduced = mib >= SPIKE_MIB or not alive
    if reproduced or (server, index) == (finding.server, finding.case_index):
        finding.server, finding.case_index = server, index
        finding.case = fuzzer.cases[index][0] if index in fuzzer.cases else finding.case
        finding.steps = [s.step for s in sent] or finding.steps
    answers = ", ".join(str(s.code if s.outcome == "answer" else s.outcome) for s in sent)
    end = "alive" if alive else "killed or dead"
    return reproduced, f"replayed alone (answers {answers}): RSS +{mib:,.0f} MiB in 15 s, {end}"


async def replay(finding: Finding, root: Path, fuzzers: dict[str, Fuzzer]) -> None:
    """Replay the finding's case, then its other suspects, until one reproduces it; a storm
    or a memory finding not reproduced by its first suspect alone is tried once more after
    the cases that made what that suspect names (``Fuzzer.prelude``)."""
    tried = []
    for n, (server, index) in enumerate([(finding.server, finding.case_index), *finding.suspects]):
        reproduced, seen = await replay_one(finding, server, index, root / f"s{n}")
        if not reproduced and n == 0 and finding.kind in ("memory", "warning_storm"):
            before = fuzzers[server].prelude(index) if server in fuzzers else []
            if before:
                reproduced, seen = await replay_one(finding, server, index, root / "p", before)
                seen = f"after cases {before} made its names: {seen}"
        if reproduced:
            finding.verdict = seen + (f" (suspect {n + 1})" if n else "")
            return
        tried.append(seen)
    finding.verdict = tried[0] if len(tried) == 1 else (
        f"none of {len(tried)} suspects reproduced it alone; the first: {tried[0]}"
    )  # fmt: skip


def lasting_text(verdicts: dict[str, Verdict]) -> dict[str, str]:
    return {name: v.text() for name, v in verdicts.items()}
