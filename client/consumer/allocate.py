"""Sharing a topic's queues among the clients of a consumer group: Java 4.9.8's
AllocateMessageQueueStrategy implementations as pure functions (no I/O, no state).

Every client of a group runs the same strategy over the same sorted lists (``allocate`` sorts
them as RebalanceImpl.rebalanceByTopic does), so the shares are disjoint and cover every queue
without any coordination. ``STRATEGIES`` maps Java's ``getName()`` strings to the functions.
"""

from __future__ import annotations

import hashlib
from bisect import bisect_left
from collections.abc import Callable, Iterable, Sequence
from typing import Final, TypeAlias

from aiorocketmq.remoting.log import get_logger
from aiorocketmq.remoting.protocol.heartbeat import MessageQueue

log = get_logger(__name__)

Group: TypeAlias = str
ClientId: TypeAlias = str
Strategy: TypeAlias = Callable[
    [Group, ClientId, Sequence[MessageQueue], Sequence[ClientId]], list[MessageQueue]
]
HashFunction: TypeAlias = Callable[[str], int]

VIRTUAL_NODE_COUNT: Final = 10  # AllocateMessageQueueConsistentHash()


def _check(
    group: Group, current_cid: ClientId, mq_all: Sequence[MessageQueue], cid_all: Sequence[ClientId]
) -> bool:
    """AbstractAllocateMessageQueueStrategy.check: False when this client is not a member.

    Raises:
        ValueError: ``current_cid``, ``mq_all`` or ``cid_all`` is empty, where Java throws
            IllegalArgumentException (RebalanceImpl then logs it and keeps its queues).
    """
    if not current_cid:
        raise ValueError("currentCID is empty")
    if not mq_all:
        raise ValueError("mqAll is null or mqAll empty")
    if not cid_all:
        raise ValueError("cidAll is null or cidAll empty")
    if current_cid not in cid_all:
        log.info("consumer_id_not_in_cid_all", group=group, client_id=current_cid,
                 cid_all=list(cid_all))  # fmt: skip
        return False
    return True


def allocate_averagely(
    consumer_group: Group,
    current_cid: ClientId,
    mq_all: Sequence[MessageQueue],
    cid_all: Sequence[ClientId],
) -> list[MessageQueue]:
    """AllocateMessageQueueAveragely ("AVG"): contiguous blocks of n // m queues, the first
    n % m clients one more; with fewer queues than clients the last clients get none."""
    if not _check(consumer_group, current_cid, mq_all, cid_all):
        return []
    n, m = len(mq_all), len(cid_all)
    index = cid_all.index(current_cid)  # the first occurrence, as Java's indexOf
    mod = n % m
    bigger = mod > 0 and index < mod
    size = 1 if n <= m else n // m + (1 if bigger else 0)
    start = index * size if bigger else index * size + mod
    return [mq_all[(start + i) % n] for i in range(min(size, n - start))]


def allocate_averagely_by_circle(
    consumer_group: Group,
    current_cid: ClientId,
    mq_all: Sequence[MessageQueue],
    cid_all: Sequence[ClientId],
) -> list[MessageQueue]:
    """AllocateMessageQueueAveragelyByCircle ("AVG_BY_CIRCLE"): queue i goes to client
    i % m, round robin."""
    if not _check(consumer_group, current_cid, mq_all, cid_all):
        return []
    index, m = cid_all.index(current_cid), len(cid_all)
    return [mq_all[i] for i in range(index, len(mq_all), m)]


def md5_hash(key: str) -> int:
    """ConsistentHashRouter.MD5Hash: the first 4 bytes of MD5(key), big-endian, unsigned."""
    # compat: String.getBytes() in the platform charset, UTF-8 on Linux; a lone surrogate
    # becomes "?" as Java's encoder writes it
    data = key.encode("utf-8", "replace")
    return int.from_bytes(hashlib.md5(data, usedforsecurity=False).digest()[:4], "big")


