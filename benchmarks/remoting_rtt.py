"""Remoting round-trip: RemotingClient -> RemotingServer echo vs raw uvloop echo baselines.

Run ``python -m benchmarks.remoting_rtt [--seconds S] [--repeat N] [--quick] [--profile DIR]``.

The server side is a real subprocess (this script re-invoked with ``--serve``) hosting three
servers on 127.0.0.1, each answering a 1 KiB body:

- ``ours-json|rocketmq|msgpack``: RemotingServer whose one route echoes ``ext_fields`` and body,
  called by RemotingClient with that header type and a SEND_MESSAGE_V2-like 11-field header.
- ``raw`` (baseline a): ``length(4) | payload``, asyncio.Protocol on both sides.
- ``raw+mp`` (baseline b): ``length(4) | hlen(4) | msgpack header | body``; per message the
  client packs ``[code, language, version, opaque, flag, remark, ext]``, the server unpacks it
  and packs a response header carrying the ext dict back, the client unpacks that.

Fairness: at 1 in flight ours is one coroutine awaiting ``invoke`` in a loop; at 64 it is 64
coroutines each awaiting ``invoke`` in a loop, which is how applications use the client. The
baselines keep the same depth as a window driven from ``data_received`` (send one per response),
with no task or future per message, and echo inline on the server. They are the floor, so the
ratio is everything our stack adds: command objects, header codec, a future and timer per
request, a task per request on the server. Every side writes one frame per write call and copies
received bodies out as ``bytes``, as our decoder does. Each measurement opens a fresh connection,
warms up, then counts responses completed within ``--seconds``; cases interleave per repeat so
drift hits all alike, and the median of the repeats is reported. Speed is printed, never asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import itertools
import json
import os
import pstats
import select
import signal
import struct
import subprocess
import sys
import time
import typing
from collections.abc import Awaitable
from dataclasses import dataclass
from pathlib import Path

import uvloop

from aiorocketmq.client.core import api
from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.config import ClientConfig, ServerConfig
from aiorocketmq.remoting.dispatch import Route
from aiorocketmq.remoting.protocol.codes import RequestCode, SerializeType
from aiorocketmq.remoting.protocol.command import RemotingCommand, response_to
from aiorocketmq.remoting.server import RemotingServer
from benchmarks.common import (
    ROOT,
    Recorder,
    Sample,
    drive,
    median_sample,
    quiet_logging,
    summarize,
)
from benchmarks.rawecho import RawClient, RawEcho

HOST = "127.0.0.1"
CODE = int(RequestCode.SEND_MESSAGE_V2)
BODY = bytes(range(256)) * 4  # 1 KiB
EXT: dict[str, str] = api.send_message(  # a 4.9.8 producer's V2 header, plausible values
    "BenchTopic",
    BODY,
    group="bench_producer_group",
    properties="UNIQ_KEY\x017F00000100002A9F0000000000000001\x02WAIT\x01true\x02TAGS\x01TagA\x02",
    queue_id=3,
    born_timestamp=1718000000000,
).ext_fields
INFLIGHTS = (1, 64)
TYPES = {name.lower(): SerializeType[name] for name in ("MSGPACK", "ROCKETMQ", "JSON")}
CASES = ("raw", "raw+mp", "ours-msgpack", "ours-rocketmq", "ours-json", "ours-msgpack-async")
ASYNC_CODE = int(RequestCode.SEND_MESSAGE)  # served by an ``async def`` echo: a task per request
TARGETS = {1: 0.80, 64: 0.70}  # ours-msgpack / raw+mp, printed next to the ratio
TIMEOUT = 10.0
_LEN = struct.Struct(">I")
_LEN2 = struct.Struct(">II")
_UNPACK = {"raw": False, "use_list": True, "strict_map_key": True}  # as serialize.py


# ---------------------------------------------------------------- server process


def echo(req: RemotingCommand, _ch: object) -> RemotingCommand:
    """A plain handler: answered inline from the read callback, as the name server's are."""
    return response_to(req, 0, ext_fields=req.ext_fields, body=req.body)


async def echo_async(req: RemotingCommand, _ch: object) -> RemotingCommand:
    """The same echo as a coroutine: what a handler that awaits (send, pull) costs."""
    return response_to(req, 0, ext_fields=req.ext_fields, body=req.body)


