"""The name server's /metrics (issue 19, item 4), scraped over HTTP from a real process and
parsed with Prometheus's parser: registrations, lookups and connections move it; its port is
listenPort + 1000 unless set, and one that is taken stops the name server (issue 31)."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

from aiorocketmq.client.core import api
from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.protocol.command import RemotingCommand
from tests.cluster import running
from tests.harness import ServerProcess, serving
from tests.ports import METRICS_OFFSET, free_listen_port
from tests.scrape import buckets, grew, scrape, value

OK = {"response_code": "0", "response": "SUCCESS"}


async def test_registrations_and_lookups_move_the_name_servers_metrics(
    tmp_path: Path,
) -> None:
    with running(tmp_path, ["broker-a"]) as cluster:
        port = cluster.ns.metrics_port()
        before = await scrape(port)  # broker-a registered before it logged `listening`
        assert value(before, "rocketmq_namesrv_brokers", cluster="DefaultCluster") == 1
        assert value(before, "rocketmq_namesrv_broker_names") == 1
        assert value(before, "rocketmq_namesrv_clusters") == 1
        assert value(before, "rocketmq_namesrv_topics") >= 1
        registers = {"request_code": "103", "request": "REGISTER_BROKER"}
        assert value(before, "rocketmq_rpc_requests_total", **registers, **OK) >= 1
        assert value(before, "rocketmq_connections", listener="main") == 1  # broker-a
        async with RemotingClient() as client:
            for _ in range(2):
                resp = await client.invoke(cluster.namesrv_addr, api.get_route("NoSuchTopic"))
                assert resp.code == 17  # TOPIC_NOT_EXIST
            await client.invoke_oneway(cluster.namesrv_addr, RemotingCommand.request(9999, {}))
            await asyncio.sleep(0.6)  # the oneway is handled; a loop-lag probe ran
            after = await scrape(port)
            assert value(after, "rocketmq_connections", listener="main") == 2
        routes = {"request_code": "105", "request": "GET_ROUTEINFO_BY_TOPIC"}
        missing = {"response_code": "17", "response": "TOPIC_NOT_EXIST"}
        assert grew(before, after, "rocketmq_rpc_requests_total", **routes, **missing) == 2
        assert grew(before, after, "rocketmq_rpc_latency_seconds_count", **routes) == 2
        assert buckets(after, "rocketmq_rpc_latency_seconds", **routes)[-1][1] >= 2
        unknown = {"request_code": "other", "request": "OTHER"}  # not answered at all
        none = {"response_code": "none", "response": "NONE"}
        assert grew(before, after, "rocketmq_rpc_requests_total", **unknown, **none) == 1
        assert value(after, "rocketmq_event_loop_lag_seconds_count") >= 1
        assert value(after, "process_cpu_seconds_total") > 0


def test_a_taken_port_stops_the_name_server_with_one_line_naming_it(tmp_path: Path) -> None:
    """Issue 31 item 1: a taken metrics port is an error naming the port and the key to change,
    never a name server serving on without metrics (issue 19 logged it and served on)."""
    with socket.create_server(("127.0.0.1", 0)) as taken:
        busy = taken.getsockname()[1]
        argv = ["-m", "aiorocketmq.namesrv", "--listen-port", "0", "--set", f"metricsPort={busy}",
                "--set", f"kvConfigPath={tmp_path / 'kv.json'}"]  # fmt: skip
        proc = ServerProcess(argv)
        try:
            error = str(proc.wait_for("start_failed", timeout=30)["error"])
            assert proc.proc.wait(30) == 1
        finally:
            proc.stop()
            print(proc.dump())
    assert f"metrics port {busy}" in error and "metricsPort" in error, error
    assert not {e.get("event") for e in proc.events} & {"listening", "metrics_listening"}


def test_the_metrics_port_is_the_listen_port_plus_1000(tmp_path: Path) -> None:
    """Issue 31 item 1: by default the name server's /metrics is on listenPort + 1000 (9876:
    10876), so two name servers of one host do not meet there."""
    port = free_listen_port(METRICS_OFFSET)
    argv = ["-m", "aiorocketmq.namesrv", "--listen-port", str(port),
            "--set", f"kvConfigPath={tmp_path / 'kv.json'}"]  # fmt: skip
    with serving(argv, default_metrics_port=True) as proc:
        assert proc.metrics_port() == port + METRICS_OFFSET
    taken = free_listen_port(METRICS_OFFSET)
    argv[3] = str(taken)
    with socket.create_server(("127.0.0.1", taken + METRICS_OFFSET)):
        proc = ServerProcess(argv, default_metrics_port=True)
        try:
            error = str(proc.wait_for("start_failed", timeout=30)["error"])
            assert proc.proc.wait(30) == 1
        finally:
            proc.stop()
            print(proc.dump())
    assert f"metrics port {taken + METRICS_OFFSET}" in error and "metricsPort" in error, error
