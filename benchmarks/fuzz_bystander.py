"""A bystander: a normal client doing normal round trips while the fuzzer runs.

Run by benchmarks/fuzz.py as ``python -m benchmarks.fuzz_bystander BROKER NAMESRV`` in its own
process (so the fuzzer's CPU does not count in its latencies). Each round: send one message
to the judges' topic (queue 0), pull it back, and look the topic's route up at the name
server; a round's time is its RTT. Every second it prints a JSON line (rounds, worst RTT,
failures in that second); on SIGTERM a last line with ``"final": true``, the RTT quantiles and
how many sends were acknowledged (the judges check those messages survive restarts).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from typing import Any

import uvloop

from aiorocketmq.client.core import api
from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.errors import RemotingError
from aiorocketmq.remoting.protocol.codes import ResponseCode as R
from benchmarks.fuzz_checks import CHECK_TOPIC
from benchmarks.fuzz_procs import ROOT

PAUSE = 0.01  # between rounds: a steady client, not a load generator


async def main(broker: str, namesrv: str) -> None:
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    rtts: list[float] = []
    acked = failures = 0
    window: list[float] = []
    window_failures = 0
    errors: dict[str, int] = {}
    next_offset = 0
    last_print = time.monotonic()
    async with RemotingClient() as client:
        while not stop.is_set():
            began = time.perf_counter()
            try:
                send = api.send_message(CHECK_TOPIC, b"bystander", group="bystander_pg", queue_id=0)
                resp = await client.invoke(broker, send, 10)
                if resp.code != R.SUCCESS:
                    raise RuntimeError(f"send {resp.code} {resp.remark}")
                acked += 1
                offset = int(resp.ext_fields["queueOffset"])
                flag = api.FLAG_SUBSCRIPTION
                pull = api.pull_message("bystander_cg", CHECK_TOPIC, 0, max(next_offset, offset),
                                        sys_flag=flag, subscription="*")  # fmt: skip
                resp = await client.invoke(broker, pull, 10)
                if resp.code != R.SUCCESS:
                    raise RuntimeError(f"pull {resp.code} {resp.remark}")
                next_offset = int(resp.ext_fields["nextBeginOffset"])
                resp = await client.invoke(namesrv, api.get_route(CHECK_TOPIC), 10)
                if resp.code != R.SUCCESS:
                    raise RuntimeError(f"route {resp.code} {resp.remark}")
                rtt = (time.perf_counter() - began) * 1000
                rtts.append(rtt)
                window.append(rtt)
            except (RemotingError, RuntimeError, KeyError, ValueError) as exc:
                failures += 1
                window_failures += 1
                key = str(exc)[:120]
                errors[key] = errors.get(key, 0) + 1
            now = time.monotonic()
            if now - last_print >= 1:
                print(json.dumps({"rounds": len(window), "max_ms": round(max(window, default=0), 1),
                                  "failures": window_failures}), flush=True)  # fmt: skip
                window, window_failures, last_print = [], 0, now
            await asyncio.sleep(PAUSE)
    rtts.sort()

    def q(p: float) -> float:
        return round(rtts[min(len(rtts) - 1, int(len(rtts) * p))], 1) if rtts else 0.0

    print(json.dumps({"final": True, "rounds": len(rtts), "acked": acked, "failures": failures,
                      "p50_ms": q(0.5), "p99_ms": q(0.99), "max_ms": q(1.0),
                      "errors": dict(sorted(errors.items(), key=lambda kv: -kv[1])[:5])}),
          flush=True)  # fmt: skip


class Bystander:
    """The bystander process, from the fuzzer's side: start, read its lines, stop."""

    def __init__(self, broker: str, namesrv: str) -> None:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "benchmarks.fuzz_bystander", broker, namesrv],
            cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        self.seconds: list[dict[str, Any]] = []
        self.final: dict[str, Any] = {}
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            with contextlib.suppress(ValueError):
                obj = json.loads(line)
                if obj.get("final"):
                    self.final = obj
                else:
                    self.seconds.append(obj)

    def stop(self) -> dict[str, Any]:
        """SIGTERM; its summary (``final``), with the worst second seen."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._reader.join(5)
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        return self.final


if __name__ == "__main__":
    uvloop.run(main(sys.argv[1], sys.argv[2]))
