"""Structured fuzzing of a real name server and broker, judged for crashes and lasting outages.

Run ``python -m benchmarks.fuzz [--requests N] [--seed S] [--workers W] [--verify K]
[--quick]`` (``nice -n 10`` on a shared machine).

A name server and a broker run as processes on port 0 with a temporary store (short periods:
fuzz_verify.broker_conf). A bystander process does a normal round trip (send, pull, route
lookup) all along and reports its RTT. Then ``N`` requests go to each server: every code
either serves (and codes neither knows), built from the typed headers with boundary
numbers, odd strings, fields left out or added, structured bodies (subscription groups, topic
tables, heartbeats, lock batches, config lines), in all three header formats, alone or in
short sequences (a group then a heartbeat naming it; a message stored then sent back; ...).
Seeded: the same seed sends the same requests (benchmarks/fuzz_cases.py).

Judged during and after (a finding each, with a reproducer: one JSON line per request):
- both servers alive; no error-level log line; no output that is not a JSON log line;
- each answer (fuzz_run: no answer, connection closed, SUCCESS where the oracle wants a
  refusal, Python errors in remarks);
- the bystander's RTT and failures; warnings per second while fuzzing and after it stopped
  (a steady stream after is a poison pill), each kind of warning blamed on a request;
- lasting outages (fuzz_checks): after the run, then after a clean and a SIGKILL restart of
  the broker: the judges' topic still routed after the name server's expiry, a retry and a
  delayed message arriving at every delay level, every acknowledged message still there;
- memory (fuzz_memory): a jump of a server's RSS is a finding; past 2 GiB it is killed (the
  machine is shared), started again, and the fuzzing goes on;
- broker RSS before and after; the config file lines UPDATE_BROKER_CONFIG changed.
Candidates (memory jumps, warning storms, error lines, SUCCESS against an oracle) are then
replayed alone on fresh servers (``--verify`` of them; their suspects, and the cases that made
what they name) to tell which one causes a lasting outage, and whether it survives a restart.
Last, the config probe (fuzz_config) tries the broker config keys the fuzzing leaves alone.
``--quick``: 300 requests each, no restarts, replays or probe.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import uvloop

from aiorocketmq.remoting.protocol.codes import RequestCode as C
from benchmarks import fuzz_logs, fuzz_memory
from benchmarks.fuzz_bystander import Bystander
from benchmarks.fuzz_cases import Step
from benchmarks.fuzz_config import probe
from benchmarks.fuzz_procs import warning_rates
from benchmarks.fuzz_run import Finding, Fuzzer
from benchmarks.fuzz_values import World
from benchmarks.fuzz_verify import Cluster, broker_conf, cluster, replay
from benchmarks.fuzz_wire import Req

REPLAYED = ("memory", "warning_storm", "error_log", "accepted")  # in this order


@dataclass
class Options:
    requests: int = 30_000
    seed: int = 1
    workers: int = 4
    verify: int = 10
    quick: bool = False
    restarts: bool = True
    config_probe: bool = True
    lasting: bool = True  # the judges' verdict after fuzzing (off: a smoke run)


@dataclass
class Report:
    options: Options
    requests: dict[str, int] = field(default_factory=dict)
    cases: dict[str, int] = field(default_factory=dict)
    codes_tried: dict[str, int] = field(default_factory=dict)
    formats: dict[str, dict[str, int]] = field(default_factory=dict)
    responses: dict[str, dict[str, int]] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    errors: int = 0
    crashed: list[str] = field(default_factory=list)
    killed: list[str] = field(default_factory=list)  # by the memory guard
    revivals: dict[str, int] = field(default_factory=dict)  # restarts while fuzzing
    during_outages: int = 0  # closes and timeouts a dying server explains (not findings)
    disarmed: list[str] = field(default_factory=list)  # topics deleted after a death
    config_diff: list[str] = field(default_factory=list)  # broker.conf lines the fuzzing changed
    bystander: dict[str, Any] = field(default_factory=dict)
    warnings: dict[str, float] = field(default_factory=dict)
    quiet_warnings: dict[str, int] = field(default_factory=dict)
    warning_kinds: list[str] = field(default_factory=list)
    rss_kib: dict[str, dict[str, int]] = field(default_factory=dict)
    lasting: dict[str, str] = field(default_factory=dict)
    restart_s: dict[str, float] = field(default_factory=dict)
    config_probe: list[str] = field(default_factory=list)
    seconds: float = 0.0
    exit_codes: dict[str, int | None] = field(default_factory=dict)


def warning_kinds(c: Cluster, fuzzers: list[Fuzzer], span: tuple[float, float]) -> list[str]:
    """One line per kind of warning seen while fuzzing, with the case it came first after."""
    log = sorted((s for f in fuzzers for s in f.log), key=lambda s: s.at)
    lines = []
    for kind in fuzz_logs.kinds([c.broker, c.ns], *span):
        blamed = fuzz_logs.suspects(kind.first, log, kind.server, window=60, n=1)
        after = f"{blamed[0].case} #{blamed[0].case_index}" if blamed else "?"
        lines.append(f"{kind.server:8} {kind.level:8} {kind.event:36} x{kind.count:<6} {after}")
    return lines


def config_diff(c: Cluster) -> list[str]:
    """The lines of the broker's config file that UPDATE_BROKER_CONFIG changed."""
    before = {**broker_conf(c.root), "namesrvAddr": c.ns.addr}
    out = []
    for line in (c.root / "broker.conf").read_text(errors="replace").splitlines():
        key, sep, value = line.partition("=")
        if sep and before.get(key.strip()) != value.strip():
            out.append(line[:200])
    return out


