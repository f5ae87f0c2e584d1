"""The SDK's per-message shortcuts (issue 20) against the long way they replace: queue
selection's O(1) first pick, properties written out at once, the fault table updated in
place. Pure state: no servers."""

from __future__ import annotations

import itertools

from client.fault import FAILED_LATENCY_MS, LatencyFaults
from client.message import Message
from client.publish import PublishInfo
from remoting.protocol.heartbeat import MessageQueue
from remoting.protocol.message import encode_properties
from remoting.protocol.route import BrokerData, QueueData, TopicRouteData

BROKERS = ("broker-a", "broker-b", "broker-c")


def _info(start: int) -> PublishInfo:
    route = TopicRouteData(
        queue_datas=[QueueData(broker_name=b, read_queue_nums=3, write_queue_nums=3, perm=6,
                               topic_sys_flag=0) for b in BROKERS],
        broker_datas=[BrokerData(cluster="c", broker_name=b, broker_addrs={0: f"10.0.0.{i}:1"})
                      for i, b in enumerate(BROKERS)],
    )  # fmt: skip
    info = PublishInfo.from_route("T", route)
    info._next = itertools.count(start)
    return info


def _long_way(
    info: PublishInfo, start: int, last: str | None, faults: LatencyFaults | None, down: set[str]
) -> MessageQueue:
    """PublishInfo.select as it was: every queue in round-robin order, then the rules."""
    n = len(info.queues)
    every = [info.queues[(start + i) % n] for i in range(n)]
    candidates = [mq for mq in every if mq.broker_name not in down] or every
    if faults is not None:
        for mq in candidates:
            if faults.available(mq.broker_name) and mq.broker_name != last:
                return mq
        best = faults.least_bad()
        for mq in candidates:
            if mq.broker_name == best and best != last:
                return mq
    for mq in candidates:
        if mq.broker_name != last:
            return mq
    return candidates[0]


def test_queue_selection_picks_what_the_long_way_picks() -> None:
    """Avoid-the-last-broker, dropped brokers and (only when enabled) latency faults, from
    every round-robin position: the O(1) first pick never changes the answer."""
    isolated = LatencyFaults(clock=lambda: 1000.0)
    isolated.update("broker-b", 0, isolation=True)
    downs = (None, {"broker-a"}, {"broker-a", "broker-c"}, set(BROKERS))
    for start, last, faults, down in itertools.product(
        range(9), (None, *BROKERS), (None, isolated, LatencyFaults()), downs
    ):
        check = None if down is None else (lambda name, d=down: name in d)
        picked = _info(start).select(last, faults, check)
        expected = _long_way(_info(start), start, last, faults, down or set())
        assert picked == expected, (start, last, faults, down)


def test_properties_written_at_once_are_encode_properties() -> None:
    """Message.wire_text (no properties of its own) is encode_properties of
    wire_properties() plus UNIQ_KEY, byte for byte."""
    for msg in (
        Message("T", b"x"),
        Message("T", b"x", tags="A", keys="k1 k2"),
        Message("T", b"x", keys=["a", "b"], delay_level=3),
        Message("T", b"x", tags=""),
    ):
        props = msg.wire_properties()
        props["UNIQ_KEY"] = "7F00000100002A9F0000000000000001"
        assert msg.wire_text("7F00000100002A9F0000000000000001") == encode_properties(props)


def test_fault_windows_follow_the_latency_tables() -> None:
    """updateFaultItem in place: under 550 ms no window, then computeNotAvailableDuration;
    a failure counts as 30 s (a 600 s window)."""
    faults = LatencyFaults(clock=lambda: 1000.0)
    for latency, start in ((549.9, 1000.0), (550, 31000.0), (100, 1000.0), (2999, 121000.0)):
        faults.update("b", latency)
        assert (faults.items["b"].latency_ms, faults.items["b"].start_ms) == (latency, start)
    faults.update("b", 3, isolation=True)
    assert faults.items["b"].latency_ms == FAILED_LATENCY_MS
    assert faults.items["b"].start_ms == 601000.0
