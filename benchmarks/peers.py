"""Our broker vs NATS JetStream and Redis Streams, 1 KiB messages: the shapes of produce.py,
then draining a backlog and send -> consumer latency (the shapes of consume_e2e.py).

Run ``python -m benchmarks.peers [--seconds S] [--repeat N] [--quick] [--only ours,nats,redis]
[--messages N]``
(``make bench-peers`` installs the ``peers`` extra -- nats-py, redis -- first).

Servers, each a process on a free loopback port with its data in a temp dir, stopped by PID
(SIGTERM, then SIGKILL); ``nats-server`` and ``redis-server`` are installed with
``apt-get install -y`` when missing (a peer whose install or start fails is skipped):

- ours: a name server and one ASYNC_FLUSH broker; client ``client.Producer`` (JSON headers,
  the default), ``send`` for single messages, ``send_batch`` (one SEND_BATCH_MESSAGE) for batches;
- NATS: ``nats-server -js -sd <tmp> -a 127.0.0.1 -p <port>``, a file-storage stream on one
  subject; client nats-py on one connection: ``js.publish`` awaits each ack; a batch is N
  ``js.publish_async`` calls (published back to back) and then one wait for all N acks;
- Redis: ``redis-server --appendonly yes --appendfsync everysec --save ""``; client redis-py
  asyncio ``XADD``; a batch is one pipeline (``transaction=False``) of N ``XADD``. redis-py
  has no multiplexing: N concurrent calls use N pooled connections.

Shapes: sequential (1 in flight), 256 concurrent, batches of 100 and of 32 (8 in flight, as
produce.py's batches). The body alone (no tags, keys or headers of our own) is sent to each.
Between measurements the NATS stream is purged and the Redis stream deleted (outside the
timing); our commit log just grows. All peers run side by side; every repeat measures each
shape against each peer in turn. Reported: msgs/s (medians of ``--repeat``), ours/peer ratios,
p50/p99 latency of the sequential shape, and each server's CPU use and this process's during
the measurement (the client is Python for every peer).

Consume shapes (benchmarks/peers_consume.py says how each peer is read): a backlog of
``--messages`` (200,000) stored once per peer after the send shapes, drained by a new consumer
each repeat; then latency at a fixed 2,000 msg/s over ``--seconds`` (at least 1 s).
Reported: drain msgs/s, latency p50 / p99 / p99.9, ours/peer ratios, CPU during the drain.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.util
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import uvloop

from aiorocketmq.client import Message, Producer
from aiorocketmq.client.core import api
from aiorocketmq.remoting.client import RemotingClient
from benchmarks.common import (
    Listening,
    Sample,
    drive,
    listening_process,
    median_sample,
    parse_args,
    quiet_logging,
)
from benchmarks.peers_consume import DRAIN_TOPIC, LAT_TOPIC, report_consume, run_consume

TOPIC, BODY = "BenchPeers", bytes(range(256)) * 4
STREAM, SUBJECT, KEY = "BENCH_PEERS", "bench.peers", "bench:peers"
SHAPES = (("send@1", 1, 1), ("send@256", 256, 1), ("batch100@8", 8, 100), ("batch32@8", 8, 32))
ACK_TIMEOUT = 10.0  # a batch's acks (NATS) must all arrive within this many seconds

# (server address, in flight, messages per call, warm-up s, measured s) -> Sample of calls
Runner = Callable[[str, int, int, float, float], Coroutine[Any, Any, Sample]]


@dataclass(frozen=True)
class Server:
    addr: str
    proc: Listening  # the process whose CPU is reported (our broker, not the name server)


# -- clients ------------------------------------------------------------------------------


async def run_ours(namesrv: str, depth: int, per: int, warm: float, s: float) -> Sample:
    async with Producer("bench_peers", namesrv_addr=namesrv) as producer:
        msg = Message(TOPIC, BODY)
        batch = [Message(TOPIC, BODY) for _ in range(per)]
        call: Callable[[], Awaitable[object]] = (
            (lambda: producer.send(msg)) if per == 1 else (lambda: producer.send_batch(batch))
        )
        return await drive(call, depth, warm, s)


async def run_nats(url: str, depth: int, per: int, warm: float, s: float) -> Sample:
    import nats

    nc = await nats.connect(url)
    try:
        js = nc.jetstream()
        await js.purge_stream(STREAM)

        async def one() -> None:
            await js.publish(SUBJECT, BODY)

        async def batch() -> None:
            acks = [await js.publish_async(SUBJECT, BODY) for _ in range(per)]
            async with asyncio.timeout(ACK_TIMEOUT):
                await asyncio.gather(*acks)

        return await drive(one if per == 1 else batch, depth, warm, s)
    finally:
        await nc.close()


async def run_redis(addr: str, depth: int, per: int, warm: float, s: float) -> Sample:
    from redis.asyncio import Redis

    host, port = addr.rsplit(":", 1)
    # the default pool refuses a 101st connection; one connection per call in flight
    r = Redis(host=host, port=int(port), max_connections=max(depth, 2))
    try:
        await r.delete(KEY)
        fields: dict[Any, Any] = {"body": BODY}  # redis-py wants its own (invariant) dict type

        async def one() -> None:
            await r.xadd(KEY, fields)

        async def batch() -> None:
            async with r.pipeline(transaction=False) as pipe:
                for _ in range(per):
                    pipe.xadd(KEY, fields)  # queued; returns the pipeline
                await pipe.execute()

        return await drive(one if per == 1 else batch, depth, warm, s)
    finally:
        await r.aclose()


# -- servers ------------------------------------------------------------------------------


class Skip(Exception):
    """This peer cannot run here; the message says why."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def ensure_binary(binary: str, package: str) -> str:
    """The binary's path; ``apt-get install -y package`` first when it is not on PATH."""
    if path := shutil.which(binary):
        return path
    if not shutil.which("apt-get"):
        raise Skip(f"{binary} not found and no apt-get to install {package}")
    prefix = [] if os.geteuid() == 0 else ["sudo", "-n"]
    install = [*prefix, "apt-get", "install", "-y", "-q", package]
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    print(f"{binary} not found: {' '.join(install)}", flush=True)
    if subprocess.run(install, env=env, check=False).returncode != 0:
        update = [*prefix, "apt-get", "update", "-q"]
        print(f"install failed: {' '.join(update)}, then install again", flush=True)
        subprocess.run(update, env=env, check=False)
        subprocess.run(install, env=env, check=False)
    if path := shutil.which(binary):
        return path
    raise Skip(f"{binary} is missing and `{' '.join(install)}` did not install it")


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@contextlib.contextmanager
def external(argv: Sequence[str], port: int, log: Path, timeout: float = 30.0) -> Iterator[int]:
    """Run ``argv`` (output to ``log``) until it accepts TCP on ``port``; yield its PID; stop
    it by that PID."""
    with (
        log.open("wb") as out,
        subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=out) as proc,
    ):
        try:
            deadline = time.monotonic() + timeout
            while True:
                if proc.poll() is not None or time.monotonic() > deadline:
                    tail = log.read_text(errors="replace")[-2000:]
                    raise Skip(f"{argv[0]} did not listen on {port} (exit {proc.poll()}):\n{tail}")
                with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
                    break
                time.sleep(0.05)
            yield proc.pid
        finally:
            stop(proc)


