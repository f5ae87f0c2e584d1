"""Topic creation one by one: UPDATE_AND_CREATE_TOPIC (17) against a real broker + name server.

Run ``python -m benchmarks.topic_create [--topics N] [--budget S] [--quick]``.

A `python -m aiorocketmq.namesrv` and a `python -m aiorocketmq.broker` (its store in a temporary
directory), then one client creates ``--topics`` topics (10,000) one after another, each answered
before the next is sent, as mqadmin updateTopic in a loop would. Printed: the median milliseconds
per create over the 100 creates ending at 100, 1,000, 5,000 and 10,000 topics, each also as a ratio
to the same-run baseline, the median round trip of a no-op admin request to the same broker
(GET_BROKER_CONFIG, 26, whose answer does not grow with the table); the p99 and the slowest
create; and the CPU seconds the broker and the name server used while creating. Target:
<= 2 ms per create at any table size (issue 29, N6). ``--budget`` stops creating after that
many seconds (a slow tree then reports the sizes it reached).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time

import uvloop

from aiorocketmq.client.core import api
from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.protocol.codes import RequestCode, ResponseCode
from aiorocketmq.remoting.protocol.command import RemotingCommand
from benchmarks.common import Listening, listening_process, quiet_logging

CHECKPOINTS = (100, 1_000, 5_000, 10_000)
WINDOW = 100  # creates per checkpoint median
BASELINE_ROUNDS = 300


async def baseline_ms(cli: RemotingClient, broker: str) -> float:
    """Median round trip of GET_BROKER_CONFIG, after a warm-up."""
    times = []
    for i in range(BASELINE_ROUNDS + 50):
        t0 = time.perf_counter()
        resp = await cli.invoke(broker, RemotingCommand.request(RequestCode.GET_BROKER_CONFIG), 10)
        if resp.code != ResponseCode.SUCCESS:
            raise RuntimeError(f"GET_BROKER_CONFIG answered {resp.code}: {resp.remark}")
        if i >= 50:
            times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1000


async def run(broker: str, topics: int, budget: float) -> tuple[float, float, list[float]]:
    """(baseline before, baseline after, ms of each create made within the budget)."""
    cli = RemotingClient()
    try:
        before = await baseline_ms(cli, broker)
        made: list[float] = []
        deadline = time.monotonic() + budget
        for i in range(topics):
            request = api.create_topic(f"bench-topic-{i:05d}", 4)
            t0 = time.perf_counter()
            resp = await cli.invoke(broker, request, 60)
            made.append((time.perf_counter() - t0) * 1000)
            if resp.code != ResponseCode.SUCCESS:
                raise RuntimeError(f"create {i} answered {resp.code}: {resp.remark}")
            if time.monotonic() > deadline:
                break
        after = await baseline_ms(cli, broker)
        return before, after, made
    finally:
        await cli.close()


def report(
    base: float, after: float, made: list[float], cpu: dict[str, float], wall: float
) -> None:
    print(f"\nbaseline GET_BROKER_CONFIG round trip: {base:.3f} ms (after the creates: "
          f"{after:.3f} ms)")  # fmt: skip
    print(f"{'topics':>8}{'ms/create':>12}{'x baseline':>12}")
    reached = [n for n in CHECKPOINTS if len(made) >= n]
    if len(made) not in reached and len(made) >= WINDOW:
        reached.append(len(made))  # the budget ran out: where it got to
    for n in reached:
        med = statistics.median(made[n - WINDOW : n])
        print(f"{n:>8}{med:>12.3f}{med / base:>12.1f}")
    ordered = sorted(made)
    print(f"all creates: p99 {ordered[int(len(ordered) * 0.99)]:.3f} ms, max "
          f"{ordered[-1]:.3f} ms (periodic full registrations and file compactions)")  # fmt: skip
    print(f"created {len(made)} topics in {wall:.1f} s; CPU seconds: "
          + ", ".join(f"{k} {v:.1f}" for k, v in cpu.items()))  # fmt: skip
    worst = max((statistics.median(made[n - WINDOW : n]) for n in reached), default=float("nan"))
    verdict = "meets" if worst <= 2.0 else "misses"
    print(f"worst checkpoint median {worst:.3f} ms: {verdict} the <= 2 ms target")


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--topics", type=int, default=CHECKPOINTS[-1])
    parser.add_argument("--budget", type=float, default=900.0, help="seconds of creating")
    parser.add_argument("--quick", action="store_true", help="smoke run: 1,000 topics")
    args = parser.parse_args()
    if args.quick:
        args.topics = 1_000
    quiet_logging()
    with (
        tempfile.TemporaryDirectory() as tmp,
        listening_process(["-m", "aiorocketmq.namesrv", "--listen-port", "0"]) as ns,
    ):
        sets = [f"storePathRootDir={tmp}", "brokerIP1=127.0.0.1"]
        argv = ["-m", "aiorocketmq.broker", "-n", f"127.0.0.1:{ns.port}", "--listen-port", "0"]
        argv += [arg for kv in sets for arg in ("--set", kv)]
        with listening_process(argv) as broker:
            procs: dict[str, Listening] = {"broker": broker, "namesrv": ns}
            cpu0 = {k: p.cpu_seconds() for k, p in procs.items()}
            t0 = time.monotonic()
            before, after, made = uvloop.run(
                run(f"127.0.0.1:{broker.port}", args.topics, args.budget)
            )
            wall = time.monotonic() - t0
            cpu = {k: p.cpu_seconds() - cpu0[k] for k, p in procs.items()}
    report(before, after, made, cpu, wall)
    return 0


if __name__ == "__main__":
    sys.exit(main())
