"""Helpers of benchmarks/replication.py: broker processes in kept directories (a slave
restarts on its own store), master/slave pairs, a sender that counts every answer code, the
CommitLog's max offset, reading CommitLog files and their page-cache residency, and an
offset sampler running in a child process (so 64 sends in flight here never delay it)."""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import itertools
import mmap
import multiprocessing
import os
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from multiprocessing.synchronize import Event
from pathlib import Path

import uvloop

from aiorocketmq.client.core import api
from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.protocol.codes import RequestCode as C
from aiorocketmq.remoting.protocol.codes import ResponseCode as R
from aiorocketmq.remoting.protocol.command import RemotingCommand
from aiorocketmq.remoting.protocol.message import encode_properties
from aiorocketmq.remoting.protocol.msgid import UniqKeyGenerator, parse_offset_msg_id
from aiorocketmq.remoting.protocol.route import decode_kv_table
from benchmarks.common import ROOT, broker_argv, quiet_logging, stop_process
from benchmarks.tx_common import JSON_CLIENT, BrokerLog

BODY = bytes(range(256)) * 4  # 1 KiB
TOPIC, QUEUES, GROUP = "BenchRepl", 8, "bench_repl_pg"
_ids = UniqKeyGenerator()


# ------------------------------------------------------------ processes


class Node:
    """One ``python -m aiorocketmq.broker`` on port 0, its store kept in ``root`` across
    restarts."""

    def __init__(self, root: Path, sets: list[str]) -> None:
        self.root = root
        self.sets = [f"storePathRootDir={root}", "brokerIP1=127.0.0.1", "brokerName=bench",
                     "flushDiskType=ASYNC_FLUSH", *sets]  # fmt: skip
        self.proc: subprocess.Popen[bytes] | None = None
        self.log: BrokerLog | None = None

    @property
    def addr(self) -> str:
        assert self.log is not None, "start() first"
        return self.log.addr

    @property
    def pid(self) -> int:
        assert self.proc is not None, "start() first"
        return self.proc.pid

    def start(self) -> BrokerLog:
        argv = broker_argv(self.sets)
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        self.proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, env=env)
        try:
            self.log = BrokerLog(self.proc)
        except BaseException:
            self.stop()
            raise
        return self.log

    def stop(self) -> None:
        """SIGTERM by PID (SIGKILL after 10 s)."""
        if self.proc is not None:
            stop_process(self.proc)
            self.proc, self.log = None, None

    def cpu_seconds(self) -> float:
        assert self.log is not None
        return self.log.listening.cpu_seconds()

    def commitlog_files(self) -> list[Path]:
        return sorted((self.root / "commitlog").iterdir())


@dataclass
class Pair:
    master: Node
    slave: Node


@contextlib.contextmanager
def pair(root: Path, role: str) -> Iterator[Pair]:
    """A ``role`` master and its slave (brokerId 1, following ``haMasterAddress``, the master's
    listenPort + 1); both stopped by PID when the block ends."""
    master = Node(root / f"{role}-m", [f"brokerRole={role}"])
    slave: Node | None = None
    try:
        master.start()
        ha = f"127.0.0.1:{int(master.addr.rpartition(':')[2]) + 1}"
        slave = Node(root / f"{role}-s", ["brokerId=1", "brokerRole=SLAVE",
                                           f"haMasterAddress={ha}"])  # fmt: skip
        slave.start()
        yield Pair(master, slave)
    finally:
        if slave is not None:
            slave.stop()
        master.stop()


# ------------------------------------------------------------ requests


def send_request(queue_id: int) -> RemotingCommand:
    """SEND_MESSAGE_V2 of a 1 KiB body, as DefaultMQProducerImpl.sendKernelImpl builds it."""
    props = encode_properties({"UNIQ_KEY": _ids.next(), "TAGS": "TagA", "KEYS": "k"})
    return api.send_message(TOPIC, BODY, group=GROUP, properties=props, queue_id=queue_id)


async def max_offset(cli: RemotingClient, addr: str) -> int:
    """The broker's CommitLog max offset (GET_BROKER_RUNTIME_INFO, commitLogMaxOffset)."""
    resp = await cli.invoke(addr, RemotingCommand.request(C.GET_BROKER_RUNTIME_INFO), 10)
    if resp.code != R.SUCCESS:
        raise RuntimeError(f"runtime info from {addr}: {resp.code} {resp.remark}")
    return int(decode_kv_table(resp.body)["commitLogMaxOffset"])


async def create_topic(cli: RemotingClient, addr: str) -> None:
    resp = await cli.invoke(addr, api.create_topic(TOPIC, QUEUES))
    if resp.code != R.SUCCESS:
        raise RuntimeError(f"topic not created: {resp.code} {resp.remark}")


