"""Prefaulting off the loop (issue 20, warm.py): the CommitLog's pages ahead of the writer are
mapped writable by a thread that does not hold the GIL, and a segment deleted while it works
is let go of safely."""

from __future__ import annotations

from pathlib import Path

import pytest

from aiorocketmq.broker.store import warm
from tests.store.conftest import StoreFactory, message
from tests.util import wait_until

pytestmark = pytest.mark.skipif(warm.WARMER is None, reason="no libc madvise through ctypes")


def mapped_kib(path: Path) -> int:
    """KiB of ``path``'s mappings in this process's page tables (Rss in /proc/self/smaps)."""
    total, inside = 0, False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        if line[:1].isdigit() or line[:1] in "abcdef":  # a mapping's header line
            inside = line.endswith(" " + str(path))
        elif inside and line.startswith("Rss:"):
            total += int(line.split()[1])
    return total


def mapped(path: Path) -> bool:
    return str(path) in Path("/proc/self/maps").read_text()


async def test_the_thread_maps_pages_ahead_of_the_writer(open_store: StoreFactory) -> None:
    """One append to a fresh segment has the next 4 MiB mapped writable, off the loop (on the
    loop, 256 KiB at a time: CPython's mmap.madvise holds the GIL)."""
    store = await open_store(mapped_file_size_commit_log=16 << 20)
    await store.put(message("T", 0, b"x"))
    seg = store.commitlog.queue.segments[0]
    await wait_until(lambda: mapped_kib(seg.path) >= 4096, timeout=10)
    assert warm.WARMER is not None and warm.WARMER.works
    assert seg.faulted == 2 << 20  # the writer asks for more from half-way


async def test_a_segment_deleted_while_the_thread_maps_it(
    open_store: StoreFactory, tmp_path: Path
) -> None:
    """A segment deleted (retention, a cut) while the thread maps it: the rest of it is
    skipped, its mapping goes once the call under way returns, and the thread carries on
    with other work."""
    assert warm.WARMER is not None
    store = await open_store(mapped_file_size_commit_log=64 << 20)
    await store.put(message("T", 0, b"x"))
    seg = store.commitlog.queue.segments[0]
    warm.WARMER.ask(seg, 0, 64 << 20)  # about 200 ms of work
    store.commitlog.queue.delete_first()  # as retention does
    assert seg.closed and seg.mapping is None and not seg.path.exists()
    warm.WARMER.ask(seg, 0, 1 << 20)  # and (a writer's request in flight) after
    await wait_until(warm.WARMER.idle, timeout=10)
    assert not mapped(seg.path)
    again = await open_store(tmp_path / "again", mapped_file_size_commit_log=16 << 20)
    await again.put(message("T", 0, b"x"))
    fresh = again.commitlog.queue.segments[0]
    await wait_until(lambda: mapped_kib(fresh.path) >= 4096, timeout=10)
