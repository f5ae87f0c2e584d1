"""BrokerContext: what the broker's processors share. ``config`` and ``store_config`` are
replaced, never mutated, when UPDATE_BROKER_CONFIG changes them (broker.settings), so
processors read them through the context each time."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

from aiorocketmq.broker.config import BrokerConfig
from aiorocketmq.broker.groups import SubscriptionGroups
from aiorocketmq.broker.refusals import EdgeRefusals
from aiorocketmq.broker.stats import BrokerStats
from aiorocketmq.broker.store import MessageStore
from aiorocketmq.broker.store.config import StoreConfig
from aiorocketmq.broker.topics import TopicTable
from aiorocketmq.remoting.config import ServerConfig
from aiorocketmq.remoting.protocol.register import DataVersion


async def _nothing_pending() -> None:
    return None


@dataclass(slots=True, kw_only=True)
class BrokerContext:
    config: BrokerConfig
    store_config: StoreConfig
    server_config: ServerConfig
    store: MessageStore
    topics: TopicTable
    groups: SubscriptionGroups
    stats: BrokerStats
    addr: str  # "brokerIP1:port", as clients dial it and stored messages name it
    config_file: Path  # where UPDATE_BROKER_CONFIG persists (the -c file, as Java's)
    config_version: DataVersion = field(default_factory=DataVersion)
    # called with the keys each UPDATE_BROKER_CONFIG accepted
    on_config_change: list[Callable[[frozenset[str]], None]] = field(default_factory=list)
    # awaits the registration a topic change started (Java registers before answering)
    topic_registered: Callable[[], Awaitable[None]] = _nothing_pending
    # answers (and rate-limited warnings) for requests refused at the edge
    refusals: EdgeRefusals = field(default_factory=EdgeRefusals)
    # 4.9.8 keys GET_BROKER_CONFIG shows whose value is known from elsewhere (java_keys.facts)
    reported: dict[str, str] = field(default_factory=dict)
