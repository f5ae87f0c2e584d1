"""Query by key after a crash recovery (protocol.md 8.3): the index entries a re-dispatch
adds again are duplicates, and duplicates must not count against ``max_num``."""

from __future__ import annotations

from aiorocketmq.broker.store.checkpoint import read_checkpoint
from aiorocketmq.remoting.protocol.message import decode_record
from tests.store.conftest import StoreFactory, message


async def test_redispatched_duplicates_do_not_eat_max_num(open_store: StoreFactory) -> None:
    """Issue 5 (query by key) and design.md 10 (re-dispatch past the safe point): after a
    crash recovery re-indexed what it found past the checkpoint (here: everything, no
    checkpoint was written), ``query(max_num=n)`` still returns ``n`` distinct messages,
    newest first, when that many match."""
    store = await open_store(flush_interval_consume_queue=3_600_000)
    results = [
        await store.put(message("T", 0, bytes([65 + i]) * 200, KEYS="K", UNIQ_KEY=f"U{i}"))
        for i in range(20)
    ]
    assert read_checkpoint(store.root) is None  # the crash re-scans (and re-indexes) all 20
    await store.abandon()

    store = await open_store()
    assert store.recovery is not None and store.recovery.records == 20
    newest_first = [r.phys_offset for r in reversed(results)]
    for n in (1, 5, 19, 20, 64):
        found = store.query("T", "K", n, 0, 2**62)
        assert [decode_record(r).commit_log_offset for r in found] == newest_first[:n], n
    for i in (0, 19):  # and each UNIQ_KEY still finds exactly its message
        (only,) = store.query("T", f"U{i}", 8, 0, 2**62)
        assert decode_record(only).commit_log_offset == results[i].phys_offset
