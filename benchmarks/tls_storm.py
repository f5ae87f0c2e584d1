"""TLS handshake storm: does a stream of new TLS connections stall the broker's other clients?

Run ``python -m benchmarks.tls_storm [--seconds S] [--repeat N] [--quick] [--rate R]``.

One ASYNC_FLUSH broker in permissive mode with a self-signed RSA-2048 certificate made in the
run. Four bystanders, each on its own established TLS connection, send 1 KiB messages one at a
time; their round trips are measured alone (the baseline, same run) and while a separate
process opens ``--rate`` (200) new TLS connections a second, each a full handshake, one
request and a close. Target (issue 32): bystanders' p99 under 20 ms during the storm. The
storm's achieved rate and the broker's CPU are reported beside it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import ssl
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable
from pathlib import Path

import uvloop

from aiorocketmq.client.core import api
from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.protocol.codes import RequestCode
from aiorocketmq.remoting.protocol.command import RemotingCommand
from aiorocketmq.remoting.protocol.frame import FrameDecoder, encode
from benchmarks.common import (
    ROOT,
    Sample,
    drive,
    listening_process,
    median_sample,
    parse_args,
    quiet_logging,
    stop_process,
)
from benchmarks.send import BODY, TOPIC, create_topic, properties
from benchmarks.tls_common import make_certificate, server_sets, trusting

BYSTANDERS = 4


async def bystanders(addr: str, cert: Path, warm: float, seconds: float) -> Sample:
    """Round trips of BYSTANDERS clients, one request in flight each, on kept connections."""
    clients = [RemotingClient(tls=trusting(cert)) for _ in range(BYSTANDERS)]
    turn = iter(range(1 << 62))

    def call() -> Awaitable[RemotingCommand]:
        client = clients[next(turn) % BYSTANDERS]
        return client.invoke(addr, api.send_message(TOPIC, BODY, group="bench_pg",
                                                    properties=properties()), 10)  # fmt: skip

    try:
        return await drive(call, BYSTANDERS, warm, seconds)
    finally:
        for client in clients:
            await client.close()


# ------------------------------------------------------------------ the storm (child process)


async def one_connection(port: int, ctx: ssl.SSLContext, frame: bytes) -> bool:
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=ctx)
    except OSError:
        return False
    try:
        writer.write(frame)
        decoder = FrameDecoder()
        while not decoder.feed(await reader.read(65536)):
            pass
        return True
    except (OSError, ValueError):
        return False
    finally:
        writer.close()


async def storm(port: int, cert: Path, rate: float, seconds: float) -> dict[str, float]:
    """``rate`` new TLS connections a second for ``seconds``, on a fixed schedule."""
    ctx = trusting(cert)
    head, body = encode(api.queue_request(RequestCode.GET_MAX_OFFSET, TOPIC, 0))
    frame = head + body
    loop = asyncio.get_running_loop()
    tasks: list[asyncio.Task[bool]] = []
    start = loop.time()
    print(json.dumps({"storm": "started"}), flush=True)
    n = 0
    while (due := start + n / rate) < start + seconds:
        await asyncio.sleep(max(0.0, due - loop.time()))
        tasks.append(loop.create_task(one_connection(port, ctx, frame)))
        n += 1
    done = await asyncio.gather(*tasks)
    elapsed = loop.time() - start
    return {"connections": len(done), "ok": sum(done), "rate": sum(done) / elapsed}


def child_main(args: argparse.Namespace) -> int:
    result = uvloop.run(storm(args.child, Path(args.cert), args.rate, args.seconds))
    print(json.dumps(result), flush=True)
    return 0


def start_storm(port: int, cert: Path, rate: float, seconds: float) -> subprocess.Popen[bytes]:
    argv = [sys.executable, "-m", "benchmarks.tls_storm", "--child", str(port),
            "--cert", str(cert), "--rate", str(rate), "--seconds", str(seconds)]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, env=env)
    assert proc.stdout is not None
    line = proc.stdout.readline()  # the storm has begun
    if b"started" not in line:
        stop_process(proc)
        raise RuntimeError(f"the storm did not start: {line!r}")
    return proc


def storm_result(proc: subprocess.Popen[bytes]) -> dict[str, float]:
    out, _ = proc.communicate(timeout=120)
    return dict(json.loads(out.decode().strip().splitlines()[-1]))


# ------------------------------------------------------------------ the measurement


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--rate", type=float, default=200.0, help="new connections a second")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)  # the storm, on this port
    parser.add_argument("--cert", help=argparse.SUPPRESS)
    args, warm = parse_args(__doc__ or "", parser)
    if args.child is not None:
        return child_main(args)
    quiet_logging()
    calm: list[Sample] = []
    stormy: list[Sample] = []
    rates: list[float] = []
    cpu: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        cert, key = make_certificate(Path(tmp))
        sets = [f"storePathRootDir={tmp}/store", "brokerIP1=127.0.0.1", "brokerName=bench",
                *server_sets(cert, key)]  # fmt: skip
        argv = ["-m", "aiorocketmq.broker", "--listen-port", "0"]
        argv += [a for s in sets for a in ("--set", s)]
        with listening_process(argv) as broker:
            addr = f"127.0.0.1:{broker.port}"
            uvloop.run(create_topic(addr))
            for _ in range(args.repeat):
                calm.append(uvloop.run(bystanders(addr, cert, warm, args.seconds)))
                proc = start_storm(broker.port, cert, args.rate, args.seconds + 2 * warm + 1)
                try:
                    cpu0, t0 = broker.cpu_seconds(), time.monotonic()
                    stormy.append(uvloop.run(bystanders(addr, cert, warm, args.seconds)))
                    cpu.append((broker.cpu_seconds() - cpu0) / (time.monotonic() - t0))
                    result = storm_result(proc)
                finally:
                    stop_process(proc)
                rates.append(result["rate"])
    report(median_sample(calm), median_sample(stormy), sorted(rates)[len(rates) // 2],
           sorted(cpu)[len(cpu) // 2], args.rate)  # fmt: skip
    return 0


def report(calm: Sample, stormy: Sample, rate: float, cpu: float, wanted: float) -> None:
    print(f"\n{'bystanders (' + str(BYSTANDERS) + ' x depth 1)':<34}{'req/s':>10}"
          f"{'p50 us':>10}{'p99 us':>10}")  # fmt: skip
    for name, s in (("alone", calm), (f"during the storm ({rate:.0f}/s)", stormy)):
        print(f"{name:<34}{s.ops:>10,.0f}{s.p50_us:>10.1f}{s.p99_us:>10.1f}")
    print(f"\nstorm: {rate:.0f} new TLS connections/s achieved (asked {wanted:.0f}); "
          f"broker CPU during it {100 * cpu:.0f} % of a core")  # fmt: skip
    print(f"bystanders' p99 during the storm: {stormy.p99_us / 1000:.1f} ms (target < 20 ms)")
    line = {
        "bench": "tls_storm",
        "calm": {"ops": round(calm.ops, 1), "p50_us": calm.p50_us, "p99_us": calm.p99_us},
        "storm": {"ops": round(stormy.ops, 1), "p50_us": stormy.p50_us, "p99_us": stormy.p99_us},
        "storm_rate": round(rate, 1),
        "broker_cpu": round(cpu, 3),
    }
    print(json.dumps(line))


if __name__ == "__main__":
    sys.exit(main())
