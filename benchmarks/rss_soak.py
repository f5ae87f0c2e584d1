"""RSS soak: a broker's resident memory against the bytes it has stored.

Run ``python -m benchmarks.rss_soak [--gib N] [--segment-mib M] [--quick]``.

A broker (its own process, ASYNC_FLUSH, CommitLog segments of --segment-mib, default 1 GiB)
gets 8 senders of 32 x 1 KiB batches until --gib GiB are stored, while one consumer pulls the
tail of one queue (the working set: recent data). Every 1/8 of the way the broker's
``RssAnon`` and ``RssFile`` (/proc/<pid>/status) and its ``/metrics`` memory gauges
(``rocketmq_memory_mapped_bytes``, ``rocketmq_memory_resident_bytes``) are printed against
the bytes written. Target (issue 29, item 7): RSS tracks the working set -- it stays flat as the
log grows, far below the bytes written.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import uvloop

from aiorocketmq.client.core import api
from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.protocol.batch import BatchItem, encode_batch
from aiorocketmq.remoting.protocol.command import RemotingCommand
from aiorocketmq.remoting.protocol.message import encode_properties
from benchmarks.common import ROOT, broker_argv, stop_process
from benchmarks.tx_common import BrokerLog

TOPIC, QUEUES, BODY = "BenchRss", 8, bytes(range(256)) * 4
MIB = 1 << 20
Row = dict[str, float]


def status(pid: int) -> dict[str, int]:
    """RssAnon, RssFile, RssShmem and VmRSS of ``pid`` in bytes."""
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, rest = line.partition(":")
        if key in ("VmRSS", "RssAnon", "RssFile", "RssShmem"):
            out[key] = int(rest.split()[0]) * 1024
    return out


async def gauges(port: int) -> dict[str, float]:
    """The store memory gauges from ``/metrics`` (absent ones are left out)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    await writer.drain()
    text = (await reader.read()).decode()
    writer.close()
    out = {}
    for line in text.splitlines():
        for family, short in (("rocketmq_memory_mapped_bytes", "mapped_"),
                              ("rocketmq_memory_resident_bytes", "resident_")):  # fmt: skip
            if line.startswith(family + "{"):
                labels, _, number = line.rpartition(" ")
                out[short + labels.split('"')[1]] = float(number)
    return out


_SEQ = itertools.count()


def batch(queue_id: int) -> RemotingCommand:
    """32 x 1 KiB, each with a UNIQ_KEY as clients set it (the index is fed)."""
    items = [BatchItem(BODY, properties=encode_properties({"UNIQ_KEY": f"{next(_SEQ):032X}"}))
             for _ in range(32)]  # fmt: skip
    body = encode_batch(items)
    return api.send_message(TOPIC, body, group="bench_pg", queue_id=queue_id,
                            default_topic_queue_nums=QUEUES, batch=True)  # fmt: skip


async def soak(broker: BrokerLog, metrics_port: int, total: int, steps: int) -> list[Row]:
    rows: list[Row] = []
    async with RemotingClient() as cli:
        addr = broker.addr
        assert (await cli.invoke(addr, api.create_topic(TOPIC, QUEUES))).code == 0
        sent, done, began = 0, asyncio.Event(), time.perf_counter()
        marks = [total * (i + 1) // steps for i in range(steps)]

        async def sample() -> None:
            row: Row = {
                "written_mib": round(sent / MIB),
                "s": round(time.perf_counter() - began, 1),
            }
            row |= {k: round(v / MIB, 1) for k, v in status(broker.proc.pid).items()}
            row |= {k: round(v / MIB, 1) for k, v in (await gauges(metrics_port)).items()}
            rows.append(row)
            print("  ".join(f"{k} {v:g}" for k, v in row.items()), flush=True)

        async def sender(qid: int) -> None:
            nonlocal sent
            while sent < total:
                resp = await cli.invoke(addr, batch(qid), 30)
                assert resp.code == 0, resp.remark
                sent += 32 * len(BODY)
                if marks and sent >= marks[0]:
                    marks.pop(0)
                    await sample()

        async def tail_reader() -> None:  # pulls the newest messages of queue 0
            offset = 0
            while not done.is_set():
                flags = api.FLAG_SUBSCRIPTION
                pull = api.pull_message("bench_cg", TOPIC, 0, offset, sys_flag=flags,
                                        subscription="*")  # fmt: skip
                resp = await cli.invoke(addr, pull, 30)
                if resp.code == 0:
                    offset = int(resp.ext_fields["nextBeginOffset"])
                else:
                    await asyncio.sleep(0.01)

        reader = asyncio.create_task(tail_reader())
        await asyncio.gather(*(sender(q) for q in range(QUEUES)))
        done.set()
        await reader
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gib", type=float, default=2.0, help="bytes to store, GiB")
    parser.add_argument("--segment-mib", type=int, default=1024, help="CommitLog segment size")
    parser.add_argument("--quick", action="store_true", help="smoke run: 0.5 GiB, 64 MiB segments")
    args = parser.parse_args()
    if args.quick:
        args.gib, args.segment_mib = 0.5, 64
    with tempfile.TemporaryDirectory() as tmp:
        sets = [f"storePathRootDir={tmp}", "brokerIP1=127.0.0.1", "brokerName=bench",
                f"mappedFileSizeCommitLog={args.segment_mib * MIB}", "metricsPort=0"]  # fmt: skip
        argv = broker_argv(sets)
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        with subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, env=env) as proc:
            try:
                broker = BrokerLog(proc)
                port = int(broker.wait_for("metrics_listening", 10)["metrics_port"])
                rows = uvloop.run(soak(broker, port, int(args.gib * (1 << 30)), 8))
            finally:
                stop_process(proc)
    last = rows[-1]
    print(f"\nafter {last['written_mib']} MiB written: RssAnon {last['RssAnon']} MiB, "
          f"RssFile {last['RssFile']} MiB")  # fmt: skip
    print("target: RssFile flat, far below the bytes written")
    print(json.dumps({"bench": "rss_soak", "segment_mib": args.segment_mib, "rows": rows}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