@contextlib.contextmanager
def ours_server(tmp: Path) -> Iterator[Server]:
    with listening_process(["-m", "aiorocketmq.namesrv", "--listen-port", "0"]) as ns:
        namesrv = f"127.0.0.1:{ns.port}"
        sets = [f"storePathRootDir={tmp}", "brokerIP1=127.0.0.1"]
        argv = ["-m", "aiorocketmq.broker", "-n", namesrv, "--listen-port", "0"]
        argv += [arg for kv in sets for arg in ("--set", kv)]
        with listening_process(argv) as broker:
            uvloop.run(create_topic(f"127.0.0.1:{broker.port}"))
            yield Server(namesrv, broker)


async def create_topic(broker: str) -> None:
    async with RemotingClient() as cli:
        for topic in (TOPIC, DRAIN_TOPIC, LAT_TOPIC):
            assert (await cli.invoke(broker, api.create_topic(topic, 8))).code == 0


@contextlib.contextmanager
def nats_server(tmp: Path) -> Iterator[Server]:
    binary, port = ensure_binary("nats-server", "nats-server"), free_port()
    argv = [binary, "-js", "-sd", str(tmp), "-a", "127.0.0.1", "-p", str(port)]
    with external(argv, port, tmp / "nats-server.log") as pid:
        url = f"nats://127.0.0.1:{port}"
        uvloop.run(create_stream(url))
        yield Server(url, Listening(port, pid))


async def create_stream(url: str) -> None:
    import nats
    from nats.js.api import StorageType

    nc = await nats.connect(url)
    try:
        await nc.jetstream().add_stream(name=STREAM, subjects=[SUBJECT], storage=StorageType.FILE)
    finally:
        await nc.close()


@contextlib.contextmanager
def redis_server(tmp: Path) -> Iterator[Server]:
    binary, port = ensure_binary("redis-server", "redis-server"), free_port()
    argv = [binary, "--port", str(port), "--bind", "127.0.0.1", "--dir", str(tmp)]
    argv += ["--appendonly", "yes", "--appendfsync", "everysec", "--save", ""]
    with external(argv, port, tmp / "redis-server.log") as pid:
        yield Server(f"127.0.0.1:{port}", Listening(port, pid))


@dataclass(frozen=True)
class Peer:
    name: str
    label: str
    module: str | None  # the Python client it needs (from the `peers` extra)
    server: Callable[[Path], contextlib.AbstractContextManager[Server]]
    run: Runner


PEERS = (
    Peer("ours", "ours", None, ours_server, run_ours),
    Peer("nats", "NATS", "nats", nats_server, run_nats),
    Peer("redis", "Redis", "redis", redis_server, run_redis),
)


