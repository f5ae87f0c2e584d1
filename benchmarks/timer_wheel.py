"""Timer wheel (issue 36), the broker side: recovery of a wheel holding 1,000,000 pending
timers (target <= 2 s), and one slot of 100,000 timers falling due together -- how long the
wheel takes to deliver them and what other clients' round trips (GET_MAX_OFFSET) see
meanwhile (target: under 50 ms). Medians of ``--repeat`` runs.

    python -m benchmarks.timer_wheel [--timers 1000000] [--slot 100000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from aiorocketmq.broker.store.timerstore import TimerStore
from aiorocketmq.client.core import api
from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.protocol.batch import BatchItem, encode_batch
from aiorocketmq.remoting.protocol.codes import RequestCode
from aiorocketmq.remoting.protocol.command import RemotingCommand
from aiorocketmq.remoting.protocol.message import now_ms
from aiorocketmq.remoting.protocol.timer import TimerProp
from benchmarks.common import broker_argv, listening_process, quiet_logging

PRECISION = 1000
BATCH = 1000


def recovery_seconds(n: int) -> float:
    """A TimerStore with ``n`` pending timers over 100,000 slots, closed, opened again:
    the seconds its recovery takes (files read back, the wheel written again)."""
    now = now_ms() // PRECISION * PRECISION
    with tempfile.TemporaryDirectory() as root:
        ts = TimerStore(Path(root), precision_ms=PRECISION, window_slots=172_800,
                        segment_units=1 << 20)  # fmt: skip
        ts.recover(0, 0, 0, now)
        for i in range(n):
            ts.add(now + (1 + i * 7919 % 100_000) * PRECISION, i * 200, 200, i, 0)
        ts.close()
        began = time.monotonic()
        again = TimerStore(Path(root), precision_ms=PRECISION, window_slots=172_800,
                           segment_units=1 << 20)  # fmt: skip
        again.recover(0, n, n * 200, now)
        took = time.monotonic() - began
        assert again.pending == n, again.pending
        again.close()
    return took


def _batch(topic: str, first: int, due: int) -> RemotingCommand:
    body = encode_batch([BatchItem(b"%08d" % i) for i in range(first, first + BATCH)])
    cmd = api.send_message(topic, body, group="bench", properties={
        TimerProp.DELIVER_MS: str(due)}, queue_id=0)  # fmt: skip
    cmd.code = RequestCode.SEND_BATCH_MESSAGE
    return cmd


async def _max_offset(cli: RemotingClient, addr: str, topic: str) -> int:
    resp = await cli.invoke(addr, api.queue_request(RequestCode.GET_MAX_OFFSET, topic, 0))
    return api.parse_offset(resp, addr)


async def one_slot(n: int) -> tuple[float, list[float]]:
    """``n`` timers in one slot of a real broker: (seconds to deliver them all, the round
    trips of GET_MAX_OFFSET probes sent one after another meanwhile)."""
    with tempfile.TemporaryDirectory() as root:
        sets = [f"storePathRootDir={root}", "brokerIP1=127.0.0.1"]
        with listening_process(broker_argv(sets)[1:]) as broker:
            addr, cli = f"127.0.0.1:{broker.port}", RemotingClient()
            try:
                assert (await cli.invoke(addr, api.create_topic("TimerBench", 1, 6))).code == 0
                began = time.monotonic()
                warm = _batch("TimerBench", 0, now_ms() + 3_600_000)
                assert (await cli.invoke(addr, warm, 30)).code == 0
                per = time.monotonic() - began
                due = now_ms() + max(3000, int(3 * per * n / BATCH * 1000))
                for first in range(0, n, BATCH):
                    cmd = _batch("TimerBench", first, due)
                    resp = await cli.invoke(addr, cmd, 30)
                    assert resp.code == 0, resp.remark
                await asyncio.sleep(max(0.0, (due - now_ms()) / 1000))
                rtts: list[float] = []
                start = time.monotonic()
                while True:
                    sent = time.monotonic()
                    got = await _max_offset(cli, addr, "TimerBench")
                    rtts.append(time.monotonic() - sent)
                    if got >= n:
                        return time.monotonic() - start, rtts
            finally:
                await cli.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else "")
    parser.add_argument("--timers", type=int, default=1_000_000)
    parser.add_argument("--slot", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    quiet_logging()
    recov = [recovery_seconds(args.timers) for _ in range(args.repeat)]
    print(f"recovery of {args.timers} pending timers: median {statistics.median(recov):.3f} s"
          f" (runs {', '.join(f'{r:.3f}' for r in recov)}; target <= 2 s)")  # fmt: skip
    runs = [asyncio.run(one_slot(args.slot)) for _ in range(args.repeat)]
    for took, rtts in runs:
        rtts.sort()
        print(f"one slot of {args.slot}: delivered in {took:.2f} s ({args.slot / took:,.0f}/s);"
              f" probes {len(rtts)}: p50 {statistics.median(rtts) * 1000:.1f} ms,"
              f" p99 {rtts[int(len(rtts) * 0.99)] * 1000:.1f} ms, max {rtts[-1] * 1000:.1f} ms"
              " (target < 50 ms)")  # fmt: skip


if __name__ == "__main__":
    main()