async def restarts(c: Cluster, acked: int | None, report: Report) -> None:
    for label, crash in (("clean restart", False), ("SIGKILL restart", True)):
        try:
            report.restart_s[label] = round(await c.restart(crash=crash), 2)
        except RuntimeError as exc:
            report.lasting[f"after {label}"] = f"broker did not start again: {str(exc)[:300]}"
            return
        report.lasting[f"after {label}"] = (await c.judge.verdict(acked)).text()


def progress(fuzzers: list[Fuzzer], by: Bystander, began: float) -> None:
    worst = max((s.get("max_ms", 0) for s in by.seconds[-10:]), default=0)
    sent = ", ".join(f"{f.kind} {f.tally.sent}" for f in fuzzers)
    found = sum(len(f.findings) for f in fuzzers)
    print(f"[{time.monotonic() - began:6.0f} s] sent {sent}; findings {found}; "
          f"bystander worst of the last 10 s {worst} ms", file=sys.stderr, flush=True)  # fmt: skip


async def fuzz(opts: Options, root: Path) -> Report:
    report = Report(opts)
    began = time.monotonic()
    async with cluster(root / "run") as c:
        if not opts.quick:
            report.lasting["before fuzzing (harness check)"] = (await c.judge.verdict()).text()
        report.rss_kib["before"] = c.broker.memory()
        by = Bystander(c.broker.addr, c.ns.addr)
        world = World(scratch=str(root / "scratch"))
        fuzzers = [
            Fuzzer(server, server.name, opts.seed, world, opts.requests, opts.workers)
            for server in (c.broker, c.ns)
        ]
        t0 = time.monotonic()
        ticker = asyncio.ensure_future(_tick(fuzzers, by, t0))
        memory = asyncio.ensure_future(fuzz_memory.watch(fuzzers))
        try:
            await asyncio.gather(*(f.run() for f in fuzzers))
        finally:
            ticker.cancel()
            memory.cancel()
            report.bystander = by.stop()
        t1 = time.monotonic()
        report.bystander["worst_second_ms"] = max((s["max_ms"] for s in by.seconds), default=0)
        report.during_outages = sum(f.forget_outages() for f in fuzzers)
        report.config_diff = config_diff(c)
        report.crashed = [f.kind for f in fuzzers if f.revivals or not f.server.alive()]
        report.revivals = {f.kind: f.revivals for f in fuzzers if f.revivals}
        report.disarmed = [t for f in fuzzers for t in f.disarmed]
        report.killed = list(c.killed)
        if not c.broker.alive():  # died (or was killed): does it come back, and serve?
            try:
                report.restart_s["after it died"] = round(await c.restart(crash=True), 2)
            except RuntimeError as exc:
                report.lasting["restart after it died"] = f"failed: {str(exc)[:300]}"
        report.rss_kib["after fuzzing"] = c.broker.memory()
        acked = report.bystander.get("acked")
        serving = c.broker.alive() and c.ns.alive()
        if opts.lasting and serving:
            report.lasting["after fuzzing"] = (await c.judge.verdict(acked)).text()
        t2 = time.monotonic()
        events = c.broker.notable + c.ns.notable
        avg, peak = warning_rates(events, t0, t1)
        quiet_avg, _ = warning_rates(events, t1 + 1, t2)
        report.warnings = {
            "per_s": round(avg, 2),
            "peak_per_s": peak,
            "after_per_s": round(quiet_avg, 2),
        }
        report.quiet_warnings = dict(fuzz_logs.by_event(events, t1 + 1, t2).most_common(8))
        for f in fuzzers:
            report.findings += f.findings.values()
        found, report.errors = fuzz_logs.log_findings([c.broker, c.ns], fuzzers, (t1 + 1, t2))
        report.findings += found
        report.warning_kinds = warning_kinds(c, fuzzers, (t0, t1))
        if opts.restarts and serving:
            await restarts(c, acked, report)
            report.rss_kib["after restarts"] = c.broker.memory()
        _tally(fuzzers, report)
        if opts.config_probe and c.broker.alive() and c.ns.alive():
            probes, verdict = await probe(c, root / "scratch", acked)
            for p in probes:
                line = f"{p.key}={p.value}: {p.code} {p.remark or ''}".strip()
                report.config_probe.append(("ACCEPTED " if p.accepted else "refused  ") + line)
                if p.accepted and p.must_refuse:
                    said = f"UPDATE_BROKER_CONFIG accepted {p.key}={p.value} ({p.must_refuse})"
                    step = Step(Req(C.UPDATE_BROKER_CONFIG, {}, f"{p.key}={p.value}".encode(), 0))
                    report.findings.append(
                        Finding(
                            "config_accepted", "broker", said, "config probe", -1, opts.seed, [step]
                        )
                    )
            if verdict is not None:
                report.lasting["after N4's keys and a restart"] = verdict.text()
    report.exit_codes = dict(c.exit_codes)
    await _replays(report, root, opts.verify, {f.kind: f for f in fuzzers})
    report.seconds = round(time.monotonic() - began, 1)
    return report


