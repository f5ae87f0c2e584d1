"""Broker restart: after a crash (SIGKILL) vs after a clean stop, of the same store.

Run ``python -m benchmarks.restart [--repeat N] [--load-seconds S] [--quick]``.

A broker (its own process, default 1 GiB CommitLog segment, ASYNC_FLUSH) in a fresh store
directory for each repeat, two cases:

- idle: 5 small messages sent, then the broker is killed (SIGKILL);
- loaded: 8 senders of 32 x 1 KiB batches for --load-seconds, killed while they send.

Each killed broker is started again on its store (a crash restart), stopped cleanly (SIGTERM),
and started again (a clean restart, the baseline of the same run on the same store). Timed:
spawn to ``listening`` (the whole start, interpreter included), and the store's own recovery
time (``store_recovered ms``). Reported: medians of --repeat, the crash / clean ratio of each,
and what the crash recovery read (records re-verified, bytes of the tail checked). Target
(issue 29, item 5): a crash restart listens within 1 s, whatever the segment size.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import uvloop

from aiorocketmq.client.core import api
from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.errors import RemotingError
from aiorocketmq.remoting.protocol.batch import BatchItem, encode_batch
from aiorocketmq.remoting.protocol.command import RemotingCommand
from benchmarks.common import ROOT, broker_argv, stop_process
from benchmarks.tx_common import BrokerLog

TOPIC, QUEUES, BODY = "BenchRestart", 8, bytes(range(256)) * 4


@dataclass(frozen=True)
class Start:
    listen_s: float  # spawn to `listening`
    recovered: dict[str, Any]  # the `store_recovered` event


def spawn(store: Path) -> tuple[BrokerLog, float]:
    """A broker on ``store``, listening; and how long that took from spawn."""
    sets = [f"storePathRootDir={store}", "brokerIP1=127.0.0.1", "brokerName=bench",
            "metricsPort=-1"]  # fmt: skip
    argv = broker_argv(sets)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, env=env)
    try:
        broker = BrokerLog(proc)
    except BaseException:
        stop_process(proc)
        raise
    return broker, time.perf_counter() - t0


def started(store: Path) -> tuple[BrokerLog, Start]:
    broker, took = spawn(store)
    return broker, Start(took, broker.wait_for("store_recovered", 5))


def kill(broker: BrokerLog) -> None:
    broker.proc.send_signal(signal.SIGKILL)
    broker.proc.wait(30)


def stop(broker: BrokerLog) -> None:
    stop_process(broker.proc)
    assert broker.proc.returncode == 0, broker.proc.returncode


def batch(queue_id: int) -> RemotingCommand:
    body = encode_batch([BatchItem(BODY) for _ in range(32)])
    return api.send_message(TOPIC, body, group="bench_pg", queue_id=queue_id,
                            default_topic_queue_nums=QUEUES, batch=True)  # fmt: skip


async def load(addr: str, seconds: float, idle: bool) -> int:
    """Send (5 small messages, or batches from 8 senders for ``seconds``); bytes acked."""
    async with RemotingClient() as cli:
        assert (await cli.invoke(addr, api.create_topic(TOPIC, QUEUES))).code == 0
        if idle:
            for i in range(5):
                msg = api.send_message(TOPIC, b"x" * 100, group="bench_pg", queue_id=i % QUEUES)
                assert (await cli.invoke(addr, msg)).code == 0
            return 500
        deadline, sent = time.monotonic() + seconds, 0

        async def sender(qid: int) -> None:
            nonlocal sent
            while time.monotonic() < deadline:
                resp = await cli.invoke(addr, batch(qid), 30)
                assert resp.code == 0, resp.remark
                sent += 32 * len(BODY)

        await asyncio.gather(*(sender(q) for q in range(QUEUES)))
        return sent


def one_round(base: Path, idle: bool, seconds: float) -> tuple[Start, Start, int]:
    """A fresh store: fill, kill while filling, crash restart, clean stop, clean restart."""
    with tempfile.TemporaryDirectory(dir=base) as tmp:
        store = Path(tmp)
        broker, _ = spawn(store)
        try:
            if idle:
                sent = uvloop.run(load(broker.addr, seconds, idle))
                kill(broker)
            else:  # killed while the senders are still sending
                sent = _load_then_kill(broker, seconds)
        finally:
            stop_process(broker.proc)
        broker, crash = started(store)
        stop(broker)
        broker, clean = started(store)
        stop(broker)
        assert crash.recovered["crashed"] and not clean.recovered["crashed"]
        return crash, clean, sent


def _load_then_kill(broker: BrokerLog, seconds: float) -> int:
    async def run() -> int:
        task = asyncio.create_task(load(broker.addr, seconds + 60, idle=False))
        await asyncio.sleep(seconds)
        kill(broker)
        with contextlib.suppress(AssertionError, OSError, RemotingError):
            await task  # the broker is gone: its senders fail
        return 0

    return uvloop.run(run())


def median(values: list[float]) -> float:
    return statistics.median(values)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3, help="report the median of N")
    parser.add_argument("--load-seconds", type=float, default=5.0)
    parser.add_argument("--quick", action="store_true", help="smoke run: repeat 1, 2 s of load")
    args = parser.parse_args()
    if args.quick:
        args.repeat, args.load_seconds = 1, 2.0
    results: dict[str, Any] = {"bench": "restart"}
    print(f"{'case':<8}{'crash s':>9}{'clean s':>9}{'ratio':>7}{'crash ms':>10}{'clean ms':>10}"
          f"{'records':>9}{'tail MiB':>10}")  # fmt: skip
    with tempfile.TemporaryDirectory() as base:
        for case, idle in (("idle", True), ("loaded", False)):
            rounds = [one_round(Path(base), idle, args.load_seconds) for _ in range(args.repeat)]
            crash = median([c.listen_s for c, _, _ in rounds])
            clean = median([k.listen_s for _, k, _ in rounds])
            crash_ms = median([c.recovered["ms"] for c, _, _ in rounds])
            clean_ms = median([k.recovered["ms"] for _, k, _ in rounds])
            records = median([c.recovered["records"] for c, _, _ in rounds])
            tail = median([c.recovered.get("tail_checked", -1) for c, _, _ in rounds])
            print(f"{case:<8}{crash:>9.3f}{clean:>9.3f}{crash / clean:>7.2f}{crash_ms:>10.0f}"
                  f"{clean_ms:>10.0f}{records:>9.0f}{tail / 2**20:>10.1f}")  # fmt: skip
            results[case] = {"crash_listen_s": round(crash, 3), "clean_listen_s": round(clean, 3),
                             "ratio": round(crash / clean, 2), "crash_recovery_ms": crash_ms,
                             "clean_recovery_ms": clean_ms, "records_rescanned": records,
                             "tail_checked_bytes": tail}  # fmt: skip
    print("\ntarget: a crash restart listens within 1 s (crash s)")
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
