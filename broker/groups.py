"""SubscriptionGroups: consumer groups a broker knows (SubscriptionGroupManager), persisted to
subscriptionGroup.json; unknown groups are created on first use when
autoCreateSubscriptionGroup is on. A change is durable once its journal line is (as for
topics.json: broker.tablefile), so its cost does not grow with the number of groups."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

import structlog

from aiorocketmq.broker.configfile import ConfigFile
from aiorocketmq.broker.quarantine import usable_groups
from aiorocketmq.broker.tablefile import TableFile
from aiorocketmq.remoting.errors import ConfigError
from aiorocketmq.remoting.protocol.bounds import check_group_name
from aiorocketmq.remoting.protocol.group import SubscriptionGroupConfig
from aiorocketmq.remoting.protocol.message import now_ms
from aiorocketmq.remoting.protocol.register import DataVersion

log = structlog.get_logger(__name__)

# groups every broker knows from birth (SubscriptionGroupManager's constructor)
SYSTEM_GROUPS = ("TOOLS_CONSUMER", "FILTERSRV_CONSUMER", "SELF_TEST_C_GROUP",
                 "CID_ONS-HTTP-PROXY", "CID_ONSAPI_PULL", "CID_ONSAPI_PERMISSION",
                 "CID_ONSAPI_OWNER", "CID_RMQ_SYS_TRANS")  # fmt: skip


class SubscriptionGroups:
    def __init__(self, file: ConfigFile, *, auto_create: bool) -> None:
        self.file = TableFile(file, self._snapshot)
        self.auto_create = auto_create
        self.groups = {g: SubscriptionGroupConfig(group_name=g) for g in SYSTEM_GROUPS}
        self._saving: set[asyncio.Task[bool]] = set()
        self.data_version = DataVersion(0, now_ms())
        # a master's: the change's record for its slaves, appended when called; the result
        # waits for what its put promises (broker.meta_stream)
        self.replicate: Callable[[dict[str, Any]], Awaitable[None]] = _nothing_to_replicate

    def load(self, *, fold: bool = True) -> None:
        """The file, then its journal (written into the file if ``fold``)."""
        obj, records = self.file.load()
        try:
            if obj is not None:  # the journal holds only what this version's edges let in
                obj = usable_groups(obj, self.file.path)
                table = obj.get("subscriptionGroupTable") or {}
                for name, raw in table.items():
                    self.groups[str(name)] = SubscriptionGroupConfig.from_json(raw)
                self.data_version = DataVersion.from_json(obj.get("dataVersion"))
            for record in records:
                self._replay(record)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ConfigError(f"{self.file.path}: malformed subscription groups: {exc}") from exc
        if records and fold:
            self.file.compact_now()

    def _replay(self, record: Any) -> None:
        if "put" in record:
            config = SubscriptionGroupConfig.from_json(record["put"])
            self.groups[config.group_name] = config
        else:
            self.groups.pop(str(record["delete"]), None)
        self.data_version = DataVersion.from_json(record["dataVersion"])

    def to_json(self) -> dict[str, object]:
        return _file_json(self.groups, self.data_version)

    def _snapshot(self) -> Callable[[], Any]:
        groups, version = dict(self.groups), self.data_version
        return lambda: _file_json(groups, version)

    def find(self, group: str) -> SubscriptionGroupConfig | None:
        """findSubscriptionGroupConfig: the group, created on first use if auto-create is on
        (written to disk in the background: pulls and heartbeats never wait for it)."""
        config = self.groups.get(group)
        # a name no group may have is never created (the edges refuse it first)
        if config is None and self.auto_create and check_group_name(group) is None:
            config = self.groups[group] = SubscriptionGroupConfig(group_name=group)
            log.info("subscription_group_created", group=group)
            task = asyncio.get_running_loop().create_task(self._changed(config))
            self._saving.add(task)
            task.add_done_callback(self._saving.discard)
        return config

    async def flush(self) -> None:
        """Wait for background writes (at stop)."""
        if self._saving:
            await asyncio.gather(*self._saving, return_exceptions=True)

    async def put(self, config: SubscriptionGroupConfig) -> None:
        self.groups[config.group_name] = config
        log.info("subscription_group_updated", group=config.group_name)
        await self._changed(config)

    async def delete(self, group: str) -> bool:
        if self.groups.pop(group, None) is None:
            return False
        log.info("subscription_group_deleted", group=group)
        await self._changed(None, group)
        return True

    async def replace(
        self, groups: dict[str, SubscriptionGroupConfig], version: DataVersion
    ) -> None:
        """Take another table whole (a slave copying its master's), and persist it."""
        self.groups.clear()
        self.groups.update(groups)
        self.data_version = version
        await self.file.compact()

    def _changed(
        self, config: SubscriptionGroupConfig | None, deleted: str = ""
    ) -> Coroutine[Any, Any, bool]:
        """Journal one change at once (in order); awaiting the result waits for the disk."""
        self.data_version = self.data_version.next(now_ms())
        change: dict[str, Any] = {"put": config.to_json()} if config else {"delete": deleted}
        change["dataVersion"] = self.data_version.to_json()
        written = self.file.record(change)
        return _both(written, self.replicate(change))  # both queued now, in order

    def apply(self, change: dict[str, Any]) -> Coroutine[Any, Any, bool]:
        """A change its master made (a slave, broker.meta_follow): in memory and queued for
        the journal now; awaiting the result waits for the journal."""
        self._replay(change)
        return self.file.record(change)


async def _both(written: Awaitable[bool], replicated: Awaitable[None]) -> bool:
    ok = await written
    await replicated
    return ok


async def _nothing_to_replicate(_change: dict[str, Any]) -> None:
    return None


def _file_json(groups: dict[str, SubscriptionGroupConfig], version: DataVersion) -> dict[str, Any]:
    return {
        "dataVersion": version.to_json(),
        "subscriptionGroupTable": {k: v.to_json() for k, v in groups.items()},
    }
