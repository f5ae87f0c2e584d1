"""Consumer offset stores: on the brokers for clustering (RemoteBrokerOffsetStore), in a
local file for broadcasting (LocalFileOffsetStore). The table in memory is what consumption
advances; ``persist_all`` writes it out (every 5 s, at rebalance and at shutdown).

Offsets are "the next message to consume". ``read`` answers -1 when nothing is stored and -2
when it could not be read (the broker unreachable), as Java's stores do.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from aiorocketmq.client.core import api
from aiorocketmq.client.core.errors import MQBrokerError, MQClientError
from aiorocketmq.client.core.message import MessageQueue
from aiorocketmq.remoting.errors import RemotingError
from aiorocketmq.remoting.log import get_logger
from aiorocketmq.remoting.protocol.codes import ResponseCode as R
from aiorocketmq.remoting.protocol.command import RemotingCommand
from aiorocketmq.remoting.protocol.route import MASTER_ID

if TYPE_CHECKING:
    from aiorocketmq.client.core.instance import ClientInstance

log = get_logger(__name__)

NOT_FOUND, UNREADABLE = -1, -2


class OffsetStore(Protocol):
    table: dict[MessageQueue, int]

    async def load(self) -> None: ...
    def update(self, mq: MessageQueue, offset: int, increase_only: bool) -> None: ...
    async def read(self, mq: MessageQueue, from_store: bool) -> int: ...
    async def persist(self, mq: MessageQueue) -> None: ...
    async def persist_all(self, mqs: Iterable[MessageQueue]) -> None: ...
    def remove(self, mq: MessageQueue) -> None: ...


class _Table:
    def __init__(self) -> None:
        self.table: dict[MessageQueue, int] = {}

    def update(self, mq: MessageQueue, offset: int, increase_only: bool) -> None:
        old = self.table.get(mq)
        if old is None or not increase_only or offset > old:
            self.table[mq] = offset

    def remove(self, mq: MessageQueue) -> None:
        self.table.pop(mq, None)


class RemoteOffsetStore(_Table):
    """Offsets kept by the master of each queue's broker (QUERY/UPDATE_CONSUMER_OFFSET)."""

    def __init__(self, instance: ClientInstance, group: str) -> None:
        super().__init__()
        self.instance = instance
        self.group = group

    async def load(self) -> None:
        return None

    async def read(self, mq: MessageQueue, from_store: bool) -> int:
        if not from_store:
            return self.table.get(mq, NOT_FOUND)
        try:
            offset = await self.fetch(mq)
        except MQBrokerError as exc:
            if exc.code == R.QUERY_NOT_FOUND:
                return NOT_FOUND
            # compat: 5.x's readOffset -- only QUERY_NOT_FOUND (OffsetNotFoundException) is
            # "no offset"; 4.9.8 read any error so, and a consumer then started the queue by
            # consumeFromWhere (from 0 with CONSUME_FROM_FIRST_OFFSET) where a broker said
            # only "not here, not now" (a replica outside the SyncStateSet, issue 35)
            log.info("query_offset_refused", queue=mq, code=exc.code, remark=exc.remark)
            return UNREADABLE
        except (MQClientError, RemotingError) as exc:
            log.warning("query_offset_failed", queue=mq, error=str(exc))
            return UNREADABLE
        self.update(mq, offset, False)
        return offset

    async def fetch(self, mq: MessageQueue) -> int:
        """fetchConsumeOffsetFromBroker: from the master, else (gone from the route) from a
        slave, which holds the offsets it copied from its master. Ours: a slave that answers
        SERVICE_NOT_AVAILABLE (controller mode: outside the SyncStateSet, its copy may be
        behind) passes the question to the next slave of the route."""
        try:
            addrs = [await self.instance.master_addr(mq.broker_name, mq.topic)]
        except MQClientError:
            group = self.instance.brokers.get(mq.broker_name, {})
            addrs = [group[bid] for bid in sorted(group) if bid != MASTER_ID]
            if not addrs:
                raise
        for addr in addrs[:-1]:
            resp = await self._query(addr, mq)
            if resp.code != R.SERVICE_NOT_AVAILABLE:
                return api.parse_offset(resp, addr)
        return api.parse_offset(await self._query(addrs[-1], mq), addrs[-1])

    async def _query(self, addr: str, mq: MessageQueue) -> RemotingCommand:
        request = api.query_consumer_offset(self.group, mq.topic, mq.queue_id)
        return await self.instance.remoting.invoke(addr, request, 5.0)

    async def persist(self, mq: MessageQueue) -> None:
        offset = self.table.get(mq)
        if offset is not None:
            await self._write(mq, offset)

    async def persist_all(self, mqs: Iterable[MessageQueue]) -> None:
        keep = set(mqs)
        for mq, offset in list(self.table.items()):
            if mq in keep:
                await self._write(mq, offset)
            else:  # no longer ours (persistAll's unusedMQ)
                self.table.pop(mq, None)

    async def _write(self, mq: MessageQueue, offset: int) -> None:
        """UPDATE_CONSUMER_OFFSET, oneway, to the queue's master; best effort."""
        try:
            addr = await self.instance.master_addr(mq.broker_name, mq.topic)
            request = api.update_consumer_offset(self.group, mq.topic, mq.queue_id, offset)
            await self.instance.remoting.invoke_oneway(addr, request, 3.0)
        except (MQClientError, RemotingError) as exc:
            log.info("commit_offset_failed", queue=mq, offset=offset, error=str(exc))


def default_offset_dir() -> str:
    """LocalFileOffsetStore.LOCAL_OFFSET_STORE_DIR (rocketmq.client.localOffsetStoreDir)."""
    return os.environ.get("ROCKETMQ_CLIENT_LOCAL_OFFSET_STORE_DIR") or str(
        Path.home() / ".rocketmq_offsets"
    )


class LocalOffsetStore(_Table):
    """``<dir>/<ip>@<instance name>/<group>/offsets.json`` (ours: the instance name, not the
    PID Java's client id carries for DEFAULT, so a restarted consumer finds its file).
    Written atomically; the previous file is kept as ``offsets.json.bak``."""

    def __init__(self, directory: str, owner: str, group: str) -> None:
        super().__init__()
        self.path = Path(directory or default_offset_dir()) / owner / group / "offsets.json"

    async def load(self) -> None:
        for path in (self.path, self.path.with_suffix(".json.bak")):
            with contextlib.suppress(FileNotFoundError):
                try:
                    rows = json.loads(path.read_text())["offsetTable"]
                    for row in rows:
                        mq = MessageQueue.from_json(row)
                        self.table[mq] = int(row["offset"])
                    return
                except (ValueError, KeyError, TypeError) as exc:
                    log.warning("local_offsets_unreadable", path=str(path), error=str(exc))

    async def read(self, mq: MessageQueue, from_store: bool) -> int:
        return self.table.get(mq, NOT_FOUND)

    async def persist(self, mq: MessageQueue) -> None:
        self._save()

    async def persist_all(self, mqs: Iterable[MessageQueue]) -> None:
        self._save()

    def _save(self) -> None:
        rows = [{**mq.to_json(), "offset": off} for mq, off in sorted(self.table.items())]
        data = json.dumps({"offsetTable": rows}, indent=1)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".json.tmp")
        try:
            with tmp.open("w") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            if self.path.exists():
                self.path.replace(self.path.with_suffix(".json.bak"))
            tmp.replace(self.path)
        except OSError as exc:
            log.warning("local_offsets_not_saved", path=str(self.path), error=str(exc))