# -- measuring and reporting --------------------------------------------------------------


@dataclass(frozen=True)
class Result:
    sample: Sample  # ops = calls/s
    server_cpu: float  # percent of one core, over warm-up and measurement
    client_cpu: float


def measure(peer: Peer, server: Server, depth: int, per: int, warm: float, s: float) -> Result:
    srv0, cli0, t0 = server.proc.cpu_seconds(), time.process_time(), time.perf_counter()
    sample = uvloop.run(peer.run(server.addr, depth, per, warm, s))
    wall = time.perf_counter() - t0
    srv, cli = server.proc.cpu_seconds() - srv0, time.process_time() - cli0
    return Result(sample, 100 * srv / wall, 100 * cli / wall)


def start(peers: Sequence[Peer], stack: contextlib.ExitStack, root: Path) -> dict[str, Server]:
    servers: dict[str, Server] = {}
    for peer in peers:
        if peer.module and importlib.util.find_spec(peer.module) is None:
            print(f"skipping {peer.label}: Python module {peer.module!r} missing "
                  "(pip install -e '.[peers]'; make bench-peers does)", flush=True)  # fmt: skip
            continue
        data = root / peer.name
        data.mkdir()
        try:
            servers[peer.name] = stack.enter_context(peer.server(data))
        except Skip as e:
            print(f"skipping {peer.label}: {e}", flush=True)
    return servers


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--only", default="ours,nats,redis", help="comma-separated peers")
    parser.add_argument("--messages", type=int, default=200_000, help="backlog to drain")
    args, warm = parse_args(__doc__ or "", parser)
    messages = (40_000 if args.quick else args.messages) // 256 * 256
    quiet_logging()
    wanted = set(args.only.split(","))
    peers = [p for p in PEERS if p.name in wanted]
    runs: dict[str, list[Result]] = {}
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        servers = start(peers, stack, Path(tmp))
        for _ in range(args.repeat):
            for shape, depth, per in SHAPES:
                for peer in peers:
                    if server := servers.get(peer.name):
                        result = measure(peer, server, depth, per, warm, args.seconds)
                        runs.setdefault(f"{peer.name}:{shape}", []).append(result)
        consumed = run_consume(servers, messages, args.repeat, max(args.seconds, 1.0))
    out = report(peers, runs)
    out |= report_consume({p.name: p.label for p in peers}, consumed, messages)
    print(json.dumps(out))
    return 0


def report(peers: Sequence[Peer], runs: dict[str, list[Result]]) -> dict[str, Any]:
    """Print the send table (medians); returns its figures for the JSON line."""
    per_call = {shape: per for shape, _depth, per in SHAPES}
    med = {k: median_sample([r.sample for r in v]) for k, v in runs.items()}
    msgs = {k: s.ops * per_call[k.split(":")[1]] for k, s in med.items()}
    cpu = {
        k: (statistics.median(r.server_cpu for r in v), statistics.median(r.client_cpu for r in v))
        for k, v in runs.items()
    }
    others = [p for p in peers if p.name != "ours"]

    def cell(value: float | None, fmt: str, width: int) -> str:
        return f"{'-' if value is None else format(value, fmt):>{width}}"

    head = f"\n{'shape':<12}" + "".join(f"{p.label + ' msgs/s':>14}" for p in peers)
    print(head + "".join(f"{'ours/' + p.label:>12}" for p in others))
    for shape, _depth, _per in SHAPES:
        line = f"{shape:<12}" + "".join(
            cell(msgs.get(f"{p.name}:{shape}"), ",.0f", 14) for p in peers
        )
        for p in others:
            ours, theirs = msgs.get(f"ours:{shape}"), msgs.get(f"{p.name}:{shape}")
            line += cell(ours / theirs if ours and theirs else None, ".2f", 12)
        print(line)
    seq = SHAPES[0][0]
    lat = [f"{p.label} {med[k].p50_us:,.0f} / {med[k].p99_us:,.0f}"
           for p in peers if (k := f"{p.name}:{seq}") in med]  # fmt: skip
    print(f"{seq} latency p50 / p99 (us): " + ", ".join(lat))
    print("CPU % of one core during each measurement, server / this process (the client):")
    for shape, _depth, _per in SHAPES:
        parts = [f"{p.label} {cpu[k][0]:.0f} / {cpu[k][1]:.0f}"
                 for p in peers if (k := f"{p.name}:{shape}") in cpu]  # fmt: skip
        print(f"  {shape:<12}" + ", ".join(parts))
    print("targets (issue 14): ours >= 1.0x NATS sequential and with batches")
    return {
        "bench": "peers",
        "msgs_per_s": {k: round(v) for k, v in msgs.items()},
        "p50_us": {k: round(s.p50_us) for k, s in med.items()},
        "cpu_pct": {k: [round(c) for c in v] for k, v in cpu.items()},
    }


if __name__ == "__main__":
    sys.exit(main())