async def serve() -> None:
    """Start the three servers, print their ports as one JSON line, run until told to stop."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    fd = sys.stdin.fileno()  # EOF on the stdin pipe: the parent is gone, never linger
    with contextlib.suppress(PermissionError):  # not a pipe (a file, /dev/null): no watch
        loop.add_reader(fd, lambda: None if os.read(fd, 4096) else stop.set())
    ours = RemotingServer(
        {CODE: Route(echo), ASYNC_CODE: Route(echo_async)},
        ServerConfig(listen_port=0, bind_address=HOST),
        announce=False,
    )
    await ours.start()
    raw = await loop.create_server(lambda: RawEcho(False), HOST, 0)
    rawmp = await loop.create_server(lambda: RawEcho(True), HOST, 0)
    ports = [ours.port, *(s.sockets[0].getsockname()[1] for s in (raw, rawmp))]
    print(json.dumps(dict(zip(("ours", "raw", "raw+mp"), ports, strict=True))), flush=True)
    try:
        await stop.wait()
    finally:
        loop.remove_reader(fd)
        raw.close()
        rawmp.close()
        await ours.close(drain_timeout=1.0)


def server_main(profile_out: str | None) -> int:
    quiet_logging()
    prof = cProfile.Profile()
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        try:
            if profile_out:
                prof.runcall(runner.run, serve())
            else:
                runner.run(serve())
        finally:
            if profile_out:
                prof.dump_stats(profile_out)
    return 0


@contextlib.contextmanager
def server_process(profile_out: str | None = None) -> typing.Iterator[dict[str, int]]:
    """The server subprocess and its ports; stopped by its PID, killed if it will not stop."""
    cmd = [sys.executable, "-m", "benchmarks.remoting_rtt", "--serve"]
    if profile_out:
        cmd += ["--profile-out", profile_out]
    with subprocess.Popen(cmd, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE) as proc:
        try:
            assert proc.stdout is not None
            ready, _, _ = select.select([proc.stdout], [], [], 15.0)
            line = proc.stdout.readline() if ready else b""
            if not line:
                raise RuntimeError(f"server subprocess {proc.pid} did not report its ports")
            yield {str(k): int(v) for k, v in json.loads(line).items()}
        finally:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)  # this PID only; closing stdin also stops it
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()


# ---------------------------------------------------------------- client side


@dataclass(frozen=True)
class Plan:
    """Warm-up and measurement seconds, and the profiler to run during the measurement."""

    warm: float
    seconds: float
    prof: cProfile.Profile | None = None


async def timed(rec: Recorder, plan: Plan) -> Sample:
    await asyncio.sleep(plan.warm)
    if plan.prof is not None:
        plan.prof.enable()
    rec.measuring = True
    t0 = time.perf_counter()
    await asyncio.sleep(plan.seconds)
    rec.measuring = False
    elapsed = time.perf_counter() - t0
    if plan.prof is not None:
        plan.prof.disable()
    rec.stopping = True
    return summarize(rec, elapsed)


async def run_ours(
    port: int, stype: SerializeType, depth: int, plan: Plan, code: int = CODE
) -> Sample:
    client = RemotingClient(ClientConfig(serialize_type=stype))
    addr = f"{HOST}:{port}"

    def call() -> Awaitable[RemotingCommand]:
        return client.invoke(addr, RemotingCommand.request(code, EXT, BODY), TIMEOUT)

    try:
        first = await call()
        if first.body != BODY or first.ext_fields != EXT or first.serialize_type != stype:
            raise RuntimeError(f"echo mismatch for {stype.name}")
        if plan.prof is not None:
            plan.prof.enable()
        try:
            return await drive(call, depth, plan.warm, plan.seconds)
        finally:
            if plan.prof is not None:
                plan.prof.disable()
    finally:
        await client.close()


async def run_raw(port: int, with_header: bool, depth: int, plan: Plan) -> Sample:
    loop = asyncio.get_running_loop()
    transport, proto = await loop.create_connection(
        lambda: RawClient(with_header, CODE, EXT, BODY), HOST, port
    )
    try:
        for _ in range(depth):
            proto.send()
        sample = await timed(proto.rec, plan)
        await asyncio.wait_for(proto.drained, TIMEOUT)
    finally:
        transport.close()
    return sample


async def run_case(case: str, ports: dict[str, int], depth: int, plan: Plan) -> Sample:
    if case == "ours-msgpack-async":
        return await run_ours(ports["ours"], SerializeType.MSGPACK, depth, plan, ASYNC_CODE)
    if case.startswith("ours-"):
        stype = TYPES[case.removeprefix("ours-")]
        return await run_ours(ports["ours"], stype, depth, plan)
    return await run_raw(ports[case], case == "raw+mp", depth, plan)


async def run_all(ports: dict[str, int], repeat: int, plan: Plan) -> dict[str, list[Sample]]:
    samples: dict[str, list[Sample]] = {}
    for _round in range(repeat):
        for depth in INFLIGHTS:
            for case in CASES:
                sample = await run_case(case, ports, depth, plan)
                samples.setdefault(f"{case}@{depth}", []).append(sample)
    return samples


# ---------------------------------------------------------------- report


def medians(samples: dict[str, list[Sample]]) -> dict[str, Sample]:
    return {key: median_sample(runs) for key, runs in samples.items()}


def ratios(med: dict[str, Sample]) -> dict[str, float]:
    out = {}
    for depth in INFLIGHTS:
        out[f"msgpack/raw@{depth}"] = med[f"ours-msgpack@{depth}"].ops / med[f"raw@{depth}"].ops
        for name in TYPES:
            ours = med[f"ours-{name}@{depth}"].ops
            out[f"{name}/raw+mp@{depth}"] = ours / med[f"raw+mp@{depth}"].ops
        async_ops = med[f"ours-msgpack-async@{depth}"].ops
        out[f"msgpack-async/raw+mp@{depth}"] = async_ops / med[f"raw+mp@{depth}"].ops
    return out


def report(med: dict[str, Sample], args: argparse.Namespace) -> None:
    print(f"\n{'case':<16}{'in flight':>10}{'ops/s':>12}{'p50 us':>10}{'p99 us':>10}")
    for depth in INFLIGHTS:
        for case in CASES:
            s = med[f"{case}@{depth}"]
            print(f"{case:<16}{depth:>10}{s.ops:>12,.0f}{s.p50_us:>10.1f}{s.p99_us:>10.1f}")
    rat = ratios(med)
    print(f"\n{'ratio (ops/s)':<28}" + "".join(f"{f'{d} in flight':>26}" for d in INFLIGHTS))
    rows = [("msgpack / raw (a)", "msgpack/raw")]
    rows += [(f"{n} / raw+mp (b)", f"{n}/raw+mp") for n in (*TYPES, "msgpack-async")]
    for label, key in rows:
        cells = ""
        for depth in INFLIGHTS:
            cell = f"{rat[f'{key}@{depth}']:.2f}"
            if key == "msgpack/raw+mp":
                cell += f" (target >= {TARGETS[depth]:.2f})"
            cells += f"{cell:>26}"
        print(f"{label:<28}{cells}")
    line = {
        "bench": "remoting_rtt",
        "body_bytes": len(BODY),
        "seconds": args.seconds,
        "repeat": args.repeat,
        "cases": {k: {f: round(v, 1) for f, v in vars(s).items()} for k, s in med.items()},
        "ratios": {k: round(v, 3) for k, v in rat.items()},
        "targets": {f"msgpack/raw+mp@{d}": t for d, t in TARGETS.items()},
    }
    print(json.dumps(line))


def top_costs(path: str, title: str, limit: int = 14) -> None:
    """The functions with the most own time, as % of the profile's total."""
    stats = pstats.Stats(path)
    raw: dict[tuple[str, int, str], tuple[int, int, float, float, object]]
    raw = stats.stats  # type: ignore[attr-defined]  # typeshed leaves it out
    total = sum(v[2] for v in raw.values()) or 1.0
    print(f"\n-- {title}: own time % (cumulative %) of {total:.2f}s, from {path}")
    for (file, line, func), (_cc, calls, own, cum, _callers) in sorted(
        raw.items(), key=lambda item: -item[1][2]
    )[:limit]:
        where = f"{Path(file).parent.name}/{Path(file).name}:{line}" if line else file
        print(f"{100 * own / total:6.1f}% ({100 * cum / total:5.1f}%) {calls:>9} {func}  {where}")


