"""Store fixtures: real MessageStores on tmp_path with small segments."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from aiorocketmq.broker.store import MessageStore
from aiorocketmq.broker.store.config import StoreConfig
from aiorocketmq.remoting.protocol.message import MessageExt

HOST = "127.0.0.1:10911"
StoreFactory = Callable[..., Awaitable[MessageStore]]


def small_config(root: Path, **overrides: object) -> StoreConfig:
    """Segments small enough that tests roll them over (4 KiB log, 10-unit queues)."""
    base: dict[str, object] = {
        "store_path_root_dir": str(root),
        "mapped_file_size_commit_log": 4096,
        "mapped_file_size_consume_queue": 200,
        "max_hash_slot_num": 64,
        "max_index_num": 256,
        "flush_interval_commit_log": 50,
        "flush_interval_consume_queue": 50,
    }
    base.update(overrides)
    return StoreConfig(**base)  # type: ignore[arg-type]


def message(topic: str = "T", queue_id: int = 0, body: bytes = b"x", **props: str) -> MessageExt:
    return MessageExt(
        topic=topic,
        queue_id=queue_id,
        body=body,
        properties=dict(props),
        born_host="127.0.0.1:5555",
        born_timestamp=1_700_000_000_000,
    )


@pytest.fixture
async def open_store(tmp_path: Path) -> AsyncIterator[StoreFactory]:
    """``await open_store(**config)``: a started store on tmp_path; shut down after the test
    (stores a test already stopped or abandoned are left as they are)."""
    opened: list[MessageStore] = []

    async def factory(root: Path | None = None, **overrides: object) -> MessageStore:
        store = MessageStore(small_config(root or tmp_path, **overrides), store_host=HOST)
        await store.start()
        opened.append(store)
        return store

    yield factory
    for store in opened:
        await store.shutdown()  # a no-op for stores a test already stopped or abandoned
