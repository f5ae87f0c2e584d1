"""ClientInstance: what producers and consumers of one process share per name-server list and
instance name (Java's MQClientInstance): the connections, the routes, heartbeats.

Routes are fetched on first use and refreshed every ``pollNameServerInterval`` (30 s);
every ``heartbeatBrokerInterval`` (30 s) each master of a known route gets a heartbeat
naming the instance's producer groups.

Ours (issue 35 item 3): a request that fails at a broker (its connection drops or cannot be
made, it times out, a SERVICE_NOT_AVAILABLE answer: a slave, a stopping broker) or a pull
that finds no master in the route has the routes through that broker fetched again at once
-- one fetch in flight per topic, at most one per ``ROUTE_RETRY_SECONDS`` -- so producers,
consumers and offset commits follow a broker group's master to its new address within a
second of the name servers knowing it, not at the next 30 s poll (Java waits for the poll).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import socket
import time
from collections.abc import Callable
from typing import ClassVar, Protocol

from aiorocketmq.client.core import api
from aiorocketmq.client.core.errors import (
    MQBrokerError,
    MQClientError,
    MQConnectionError,
    MQTimeoutError,
    like,
)
from aiorocketmq.client.core.publish import PublishInfo
from aiorocketmq.client.core.requests import Answer, CheckNotice, ClientRequests, Notice
from aiorocketmq.client.core.security import NONE, Security
from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.config import ClientConfig
from aiorocketmq.remoting.log import get_logger
from aiorocketmq.remoting.protocol.codes import ResponseCode as R
from aiorocketmq.remoting.protocol.codes import SerializeType
from aiorocketmq.remoting.protocol.heartbeat import ConsumerData
from aiorocketmq.remoting.protocol.route import MASTER_ID, TopicRouteData
from aiorocketmq.remoting.tasks import every

log = get_logger(__name__)

NAMESRV_ENV = "NAMESRV_ADDR"
DOWN_AVOID_SECONDS = 30.0  # a dropped broker is avoided this long unless it answers a probe
ROUTE_RETRY_SECONDS = 0.5  # a topic's route is fetched after a failure at most this often


class ConsumerHandle(Protocol):
    """What the instance asks of each consumer of the process (MQConsumerInner)."""

    def consumer_data(self) -> ConsumerData: ...
    def subscribed_topics(self) -> set[str]: ...
    def route_changed(self, topic: str, route: TopicRouteData) -> None: ...


def namesrv_list(addr: str | None) -> list[str]:
    """ "host:port;host:port" from the argument, else from NAMESRV_ADDR."""
    text = addr if addr is not None else os.environ.get(NAMESRV_ENV, "")
    addrs = [a.strip() for a in text.split(";") if a.strip()]
    if not addrs:
        raise MQClientError(
            "no name server address: pass namesrv_addr='host:9876' or set NAMESRV_ADDR"
        )
    return addrs


def local_ip() -> str:
    """The address other hosts see (RemotingUtil.getLocalAddress), else 127.0.0.1."""
    with contextlib.suppress(OSError), socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.connect(("10.255.255.255", 1))  # no packet is sent: this only picks a route
        return str(s.getsockname()[0])
    return "127.0.0.1"


class ClientInstance:
    """Create through ``ClientInstance.acquire``; each user calls ``release`` when done.

    Every request goes out through ``remoting`` (the RemotingClient behind the SDK's edge),
    which signs it with the instance's credentials and speaks TLS with its context
    (``security``); answers to what brokers ask (``requests``) are not signed, as Java's
    AclClientRPCHook signs only what the client sends as a request."""

    # one per event loop, name-server list, instance name, header type and security (the
    # credentials and TLS context: clients that sign differently never share connections)
    _shared: ClassVar[dict[tuple[object, ...], ClientInstance]] = {}

    def __init__(
        self,
        namesrv_addrs: list[str],
        instance_name: str,
        serialize_type: SerializeType,
        *,
        poll_interval: float = 30.0,
        heartbeat_interval: float = 30.0,
        security: Security = NONE,
    ) -> None:
        self.namesrv_addrs = namesrv_addrs
        self.security = security
        name = instance_name if instance_name != "DEFAULT" else f"{os.getpid()}#{time.time_ns()}"
        self.client_id = f"{local_ip()}@{name}"  # ClientConfig.buildMQClientId
        self.requests = ClientRequests()  # what brokers ask this process (consumers plug in)
        # the SDK's edge (api.Remote): remoting failures come out as MQClientError subclasses
        self.remoting = api.Remote(
            RemotingClient(
                ClientConfig(serialize_type=serialize_type),
                self.requests.routes(),
                credentials=security.credentials,
                tls=security.tls,
            )
        )
        self.publish: dict[str, PublishInfo] = {}
        self.producer_groups: set[str] = set()
        self.consumers: dict[str, ConsumerHandle] = {}  # by group
        self.brokers: dict[str, dict[int, str]] = {}  # brokerAddrTable: name -> id -> addr
        self._intervals = (poll_interval, heartbeat_interval)
        self._loops: list[asyncio.Task[None]] = []
        self._users = 0
        self._key: tuple[object, ...] | None = None
        self._ns_index = 0
        # ours: brokers whose connection dropped, avoided by every producer at once (until)
        self.down: dict[str, float] = {}
        # brokers that took a heartbeat on their current connection: they can push to us
        # (a request's reply, 326, finds us by the client id of our heartbeats)
        self.heard_by: set[str] = set()
        self._probes: dict[str, asyncio.Task[None]] = {}
        # the last route fetched of each topic; fetches a failure asked for (in flight, when
        # the last one began, how many so far)
        self.routes: dict[str, TopicRouteData] = {}
        self._refreshing: dict[str, asyncio.Task[None]] = {}
        self._refreshed_at: dict[str, float] = {}
        self.route_refreshes = 0
        self.remoting.failed = self.broker_failed
        self.remoting.add_close_listener(self._connection_lost)
        self.remoting.add_connect_listener(self._connected)

    @classmethod
    def acquire(
        cls,
        namesrv_addrs: list[str],
        instance_name: str,
        serialize_type: SerializeType,
        *,
        poll_interval: float = 30.0,
        heartbeat_interval: float = 30.0,
        security: Security = NONE,
    ) -> ClientInstance:
        """The process's instance for these settings (its first user's intervals apply)."""
        loop = asyncio.get_running_loop()
        key = (loop, tuple(namesrv_addrs), instance_name, serialize_type, *security.key())
        inst = cls._shared.get(key)
        if inst is None:
            inst = cls(
                namesrv_addrs, instance_name, serialize_type,
                poll_interval=poll_interval, heartbeat_interval=heartbeat_interval,
                security=security,
            )  # fmt: skip
            cls._shared[key] = inst
            inst._key = key
        inst._users += 1
        if not inst._loops:
            poll, beat = inst._intervals
            inst._loops = [
                loop.create_task(every(poll, inst.refresh_routes, name="routes")),
                loop.create_task(every(beat, inst.heartbeat_all, name="heartbeat")),
            ]
        return inst

    async def release(self) -> None:
        self._users -= 1
        if self._users > 0:
            return
        if self._key is not None and ClientInstance._shared.get(self._key) is self:
            del ClientInstance._shared[self._key]
        tasks = [*self._loops, *self._refreshing.values()]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._loops = []
        await self.remoting.close()

    # ------------------------------------------------------------ routes

    async def fetch_route(self, topic: str, timeout: float) -> TopicRouteData | None:
        """The topic's route from a name server (None when it has none), trying each;
        MQConnectionError when none of them answered."""
        error: Exception | None = None
        n, first = len(self.namesrv_addrs), self._ns_index
        for i in range(n):
            addr = self.namesrv_addrs[(first + i) % n]
            try:
                route = api.parse_route(
                    await self.remoting.invoke(addr, api.get_route(topic), timeout), addr
                )
                for b in route.broker_datas:
                    self.brokers[b.broker_name] = dict(b.broker_addrs)
                self.routes[topic] = route
                return route
            except MQBrokerError as exc:
                if exc.code == R.TOPIC_NOT_EXIST:
                    return None
                error = exc
            except MQClientError as exc:  # the next call starts with the next name server
                error = exc
                self._ns_index = (first + i + 1) % n
        message = f"no name server answered for topic {topic}: {error}"
        if not isinstance(error, MQBrokerError):  # none answered at all
            where = f"{message} (name servers: {';'.join(self.namesrv_addrs)})"
            if isinstance(error, MQTimeoutError):  # the last one was slow: a timeout, as it
                raise like(error, where) from error
            raise MQConnectionError(where) from error
        raise MQClientError(message) from error

    async def topic_list(self, timeout: float = 3.0) -> list[str]:
        """Every topic the name servers know (the first that answers)."""
        error: Exception | None = None
        for addr in self.namesrv_addrs:
            try:
                resp = await self.remoting.invoke(addr, api.all_topics(), timeout)
                return api.parse_topic_list(resp, addr)
            except MQClientError as exc:
                error = exc
        raise like(error, f"no name server listed the topics: {error}") from error

    def remember_route(self, topic: str, route: TopicRouteData) -> None:
        """A route a producer fetched itself, kept fresh by the route polling from now on."""
        self.publish[topic] = PublishInfo.from_route(topic, route)

    def cached_publish_info(self, topic: str) -> PublishInfo | None:
        """The cached route with queues, if any: a send's fast path, without a coroutine."""
        info = self.publish.get(topic)
        return info if info is not None and info.queues else None

    async def publish_info(self, topic: str, timeout: float) -> PublishInfo:
        """Cached, else fetched; a topic without a route is sent along TBW102's route so a
        broker creates it (updateTopicRouteInfoFromNameServer with isDefault)."""
        info = self.cached_publish_info(topic)
        if info is not None:
            return info
        route = await self.fetch_route(topic, timeout)
        if route is None:
            route = await self.fetch_route(api.AUTO_CREATE_TOPIC, timeout)
            if route is None:
                raise MQClientError(
                    f"No route info of this topic: {topic}; create it (mqadmin updateTopic) "
                    "or enable autoCreateTopicEnable on the brokers"
                )
            for qd in route.queue_datas:
                qd.write_queue_nums = min(qd.write_queue_nums, api.DEFAULT_TOPIC_QUEUE_NUMS)
            info = PublishInfo.from_route(topic, route)
            info.via_default = True  # not cached: the real route replaces it once it exists
            return info
        info = self.publish[topic] = PublishInfo.from_route(topic, route)
        return info

    async def refresh_routes(self) -> None:
        """updateTopicRouteInfoFromNameServer: producers' topics and consumers' subscriptions."""
        for topic in list(self.publish):
            with contextlib.suppress(MQClientError):
                route = await self.fetch_route(topic, 3.0)
                if route is not None:
                    self.publish[topic] = PublishInfo.from_route(topic, route)
        for consumer in list(self.consumers.values()):
            for topic in consumer.subscribed_topics():
                with contextlib.suppress(MQClientError):
                    route = await self.fetch_route(topic, 3.0)
                    if route is not None:
                        consumer.route_changed(topic, route)

    def broker_failed(self, addr: str) -> None:
        """A request to ``addr`` failed (api.Remote.failed, the producer's send path) or its
        connection dropped: the routes through it are fetched again now."""
        for topic, route in list(self.routes.items()):
            if any(addr in b.broker_addrs.values() for b in route.broker_datas):
                self.route_suspect(topic)

    def route_suspect(self, topic: str) -> None:
        """Fetch ``topic``'s route again soon: at once, or ``ROUTE_RETRY_SECONDS`` after the
        last such fetch began; nothing if one is on its way."""
        if topic in self._refreshing or not self._loops:
            return
        task = asyncio.get_running_loop().create_task(self._refresh(topic))
        self._refreshing[topic] = task
        task.add_done_callback(lambda _t: self._refreshing.pop(topic, None))

    async def _refresh(self, topic: str) -> None:
        loop = asyncio.get_running_loop()
        pause = self._refreshed_at.get(topic, -ROUTE_RETRY_SECONDS) + ROUTE_RETRY_SECONDS
        if pause > loop.time():
            await asyncio.sleep(pause - loop.time())
        self._refreshed_at[topic] = loop.time()
        self.route_refreshes += 1
        try:
            route = await self.fetch_route(topic, 3.0)
        except MQClientError as exc:
            log.info("route_refresh_failed", topic=topic, error=str(exc))
            return
        if route is None:
            return  # the name servers know no broker of it now: keep what we had
        if topic in self.publish:
            self.publish[topic] = PublishInfo.from_route(topic, route)
        for consumer in list(self.consumers.values()):
            if topic in consumer.subscribed_topics():
                consumer.route_changed(topic, route)
        # a broker new to us (the group's new master) learns our groups now, not at the next
        # 30 s heartbeat: it refuses a consumer's pulls until it knows the group
        addrs = {a for b in route.broker_datas for a in b.broker_addrs.values()}
        await self._heartbeat_to(sorted(addrs - self.heard_by), 3.0)

    async def master_addr(self, broker_name: str, topic: str) -> str:
        """The master of ``broker_name`` (findBrokerAddressInPublish), refreshing ``topic``'s
        route once when it is unknown."""
        addr = self.brokers.get(broker_name, {}).get(MASTER_ID)
        if addr is None:
            with contextlib.suppress(MQClientError):
                await self.fetch_route(topic, 3.0)
            addr = self.brokers.get(broker_name, {}).get(MASTER_ID)
        if addr is None:
            raise MQClientError(f"The broker[{broker_name}] not exist (no master in the route)")
        return addr

    def subscribe_addr(self, broker_name: str, broker_id: int) -> tuple[str, bool] | None:
        """findBrokerAddressInSubscribe: that broker id, else any of the group (master
        first); ``(addr, is_slave)``."""
        addrs = self.brokers.get(broker_name)
        if not addrs:
            return None
        if broker_id in addrs:
            return addrs[broker_id], broker_id != MASTER_ID
        bid = MASTER_ID if MASTER_ID in addrs else min(addrs)
        return addrs[bid], bid != MASTER_ID

    async def consumer_ids(self, topic: str, group: str, route: TopicRouteData) -> list[str] | None:
        """GET_CONSUMER_LIST_BY_GROUP (38) to one broker of the topic (findConsumerIdList:
        a random broker group, its master if it has one)."""
        if not route.broker_datas:
            return None
        broker = random.choice(route.broker_datas)
        addrs = broker.broker_addrs
        addr = addrs.get(MASTER_ID) or (addrs[min(addrs)] if addrs else None)
        if addr is None:
            return None
        try:
            resp = await self.remoting.invoke(addr, api.consumer_list(group), 3.0)
            return api.parse_consumer_list(resp, addr)
        except MQClientError as exc:
            log.info("consumer_list_failed", group=group, broker=addr, error=str(exc))
            return None

    # ------------------------------------------------------------ heartbeats

    def masters(self) -> set[str]:
        return {
            b.master_addr
            for info in self.publish.values()
            for b in info.route.broker_datas
            if b.master_addr is not None
        } | {addrs[MASTER_ID] for addrs in self.brokers.values() if MASTER_ID in addrs}

    async def heartbeat_all(self) -> None:
        """sendHeartbeatToAllBroker: to masters, and to slaves too when there are consumers."""
        if not self.producer_groups and not self.consumers:
            return
        consumers = [c.consumer_data() for c in list(self.consumers.values())]
        request = api.heartbeat(
            self.client_id, producers=sorted(self.producer_groups), consumers=consumers
        )
        targets = self.masters()
        if consumers:
            targets |= {a for addrs in self.brokers.values() for a in addrs.values()}
        for addr in sorted(targets):
            try:
                await self.remoting.invoke(addr, request, 3.0)
            except MQClientError as exc:
                log.info("heartbeat_failed", broker=addr, error=str(exc))
            else:
                self.heard_by.add(addr)

    async def make_heard(self, timeout: float) -> None:
        """A heartbeat, at once, to each master that has not had one on its connection
        (DefaultMQProducerImpl.prepareSendRequest's sendHeartbeatToAllBrokerWithLock): a
        broker pushes a request's reply only to a client whose heartbeat it has."""
        missing = [a for a in self.masters() if a not in self.heard_by and not self.is_down(a)]
        await self._heartbeat_to(missing, timeout)

    async def _heartbeat_to(self, missing: list[str], timeout: float) -> None:
        if not missing or (not self.producer_groups and not self.consumers):
            return
        consumers = [c.consumer_data() for c in list(self.consumers.values())]
        request = api.heartbeat(
            self.client_id, producers=sorted(self.producer_groups), consumers=consumers
        )

        async def beat(addr: str) -> None:
            try:
                await self.remoting.invoke(addr, request, timeout)
            except MQClientError as exc:
                log.info("heartbeat_failed", broker=addr, error=str(exc))
            else:
                self.heard_by.add(addr)

        await asyncio.gather(*(beat(a) for a in sorted(missing)))

    # ------------------------------------------------------------ who uses the instance

    def register_consumer(
        self,
        group: str,
        consumer: ConsumerHandle,
        *,
        ids_changed: Callable[[], None],
        reset_offset: Notice | None = None,
        answers: dict[int, Answer] | None = None,
    ) -> None:
        """MQClientInstance.registerConsumer: one consumer per group, with what it answers
        brokers for the group (NOTIFY_CONSUMER_IDS_CHANGED, RESET_CONSUMER_CLIENT_OFFSET,
        ``answers`` by request code); MQClientError if the group has a consumer here."""
        if group in self.consumers:
            raise MQClientError(
                f"The consumer group[{group}] has been created before, specify another name "
                "please (or another instance_name for a second consumer of the group in this "
                "process)."
            )
        self.consumers[group] = consumer
        self.requests.plug_consumer(group, ids_changed, reset_offset, answers or {})

    def register_producer(self, group: str) -> None:
        """registerProducer: the group is named in every heartbeat from now on."""
        self.producer_groups.add(group)

    def register_check_listener(self, group: str, check: CheckNotice) -> None:
        """The transaction producer answering CHECK_TRANSACTION_STATE for ``group``;
        MQClientError if one already does here."""
        if group in self.requests.check_transaction:
            raise MQClientError(
                f"The producer group[{group}] has been created before, specify another name please."
            )
        self.requests.check_transaction[group] = check

    def unregister_check_listener(self, group: str, check: CheckNotice) -> None:
        if self.requests.check_transaction.get(group) == check:
            del self.requests.check_transaction[group]

    async def unregister_consumer(self, group: str) -> None:
        """UNREGISTER_CLIENT for a consumer group to every broker, best effort."""
        self.consumers.pop(group, None)
        self.requests.unplug_consumer(group)
        request = api.unregister_client(self.client_id, consumer_group=group)
        for addr in sorted({a for addrs in self.brokers.values() for a in addrs.values()}):
            with contextlib.suppress(MQClientError):
                await self.remoting.invoke(addr, request, 3.0)

    async def unregister_producer(self, group: str) -> None:
        """UNREGISTER_CLIENT to every master (unregisterClientWithLock), best effort."""
        self.producer_groups.discard(group)
        request = api.unregister_client(self.client_id, producer_group=group)
        for addr in self.masters():
            with contextlib.suppress(MQClientError):
                await self.remoting.invoke(addr, request, 3.0)

    async def create_on_every_master(self, info: PublishInfo, timeout: float) -> None:
        """Ours (seed 000's warning): a topic auto-created by its first send exists only on
        the broker that took it, and its route then stays there. Create it on every master of
        TBW102's route at once, as ``mqadmin updateTopic -c`` would; best effort."""
        queues = max((qd.write_queue_nums for qd in info.route.queue_datas), default=0)
        request = api.create_topic(info.topic, queues)
        for broker in info.route.broker_datas:
            if broker.master_addr is not None:
                try:
                    resp = await self.remoting.invoke(broker.master_addr, request, timeout)
                except MQClientError as exc:
                    log.info("create_topic_failed", topic=info.topic, broker=broker.master_addr,
                             error=str(exc))  # fmt: skip
                    continue
                if resp.code != R.SUCCESS:
                    log.info("create_topic_refused", topic=info.topic, code=resp.code,
                             remark=resp.remark)  # fmt: skip
        self.publish.pop(info.topic, None)

    # ------------------------------------------------------------ brokers that dropped

    def is_down(self, addr: str | None) -> bool:
        until = self.down.get(addr) if addr is not None else None
        return until is not None and until > time.monotonic()

    def _connection_lost(self, addr: str) -> None:
        """A broker's connection dropped: avoid it now (Java keeps choosing it until the next
        route refresh), and probe it, since an idle close by a healthy broker drops too."""
        self.heard_by.discard(addr)  # a new connection is unknown to the broker until a beat
        self.broker_failed(addr)  # its group's master may have moved: ask at once
        if addr not in self.masters():
            return
        self.down[addr] = time.monotonic() + DOWN_AVOID_SECONDS
        if addr not in self._probes and self._loops:
            task = asyncio.get_running_loop().create_task(self._probe(addr))
            self._probes[addr] = task
            task.add_done_callback(lambda _t: self._probes.pop(addr, None))

    def _connected(self, addr: str) -> None:
        self.down.pop(addr, None)

    async def _probe(self, addr: str) -> None:
        """One heartbeat: a broker that answers is usable again (``_connected``)."""
        request = api.heartbeat(self.client_id, producers=sorted(self.producer_groups))
        with contextlib.suppress(MQClientError):
            await self.remoting.invoke(addr, request, 3.0)