def run_profiles(runner: asyncio.Runner, out: Path, warm: float, seconds: float) -> None:
    """The msgpack cases and baseline (b), each against its own cProfile'd server process."""
    out.mkdir(parents=True, exist_ok=True)
    for case, depth in itertools.product(("ours-msgpack", "raw+mp"), INFLIGHTS):
        name = f"{case.replace('+', '')}-{depth}"
        server_path, client_path = str(out / f"server-{name}.pstats"), out / f"client-{name}.pstats"
        plan = Plan(warm, seconds, cProfile.Profile())
        with server_process(server_path) as ports:
            sample = runner.run(run_case(case, ports, depth, plan))
        typing.cast(cProfile.Profile, plan.prof).dump_stats(client_path)
        print(f"\n== {case} @ {depth} in flight under cProfile: {sample.ops:,.0f} ops/s")
        top_costs(str(client_path), "client (measurement window)")
        top_costs(server_path, "server (whole process; time idle in the loop counts as serve)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=2.0, help="per measurement")
    parser.add_argument("--repeat", type=int, default=3, help="report the median of N")
    parser.add_argument("--quick", action="store_true", help="smoke run: short, repeat 1")
    parser.add_argument(
        "--profile", metavar="DIR", help="instead: cProfile ours-msgpack and raw+mp into DIR"
    )
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--profile-out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        return server_main(args.profile_out)
    if args.quick:
        args.seconds, args.repeat = 0.3, 1
    warm = min(0.5, args.seconds / 4)
    quiet_logging()
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        if args.profile:
            run_profiles(runner, Path(args.profile), warm, args.seconds)
            return 0
        with server_process() as ports:
            samples = runner.run(run_all(ports, args.repeat, Plan(warm, args.seconds)))
    report(medians(samples), args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