async def _tick(fuzzers: list[Fuzzer], by: Bystander, began: float) -> None:
    while True:
        await asyncio.sleep(15)
        progress(fuzzers, by, began)


def _tally(fuzzers: list[Fuzzer], report: Report) -> None:
    for f in fuzzers:
        report.requests[f.kind] = f.tally.sent
        report.cases[f.kind] = f.tally.cases
        report.codes_tried[f.kind] = len(f.tally.codes_tried)
        report.formats[f.kind] = dict(f.tally.by_format)
        report.responses[f.kind] = dict(f.tally.by_code.most_common())


async def _replays(report: Report, root: Path, budget: int, fuzzers: dict[str, Fuzzer]) -> None:
    """Replay the candidates alone on fresh servers, one case each, at most ``budget``."""
    done: set[tuple[str, int]] = set()
    candidates = sorted(
        (f for f in report.findings if f.kind in REPLAYED), key=lambda f: REPLAYED.index(f.kind)
    )
    for i, finding in enumerate(candidates):
        key = (finding.server, finding.case_index)
        if len(done) >= budget or finding.case_index < 0 or key in done:
            continue
        done.add(key)
        print(f"replaying {finding.kind} ({finding.summary[:80]}) alone", file=sys.stderr)
        try:
            await replay(finding, root / f"replay{i}", fuzzers)
        except (RuntimeError, OSError, AssertionError) as exc:
            finding.verdict = f"replay failed: {exc}"
    verdicts = {(f.server, f.case_index): f.verdict for f in candidates if f.verdict}
    for f in report.findings:  # the same case found for another reason: the same verdict
        f.verdict = f.verdict or verdicts.get((f.server, f.case_index), "")


