"""RouteTable with a fake clock (seed 001, protocol.md 5.7): registration, merge, slaves,
data versions, eviction, permissions."""

from __future__ import annotations

from aiorocketmq.namesrv.routes import RegisterResult, RouteTable
from aiorocketmq.remoting.protocol.register import DataVersion, TopicConfigWrapper
from aiorocketmq.remoting.protocol.steps import finish
from aiorocketmq.remoting.protocol.topic import TopicConfig


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def wrapper(*topics: str, counter: int = 1, queues: int = 4) -> TopicConfigWrapper:
    table = {t: TopicConfig(topic_name=t, read_queue_nums=queues, write_queue_nums=queues)
             for t in topics}  # fmt: skip
    return TopicConfigWrapper(topic_config_table=table, data_version=DataVersion(counter, 5))


def register(table: RouteTable, name: str, addr: str, *topics: str, broker_id: int = 0,
             counter: int = 1, channel: object = None,
             cluster: str = "DefaultCluster") -> RegisterResult:  # fmt: skip
    return finish(table.register_steps(
        cluster=cluster, broker_addr=addr, broker_name=name, broker_id=broker_id,
        ha_server_addr=addr.replace(":109", ":209"), topics=wrapper(*topics, counter=counter),
        channel=channel if channel is not None else object(),
    ))  # fmt: skip


def test_evicted_exactly_after_expiry_and_not_before() -> None:
    """protocol.md 11: brokers not registered for brokerChannelExpiredTime (120 s) are dropped,
    with their queue data; at exactly 120 s they are still alive."""
    clock = Clock()
    table = RouteTable(clock)
    register(table, "broker-a", "127.0.0.1:10911", "Orders")
    registered = clock.now
    assert table.expire(registered + 120_000) == []
    assert table.route_for("Orders") is not None
    (eviction,) = table.expire(registered + 120_001)
    assert (eviction.broker_addr, eviction.broker_name, eviction.reason) == (
        "127.0.0.1:10911", "broker-a", "expired")  # fmt: skip
    assert table.route_for("Orders") is None
    assert table.cluster_info().broker_addr_table == {}


def test_reregistration_refreshes_liveness() -> None:
    """seed 001: each 30 s registration refreshes the live table's timestamp."""
    clock = Clock()
    table = RouteTable(clock)
    register(table, "broker-a", "127.0.0.1:10911", "Orders")
    clock.now += 100_000
    register(table, "broker-a", "127.0.0.1:10911", "Orders")
    assert table.expire(clock.now + 100_000) == []


def test_two_brokers_with_the_same_topic_merge() -> None:
    """protocol.md 6.1: one route lists every broker's QueueData and BrokerData."""
    table = RouteTable(Clock())
    register(table, "broker-a", "127.0.0.1:10911", "Orders", "TBW102")
    register(table, "broker-b", "127.0.0.1:10921", "Orders")
    route = table.route_for("Orders")
    assert route is not None
    assert sorted(q.broker_name for q in route.queue_datas) == ["broker-a", "broker-b"]
    assert {b.broker_name: b.broker_addrs for b in route.broker_datas} == {
        "broker-a": {0: "127.0.0.1:10911"}, "broker-b": {0: "127.0.0.1:10921"}}  # fmt: skip
    tbw = table.route_for("TBW102")
    assert tbw is not None and [b.broker_name for b in tbw.broker_datas] == ["broker-a"]
    assert table.topics_by_cluster("DefaultCluster") == ["Orders", "TBW102"]
    assert table.cluster_info().cluster_addr_table == {"DefaultCluster": ["broker-a", "broker-b"]}


def test_slave_gets_its_masters_addresses_and_is_in_routes() -> None:
    """protocol.md 5.7/12.8: a slave (brokerId >= 1) learns masterAddr and the master's
    haServerAddr; routes list slaves under the same brokerName; a slave's topics are ignored."""
    table = RouteTable(Clock())
    master = register(table, "broker-a", "127.0.0.1:10911", "Orders")
    assert (master.master_addr, master.ha_server_addr) == (None, None)
    slave = register(table, "broker-a", "127.0.0.1:10931", "SlaveOnly", broker_id=1)
    assert (slave.master_addr, slave.ha_server_addr) == ("127.0.0.1:10911", "127.0.0.1:20911")
    route = table.route_for("Orders")
    assert route is not None
    assert route.broker_datas[0].broker_addrs == {0: "127.0.0.1:10911", 1: "127.0.0.1:10931"}
    assert table.route_for("SlaveOnly") is None


