"""TopicTable: the topics a broker hosts (TopicConfigManager), persisted to topics.json.

System topics come first, then the file overrides them, as in Java. Every change bumps the
data version (the name server skips registrations whose version it has), is durable once
its journal line is (broker.tablefile: topics.json itself is rewritten off the hot path),
and is then announced to listeners with the topics it changed (the broker registers those
at once; None, for a deletion or a new table, has it register everything).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any

import structlog

from aiorocketmq.broker.configfile import ConfigFile
from aiorocketmq.broker.quarantine import usable_topics
from aiorocketmq.broker.tablefile import TableFile
from aiorocketmq.remoting.errors import ConfigError
from aiorocketmq.remoting.protocol.message import now_ms
from aiorocketmq.remoting.protocol.register import DataVersion, TopicConfigWrapper
from aiorocketmq.remoting.protocol.topic import (
    AUTO_CREATE_TOPIC_KEY_TOPIC,
    BENCHMARK_TOPIC,
    OFFSET_MOVED_EVENT,
    SCHEDULE_TOPIC,
    SELF_TEST_TOPIC,
    Perm,
    TopicConfig,
    reply_topic,
)

log = structlog.get_logger(__name__)

SCHEDULE_QUEUE_NUMS = 18  # one queue per delay level


def system_topics(
    cluster: str,
    broker: str,
    *,
    auto_create: bool,
    default_queue_nums: int,
    cluster_topic: bool = True,
    broker_topic: bool = True,
    trace_topic: str | None = None,
) -> dict[str, TopicConfig]:
    """The topics every broker hosts from birth (TopicConfigManager's constructor), with
    ``trace_topic`` (msgTraceTopicName, when ``traceTopicEnable``: 1 queue, perm 6)."""
    rw = Perm.READ | Perm.WRITE
    topics = [
        TopicConfig(topic_name=SELF_TEST_TOPIC, read_queue_nums=1, write_queue_nums=1),
        TopicConfig(topic_name=cluster, perm=Perm.INHERIT | (rw if cluster_topic else 0)),
        TopicConfig(
            topic_name=broker,
            read_queue_nums=1,
            write_queue_nums=1,
            perm=Perm.INHERIT | (rw if broker_topic else 0),
        ),
        TopicConfig(topic_name=OFFSET_MOVED_EVENT, read_queue_nums=1, write_queue_nums=1),
        TopicConfig(
            topic_name=SCHEDULE_TOPIC,
            read_queue_nums=SCHEDULE_QUEUE_NUMS,
            write_queue_nums=SCHEDULE_QUEUE_NUMS,
        ),
        TopicConfig(topic_name=BENCHMARK_TOPIC, read_queue_nums=1024, write_queue_nums=1024),
        TopicConfig(topic_name=reply_topic(cluster), read_queue_nums=1, write_queue_nums=1),
    ]
    if trace_topic:
        topics.append(TopicConfig(topic_name=trace_topic, read_queue_nums=1, write_queue_nums=1))
    if auto_create:
        topics.append(
            TopicConfig(
                topic_name=AUTO_CREATE_TOPIC_KEY_TOPIC,
                read_queue_nums=default_queue_nums,
                write_queue_nums=default_queue_nums,
                perm=Perm.INHERIT | rw,
            )
        )
    return {t.topic_name: t for t in topics}


class TopicTable:
    """Topic name -> TopicConfig, with a data version and write-through persistence."""

    def __init__(
        self, file: ConfigFile, builtin: dict[str, TopicConfig], *, auto_create: bool
    ) -> None:
        self.file = TableFile(file, self._snapshot)
        self.topics: dict[str, TopicConfig] = dict(builtin)
        self.data_version = DataVersion(0, now_ms())
        self._auto_create = auto_create
        self._lock = asyncio.Lock()
        # called with the topics a change set, or None when any may have gone
        self.listeners: list[Callable[[Sequence[str] | None], None]] = []
        # awaits the registration a change started (the broker sets it)
        self.registered: Callable[[], Awaitable[None]] = _nothing_pending
        # a master's: the change's record for its slaves, appended when called; the result
        # waits for what its put promises (broker.meta_stream)
        self.replicate: Callable[[dict[str, Any]], Awaitable[None]] = _nothing_to_replicate

    def load(self, *, fold: bool = True) -> None:
        """Overlay topics.json (if any) on the built-in topics, then replay its journal (and,
        if ``fold``, write it into the file); a corrupt file or journal is an error."""
        obj, records = self.file.load()
        if obj is None and not records:
            return
        try:
            if obj is not None:  # the journal holds only what this version's edges let in
                obj = usable_topics(obj, self.file.path, self.topics)
                wrapper = TopicConfigWrapper.from_json(obj)
                self.topics.update(wrapper.topic_config_table)
                self.data_version = wrapper.data_version
            for record in records:
                self._replay(record)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ConfigError(f"{self.file.path}: malformed topic config: {exc}") from exc
        if records and fold:
            self.file.compact_now()
        log.info("topics_loaded", path=str(self.file.path), topics=len(self.topics),
                 journal_records=len(records))  # fmt: skip

    def _replay(self, record: Any) -> None:
        if "put" in record:
            config = TopicConfig.from_json(record["put"])
            self.topics[config.topic_name] = config
        else:
            self.topics.pop(str(record["delete"]), None)
        self.data_version = DataVersion.from_json(record["dataVersion"])

    def _snapshot(self) -> Callable[[], Any]:
        """What builds topics.json's object off the loop, from the table as it is now."""
        table, version = dict(self.topics), self.data_version
        return lambda: TopicConfigWrapper(topic_config_table=table, data_version=version).to_json()

    def get(self, topic: str) -> TopicConfig | None:
        return self.topics.get(topic)

    def wrapper(self) -> TopicConfigWrapper:
        return TopicConfigWrapper(
            topic_config_table=dict(self.topics), data_version=self.data_version
        )

    async def _changed(self, config: TopicConfig | None, deleted: str = "") -> None:
        """Persist one change (a put, or the deletion of ``deleted``), then announce it."""
        self.data_version = self.data_version.next(now_ms())
        change: dict[str, Any] = {"put": config.to_json()} if config else {"delete": deleted}
        change["dataVersion"] = self.data_version.to_json()
        replicated = self.replicate(change)  # appended now: in the order changes are made
        await self.file.record(change)
        for listener in self.listeners:
            listener([config.topic_name] if config else None)
        await replicated

    def apply(self, change: dict[str, Any]) -> Coroutine[Any, Any, None]:
        """A change its master made (a slave, broker.meta_follow): in memory and queued for
        the journal now; awaiting the result waits for the journal, then announces it."""
        self._replay(change)
        name = TopicConfig.from_json(change["put"]).topic_name if "put" in change else None
        return self._applied(self.file.record(change), name)

    async def _applied(self, written: Awaitable[bool], name: str | None) -> None:
        await written
        for listener in self.listeners:
            listener([name] if name is not None else None)

    async def replace(self, wrapper: TopicConfigWrapper) -> None:
        """Take another table whole (a slave copying its master's), and persist it."""
        self.topics.clear()
        self.topics.update(wrapper.topic_config_table)
        self.data_version = wrapper.data_version
        await self.file.compact()

    async def put(self, config: TopicConfig) -> None:
        """Create or replace a topic (UPDATE_AND_CREATE_TOPIC, send-back topics)."""
        self.topics[config.topic_name] = config
        log.info(
            "topic_updated",
            topic=config.topic_name,
            read=config.read_queue_nums,
            write=config.write_queue_nums,
            perm=config.perm,
        )
        await self._changed(config)

    async def delete(self, topic: str) -> bool:
        if self.topics.pop(topic, None) is None:
            return False
        log.info("topic_deleted", topic=topic)
        await self._changed(None, topic)
        return True

    async def create_in_send(
        self, topic: str, default_topic: str, client_queue_nums: int, topic_sys_flag: int = 0
    ) -> TopicConfig | None:
        """createTopicInSendMessageMethod: a new topic from the default topic (TBW102), if it
        exists and may be inherited; under a lock, looking the topic up again first; the
        name servers know it before the send is answered, as in Java."""
        async with self._lock:
            existing = self.topics.get(topic)
            if existing is not None:
                return existing
            found = self._template(topic, default_topic)
            if found is None:
                return None
            template, perm = found
            queues = min(client_queue_nums, template.write_queue_nums)
            if queues <= 0:  # Java makes a topic no message can go to; we make none
                log.warning("topic_create_failed", topic=topic, reason="no queues",
                            client_queue_nums=client_queue_nums,
                            template_queue_nums=template.write_queue_nums)  # fmt: skip
                return None
            config = TopicConfig(
                topic_name=topic,
                read_queue_nums=queues,
                write_queue_nums=queues,
                perm=perm & ~Perm.INHERIT,
                topic_sys_flag=topic_sys_flag,
                topic_filter_type=template.topic_filter_type,
            )
            self.topics[topic] = config
            log.info("topic_created", topic=topic, default_topic=default_topic, queues=queues,
                     perm=config.perm)  # fmt: skip
            await self._changed(config)
        await self.registered()
        return config

    def _template(self, topic: str, default_topic: str) -> tuple[TopicConfig, int] | None:
        """The default topic and the permission it passes on, or None (logged) if it may
        not be inherited."""
        template = self.topics.get(default_topic)
        if template is None:
            log.warning("topic_create_failed", topic=topic, reason="default topic absent",
                        default_topic=default_topic)  # fmt: skip
            return None
        perm = template.perm
        if default_topic == AUTO_CREATE_TOPIC_KEY_TOPIC and not self._auto_create:
            perm = Perm.READ | Perm.WRITE  # compat: auto-create off strips the inherit bit
        if not Perm.inherited(perm):
            log.warning("topic_create_failed", topic=topic, reason="default topic not "
                        "inheritable", default_topic=default_topic, perm=perm)  # fmt: skip
            return None
        return template, perm

    async def create_plain(
        self,
        topic: str,
        queue_nums: int,
        perm: int,
        topic_sys_flag: int = 0,
        *,
        wait_registered: bool = True,
    ) -> TopicConfig:
        """createTopicInSendMessageBackMethod: retry and DLQ topics, no template. Without
        ``wait_registered`` the registration it starts is not awaited (the transaction
        topics: no client routes to them, and an op must not wait on a name server)."""
        async with self._lock:
            existing = self.topics.get(topic)
            if existing is not None:
                return existing
            config = TopicConfig(
                topic_name=topic,
                read_queue_nums=queue_nums,
                write_queue_nums=queue_nums,
                perm=perm,
                topic_sys_flag=topic_sys_flag,
            )
            self.topics[topic] = config
            log.info("topic_created", topic=topic, queues=queue_nums, perm=perm)
            await self._changed(config)
        if wait_registered:  # registered inline, as createTopicInSendMessageBackMethod does
            await self.registered()
        return config


async def _nothing_pending() -> None:
    return None


async def _nothing_to_replicate(_change: dict[str, Any]) -> None:
    return None


def describe(config: TopicConfig) -> str:
    """Java's TopicConfig.toString, used in remarks."""
    perm = "".join(c if config.perm & bit else "-" for c, bit in (("R", 4), ("W", 2), ("X", 1)))
    return (
        f"TopicConfig [topicName={config.topic_name}, readQueueNums={config.read_queue_nums}, "
        f"writeQueueNums={config.write_queue_nums}, perm={perm}, "
        f"topicFilterType={config.topic_filter_type}, topicSysFlag={config.topic_sys_flag}, "
        f"order={str(config.order).lower()}]"
    )
