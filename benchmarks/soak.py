"""Soak: write steadily into one broker and watch its memory against the bytes written.

Run ``python -m benchmarks.soak [--seconds S] [--rate MIB_S] [--segment-mib M] [--quick]``.

One broker runs as a process (no name server: nothing here needs routes) with a temporary
store and the default 1 GiB CommitLog segment unless told otherwise. This process sends
SEND_BATCH_MESSAGE requests of 32 x 4 KiB messages over 8 queues, 4 in flight, paced to
``--rate`` MiB/s (as fast as the broker takes them if it cannot keep up), for ``--seconds``
(10 minutes; ``--quick``: 60 s), stopping early at ``--max-gib`` written. Every
``--every`` seconds it prints the bytes acknowledged so far and the broker's VmRSS, RssAnon
and RssFile (/proc/<pid>/status), plus whatever the broker's /metrics says of mapped and
resident bytes if it exports them. A broker whose RSS tracks the working set keeps RssFile
flat while the bytes written grow; one that keeps every segment it wrote resident grows
RssFile with them (issue 29, N7). The last line is JSON, as the other benchmarks print.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import uvloop

from benchmarks.fuzz_procs import Server, sets
from client import api
from remoting.client import RemotingClient
from remoting.protocol.batch import BatchItem, encode_batch
from remoting.protocol.codes import ResponseCode as R

TOPIC, QUEUES, DEPTH = "SoakTopic", 8, 4
MESSAGE = 4096
BATCH = encode_batch([BatchItem(bytes(MESSAGE))] * 32)  # 128 KiB of messages per request
PAYLOAD = 32 * MESSAGE


def metrics(port: int | None) -> dict[str, float]:
    """/metrics lines that speak of mapped or resident bytes (none if there are none)."""
    if not port:
        return {}
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as resp:
            text = resp.read().decode()
    except OSError:
        return {}
    out = {}
    for line in text.splitlines():
        name, _, value = line.rpartition(" ")
        if not line.startswith("#") and ("mapped" in name or "resident" in name):
            try:
                out[name] = float(value)
            except ValueError:
                continue
    return out


async def write(broker: Server, args: argparse.Namespace) -> list[dict[str, float]]:
    addr = broker.addr
    written = failures = 0
    samples: list[dict[str, float]] = []
    deadline = time.monotonic() + args.seconds
    limit = args.max_gib * 2**30
    per_request = PAYLOAD / (args.rate * 2**20) if args.rate > 0 else 0.0
    began = time.monotonic()
    async with RemotingClient() as client:
        resp = await client.invoke(addr, api.create_topic(TOPIC, QUEUES))
        assert resp.code == R.SUCCESS, resp.remark

        async def writer(n: int) -> None:
            nonlocal written, failures
            sent = 0
            while time.monotonic() < deadline and written < limit:
                due = began + sent * per_request * DEPTH
                if due > time.monotonic():
                    await asyncio.sleep(due - time.monotonic())
                req = api.send_message(TOPIC, BATCH, group="soak_pg", queue_id=(n + sent) % QUEUES,
                                       batch=True, default_topic_queue_nums=QUEUES)  # fmt: skip
                resp = await client.invoke(addr, req, 30)
                sent += 1
                if resp.code == R.SUCCESS:
                    written += PAYLOAD
                else:
                    failures += 1

        def sample() -> None:
            mem = broker.memory()
            row = {"s": round(time.monotonic() - began, 1), "written_mib": written / 2**20,
                   "failures": failures,
                   **{f"{k}_mib": v / 1024 for k, v in mem.items() if k != "RssShmem"},
                   **metrics(broker.metrics_port)}  # fmt: skip
            samples.append(row)
            print("  ".join(f"{k} {v:,.0f}" for k, v in row.items()), flush=True)

        tasks = [asyncio.ensure_future(writer(n)) for n in range(DEPTH)]
        sample()
        while not all(t.done() for t in tasks):
            await asyncio.wait(tasks, timeout=args.every)
            sample()
        await asyncio.gather(*tasks)
    return samples


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=600.0)
    parser.add_argument("--rate", type=float, default=16.0, help="MiB/s to aim at; 0: unpaced")
    parser.add_argument("--segment-mib", type=int, default=1024, help="CommitLog segment size")
    parser.add_argument("--max-gib", type=float, default=12.0, help="stop once written")
    parser.add_argument("--every", type=float, default=10.0, help="seconds between samples")
    parser.add_argument("--quick", action="store_true", help="60 s, a sample every 5 s")
    args = parser.parse_args()
    if args.quick:
        args.seconds, args.every = 60.0, 5.0
    with tempfile.TemporaryDirectory(prefix="soak-") as tmp:
        conf = {"brokerName": "soak_broker", "brokerIP1": "127.0.0.1", "metricsPort": "0",
                "storePathRootDir": str(Path(tmp) / "store"),
                "mappedFileSizeCommitLog": str(args.segment_mib * 2**20)}  # fmt: skip
        broker = Server("broker", ["-m", "broker", *sets(conf)])
        broker.start()
        try:
            samples = uvloop.run(write(broker, args))
        finally:
            code = broker.stop()
    last, first = samples[-1], samples[0]
    grew = last.get("RssFile_mib", 0) - first.get("RssFile_mib", 0)
    ratio = grew / last["written_mib"] if last["written_mib"] else 0.0
    print(f"\nwrote {last['written_mib']:,.0f} MiB in {last['s']:.0f} s "
          f"({last['written_mib'] / max(last['s'], 1):.1f} MiB/s, {last['failures']:.0f} refused); "
          f"RssFile grew {grew:,.0f} MiB ({ratio:.2f} MiB per MiB written), RssAnon "
          f"{first.get('RssAnon_mib', 0):,.0f} -> {last.get('RssAnon_mib', 0):,.0f} MiB; "
          f"broker exit code {code}")  # fmt: skip
    rows = [{k: round(v, 1) for k, v in s.items()} for s in samples]
    line = {"bench": "soak", "seconds": last["s"], "segment_mib": args.segment_mib,
            "written_mib": round(last["written_mib"]),
            "rss_file_growth_per_written": round(ratio, 3), "samples": rows}  # fmt: skip
    print(json.dumps(line))
    return 0 if code == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