def print_report(r: Report) -> None:
    print(f"\nfuzz: seed {r.options.seed}, {r.seconds:.0f} s")
    print(f"{'server':<9}{'requests':>9}{'cases':>7}{'codes':>7}  formats / answers by code")
    for kind in r.requests:
        print(f"{kind:<9}{r.requests[kind]:>9}{r.cases[kind]:>7}{r.codes_tried[kind]:>7}  "
              f"{r.formats[kind]} / {r.responses[kind]}")  # fmt: skip
    b = r.bystander
    print(f"bystander: {b.get('rounds', 0)} round trips, {b.get('failures', 0)} failed, RTT p50 "
          f"{b.get('p50_ms')} ms p99 {b.get('p99_ms')} ms max {b.get('max_ms')} ms; "
          f"{b.get('errors') or ''}")  # fmt: skip
    w = r.warnings
    print(
        f"warnings: {w.get('per_s')}/s while fuzzing (peak {w.get('peak_per_s')} in one second), "
        f"{w.get('after_per_s')}/s after {r.quiet_warnings or ''}; error lines: {r.errors}"
    )
    print(f"died: {r.crashed or None} (killed: {r.killed or None}; started again while fuzzing: "
          f"{r.revivals or None}); exit codes at the end {r.exit_codes}")  # fmt: skip
    for label, kib in r.rss_kib.items():
        print(
            f"broker memory {label}: "
            + ", ".join(f"{k} {v / 1024:.0f} MiB" for k, v in kib.items())
        )
    for label, text in r.lasting.items():
        print(f"lasting, {label}: {text}")
    if r.restart_s:
        print(f"restart to `listening`: {r.restart_s} s")
    if r.disarmed:
        print(f"deleted after a death (too many queues to walk): {r.disarmed}")
    if r.during_outages:
        print(f"{r.during_outages} closes and timeouts while a server was dying: not findings")
    if r.config_diff:
        print(
            "broker.conf after fuzzing, lines UPDATE_BROKER_CONFIG changed: "
            + "; ".join(r.config_diff)
        )
    if r.warning_kinds:
        print("\nkinds of warnings while fuzzing:")
        print(f"{'server':8} {'level':8} {'event':36} {'count':7} first after case")
        print("\n".join(r.warning_kinds))
    if r.config_probe:
        print("\nconfig probe (UPDATE_BROKER_CONFIG, one key at a time):")
        print("\n".join(r.config_probe))
    print(f"\n{len(r.findings)} findings:")
    for n, f in enumerate(r.findings, 1):
        print(f"\n[{n}] {f.kind} ({f.server}, seen {f.seen}x; case {f.case} #{f.case_index} seed "
              f"{f.seed}): {f.summary}")  # fmt: skip
        if f.verdict:
            print(f"    verdict: {f.verdict}")
        if f.steps:
            print("    reproducer:\n    " + f.reproducer().replace("\n", "\n    "))
    print(json.dumps({
        "bench": "fuzz", "seed": r.options.seed, "seconds": r.seconds, "requests": r.requests,
        "codes_tried": r.codes_tried, "responses": r.responses,
        "findings": [{"kind": f.kind, "server": f.server, "summary": f.summary[:200],
                      "seen": f.seen, "verdict": f.verdict[:300]} for f in r.findings],
        "errors": r.errors, "crashed": r.crashed, "killed": r.killed,
        "bystander_max_ms": b.get("max_ms"), "bystander_p99_ms": b.get("p99_ms"),
        "bystander_failures": b.get("failures"), "warnings": r.warnings,
        "rss_kib": r.rss_kib, "lasting": r.lasting, "restart_s": r.restart_s,
    }))  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=30_000, help="per server")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workers", type=int, default=4, help="requests in flight per server")
    parser.add_argument("--verify", type=int, default=10, help="candidates replayed alone")
    parser.add_argument("--quick", action="store_true", help="300 requests, no restarts")
    args = parser.parse_args()
    opts = Options(args.requests, args.seed, args.workers, args.verify)
    if args.quick:
        opts = Options(min(args.requests, 300), args.seed, args.workers, 0, True, False, False)
    with tempfile.TemporaryDirectory(prefix="fuzz-") as tmp:
        report = uvloop.run(fuzz(opts, Path(tmp)))
    print_report(report)
    return 1 if report.crashed or report.errors else 0


if __name__ == "__main__":
    sys.exit(main())