class ConsistentHashRouter:
    """ConsistentHashRouter over client ids: each id is placed on the ring at the hashes of
    its virtual nodes ``f"{cid}-{i}"``; a key goes to the first node at or after its hash,
    wrapping to the smallest."""

    __slots__ = ("_hash", "_hashes", "_owners")

    def __init__(
        self,
        cids: Iterable[ClientId],
        virtual_node_count: int = VIRTUAL_NODE_COUNT,
        hash_function: HashFunction = md5_hash,
    ) -> None:
        if virtual_node_count < 0:
            raise ValueError(f"illegal virtualNodeCnt :{virtual_node_count}")
        ring: dict[int, ClientId] = {}
        replicas: dict[ClientId, int] = {}  # virtual nodes on the ring per id
        for cid in cids:
            # addNode: a repeated id continues numbering after the replicas it already has
            existing = replicas.get(cid, 0)
            for i in range(virtual_node_count):
                h = hash_function(f"{cid}-{i + existing}")
                replaced = ring.get(h)
                if replaced is not None:  # TreeMap.put: the later node takes the slot
                    replicas[replaced] -= 1
                ring[h] = cid
                replicas[cid] = replicas.get(cid, 0) + 1
        self._hashes = sorted(ring)
        self._owners = [ring[h] for h in self._hashes]
        self._hash = hash_function

    def route_node(self, key: str) -> ClientId | None:
        """The owner of ``key``; None on an empty ring."""
        if not self._hashes:
            return None
        i = bisect_left(self._hashes, self._hash(key))  # tailMap(hash).firstKey()
        return self._owners[i if i < len(self._hashes) else 0]


def queue_key(mq: MessageQueue) -> str:
    """MessageQueue.toString(), the key AllocateMessageQueueConsistentHash routes."""
    return f"MessageQueue [topic={mq.topic}, brokerName={mq.broker_name}, queueId={mq.queue_id}]"


def allocate_consistent_hash(
    consumer_group: Group,
    current_cid: ClientId,
    mq_all: Sequence[MessageQueue],
    cid_all: Sequence[ClientId],
    virtual_node_count: int = VIRTUAL_NODE_COUNT,
) -> list[MessageQueue]:
    """AllocateMessageQueueConsistentHash ("CONSISTENT_HASH"): the queues whose key the MD5
    ring routes to this client; a client leaving moves only its own queues."""
    if virtual_node_count < 0:  # the Java constructor's check
        raise ValueError(f"illegal virtualNodeCnt :{virtual_node_count}")
    if not _check(consumer_group, current_cid, mq_all, cid_all):
        return []
    router = ConsistentHashRouter(cid_all, virtual_node_count)
    return [mq for mq in mq_all if router.route_node(queue_key(mq)) == current_cid]


STRATEGIES: Final[dict[str, Strategy]] = {
    "AVG": allocate_averagely,
    "AVG_BY_CIRCLE": allocate_averagely_by_circle,
    "CONSISTENT_HASH": allocate_consistent_hash,
}


def java_order(s: str) -> bytes:
    """A sort key ordering strings as Java's String.compareTo: by UTF-16 code units."""
    # differs from Python's code-point order only when a character above U+FFFF meets one
    # in U+E000..U+FFFF
    return s.encode("utf-16-be", "surrogatepass")


def queue_order(mq: MessageQueue) -> tuple[bytes, bytes, int]:
    """A sort key ordering queues as MessageQueue.compareTo: topic, brokerName, queueId."""
    return java_order(mq.topic), java_order(mq.broker_name), mq.queue_id


def allocate(
    strategy: Strategy,
    consumer_group: Group,
    current_cid: ClientId,
    mq_all: Iterable[MessageQueue],
    cid_all: Iterable[ClientId],
) -> list[MessageQueue]:
    """RebalanceImpl.rebalanceByTopic's call: the topic's queue set and the group's client ids,
    each sorted as Java sorts them, handed to ``strategy``.

    Raises:
        ValueError: from the strategy's check (an empty id, no queues, no clients); Java's
            RebalanceImpl logs that and leaves the client's queues as they are.
    """
    queues = sorted(set(mq_all), key=queue_order)  # mqSet is a Set: a queue counts once
    cids = sorted(cid_all, key=java_order)
    return strategy(consumer_group, current_cid, queues, cids)
