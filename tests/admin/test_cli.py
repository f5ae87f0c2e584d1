"""mqadmin's frame: exit codes, one-line errors, the console entry, NAMESRV_ADDR; and
clusterList (ClusterListSubCommand: 106, then 28 per broker)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from typing import Any

import pytest

from aiorocketmq.client.admin.cli import namesrv_addrs
from tests.admin.conftest import mqadmin
from tests.cluster import Cluster
from tests.harness import ROOT


def test_cluster_list_table_and_json(admin: Any, cluster: Cluster) -> None:
    table = admin("clusterList")
    assert table.code == 0, table.err
    lines = table.out.splitlines()
    assert lines[0].split()[:4] == ["#Cluster", "Name", "#Broker", "Name"]
    assert lines[0].split()[8:10] == ["#OutTPS(LOAD)", "#Timer(Progress)"]  # 5.x's column
    rows = [line.split() for line in lines if line.strip().startswith("DefaultCluster")]
    assert [(r[1], r[2], r[3]) for r in rows] == [
        ("broker-a", "0", cluster.brokers["broker-a"].addr),
        ("broker-b", "0", cluster.brokers["broker-b"].addr),
    ]
    data = admin("clusterList", "--json").json
    assert [(d["brokerName"], d["addr"], d["version"]) for d in data] == [
        ("broker-a", cluster.brokers["broker-a"].addr, "V4_9_8"),
        ("broker-b", cluster.brokers["broker-b"].addr, "V4_9_8"),
    ]
    assert all(d["timerProgress"].endswith(")") for d in data), data
    more = admin("clusterList", "-m", "--json").json
    assert {d["brokerName"] for d in more} == {"broker-a", "broker-b"}
    assert all(d["inTotalToday"] >= 0 for d in more)


def test_unknown_cluster_is_one_line_and_exit_1(admin: Any) -> None:
    run = admin("clusterList", "-c", "NoSuchCluster")
    assert run.code == 1
    assert run.err == "mqadmin clusterList: cluster NoSuchCluster not found\n"
    assert run.out == ""


def test_unreachable_name_server_is_one_line_and_exit_1(unused_tcp_port: int) -> None:
    run = mqadmin("clusterList", "-n", f"127.0.0.1:{unused_tcp_port}", "--timeout", "2")
    assert run.code == 1
    assert run.err.startswith(f"mqadmin clusterList: 127.0.0.1:{unused_tcp_port}: connect")
    assert run.err.count("\n") == 1


def test_usage_errors_exit_2() -> None:
    assert mqadmin("noSuchCommand").code == 2
    assert mqadmin().code == 2


def test_console_entry_reads_namesrv_addr(cluster: Cluster) -> None:
    """``python -m aiorocketmq.client.admin`` is the console script's entry; like Apache's tools it
    takes the name server from NAMESRV_ADDR when -n is absent."""
    env = {**os.environ, "NAMESRV_ADDR": cluster.namesrv_addr}
    proc = subprocess.run(
        [sys.executable, "-m", "aiorocketmq.client.admin", "clusterList", "--json"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "broker-a" in proc.stdout


def test_name_server_from_option_environment_or_local_default() -> None:
    """Apache's tools read -n, then NAMESRV_ADDR; with neither we use make run's 127.0.0.1:9876."""
    assert namesrv_addrs("a:1;b:2", {"NAMESRV_ADDR": "c:3"}) == ["a:1", "b:2"]
    assert namesrv_addrs(None, {"NAMESRV_ADDR": "c:3; d:4"}) == ["c:3", "d:4"]
    assert namesrv_addrs(None, {}) == ["127.0.0.1:9876"]
    assert namesrv_addrs(None, {"NAMESRV_ADDR": ""}) == ["127.0.0.1:9876"]
    assert (
        mqadmin("clusterList", "-n", "").err == "mqadmin clusterList: no name server: -n is empty\n"
    )


@pytest.fixture
def unused_tcp_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
