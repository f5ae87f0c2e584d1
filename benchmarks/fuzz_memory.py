"""Memory judge: a request that makes a server's RSS jump is a finding, and a server past a
hard limit is killed (SIGKILL, by its PID) before it takes the machine down with it.

Every half second while fuzzing each server's VmRSS is read; a rise of ``SPIKE_MIB`` or more
within one such interval, or passing ``HIGH_MIB``, makes a ``memory`` finding whose suspects
are the requests to that server in flight, unanswered of late, or sent since the previous
reading (``_suspects``). A replay reproduces it when the case alone makes a fresh server grow
as much."""

from __future__ import annotations

import asyncio
import time
from typing import Final

from benchmarks.fuzz_procs import Server
from benchmarks.fuzz_run import Finding, Fuzzer, Sent

SPIKE_MIB: Final = 128.0  # within EVERY seconds
HIGH_MIB: Final = 1024.0  # past it at all: judged once, while the culprit may still be running
LIMIT_MIB: Final = 2048.0
EVERY: Final = 0.5


def rss_mib(server: Server) -> float:
    return server.memory().get("VmRSS", 0) / 1024 if server.alive() else 0.0


def _suspects(fz: Fuzzer, since: float, n: int = 3) -> list[Sent]:
    """In flight first, then those that got no answer in the last half minute (a server busy
    growing answers nobody), then those sent since ``since``; latest first."""
    now = time.monotonic()
    recent = [s for s in reversed(fz.log[-5000:])
              if s.outcome == "pending" or s.at >= since
              or (s.outcome == "no_answer" and now - s.at < 30)]  # fmt: skip
    rank = {"pending": 2, "no_answer": 1}
    recent.sort(key=lambda s: (rank.get(s.outcome, 0), s.at), reverse=True)
    out: list[Sent] = []
    for sent in recent:
        if all(s.case_index != sent.case_index for s in out):
            out.append(sent)
        if len(out) == n:
            break
    return out


def spike(fz: Fuzzer, before: float, after: float, since: float, killed: bool) -> None:
    key = "memory"
    if key in fz.findings:
        fz.findings[key].seen += 1
        return
    blamed = _suspects(fz, since)
    summary = f"{fz.kind} RSS {before:,.0f} -> {after:,.0f} MiB within {EVERY} s" + (
        f"; killed past {LIMIT_MIB:,.0f} MiB" if killed else ""
    )
    main = blamed[0] if blamed else None
    name, steps = fz.cases.get(main.case_index, ("?", [])) if main else ("?", [])
    found = Finding("memory", fz.kind, summary, name, main.case_index if main else -1,
                    fz.seed, list(steps))  # fmt: skip
    found.suspects = [(s.server, s.case_index) for s in blamed[1:]]
    found.memory_mib = after - before
    fz.findings[key] = found


async def watch(fuzzers: list[Fuzzer], limit: float = LIMIT_MIB) -> None:
    """Until cancelled: judge each fuzzed server's RSS every ``EVERY`` seconds (``guard``
    does the killing)."""
    last = {f.kind: rss_mib(f.server) for f in fuzzers}
    since = time.monotonic()
    while True:
        await asyncio.sleep(EVERY)
        now = time.monotonic()
        for fz in fuzzers:
            rss = rss_mib(fz.server)
            if rss - last[fz.kind] >= SPIKE_MIB or rss > HIGH_MIB:
                spike(fz, last[fz.kind], rss, since - EVERY, killed=rss > limit)
            last[fz.kind] = rss
        since = now


async def guard(servers: list[Server], killed: list[str], limit: float = LIMIT_MIB) -> None:
    """Until cancelled: SIGKILL any server whose RSS passes ``limit`` (named in ``killed``)."""
    while True:
        await asyncio.sleep(EVERY / 2)
        for server in servers:
            if rss_mib(server) > limit:
                await asyncio.to_thread(server.kill)
                killed.append(f"{server.name} (RSS past {limit:,.0f} MiB)")


async def growth(server: Server, seconds: float) -> float:
    """The most the server's RSS rose over the next ``seconds`` (or until it died)."""
    start = peak = rss_mib(server)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and server.alive():
        await asyncio.sleep(EVERY / 2)
        peak = max(peak, rss_mib(server))
    return peak - start
