"""Topics the store cannot keep are refused before anything is written (issue 5 "Bad input and
faults": never acknowledge a record that recovery would then discard, never write outside the
store's layout, protocol.md 8.2)."""

from __future__ import annotations

from pathlib import Path

import pytest

from aiorocketmq.broker.store import PutStatus
from tests.store.conftest import StoreFactory, message


def entries(path: Path) -> list[str]:
    return sorted(p.name for p in path.iterdir())


@pytest.mark.parametrize("topic", ["", "a\x00b", "../escape", "a/b", ".", "..", "t" * 128])
async def test_unstorable_topic_is_illegal_and_writes_nothing(
    open_store: StoreFactory, tmp_path: Path, topic: str
) -> None:
    """An empty topic or one holding NUL (which recovery rejects as a torn record), a path
    separator or a dot name (not one ConsumeQueue directory), or over 127 bytes answers
    MESSAGE_ILLEGAL, and the CommitLog, ConsumeQueues and index stay as they were."""
    store = await open_store(tmp_path / "store")
    ok = await store.put(message("T", 0, b"before", KEYS="k"))
    end = store.max_phys_offset
    result = await store.put(message(topic, 0, b"refused", KEYS="k"))
    assert result.status is PutStatus.MESSAGE_ILLEGAL
    batch = await store.put_batch([message("T", 0, b"fine"), message(topic, 0, b"refused")])
    assert batch.status is PutStatus.MESSAGE_ILLEGAL
    assert store.max_phys_offset == end and list(store.queues) == [("T", 0)]
    assert entries(tmp_path) == ["store"]
    await store.abandon()  # a crash: recovery keeps exactly the acknowledged message
    again = await open_store(tmp_path / "store")
    assert again.max_phys_offset == end
    assert again.read(ok.phys_offset) is not None
    assert (await again.put(message("T", 0, b"after"))).queue_offset == 1
