"""mqadmin's broker and name-server commands against the shared cluster: brokerStatus,
getBrokerConfig, updateBrokerConfig, wipeWritePerm, addWritePerm, updateKvConfig,
deleteKvConfig, clusterRT; tables and --json, effects, error paths and partial failures.
State changed here (a broker's config, write permissions) is put back in ``finally``."""

from __future__ import annotations

import asyncio
import re
import socket
from typing import Any

from aiorocketmq.client.admin import api_cluster as capi
from aiorocketmq.remoting.protocol.codes import ResponseCode as R
from tests.admin.test_topic_cmds import call, one_line_error, unique
from tests.cluster import Cluster


def kv_value(namesrv: str, namespace: str, key: str) -> str | None:
    """GET_KV_CONFIG (101) straight to the name server: the value, or None (22)."""
    (resp,) = asyncio.run(call(namesrv, capi.get_kv(namespace, key)))
    assert resp.code in (R.SUCCESS, R.QUERY_NOT_FOUND), resp.remark
    return resp.ext_fields.get("value") if resp.code == R.SUCCESS else None


def dead_addr() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"


def test_broker_status_of_a_broker_and_of_a_cluster(admin: Any, cluster: Cluster) -> None:
    a, b = cluster.brokers["broker-a"].addr, cluster.brokers["broker-b"].addr
    run = admin("brokerStatus", "-b", a)
    assert run.code == 0, run.err
    rows = {line.split()[0]: line.split()[1:] for line in run.out.splitlines() if line.strip()}
    assert rows["brokerVersionDesc"] == ["V4_9_8"]
    assert rows["Key"] == ["Value"]
    data = admin("brokerStatus", "-b", a, "--json").json
    assert [d["brokerAddr"] for d in data] == [a]
    assert data[0]["runtime"]["brokerVersionDesc"] == "V4_9_8"
    assert int(data[0]["runtime"]["msgPutTotalTodayNow"]) >= 0
    both = admin("brokerStatus", "-c", "DefaultCluster", "--json").json
    assert sorted(d["brokerAddr"] for d in both) == sorted([a, b])
    assert all("commitLogMaxOffset" in d["runtime"] for d in both)


def test_update_broker_config_then_get_broker_config_shows_it(admin: Any, cluster: Cluster) -> None:
    a, b = cluster.brokers["broker-a"].addr, cluster.brokers["broker-b"].addr
    before = admin("getBrokerConfig", "-b", a, "--json").json
    assert [(d["brokerAddr"], d["role"]) for d in before] == [(a, None)]
    old = before[0]["config"]["fileReservedTime"]
    try:
        run = admin("updateBrokerConfig", "-b", a, "-k", "fileReservedTime", "-v", "73")
        assert (run.code, run.out) == (0, f"update broker config success, {a}\n"), run.err
        table = admin("getBrokerConfig", "-b", a)
        assert table.code == 0, table.err
        assert ["fileReservedTime", "73"] in [line.split() for line in table.out.splitlines()]
        data = admin("updateBrokerConfig", "-c", "DefaultCluster", "-k", "fileReservedTime",
                     "-v", "74", "--json").json  # fmt: skip
        assert sorted(d["brokerAddr"] for d in data) == sorted([a, b])
        assert all(d["ok"] for d in data)
        configs = admin("getBrokerConfig", "-c", "DefaultCluster", "--json").json
        assert {(d["brokerAddr"], d["role"], d["config"]["fileReservedTime"]) for d in configs} == {
            (a, "master", "74"),
            (b, "master", "74"),
        }
    finally:
        admin("updateBrokerConfig", "-c", "DefaultCluster", "-k", "fileReservedTime", "-v", old)
    blacklisted = admin("updateBrokerConfig", "-b", a, "-k", "configBlackList", "-v", "x")
    assert "answered 16 NO_PERMISSION: Can not update config in black list." in one_line_error(
        blacklisted, "updateBrokerConfig"
    )


def test_wipe_then_add_write_perm_changes_the_route(admin: Any, cluster: Cluster) -> None:
    b, ns = cluster.brokers["broker-b"].addr, cluster.namesrv_addr
    topic = unique("AdminPerm")
    assert admin("updateTopic", "-b", b, "-t", topic).code == 0

    def perm() -> int:
        route = admin("topicRoute", "-t", topic, "--json").json
        return int(route["queueDatas"][0]["perm"])

    try:
        run = admin("wipeWritePerm", "-b", "broker-b")
        assert run.code == 0, run.err
        assert re.fullmatch(rf"wipe write perm of broker\[broker-b\] in name server\[{ns}\] OK, "
                            r"(\d+)\n", run.out)  # fmt: skip
        assert perm() == 4
        data = admin("addWritePerm", "-b", "broker-b", "--json").json
        assert data[0]["namesrvAddr"] == ns and data[0]["addTopicCount"] >= 1
        assert perm() == 6
        # a name server that does not answer: the others are done, the command fails
        dead = dead_addr()
        both = admin("wipeWritePerm", "-b", "broker-b", "-n", f"{ns};{dead}", "--timeout", "2")
        assert both.code == 1
        lines = both.out.splitlines()
        assert lines[0].startswith(f"wipe write perm of broker[broker-b] in name server[{ns}] OK")
        assert lines[1].startswith(
            f"wipe write perm of broker[broker-b] in name server[{dead}] Failed: {dead}: connect"
        )
        assert perm() == 4
        added = admin("addWritePerm", "-b", "broker-b")
        assert added.out.startswith(f"add write perm of broker[broker-b] in name server[{ns}] OK")
        assert perm() == 6
    finally:
        admin("addWritePerm", "-b", "broker-b")


