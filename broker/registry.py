"""ClientRegistry: producer and consumer groups and the channels of their live clients
(ProducerManager, ConsumerManager). Pure state: the broker wires in the channel events and
sends the NOTIFY_CONSUMER_IDS_CHANGED requests this reports."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field

from aiorocketmq.remoting.protocol.heartbeat import ConsumerData, SubscriptionData


@dataclass(slots=True)
class ClientInfo:
    client_id: str
    addr: str
    language: str
    version: int
    last_update: float  # monotonic seconds


@dataclass(slots=True)
class ConsumerGroup:
    name: str
    clients: dict[Hashable, ClientInfo] = field(default_factory=dict)  # by channel
    subscriptions: dict[str, SubscriptionData] = field(default_factory=dict)  # by topic
    consume_type: str = "CONSUME_PASSIVELY"
    message_model: str = "CLUSTERING"
    consume_from_where: str = "CONSUME_FROM_LAST_OFFSET"

    def client_ids(self) -> list[str]:
        return sorted({c.client_id for c in self.clients.values()})


def _ignore(*_args: object) -> None:
    return None


class ClientRegistry:
    def __init__(self, expire_seconds: float = 120.0) -> None:
        self.expire_seconds = expire_seconds
        self.consumers: dict[str, ConsumerGroup] = {}
        self.producers: dict[str, dict[Hashable, ClientInfo]] = {}
        # ConsumerGroupEvent.REGISTER (every consumer heartbeat, with its subscriptions) and
        # UNREGISTER (a group's last client gone): the broker's filter registry listens
        self.on_register: Callable[[str, list[SubscriptionData]], None] = _ignore
        self.on_group_gone: Callable[[str], None] = _ignore
        # client id -> its channel, from every heartbeat (ProducerManager.clientChannelTable,
        # which holds producers only; ours takes consumers' heartbeats too)
        self._by_id: dict[str, Hashable] = {}
        self._ids_of: dict[Hashable, set[str]] = {}  # the reverse: a channel's client ids

    def register_consumer(self, data: ConsumerData, channel: Hashable, info: ClientInfo) -> bool:
        """A consumer's heartbeat; True when the group's membership or subscriptions changed."""
        group = self.consumers.get(data.group_name)
        if group is None:
            group = self.consumers[data.group_name] = ConsumerGroup(data.group_name)
        changed = channel not in group.clients
        group.clients[channel] = info
        self._name(info.client_id, channel)
        group.consume_type = data.consume_type
        group.message_model = data.message_model
        group.consume_from_where = data.consume_from_where
        changed = self._update_subscriptions(group, data.subscriptions) or changed
        self.on_register(data.group_name, data.subscriptions)
        return changed

    @staticmethod
    def _update_subscriptions(group: ConsumerGroup, subs: list[SubscriptionData]) -> bool:
        """ConsumerGroupInfo.updateSubscription: a topic's subscription is replaced only by a
        newer ``subVersion`` (members of one group heartbeat different versions); a new or a
        dropped topic is a change, a newer version alone is not."""
        table, changed = group.subscriptions, False
        for sub in subs:
            old = table.get(sub.topic)
            if old is None:
                table[sub.topic] = sub
                changed = True
            elif sub.sub_version > old.sub_version:
                table[sub.topic] = sub
        wanted = {sub.topic for sub in subs}
        for topic in [t for t in table if t not in wanted]:
            del table[topic]
            changed = True
        return changed

    def register_producer(self, group: str, channel: Hashable, info: ClientInfo) -> None:
        self.producers.setdefault(group, {})[channel] = info
        self._name(info.client_id, channel)

    def _name(self, client_id: str, channel: Hashable) -> None:
        old = self._by_id.get(client_id)
        if old == channel:
            return
        if old is not None:  # the id moved to a new connection (a reconnected client)
            self._ids_of[old].discard(client_id)
        self._by_id[client_id] = channel
        self._ids_of.setdefault(channel, set()).add(client_id)

    def find_client(self, client_id: str) -> Hashable | None:
        """ProducerManager.findChannel: the channel of the client whose last heartbeat (as a
        producer or, ours, a consumer) named ``client_id``; None if none is live."""
        return self._by_id.get(client_id)

    def unregister(
        self, channel: Hashable, consumer_group: str | None, producer_group: str | None
    ) -> list[str]:
        """UNREGISTER_CLIENT: returns the consumer groups whose membership changed."""
        if producer_group:
            self._drop_producer(producer_group, channel)
        changed = bool(consumer_group) and self._drop_consumer(consumer_group or "", channel)
        if not self._registered(channel):
            self._forget(channel)
        return [consumer_group] if changed and consumer_group else []

    def _registered(self, channel: Hashable) -> bool:
        return any(channel in members for members in self.producers.values()) or any(
            channel in group.clients for group in self.consumers.values()
        )

    def _forget(self, channel: Hashable) -> None:
        for client_id in self._ids_of.pop(channel, ()):
            del self._by_id[client_id]

    def _drop_producer(self, group: str, channel: Hashable) -> None:
        members = self.producers.get(group)
        if members is not None and members.pop(channel, None) is not None and not members:
            del self.producers[group]

    def _drop_consumer(self, name: str, channel: Hashable) -> bool:
        group = self.consumers.get(name)
        if group is None or group.clients.pop(channel, None) is None:
            return False
        if not group.clients:
            del self.consumers[name]
            self.on_group_gone(name)
        return True

    def channel_closed(self, channel: Hashable) -> list[str]:
        """Forget a channel everywhere; returns the consumer groups that lost a member."""
        for group in list(self.producers):
            self._drop_producer(group, channel)
        self._forget(channel)
        return [name for name in list(self.consumers) if self._drop_consumer(name, channel)]

    def expire(self, now: float) -> tuple[list[Hashable], list[str]]:
        """Channels silent for ``expire_seconds`` (to close) and the groups that lost them."""
        stale = {
            ch
            for members in self.producers.values()
            for ch, c in members.items()
            if now - c.last_update > self.expire_seconds
        }
        stale |= {
            ch
            for g in self.consumers.values()
            for ch, c in g.clients.items()
            if now - c.last_update > self.expire_seconds
        }
        changed: set[str] = set()
        for ch in stale:
            changed.update(self.channel_closed(ch))
        return list(stale), sorted(changed)

    def consumer_channels(self, name: str) -> list[Hashable]:
        group = self.consumers.get(name)
        return list(group.clients) if group is not None else []

    def find_consumer(self, name: str, client_id: str | None) -> tuple[Hashable, ClientInfo] | None:
        """ConsumerManager.findChannel: the channel of the group's client with that id."""
        group = self.consumers.get(name)
        if group is not None:
            for channel, info in group.clients.items():
                if info.client_id == client_id:
                    return channel, info
        return None

    def subscription(self, group: str, topic: str) -> SubscriptionData | None:
        info = self.consumers.get(group)
        return info.subscriptions.get(topic) if info is not None else None
