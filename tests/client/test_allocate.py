"""client.allocate, the queue allocation strategies of issue 15 item 2 (protocol.md 12.6):
Java 4.9.8's AllocateMessageQueueAveragely, ...AveragelyByCircle and ...ConsistentHash,
checked by properties over random groups and by golden examples worked out from the Java
algorithms (the consistent-hash ones also agree with Apache's ConsistentHashRouter compiled
from the 4.9.8 source and run on the same inputs)."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import aiorocketmq.client.consumer.allocate as allocate_module
from aiorocketmq.client.consumer.allocate import (
    STRATEGIES,
    ConsistentHashRouter,
    Strategy,
    allocate,
    allocate_averagely,
    allocate_averagely_by_circle,
    allocate_consistent_hash,
    md5_hash,
    queue_key,
)
from aiorocketmq.remoting.protocol.heartbeat import MessageQueue

ALL = list(STRATEGIES.values())
BALANCED = [allocate_averagely, allocate_averagely_by_circle]

QUEUES = st.lists(
    st.builds(MessageQueue, st.sampled_from(["T", "U%x"]),
              st.sampled_from(["broker-a", "broker-b", "b"]), st.integers(0, 31)),
    min_size=1, max_size=48, unique=True,
)  # fmt: skip
CLIENT_ID = st.builds(lambda ip, pid: f"10.0.0.{ip}@{pid}", st.integers(1, 254),
                      st.integers(1, 99999)) | st.text(min_size=1, max_size=8)  # fmt: skip
CLIENTS = st.lists(CLIENT_ID, min_size=1, max_size=8, unique=True)


def queues(n: int, topic: str = "T", broker: str = "b") -> list[MessageQueue]:
    return [MessageQueue(topic, broker, i) for i in range(n)]


def shares(
    strategy: Strategy, mq_all: list[MessageQueue], cid_all: list[str]
) -> dict[str, list[MessageQueue]]:
    return {cid: allocate(strategy, "g", cid, mq_all, cid_all) for cid in cid_all}


def ids(share: list[MessageQueue]) -> list[int]:
    return [mq.queue_id for mq in share]


@pytest.mark.parametrize("strategy", ALL)
@given(mq_all=QUEUES, cid_all=CLIENTS)
def test_the_shares_partition_the_queues(
    strategy: Strategy, mq_all: list[MessageQueue], cid_all: list[str]
) -> None:
    """Every queue goes to exactly one client of the group."""
    owned = [mq for share in shares(strategy, mq_all, cid_all).values() for mq in share]
    assert sorted(owned) == sorted(mq_all)


@pytest.mark.parametrize("strategy", BALANCED)
@given(mq_all=QUEUES, cid_all=CLIENTS)
def test_averagely_shares_are_balanced(
    strategy: Strategy, mq_all: list[MessageQueue], cid_all: list[str]
) -> None:
    """Each client gets floor(n/m) or ceil(n/m) queues."""
    n, m = len(mq_all), len(cid_all)
    for share in shares(strategy, mq_all, cid_all).values():
        assert len(share) in (n // m, -(-n // m))


@pytest.mark.parametrize("strategy", ALL)
@given(mq_all=QUEUES, cid_all=CLIENTS, seed=st.integers(0, 2**32))
def test_shares_do_not_depend_on_input_order(
    strategy: Strategy, mq_all: list[MessageQueue], cid_all: list[str], seed: int
) -> None:
    """Each client computes its share from lists in its own order (a queue set, the broker's
    id list): allocate sorts both first, so everyone gets the same answer; repeated queues
    count once, as in Java's Set."""
    rnd = random.Random(seed)
    mixed_mqs = mq_all + rnd.sample(mq_all, len(mq_all) // 2)
    rnd.shuffle(mixed_mqs)
    mixed_cids = rnd.sample(cid_all, len(cid_all))
    for cid in cid_all:
        first = allocate(strategy, "g", cid, mq_all, cid_all)
        assert allocate(strategy, "g", cid, mixed_mqs, mixed_cids) == first
        assert allocate(strategy, "g", cid, mq_all, cid_all) == first


@given(mq_all=QUEUES, cid_all=CLIENTS)
def test_averagely_gives_contiguous_blocks_in_client_order(
    mq_all: list[MessageQueue], cid_all: list[str]
) -> None:
    """Averagely: client k of the sorted ids gets the k-th block of the sorted queues."""
    ordered = sorted(mq_all)  # ASCII names: Python's order is Java's compareTo
    blocks = [allocate(allocate_averagely, "g", cid, mq_all, cid_all)
              for cid in sorted(cid_all, key=allocate_module.java_order)]  # fmt: skip
    assert [mq for block in blocks for mq in block] == ordered


@given(mq_all=QUEUES, cid_all=CLIENTS)
def test_by_circle_deals_round_robin(mq_all: list[MessageQueue], cid_all: list[str]) -> None:
    """By circle: the client at index k of the sorted ids gets queues k, k+m, k+2m, ..."""
    ordered = sorted(mq_all)
    cids = sorted(cid_all, key=allocate_module.java_order)
    for k, cid in enumerate(cids):
        share = allocate(allocate_averagely_by_circle, "g", cid, mq_all, cid_all)
        assert share == ordered[k :: len(cids)]


@given(mq_all=QUEUES, cid_all=CLIENTS.filter(lambda c: len(c) >= 2), pick=st.integers(0, 7))
def test_consistent_hash_moves_only_the_leaving_clients_queues(
    mq_all: list[MessageQueue], cid_all: list[str], pick: int
) -> None:
    """A client leaving hands on only its own queues; every other queue stays put (and, read
    backwards, a client joining only takes queues)."""
    leaving = cid_all[pick % len(cid_all)]
    staying = [cid for cid in cid_all if cid != leaving]
    before = shares(allocate_consistent_hash, mq_all, cid_all)
    after = shares(allocate_consistent_hash, mq_all, staying)
    for cid in staying:
        assert set(before[cid]) <= set(after[cid])
        assert set(after[cid]) - set(before[cid]) <= set(before[leaving])


def test_averagely_golden() -> None:
    """8 queues over 3 clients: blocks of 3, 3, 2; 10 over 4: 3, 3, 2, 2; 2 over 3: the third
    client gets none (protocol.md 12.6's examples)."""
    cids = ["c1", "c2", "c3"]
    assert [ids(s) for s in shares(allocate_averagely, queues(8), cids).values()] == [
        [0, 1, 2], [3, 4, 5], [6, 7]]  # fmt: skip
    four = ["c1", "c2", "c3", "c4"]
    assert [ids(s) for s in shares(allocate_averagely, queues(10), four).values()] == [
        [0, 1, 2], [3, 4, 5], [6, 7], [8, 9]]  # fmt: skip
    assert [ids(s) for s in shares(allocate_averagely, queues(2), cids).values()] == [
        [0], [1], []]  # fmt: skip


def test_by_circle_golden() -> None:
    """8 queues over 3 clients, dealt round robin."""
    got = shares(allocate_averagely_by_circle, queues(8), ["c3", "c1", "c2"])
    assert {cid: ids(s) for cid, s in got.items()} == {
        "c1": [0, 3, 6], "c2": [1, 4, 7], "c3": [2, 5]}  # fmt: skip


def test_queues_sort_by_topic_broker_then_queue_id() -> None:
    """MessageQueue.compareTo: topic, then brokerName, then queueId (numerically)."""
    mqs = [MessageQueue("T", "broker-b", 0), MessageQueue("T", "broker-a", 10),
           MessageQueue("T", "broker-a", 9), MessageQueue("S", "broker-z", 5)]  # fmt: skip
    got = shares(allocate_averagely_by_circle, mqs, ["c1", "c2", "c3", "c4"])
    assert [s[0] for s in got.values()] == [
        MessageQueue("S", "broker-z", 5), MessageQueue("T", "broker-a", 9),
        MessageQueue("T", "broker-a", 10), MessageQueue("T", "broker-b", 0)]  # fmt: skip


def test_client_ids_sort_by_utf16_code_units() -> None:
    """Java's String.compareTo compares UTF-16 units: U+1F600 (units D83D DE00) sorts before
    U+FFFF, the reverse of Python's code-point order."""
    got = shares(allocate_averagely, queues(2), ["\uffff", "\U0001f600"])
    assert {cid: ids(s) for cid, s in got.items()} == {"\U0001f600": [0], "\uffff": [1]}


# The MD5 ring of clients c1 and c2 with 10 virtual nodes each, worked out by hand: each point
# is the first 4 bytes of MD5("<cid>-<i>") read big-endian (ConsistentHashRouter.MD5Hash over
# VirtualNode.getKey), sorted. A queue hashes its MessageQueue.toString() the same way and
# belongs to the first point at or after that hash, wrapping to the first point.
RING_C1_C2 = [
    (0x0BD54963, "c2-1"), (0x1236818F, "c1-8"), (0x31831C51, "c2-0"), (0x3270EE15, "c1-7"),
    (0x3F81608D, "c2-4"), (0x44CA63B7, "c2-2"), (0x460CB953, "c2-6"), (0x4AD0C553, "c2-8"),
    (0x4B9F337D, "c1-2"), (0x56CD1F3C, "c2-5"), (0x5AC3C99B, "c1-9"), (0x70F83886, "c1-1"),
    (0x7D8299C3, "c1-6"), (0xA093DC28, "c2-7"), (0xC5DE988A, "c1-3"), (0xCCAF1F52, "c2-9"),
    (0xE7A7EB0B, "c1-0"), (0xE93AA1D6, "c1-4"), (0xEA7F72D9, "c2-3"), (0xFCB304F6, "c1-5"),
]  # fmt: skip
# "MessageQueue [topic=T, brokerName=b, queueId=<q>]" for q = 0..7: its hash -> the point
QUEUE_POINTS = [
    (0x218A9C35, "c2-0"), (0xE2AE4B25, "c1-0"), (0x75FF8207, "c1-6"), (0x19E13E53, "c2-0"),
    (0xFF8E7FEE, "c2-1"),  # past the last point: wraps to the first
    (0xE2D6C924, "c1-0"), (0xA190E0D3, "c1-3"), (0x2736065F, "c2-0"),
]  # fmt: skip


def test_md5_hash_is_the_first_four_digest_bytes() -> None:
    """RFC 1321's vectors: MD5("") = d41d8cd9..., MD5("abc") = 90015098..."""
    assert md5_hash("") == 0xD41D8CD9
    assert md5_hash("abc") == 0x90015098


def test_consistent_hash_golden_ring() -> None:
    """The worked ring above, point by point, gives c1 queues 1, 2, 5, 6 and c2 0, 3, 4, 7
    (Apache's ConsistentHashRouter gives the same)."""
    points = [(md5_hash(f"{cid}-{i}"), f"{cid}-{i}") for cid in ("c1", "c2") for i in range(10)]
    assert sorted(points) == RING_C1_C2
    for q, (h, point) in enumerate(QUEUE_POINTS):
        assert md5_hash(queue_key(MessageQueue("T", "b", q))) == h
        successor = next((p for p in RING_C1_C2 if p[0] >= h), RING_C1_C2[0])
        assert successor[1] == point
    got = shares(allocate_consistent_hash, queues(8), ["c2", "c1"])
    assert {cid: ids(s) for cid, s in got.items()} == {"c1": [1, 2, 5, 6], "c2": [0, 3, 4, 7]}
    router = ConsistentHashRouter(["c1", "c2"])
    assert [router.route_node(queue_key(mq)) for mq in queues(8)] == [
        point.split("-")[0] for _, point in QUEUE_POINTS]  # fmt: skip


def test_consistent_hash_golden_leave() -> None:
    """c3's points (c3-6 at 0x10287e75 ... c3-7 at 0xfee11a55) take queues 1, 5 and 6 from
    c1; when c2 leaves, only c2's queues 0, 3, 4, 7 move (as Apache's router computes)."""
    three = shares(allocate_consistent_hash, queues(8), ["c1", "c2", "c3"])
    assert {cid: ids(s) for cid, s in three.items()} == {
        "c1": [2], "c2": [0, 3, 4, 7], "c3": [1, 5, 6]}  # fmt: skip
    two = shares(allocate_consistent_hash, queues(8), ["c1", "c3"])
    assert {cid: ids(s) for cid, s in two.items()} == {"c1": [0, 2, 3, 7], "c3": [1, 4, 5, 6]}


def test_consistent_hash_virtual_node_count() -> None:
    """No virtual nodes: an empty ring routes nothing; a negative count is refused."""
    assert allocate_consistent_hash("g", "c1", queues(4), ["c1"], virtual_node_count=0) == []
    with pytest.raises(ValueError, match="virtualNodeCnt"):
        allocate_consistent_hash("g", "c1", queues(4), ["c1"], virtual_node_count=-1)


@pytest.mark.parametrize("strategy", ALL)
@pytest.mark.parametrize(
    ("cid", "mq_all", "cid_all", "message"),
    [("", queues(2), ["c1"], "currentCID"), ("c1", [], ["c1"], "mqAll"),
     ("c1", queues(2), [], "cidAll")],
)  # fmt: skip
def test_empty_arguments_raise_as_java_throws(
    strategy: Strategy, cid: str, mq_all: list[MessageQueue], cid_all: list[str], message: str
) -> None:
    """AbstractAllocateMessageQueueStrategy.check throws IllegalArgumentException for an empty
    current id, queue list or id list (RebalanceImpl then keeps the queues it has)."""
    with pytest.raises(ValueError, match=message):
        allocate(strategy, "g", cid, mq_all, cid_all)


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def info(self, event: str, **values: Any) -> None:
        self.calls.append((event, values))


@pytest.mark.parametrize("strategy", ALL)
def test_a_client_not_in_the_group_gets_nothing(
    strategy: Strategy, monkeypatch: pytest.MonkeyPatch
) -> None:
    """check: an id missing from cidAll gets an empty share, logged at info."""
    recorder = Recorder()
    monkeypatch.setattr(allocate_module, "log", recorder)
    assert allocate(strategy, "g", "c9", queues(4), ["c2", "c1"]) == []
    logged = {"group": "g", "client_id": "c9", "cid_all": ["c1", "c2"]}
    assert recorder.calls == [("consumer_id_not_in_cid_all", logged)]


def test_strategies_carry_javas_names() -> None:
    """AllocateMessageQueueStrategy.getName()."""
    assert {
        "AVG": allocate_averagely,
        "AVG_BY_CIRCLE": allocate_averagely_by_circle,
        "CONSISTENT_HASH": allocate_consistent_hash,
    } == STRATEGIES
