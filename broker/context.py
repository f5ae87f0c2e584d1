"""BrokerContext: what the broker's processors share. ``config`` is replaced, never mutated,
when UPDATE_BROKER_CONFIG changes it, so processors read it through the context each time."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from broker.config import BrokerConfig
from broker.groups import SubscriptionGroups
from broker.stats import BrokerStats
from broker.store import MessageStore
from broker.store.config import StoreConfig
from broker.topics import TopicTable
from remoting.config import ServerConfig
from remoting.protocol.register import DataVersion


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
    config_version: DataVersion = field(default_factory=DataVersion)
    on_config_change: list[Callable[[], None]] = field(default_factory=list)
    # awaits the registration a topic change started (Java registers before answering)
    topic_registered: Callable[[], Awaitable[None]] = _nothing_pending
