"""MessageStore.put_many (issue 20): the single-message sends of one read stored in one
append give each message what its own ``put`` would -- refusals included -- with queue
offsets in order, runs cut so none is refused for its length, and byte-identical records."""

from __future__ import annotations

from pathlib import Path

from aiorocketmq.broker.store import PutStatus
from aiorocketmq.remoting.protocol.message import decode_record
from tests.store.conftest import StoreFactory, message


def mixed() -> list[tuple[str, int, bytes]]:
    """Two queues, 300-byte bodies (a 4 KiB segment holds ~10, a run is cut at 1 KiB), one
    body over the size limit and one topic over 127 bytes (refused where they stand)."""
    out = []
    for i in range(30):
        topic = "T" * 130 if i == 17 else "T"
        body = b"x" * 5000 if i == 9 else bytes([i]) * 300
        out.append((topic, i % 2, body))
    return out


async def test_put_many_gives_each_message_what_its_own_put_would(
    open_store: StoreFactory, tmp_path: Path
) -> None:
    many = await open_store(tmp_path / "many", max_message_size=4000)
    one = await open_store(tmp_path / "one", max_message_size=4000)
    msgs = [message(t, q, b, KEYS=f"k{i}") for i, (t, q, b) in enumerate(mixed())]
    results = many.put_many(msgs)
    alone = [
        await one.put(message(t, q, b, KEYS=f"k{i}"), wait_flush=False)
        for i, (t, q, b) in enumerate(mixed())
    ]
    assert [r.status for r in results] == [r.status for r in alone]
    assert results[9].status is PutStatus.MESSAGE_ILLEGAL
    assert results[17].status is PutStatus.MESSAGE_ILLEGAL
    assert [r.queue_offset for r in results] == [r.queue_offset for r in alone]
    for r, a in zip(results, alone, strict=True):
        if r.status is not PutStatus.PUT_OK:
            assert (r.msg_ids, r.wrote_bytes) == ([], 0)
            continue
        assert len(r.msg_ids) == 1 and r.wrote_bytes == a.wrote_bytes
        mine = many.commitlog.read(r.phys_offset, r.wrote_bytes)
        theirs = one.commitlog.read(a.phys_offset, a.wrote_bytes)
        assert mine is not None and theirs is not None
        got, want = decode_record(mine), decode_record(theirs)
        assert (got.topic, got.queue_id, got.queue_offset, got.body, got.properties) == (
            want.topic, want.queue_id, want.queue_offset, want.body, want.properties
        )  # fmt: skip
        assert got.commit_log_offset == r.phys_offset
    for q in (0, 1):  # the queues point at those records, in order
        read = many.get("T", q, 0, 32)
        bodies = [decode_record(raw).body for raw in read.messages]
        want_bodies = [b for i, (t, qq, b) in enumerate(mixed()) if qq == q and i not in (9, 17)]
        assert bodies == want_bodies
    assert len(many.query("T", "k28", 10, 0, 2**62)) == 1  # the index got its keys
