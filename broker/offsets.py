"""ConsumerOffsets: each group's progress per queue, ``topic@group -> {queueId: offset}``
(ConsumerOffsetManager), persisted to consumerOffset.json every 5 s and at stop."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import structlog

from aiorocketmq.broker.configfile import ConfigFile, Snapshot
from aiorocketmq.broker.meta_records import META_OFFSET
from aiorocketmq.broker.quarantine import usable_offsets
from aiorocketmq.remoting.errors import ConfigError

log = structlog.get_logger(__name__)

SEPARATOR = "@"


class ConsumerOffsets(Snapshot):
    def __init__(self, file: ConfigFile) -> None:
        self.file = file
        self.table: dict[str, dict[int, int]] = {}
        # told of each commit (key, {queueId: offset}) and removal (key, None): a master's
        # records for its slaves (broker.meta_stream)
        self.on_change: Callable[[str, dict[int, int] | None], None] | None = None
        # ours (issue 35): the metadata records (broker.meta_records) the table holds every
        # change of, saved with it as "metaOffset": a restart applies the offsets records
        # written after it (broker.meta_follow.replay_offsets) -- the file is saved every
        # flushConsumerOffsetInterval, the records with each commit
        self.records: Callable[[], int] | None = None
        self.loaded_records = 0  # the file's, once loaded (0: none saved)

    def load(self) -> None:
        obj = self.file.load()
        if obj is None:
            return
        try:
            self.loaded_records = int(obj.get(META_OFFSET, 0)) if isinstance(obj, dict) else 0
            obj = usable_offsets(obj, self.file.path)
            for key, queues in (obj.get("offsetTable") or {}).items():
                self.table[str(key)] = {int(q): int(o) for q, o in queues.items()}
        except (ValueError, TypeError, AttributeError) as exc:
            raise ConfigError(f"{self.file.path}: malformed consumer offsets: {exc}") from exc

    def commit(self, group: str, topic: str, queue_id: int, offset: int) -> None:
        key = f"{topic}{SEPARATOR}{group}"
        self.table.setdefault(key, {})[queue_id] = offset
        self.mark_dirty()
        if self.on_change is not None:
            self.on_change(key, {queue_id: offset})

    def apply(self, changed: dict[str, dict[int, int]], reset: list[str]) -> None:
        """Offsets its master committed (a slave, broker.meta_follow): ``reset`` keys
        removed first, then ``changed`` set."""
        for key in reset:
            self.table.pop(key, None)
        for key, queues in changed.items():
            self.table.setdefault(key, {}).update(queues)
        self.mark_dirty()

    def query(self, group: str, topic: str, queue_id: int) -> int:
        """The stored offset, or -1."""
        return self.table.get(f"{topic}{SEPARATOR}{group}", {}).get(queue_id, -1)

    def queues(self, group: str, topic: str) -> dict[int, int]:
        return dict(self.table.get(f"{topic}{SEPARATOR}{group}", {}))

    def topics_of(self, group: str) -> list[str]:
        suffix = SEPARATOR + group
        return [k[: -len(suffix)] for k in self.table if k.endswith(suffix)]

    def groups_of(self, topic: str) -> list[str]:
        prefix = topic + SEPARATOR
        return [k[len(prefix) :] for k in self.table if k.startswith(prefix)]

    def remove_group(self, group: str) -> None:
        suffix = SEPARATOR + group
        for key in [k for k in self.table if k.endswith(suffix)]:
            del self.table[key]
            if self.on_change is not None:
                self.on_change(key, None)
        self.mark_dirty()

    def to_json(self) -> dict[str, Any]:
        """consumerOffset.json: the table, and ours, the records it holds ("metaOffset")."""
        obj = self.table_json()
        if self.records is not None:
            obj[META_OFFSET] = self.records()
        return obj

    def table_json(self) -> dict[str, Any]:
        """The table as 4.9.8 writes it (ConsumerOffsetSerializeWrapper)."""
        return {
            "offsetTable": {k: {str(q): o for q, o in v.items()} for k, v in self.table.items()}
        }
