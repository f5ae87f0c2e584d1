"""ConsumerFilters: each group's SQL92 filter per topic, registered from its heartbeats with
the subscription's subVersion as its version (ConsumerFilterManager), persisted to
consumerFilter.json in Apache's shape (less the bloom filter data).

A filter outlives its group: when the group's last client leaves it is marked dead, and a
dead one is dropped ``filterDataCleanTimeSpan`` later (at a persist). A pull still finds a
dead filter, as in 4.9.8. On load every filter is taken as dead since 30 s ago: the
consumers' next heartbeats bring them back.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import structlog

from aiorocketmq.broker.configfile import ConfigFile, Snapshot
from aiorocketmq.broker.filter.compiled import Compiled, FilterError, is_tag_type
from aiorocketmq.broker.filter.memo import Memo
from aiorocketmq.remoting.errors import ConfigError
from aiorocketmq.remoting.protocol.heartbeat import SubscriptionData
from aiorocketmq.remoting.protocol.message import now_ms

log = structlog.get_logger(__name__)

DEAD_ON_LOAD_MS = 30_000  # ConsumerFilterManager.decode: "all consumers are dead when load"


@dataclass(slots=True, kw_only=True)
class FilterData:
    """ConsumerFilterData: one group's compiled expression for one topic."""

    group: str
    topic: str
    expression: str
    expression_type: str
    client_version: int
    born_time: int  # ms
    compiled: Memo  # .matches(properties)
    dead_time: int = 0  # ms; dead when >= born_time

    @property
    def dead(self) -> bool:
        return self.dead_time >= self.born_time

    def to_json(self) -> dict[str, Any]:
        return {
            "bornTime": self.born_time,
            "clientVersion": self.client_version,
            "consumerGroup": self.group,
            "dead": self.dead,  # fastjson writes isDead() too
            "deadTime": self.dead_time,
            "expression": self.expression,
            "expressionType": self.expression_type,
            "topic": self.topic,
        }


class ConsumerFilters(Snapshot):
    def __init__(
        self, file: ConfigFile, compiled: Compiled, *, clock: Callable[[], int] = now_ms
    ) -> None:
        self.file = file
        self.compiled = compiled
        self.clock = clock
        self.by_topic: dict[str, dict[str, FilterData]] = {}  # topic -> group -> filter

    def get(self, topic: str, group: str) -> FilterData | None:
        found = self.by_topic.get(topic)
        return found.get(group) if found is not None else None

    def of_group(self, group: str) -> list[FilterData]:
        return [f for groups in self.by_topic.values() if (f := groups.get(group)) is not None]

    # ------------------------------------------------------------ registration

    def register(self, group: str, subscriptions: Iterable[SubscriptionData]) -> None:
        """A heartbeat's subscriptions of ``group``: the SQL92 ones registered; the group's
        filters of topics it no longer names marked dead."""
        subs = list(subscriptions)
        for sub in subs:
            self._register(sub.topic, group, sub.sub_string, sub.expression_type,
                           sub.sub_version)  # fmt: skip
        named = {sub.topic for sub in subs}
        now = self.clock()
        for data in self.of_group(group):
            if data.topic not in named and not data.dead:
                data.dead_time = now
                self.mark_dirty()
                log.info("consumer_filter_dead", group=group, topic=data.topic)

    def _register(self, topic: str, group: str, expression: str, kind: str, version: int) -> None:
        """FilterDataMapByTopic.register: a newer version replaces a changed expression; the
        same version brings a dead filter back; an expression that no longer compiles
        removes the old one (the consumer's pulls then get FILTER_DATA_NOT_EXIST)."""
        if is_tag_type(kind) or not expression:
            return
        groups = self.by_topic.setdefault(topic, {})
        old = groups.get(group)
        if old is not None and version <= old.client_version:
            if version == old.client_version and old.dead:
                old.dead_time = 0
                self.mark_dirty()
            return
        if old is not None and old.expression == expression and old.expression_type == kind:
            old.client_version, old.dead_time = version, 0
            self.mark_dirty()
            return
        built = self._build(topic, group, expression, kind, version)
        if built is None:
            if groups.pop(group, None) is not None:
                self.mark_dirty()
            if not groups:
                del self.by_topic[topic]
            return
        groups[group] = built
        self.mark_dirty()
        log.info("consumer_filter_registered", group=group, topic=topic, version=version)

    def _build(
        self, topic: str, group: str, expression: str, kind: str, version: int
    ) -> FilterData | None:
        try:
            compiled = self.compiled.get(kind, expression)
        except FilterError as exc:
            log.warning("consumer_filter_unparsable", group=group, topic=topic, error=str(exc))
            return None
        return FilterData(
            group=group, topic=topic, expression=expression, expression_type=kind,
            client_version=version, born_time=self.clock(), compiled=compiled,
        )  # fmt: skip

    def unregister(self, group: str) -> None:
        """The group's last client left: its filters are marked dead (kept for a while)."""
        now = self.clock()
        for data in self.of_group(group):
            if not data.dead:
                data.dead_time = now
                self.mark_dirty()

    def clean(self, keep_dead_ms: int) -> None:
        """Drop filters dead for ``keep_dead_ms`` or more, and topics left without any."""
        now = self.clock()
        for topic, groups in list(self.by_topic.items()):
            for group, data in list(groups.items()):
                if data.dead and now - data.dead_time >= keep_dead_ms:
                    del groups[group]
                    self.mark_dirty()
                    log.info("consumer_filter_removed", group=group, topic=topic)
            if not groups:
                del self.by_topic[topic]

    # ------------------------------------------------------------ persistence

    def to_json(self) -> dict[str, Any]:
        return {
            "filterDataByTopic": {
                topic: {
                    "groupFilterData": {g: data.to_json() for g, data in groups.items()},
                    "topic": topic,
                }
                for topic, groups in self.by_topic.items()
            }
        }

    def load(self) -> None:
        """consumerFilter.json (ours or Apache's); every filter taken as dead 30 s ago. One
        that no longer compiles is left out (4.9.8 keeps it uncompiled and lets every
        message through)."""
        obj = self.file.load()
        if obj is None:
            return
        try:
            for topic, entry in (obj.get("filterDataByTopic") or {}).items():
                for group, raw in ((entry or {}).get("groupFilterData") or {}).items():
                    if raw:
                        self._load_one(str(topic), str(group), raw)
        except (ValueError, TypeError, AttributeError, KeyError) as exc:
            raise ConfigError(f"{self.file.path}: malformed consumer filters: {exc}") from exc

    def _load_one(self, topic: str, group: str, raw: dict[str, Any]) -> None:
        expression, kind = str(raw["expression"]), str(raw["expressionType"])
        try:
            compiled = self.compiled.get(kind, expression)
        except FilterError as exc:
            log.warning("consumer_filter_unparsable", group=group, topic=topic, error=str(exc))
            return
        born, dead = int(raw.get("bornTime", 0)), int(raw.get("deadTime", 0))
        if dead == 0:
            dead = max(born, self.clock() - DEAD_ON_LOAD_MS)
        self.by_topic.setdefault(topic, {})[group] = FilterData(
            group=group, topic=topic, expression=expression, expression_type=kind,
            client_version=int(raw.get("clientVersion", 0)), born_time=born,
            compiled=compiled, dead_time=dead,
        )  # fmt: skip