def test_unchanged_data_version_keeps_topics() -> None:
    """protocol.md 5.7: only a changed dataVersion (or a first registration) rebuilds a
    master's queue data."""
    table = RouteTable(Clock())
    register(table, "broker-a", "127.0.0.1:10911", "Orders", counter=3)
    register(table, "broker-a", "127.0.0.1:10911", "Orders", "Payments", counter=3)
    assert table.route_for("Payments") is None
    assert not table.data_version_changed("127.0.0.1:10911", DataVersion(3, 5))
    register(table, "broker-a", "127.0.0.1:10911", "Orders", "Payments", counter=4)
    assert table.route_for("Payments") is not None
    assert table.data_version_changed("127.0.0.1:10911", DataVersion(3, 5))


def test_unregister_drops_broker_and_empty_topics() -> None:
    """protocol.md 5.7: UNREGISTER_BROKER drops the address; a broker name with no addresses
    left goes with its queue data, and topics left empty go too."""
    table = RouteTable(Clock())
    register(table, "broker-a", "127.0.0.1:10911", "Orders", "OnlyA")
    register(table, "broker-b", "127.0.0.1:10921", "Orders")
    table.unregister(cluster="DefaultCluster", broker_addr="127.0.0.1:10911",
                     broker_name="broker-a", broker_id=0)  # fmt: skip
    assert table.route_for("OnlyA") is None
    route = table.route_for("Orders")
    assert route is not None and [q.broker_name for q in route.queue_datas] == ["broker-b"]
    assert table.all_topics() == ["Orders"]
    assert table.cluster_info().cluster_addr_table == {"DefaultCluster": ["broker-b"]}


def test_closed_channel_drops_its_brokers_at_once() -> None:
    """protocol.md 11: a closed broker channel is dropped at once, not after 120 s."""
    table = RouteTable(Clock())
    conn = object()
    register(table, "broker-a", "127.0.0.1:10911", "Orders", channel=conn)
    register(table, "broker-b", "127.0.0.1:10921", "Orders")
    (eviction,) = table.drop_channel(conn)
    assert (eviction.broker_name, eviction.reason, eviction.channel) == (
        "broker-a", "channel_closed", conn)  # fmt: skip
    route = table.route_for("Orders")
    assert route is not None and [b.broker_name for b in route.broker_datas] == ["broker-b"]
    assert table.drop_channel(conn) == []


def test_write_permission_wipe_and_add() -> None:
    """protocol.md 5.7: 205 clears the write bit of a broker's queue data, 327 sets it back
    (Java sets READ|WRITE outright); both count the topics touched."""
    table = RouteTable(Clock())
    register(table, "broker-a", "127.0.0.1:10911", "Orders", "Payments")
    assert table.wipe_write_perm("broker-a") == 2
    route = table.route_for("Orders")
    assert route is not None and route.queue_datas[0].perm == 4
    assert table.add_write_perm("broker-a") == 2
    route = table.route_for("Orders")
    assert route is not None and route.queue_datas[0].perm == 6
    assert table.wipe_write_perm("nobody") == 0


def test_delete_topic_and_version_bumps() -> None:
    """protocol.md 5.7: 216 drops all of a topic's queue data; every change bumps the version
    (route caches depend on it) and plain re-registration does not."""
    table = RouteTable(Clock())
    register(table, "broker-a", "127.0.0.1:10911", "Orders")
    before = table.version
    register(table, "broker-a", "127.0.0.1:10911", "Orders")
    assert table.version == before
    table.delete_topic("Orders")
    assert table.route_for("Orders") is None and table.version > before


def test_address_switching_id_keeps_one_record() -> None:
    """RouteInfoManager: the same ip:port holds one brokerId only (slave promoted to master)."""
    table = RouteTable(Clock())
    register(table, "broker-a", "127.0.0.1:10931", "Orders", broker_id=1)
    register(table, "broker-a", "127.0.0.1:10931", "Orders", broker_id=0)
    assert table.brokers["broker-a"].broker_addrs == {0: "127.0.0.1:10931"}