def test_update_and_delete_kv_config(admin: Any, cluster: Cluster) -> None:
    ns = cluster.namesrv_addr
    namespace, key = unique("AdminNS"), unique("key")
    run = admin("updateKvConfig", "-s", namespace, "-k", key, "-v", "v1")
    assert (run.code, run.out) == (0, "create or update kv config to namespace success.\n")
    assert kv_value(ns, namespace, key) == "v1"
    data = admin("updateKvConfig", "-s", namespace, "-k", key, "-v", "v2", "--json").json
    assert data == {"namespace": namespace, "key": key, "value": "v2", "namesrvAddrs": [ns]}
    assert kv_value(ns, namespace, key) == "v2"
    run = admin("deleteKvConfig", "-s", namespace, "-k", key)
    assert (run.code, run.out) == (0, "delete kv config from namespace success.\n")
    assert kv_value(ns, namespace, key) is None

    dead = dead_addr()
    part = admin("updateKvConfig", "-n", f"{ns};{dead}", "-s", namespace, "-k", key, "-v", "v3",
                 "--timeout", "2", "--json")  # fmt: skip
    assert part.code == 1
    assert part.json["namesrvAddrs"] == [ns] and list(part.json["errors"]) == [dead]
    assert kv_value(ns, namespace, key) == "v3"
    admin("deleteKvConfig", "-s", namespace, "-k", key)
    assert kv_value(ns, namespace, key) is None


def test_cluster_rt_sends_to_each_broker_topic(admin: Any, cluster: Cluster) -> None:
    def stored(broker: str) -> int:
        queues = admin("topicStatus", "-t", broker, "--json").json
        return sum(q["maxOffset"] for q in queues)

    before = {name: stored(name) for name in ("broker-a", "broker-b")}
    run = admin("clusterRT", "-a", "3", "-s", "16")
    assert run.code == 0, run.err
    lines = [line.split() for line in run.out.splitlines()]
    assert lines[0] == ["#Cluster", "Name", "#Broker", "Name", "#RT", "#successCount",
                        "#failCount"]  # fmt: skip
    assert [(r[0], r[1], r[3], r[4]) for r in lines[2:]] == [
        ("DefaultCluster", "broker-a", "3", "0"),
        ("DefaultCluster", "broker-b", "3", "0"),
    ]
    assert all(float(r[2]) >= 0 for r in lines[2:])
    assert {name: stored(name) - n for name, n in before.items()} == {"broker-a": 3, "broker-b": 3}

    data = admin("clusterRT", "-a", "2", "-c", "DefaultCluster", "--rounds", "2", "-i", "0",
                 "--json").json  # fmt: skip
    assert [(d["round"], d["brokerName"], d["successCount"], d["failCount"]) for d in data] == [
        (1, "broker-a", 2, 0),
        (1, "broker-b", 2, 0),
        (2, "broker-a", 2, 0),
        (2, "broker-b", 2, 0),
    ]
    log = admin("clusterRT", "-a", "1", "-p", "true", "-m", "room1")
    assert log.code == 0, log.err
    for line, broker in zip(log.out.splitlines(), ("broker-a", "broker-b"), strict=True):
        assert re.fullmatch(rf"\d{{4}}-\d\d-\d\d \d\d:\d\d:\d\d\|room1\|DefaultCluster\|{broker}"
                            r"\|\d+", line)  # fmt: skip
    missing = one_line_error(admin("clusterRT", "-c", "NoSuchCluster"), "clusterRT")
    assert missing == "mqadmin clusterRT: cluster [NoSuchCluster] not exist\n"


def test_error_paths(admin: Any, cluster: Cluster) -> None:
    a = cluster.brokers["broker-a"].addr
    for argv in (
        ("brokerStatus",),  # -b or -c
        ("brokerStatus", "-b", a, "-c", "DefaultCluster"),
        ("getBrokerConfig",),
        ("updateBrokerConfig", "-b", a, "-k", "fileReservedTime"),  # no -v
        ("updateBrokerConfig", "-k", "fileReservedTime", "-v", "72"),  # no -b / -c
        ("wipeWritePerm",),
        ("addWritePerm",),
        ("updateKvConfig", "-s", "ns", "-k", "k"),
        ("deleteKvConfig", "-s", "ns"),
        ("clusterRT", "-a", "many"),
    ):
        assert admin(*argv).code == 2, argv
    dead = dead_addr()
    err = one_line_error(admin("brokerStatus", "-b", dead, "--timeout", "2"), "brokerStatus")
    assert err.startswith(f"mqadmin brokerStatus: {dead}: connect")
    err = one_line_error(admin("getBrokerConfig", "-c", "NoSuchCluster"), "getBrokerConfig")
    assert "cluster NoSuchCluster not found" in err
