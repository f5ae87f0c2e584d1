"""The name server's /metrics (issue 19, item 4), scraped over HTTP from a real process and
parsed with Prometheus's parser: registrations, lookups and connections move it; a metrics
port that is taken leaves the name server serving."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

from aiorocketmq.client.core import api
from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.protocol.command import RemotingCommand
from tests.cluster import running
from tests.harness import serving
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


async def test_a_taken_port_is_logged_and_the_name_server_serves(tmp_path: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        busy = taken.getsockname()[1]
        argv = ["-m", "aiorocketmq.namesrv", "--listen-port", "0", "--set", f"metricsPort={busy}",
                "--set", f"kvConfigPath={tmp_path / 'kv.json'}"]  # fmt: skip
        with serving(argv) as proc:
            warning = proc.wait_for("metrics_port_unavailable")
            assert (warning["level"], warning["metrics_port"]) == ("warning", busy)
            async with RemotingClient() as client:
                addr = f"127.0.0.1:{proc.listening_port()}"
                assert (await client.invoke(addr, api.get_route("T"))).code == 17
            assert not [e for e in proc.events if e.get("event") == "metrics_listening"]
