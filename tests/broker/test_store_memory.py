"""A real broker's store after a crash and under a stream of writes (issue 29, items 5 and 7):
a crash restart reads only the tail it may have written, not the rest of a 1 GiB segment; and
the broker's resident memory stays bounded while it stores many segments' worth."""

from __future__ import annotations

import ctypes
import mmap
import os
from pathlib import Path

import pytest

from aiorocketmq.broker.store.highwater import AHEAD
from aiorocketmq.client.core import api
from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.protocol.batch import BatchItem, encode_batch
from tests.broker.wire import create_topic, pull, send_v2
from tests.cluster import Cluster
from tests.scrape import scrape, value

GIB = 1 << 30
MIB = 1 << 20


def cached_bytes(path: Path) -> int:
    """How much of ``path`` is in the page cache (mincore over a mapping made for the
    purpose, never touched: it faults nothing in)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                          ctypes.c_int, ctypes.c_long)  # fmt: skip
    libc.mincore.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p)
    libc.munmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t)
    size = path.stat().st_size
    fd = os.open(path, os.O_RDONLY)
    try:
        addr = libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
        assert addr not in (None, ctypes.c_void_p(-1).value), ctypes.get_errno()
    finally:
        os.close(fd)
    try:
        pages = -(-size // mmap.PAGESIZE)
        vec = ctypes.create_string_buffer(pages)
        assert libc.mincore(addr, size, vec) == 0, ctypes.get_errno()
        return sum(b & 1 for b in vec.raw) * mmap.PAGESIZE
    finally:
        libc.munmap(addr, size)


def status_bytes(pid: int, key: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no {key} for {pid}")


async def test_a_crash_restart_reads_only_the_tail_it_may_have_written(
    cluster: Cluster, client: RemotingClient
) -> None:
    """Issue 29 N5: 5 small messages in the default 1 GiB segment, SIGKILL, restart. The
    restart checks the tail up to the high-water mark only (its ``store_recovered`` event
    says how much), so the segment is not pulled into the page cache (before: the whole
    1 GiB was read, 5.5-11 s); every message is still there, and the store goes on."""
    broker = cluster.add_broker("broker-a", mappedFileSizeCommitLog=str(GIB))
    assert (await client.invoke(broker.addr, create_topic("Crashed", 1))).code == 0
    for i in range(5):
        resp = await client.invoke(broker.addr, send_v2("Crashed", f"m{i}".encode(), queue_id=0))
        assert resp.code == 0, resp.remark
    cluster.kill_broker("broker-a")
    segment = broker.store / "commitlog" / f"{0:020d}"
    assert segment.stat().st_size == GIB
    before = cached_bytes(segment)  # what the broker wrote (and a tmpfs holds all of it)
    cluster.start_broker("broker-a")
    assert broker.proc is not None
    recovered = broker.proc.wait_for("store_recovered")
    assert recovered["crashed"] is True and recovered["records"] == 5
    read = cached_bytes(segment) - before  # read whole before: all 1 GiB in the page cache
    assert read < 128 * MIB, f"{read / MIB:.0f} MiB of the segment read"
    assert status_bytes(broker.proc.proc.pid, "RssFile") < 256 * MIB
    assert recovered["tail_checked"] <= AHEAD, recovered
    async with RemotingClient() as again:  # (the old connection died with the process)
        got = await again.invoke(
            broker.addr, pull("g", "Crashed", 0, 0, sys_flag=4, subscription="*")
        )
        assert got.code == 0 and got.ext_fields["nextBeginOffset"] == "5"
        resp = await again.invoke(broker.addr, send_v2("Crashed", b"after", queue_id=0))
        assert resp.code == 0 and resp.ext_fields["queueOffset"] == "5"


@pytest.mark.slow
async def test_resident_memory_stays_bounded_as_segments_fill(
    cluster: Cluster, client: RemotingClient
) -> None:
    """Issue 29 N7: 256 MiB written through 4 MiB segments while a consumer pulls the tail:
    the broker's file-backed RSS stays far below what was written (before: it grew with
    every byte, RssFile 1219 MiB after 1.2 GiB), and /metrics shows the store's mapped and
    resident bytes."""
    broker = cluster.add_broker("broker-a", maxHashSlotNum="10000")
    assert broker.proc is not None
    port = broker.proc.metrics_port()
    assert (await client.invoke(broker.addr, create_topic("Soak", 4))).code == 0
    body = encode_batch([BatchItem(bytes(1024)) for _ in range(32)])
    written, offset = 0, 0
    while written < 256 * MIB:
        for qid in range(4):
            cmd = api.send_message("Soak", body, group="pg", queue_id=qid, batch=True)
            resp = await client.invoke(broker.addr, cmd, 30)
            assert resp.code == 0, resp.remark
            written += len(body)
        tail = await client.invoke(
            broker.addr, pull("g", "Soak", 0, offset, sys_flag=4, subscription="*")
        )
        if tail.code == 0:
            offset = int(tail.ext_fields["nextBeginOffset"])
    assert offset > 0
    rss_file = status_bytes(broker.proc.proc.pid, "RssFile")
    assert rss_file < 160 * MIB, f"RssFile {rss_file / MIB:.0f} MiB after 256 MiB written"
    samples = await scrape(port)
    resident = value(samples, "rocketmq_memory_resident_bytes", kind="file")
    assert 0 < resident < 160 * MIB
    mapped = value(samples, "rocketmq_memory_mapped_bytes", kind="commitlog")
    assert mapped >= 256 * MIB  # the segments stay mapped: only their pages left memory