async def settle(cli: RemotingClient, p: Pair, timeout: float = 30) -> Counter[int]:
    """Until a send to the master answers 0 and the slave's CommitLog ends where the
    master's does: the slave is connected and streaming. The other answers seen meanwhile
    (a SYNC_MASTER says SLAVE_NOT_AVAILABLE, 11, until its slave is connected)."""
    seen: Counter[int] = Counter()
    async with asyncio.timeout(timeout):
        while True:
            resp = await cli.invoke(p.master.addr, send_request(0), 10)
            if resp.code == R.SUCCESS:
                await caught_up(cli, p, await max_offset(cli, p.master.addr))
                return seen
            seen[resp.code] += 1
            await asyncio.sleep(0.05)


async def caught_up(cli: RemotingClient, p: Pair, end: int, every: float = 0.005) -> None:
    """Until the slave's max offset reaches ``end`` (polled: another process's state)."""
    while await max_offset(cli, p.slave.addr) < end:  # noqa: ASYNC110
        await asyncio.sleep(every)


# ------------------------------------------------------------ the sender


@dataclass
class Tally:
    ok: int = 0  # code-0 answers completed while measuring
    lat: list[int] = field(default_factory=list)  # their latencies, ns
    acks: list[tuple[float, int]] = field(default_factory=list)  # (monotonic, phys) if kept
    others: Counter[int] = field(default_factory=Counter)  # any other code, all along
    measuring: bool = False
    stopping: bool = False

    async def one(self, cli: RemotingClient, addr: str, queue_id: int, keep: bool) -> None:
        """One send; counted if answered 0 while measuring (``keep``: its answer's time and
        CommitLog offset kept too), else its code counted."""
        t0 = time.perf_counter_ns()
        resp = await cli.invoke(addr, send_request(queue_id), 30)
        if resp.code != R.SUCCESS:
            self.others[resp.code] += 1
        elif self.measuring:
            self.ok += 1
            self.lat.append(time.perf_counter_ns() - t0)
            if keep:
                phys = parse_offset_msg_id(resp.ext_fields["msgId"])[1]
                self.acks.append((time.monotonic(), phys))


async def sends(
    cli: RemotingClient, addr: str, depth: int, warm: float, seconds: float, keep: bool = False
) -> tuple[Tally, float]:
    """``depth`` senders in a loop for ``warm`` + ``seconds``; the tally and the measured
    seconds. ``keep``: each acknowledged message's (time of its answer, CommitLog offset)."""
    tally, queues = Tally(), itertools.count()

    async def worker() -> None:
        while not tally.stopping:
            await tally.one(cli, addr, next(queues) % QUEUES, keep)

    workers = [asyncio.create_task(worker()) for _ in range(depth)]
    await asyncio.sleep(warm)
    tally.measuring, t0 = True, time.perf_counter()
    await asyncio.sleep(seconds)
    tally.measuring, elapsed = False, time.perf_counter() - t0
    tally.stopping = True
    await asyncio.gather(*workers)
    return tally, elapsed


async def paced(
    cli: RemotingClient, addr: str, rate: float, warm: float, seconds: float
) -> tuple[Tally, float]:
    """Open loop: ``rate`` sends a second, each started on time whatever the earlier ones
    are doing (checked every ms), for ``warm`` + ``seconds``; acknowledgements kept."""
    tally, started, tasks = Tally(), 0, set[asyncio.Task[None]]()
    t0 = time.perf_counter()
    begin, stop = t0 + warm, t0 + warm + seconds
    while (now := time.perf_counter()) < stop:
        if not tally.measuring and now >= begin:
            tally.measuring, begin = True, now
        while started < (now - t0) * rate:
            task = asyncio.create_task(tally.one(cli, addr, started % QUEUES, True))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
            started += 1
        await asyncio.sleep(0.001)
    tally.measuring, elapsed = False, time.perf_counter() - begin
    await asyncio.gather(*tasks)
    return tally, elapsed


