"""Shared benchmark plumbing: quiet logging, timed concurrent drivers, subprocess servers."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import select
import signal
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path

import structlog

ROOT = Path(__file__).resolve().parent.parent


def broker_argv(sets: Sequence[str]) -> list[str]:
    """``python -m aiorocketmq.broker`` on port 0 with JSON logs and ``--set`` for each of
    ``sets`` (``key=value``)."""
    argv = [
        sys.executable,
        "-m",
        "aiorocketmq.broker",
        "--listen-port",
        "0",
        "--log-format",
        "json",
    ]
    return argv + [a for kv in sets for a in ("--set", kv)]


def quiet_logging() -> None:
    """debug/info calls become no-ops; warnings go to stderr, never into a port line."""
    structlog.configure(
        wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING),
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),
        cache_logger_on_first_use=True,
    )


@dataclass(frozen=True)
class Sample:
    ops: float
    p50_us: float
    p99_us: float


@dataclass
class Recorder:
    """Latencies (ns) of calls completed while ``measuring``."""

    measuring: bool = False
    stopping: bool = False
    lat: list[int] = field(default_factory=list)


def quantile_us(ordered: list[int], q: float) -> float:
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))] / 1000


def summarize(rec: Recorder, elapsed: float) -> Sample:
    lat = sorted(rec.lat)
    if not lat:
        raise RuntimeError("nothing completed in the measurement window")
    return Sample(len(lat) / elapsed, quantile_us(lat, 0.50), quantile_us(lat, 0.99))


async def drive(
    call: Callable[[], Awaitable[object]], depth: int, warm: float, seconds: float
) -> Sample:
    """``depth`` coroutines each awaiting ``call()`` in a loop; ops/s and latency after warm-up."""
    rec = Recorder()

    async def worker() -> None:
        while not rec.stopping:
            t0 = time.perf_counter_ns()
            await call()
            if rec.measuring:
                rec.lat.append(time.perf_counter_ns() - t0)

    workers = [asyncio.create_task(worker()) for _ in range(depth)]
    await asyncio.sleep(warm)
    rec.measuring = True
    t0 = time.perf_counter()
    await asyncio.sleep(seconds)
    rec.measuring = False
    elapsed = time.perf_counter() - t0
    rec.stopping = True
    await asyncio.gather(*workers)
    return summarize(rec, elapsed)


def median_sample(runs: Sequence[Sample]) -> Sample:
    return Sample(*(statistics.median(getattr(s, f.name) for s in runs) for f in fields(Sample)))


@dataclass(frozen=True)
class Listening:
    port: int
    pid: int

    def cpu_seconds(self) -> float:
        """User + system CPU the process has used so far (from /proc)."""
        fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextlib.contextmanager
def listening_process(argv: Sequence[str], timeout: float = 30.0) -> Iterator[Listening]:
    """Run ``python argv...`` (a server logging JSON to stdout); yield its port (from its
    ``listening`` event) and PID; stop it by its PID (SIGTERM, then SIGKILL)."""
    cmd = [sys.executable, *argv]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    # unbuffered: a line read ahead into a buffer would hide from select() below
    with subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, env=env, bufsize=0) as proc:
        try:
            port = _wait_listening(proc, timeout)
            # keep reading its log so a chatty server never blocks on a full pipe
            threading.Thread(target=proc.stdout.read, daemon=True).start()  # type: ignore[union-attr]
            yield Listening(port, proc.pid)
        finally:
            stop_process(proc)


def stop_process(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM, then SIGKILL after 10 s: a benchmark leaves nothing running."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()


def _wait_listening(proc: subprocess.Popen[bytes], timeout: float) -> int:
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], 0.5)
        if not ready:
            continue
        line = proc.stdout.readline()
        if not line:
            break
        with contextlib.suppress(ValueError):
            event = json.loads(line)
            if isinstance(event, dict) and event.get("event") == "listening":
                return int(event["port"])
    raise RuntimeError(f"{' '.join(proc.args)} did not log `listening`")  # type: ignore[arg-type]


def parse_args(
    doc: str, parser: argparse.ArgumentParser | None = None, *, quick_seconds: float = 0.5
) -> tuple[argparse.Namespace, float]:
    """``--seconds``, ``--repeat`` (median of N) and ``--quick``; returns (args, warm-up s)."""
    parser = parser or argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=2.0, help="per measurement")
    parser.add_argument("--repeat", type=int, default=3, help="report the median of N")
    parser.add_argument("--quick", action="store_true", help="smoke run: short, repeat 1")
    args = parser.parse_args()
    if args.quick:
        args.seconds, args.repeat = quick_seconds, 1
    return args, min(0.5, args.seconds / 4)
