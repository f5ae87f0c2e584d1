"""Registrar: what the broker registers with the name servers, and when (BrokerController
registerBrokerAll and registerIncrementBrokerData).

The whole table goes at start, every registerNameServerPeriod, after a deletion and after a
brokerPermission change. A created or updated topic goes alone, at once (an increment: a
REGISTER_BROKER whose table holds just the changed topics, with the table's new data
version), so a create costs the same at 10 topics or 100,000 (issue 29, N6). Changes made
while a round is on the wire go together in the next one; rounds never overlap, so a name
server sees them in order.

A name server that missed an increment (a timeout, a restart, one started later) must still
end up with every topic. It takes a whole table only if the data version differs from the
one it last recorded (RouteInfoManager.registerBroker), and it records an increment's
version too, so a full registration carrying the version an increment carried would be
skipped there. The rule here: a full registration never carries a version an increment
carried; if the table's version is one, it is bumped first (and, after a restart, the
loaded version may have been sent in an increment, so the first full registration bumps
it too). Every name server then rebuilds the broker's topics at the next full registration,
whatever it missed, Java's or ours, with no change to the protocol (docs/compatibility.md).
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Sequence
from typing import Final

import structlog

from aiorocketmq.broker.namesrv_api import BrokerIdentity, NamesrvAPI
from aiorocketmq.broker.topics import TopicTable
from aiorocketmq.remoting.protocol.message import now_ms
from aiorocketmq.remoting.protocol.register import DataVersion, TopicConfigWrapper
from aiorocketmq.remoting.protocol.topic import TRANS_OP_HALF_TOPIC, Perm, TopicConfig

log = structlog.get_logger(__name__)

# compat: TransactionalMessageBridge writes RMQ_SYS_TRANS_OP_HALF_TOPIC straight into the store,
# never through TopicConfigManager, so 4.9.8's table never holds it and no name server routes
# it (DefaultMessageStore.cleanUnusedTopic spares its queues by name for that reason). Ours
# keeps it in the broker's table (pulls and admin requests read it) and leaves it out here.
NOT_REGISTERED: Final = frozenset({TRANS_OP_HALF_TOPIC})


class Registrar:
    def __init__(
        self,
        namesrv: NamesrvAPI,
        topics: TopicTable,
        identity: Callable[[], BrokerIdentity],
        permission: Callable[[], int],
    ) -> None:
        self.namesrv = namesrv
        self.topics = topics
        self._identity = identity
        self._permission = permission
        self._full = False  # the next round registers the whole table
        self._names: set[str] = set()  # topics the next round registers, if not full
        self._next: asyncio.Future[None] | None = None  # done when the next round is
        self._latest: asyncio.Future[None] | None = None  # the last round asked for
        self._task: asyncio.Task[None] | None = None
        self._closed = False  # unregistered: changes made while draining register nowhere
        self.rounds = 0  # registration rounds made (full or increment)
        # the version the last increment carried (the loaded one may have been)
        self._increment_version: DataVersion | None = topics.data_version

    def changed(self, names: Sequence[str] | None) -> None:
        """Register ``names`` (None: the whole table) in the next round, starting it."""
        if names is None:
            self._full = True
        else:
            self._names.update(names)
        self._ask()

    async def register_all(self) -> None:
        """The whole table, in a round of its own (at start and periodically)."""
        self._full = True
        await asyncio.shield(self._ask())

    async def wait(self) -> None:
        """Until the round that takes the changes made so far is done."""
        latest = self._latest
        if latest is not None and not latest.done():
            await asyncio.shield(latest)

    def _ask(self) -> asyncio.Future[None]:
        loop = asyncio.get_running_loop()
        if self._closed:
            closed = loop.create_future()
            closed.set_result(None)
            return closed
        if self._next is None:
            self._next = loop.create_future()
        self._latest = self._next
        if self._task is None or self._task.done():
            self._task = loop.create_task(self._rounds(), name="register_broker")
        return self._next

    async def _rounds(self) -> None:
        try:
            while self._next is not None:
                done, self._next = self._next, None
                full, names = self._full, self._names
                self._full, self._names = False, set()
                self.rounds += 1
                try:
                    await (self._register_full() if full else self._register_increment(names))
                except ValueError as exc:  # a body that cannot be encoded: a bug, say so
                    log.error("register_broker_unencodable", full=full, error=str(exc))
                finally:
                    done.set_result(None)
        finally:  # stopped, or a bug: waiters answer rather than hang
            for future in (self._next, self._latest):
                if future is not None and not future.done():
                    future.set_result(None)

    async def _register_full(self) -> None:
        topics = self.topics
        if topics.data_version == self._increment_version:
            topics.data_version = topics.data_version.next(now_ms())
        wrapper = advertised(unrouted(topics.wrapper()), self._permission())
        accepted = await self.namesrv.register_all(self._identity(), wrapper)
        log.debug("broker_registered", namesrv=accepted, of=len(self.namesrv.addrs),
                  topics=len(wrapper.topic_config_table))  # fmt: skip

    async def _register_increment(self, names: set[str]) -> None:
        topics = self.topics
        table = {
            name: config
            for name in names - NOT_REGISTERED
            if (config := topics.get(name)) is not None
        }
        if not table:
            return
        if topics.data_version == self._increment_version:
            # the last increment carried it: it was read while the next change, this one,
            # was being written (the version moves before the journal write). Sent again, it
            # would be skipped by every name server (same version): bump it
            topics.data_version = topics.data_version.next(now_ms())
        version = self._increment_version = topics.data_version
        wrapper = TopicConfigWrapper(topic_config_table=table, data_version=version)
        accepted = await self.namesrv.register_all(
            self._identity(), advertised(wrapper, self._permission())
        )
        log.debug("broker_registered_increment", namesrv=accepted, of=len(self.namesrv.addrs),
                  topics=len(table))  # fmt: skip

    async def close(self) -> None:
        """Stop registering (the broker is unregistering)."""
        self._closed = True
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)


def unrouted(wrapper: TopicConfigWrapper) -> TopicConfigWrapper:
    """``wrapper`` without the topics 4.9.8 never registers (NOT_REGISTERED)."""
    table = wrapper.topic_config_table
    if not NOT_REGISTERED & table.keys():
        return wrapper
    kept = {name: config for name, config in table.items() if name not in NOT_REGISTERED}
    return dataclasses.replace(wrapper, topic_config_table=kept)


def advertised(wrapper: TopicConfigWrapper, broker_permission: int) -> TopicConfigWrapper:
    """BrokerController.registerBrokerAll: unless the broker is readable and writable, every
    topic is registered with the broker's permission (and, as there, the other fields at
    their defaults), so producers stop routing here (perm 4) or consumers stop pulling."""
    if Perm.readable(broker_permission) and Perm.writeable(broker_permission):
        return wrapper
    table = {
        name: TopicConfig(
            topic_name=name,
            read_queue_nums=t.read_queue_nums,
            write_queue_nums=t.write_queue_nums,
            perm=broker_permission,
        )
        for name, t in wrapper.topic_config_table.items()
    }
    return dataclasses.replace(wrapper, topic_config_table=table)