async def fill(cli: RemotingClient, addr: str, volume: int, depth: int = 64) -> Counter[int]:
    """Sends until the master's CommitLog grew by ``volume`` bytes; other answers counted."""
    others: Counter[int] = Counter()
    start, queues = await max_offset(cli, addr), itertools.count()
    per_check = max(1, volume // (len(BODY) * 50))
    done = False

    async def worker() -> None:
        nonlocal done
        while not done:
            n = next(queues)
            resp = await cli.invoke(addr, send_request(n % QUEUES), 30)
            if resp.code != R.SUCCESS:
                others[resp.code] += 1
            elif n % per_check == 0:
                done = done or await max_offset(cli, addr) - start >= volume

    await asyncio.gather(*(worker() for _ in range(depth)))
    return others


# ------------------------------------------------------------ the page cache


def page_residency(path: Path, lo: int, hi: int) -> tuple[int, int]:
    """Pages of ``path``'s bytes [lo, hi), and how many of them are in the page cache
    (mincore(2) on a read-only shared mapping; mapping faults nothing in)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                          ctypes.c_int, ctypes.c_long]  # fmt: skip
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    first = lo - lo % mmap.PAGESIZE
    length, pages = hi - first, -(-(hi - first) // mmap.PAGESIZE)
    fd = os.open(path, os.O_RDONLY)
    try:
        addr = libc.mmap(None, length, mmap.PROT_READ, mmap.MAP_SHARED, fd, first)
        if addr in (None, ctypes.c_void_p(-1).value):
            raise OSError(ctypes.get_errno(), f"mmap of {path} failed")
    finally:
        os.close(fd)
    try:
        vec = ctypes.create_string_buffer(pages)
        if libc.mincore(addr, length, vec) != 0:
            raise OSError(ctypes.get_errno(), f"mincore of {path} failed")
        return pages, sum(b & 1 for b in vec.raw)
    finally:
        libc.munmap(addr, length)


def read_rate(master: Node, start: int, end: int) -> float:
    """MB/s reading [start, end) of the master's CommitLog files, 1 MiB os.read calls."""
    t0, total = time.perf_counter(), 0
    for path in master.commitlog_files():
        seg_start, size = int(path.name), path.stat().st_size
        lo, hi = max(start, seg_start), min(end, seg_start + size)
        if lo >= hi:
            continue
        fd = os.open(path, os.O_RDONLY)
        try:
            os.lseek(fd, lo - seg_start, os.SEEK_SET)
            left = hi - lo
            while left > 0:
                got = len(os.read(fd, min(left, 1 << 20)))
                if got == 0:
                    raise RuntimeError(f"{path} ends early")
                total, left = total + got, left - got
        finally:
            os.close(fd)
    return total / (time.perf_counter() - t0) / 1e6


def resident(master: Node, start: int, end: int) -> float:
    """Of the master's CommitLog bytes [start, end), the fraction in the page cache."""
    pages = cached = 0
    for path in master.commitlog_files():
        seg_start, size = int(path.name), path.stat().st_size
        lo, hi = max(start, seg_start) - seg_start, min(end, seg_start + size) - seg_start
        if lo < hi:
            p, c = page_residency(path, lo, hi)
            pages, cached = pages + p, cached + c
    return cached / max(1, pages)


# ------------------------------------------------------------ the offset sampler


@dataclass(frozen=True)
class Sampler:
    """A child process sampling both brokers' CommitLog max offsets: the slave every
    ``fine`` s, the master (with the slave beside it) every ``coarse`` s. Samples are
    ``(monotonic s, master or -1, slave)``; monotonic is CLOCK_MONOTONIC, one clock for
    every process of the machine."""

    process: multiprocessing.process.BaseProcess
    stop_flag: Event
    results: Connection

    @classmethod
    def start(cls, master: str, slave: str, fine: float, coarse: float) -> Sampler:
        ctx = multiprocessing.get_context("spawn")
        stop, (ours, theirs) = ctx.Event(), ctx.Pipe(duplex=False)
        args = (master, slave, fine, coarse, stop, theirs)
        proc = ctx.Process(target=_sampler_main, args=args, daemon=True)
        proc.start()
        theirs.close()
        if not ours.poll(30) or ours.recv() != "ready":
            proc.kill()
            raise RuntimeError("the sampler process did not start")
        return cls(proc, stop, ours)

    def stop(self) -> list[tuple[float, int, int]]:
        self.stop_flag.set()
        try:
            if not self.results.poll(30):
                raise RuntimeError("the sampler process did not report")
            samples: list[tuple[float, int, int]] = self.results.recv()
            return samples
        finally:
            self.process.join(10)
            if self.process.is_alive():
                self.process.kill()


def _sampler_main(
    master: str, slave: str, fine: float, coarse: float, stop: Event, out: Connection
) -> None:
    quiet_logging()
    out.send(uvloop.run(_sample(master, slave, fine, coarse, stop, out)))


async def _sample(
    master: str, slave: str, fine: float, coarse: float, stop: Event, out: Connection
) -> list[tuple[float, int, int]]:
    samples: list[tuple[float, int, int]] = []
    every = max(1, round(coarse / fine))
    async with RemotingClient(JSON_CLIENT) as cli:
        await max_offset(cli, master)
        await max_offset(cli, slave)
        out.send("ready")
        limit = time.monotonic() + 600  # bounded even if the parent never stops it
        for tick in itertools.count():
            if stop.is_set() or time.monotonic() > limit:
                break
            due = time.monotonic() + fine
            t0 = time.monotonic()
            if tick % every == 0:
                m, s = await asyncio.gather(max_offset(cli, master), max_offset(cli, slave))
            else:
                m, s = -1, await max_offset(cli, slave)
            samples.append(((t0 + time.monotonic()) / 2, m, s))
            await asyncio.sleep(max(0.0, due - time.monotonic()))
    return samples
