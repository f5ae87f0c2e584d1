"""A broker's /metrics (issue 19, item 4), scraped over HTTP from a real process and parsed
with Prometheus's own parser: counters move with sends, pulls and offset commits; histograms
are well formed; bad HTTP is refused without hurting the broker; a metrics port that is taken,
or -1, leaves the broker serving (and, with -1, listening on nothing more)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from aiorocketmq.client.core import api
from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.counters import LATENCY_BOUNDS
from aiorocketmq.remoting.metrics_http import MAX_CONNECTIONS
from aiorocketmq.remoting.protocol.command import RemotingCommand
from tests.broker.wire import create_topic, pull, send_v2
from tests.cluster import BrokerProc, Cluster
from tests.harness import ServerProcess
from tests.scrape import buckets, grew, http, listening_ports, matching, scrape, value

TOPIC = "MetricsT"
SENDS = {"request_code": "310", "request": "SEND_MESSAGE_V2"}
OK = {"response_code": "0", "response": "SUCCESS"}


@pytest.fixture(scope="module")
def metrics_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Cluster, int]]:
    """A name server and broker-a; the broker's metrics port."""
    cluster = Cluster(tmp_path_factory.mktemp("metrics"))
    cluster.start_namesrv()
    try:
        proc = cluster.add_broker("broker-a").proc
        assert proc is not None
        yield cluster, proc.metrics_port()
    finally:
        codes = cluster.stop()
        print(cluster.dump())
    assert all(code == 0 for code in codes.values()), codes


async def ok(client: RemotingClient, addr: str, cmd: RemotingCommand) -> RemotingCommand:
    resp = await client.invoke(addr, cmd)
    assert resp.code == 0, resp.remark
    return resp


def lag(samples: dict[tuple[str, frozenset[tuple[str, str]]], float]) -> float | None:
    found = matching(samples, "rocketmq_consumer_lag_messages", topic=TOPIC, consumer_group="mg")
    return next(iter(found.values())) if found else None


async def test_sends_pulls_and_commits_move_the_counters(
    metrics_cluster: tuple[Cluster, int], client: RemotingClient
) -> None:
    cluster, port = metrics_cluster
    addr = cluster.brokers["broker-a"].addr
    await ok(client, addr, create_topic(TOPIC, 2))
    before = await scrape(port)
    for i in range(5):  # 3 to queue 0, 2 to queue 1
        await ok(client, addr, send_v2(TOPIC, b"x" * 100, queue_id=i % 2))
    await ok(client, addr, pull("mg", TOPIC, 0, 0, sys_flag=4, subscription="*"))
    after = await scrape(port)
    assert grew(before, after, "rocketmq_messages_in_total", topic=TOPIC) == 5
    assert grew(before, after, "rocketmq_throughput_in_total", topic=TOPIC) > 5 * 100
    assert value(after, "rocketmq_messages_out_total", topic=TOPIC, consumer_group="mg") == 3
    assert value(after, "rocketmq_throughput_out_total", topic=TOPIC, consumer_group="mg") > 300
    assert value(after, "rocketmq_queue_max_offset", topic=TOPIC, queue_id="0") == 3
    assert value(after, "rocketmq_queue_max_offset", topic=TOPIC, queue_id="1") == 2
    assert grew(before, after, "rocketmq_rpc_requests_total", **SENDS, **OK) == 5
    assert grew(before, after, "rocketmq_rpc_latency_seconds_count", **SENDS) == 5
    pulls = {"request_code": "11", "request": "PULL_MESSAGE"}
    assert grew(before, after, "rocketmq_rpc_requests_total", **pulls, **OK) == 1
    assert value(after, "rocketmq_connections", listener="main") >= 1
    assert value(after, "rocketmq_connections_opened_total", listener="main") >= 1
    assert lag(after) is None  # no offset committed: the group is not tracked yet
    await ok(client, addr, api.update_consumer_offset("mg", TOPIC, 0, 1))
    assert lag(await scrape(port)) == (3 - 1) + (2 - 0)
    await ok(client, addr, api.update_consumer_offset("mg", TOPIC, 0, 3))
    await ok(client, addr, api.update_consumer_offset("mg", TOPIC, 1, 2))
    done = await scrape(port)
    assert lag(done) == 0
    commits = {"request_code": "15", "request": "UPDATE_CONSUMER_OFFSET"}
    assert grew(after, done, "rocketmq_rpc_requests_total", **commits, **OK) == 3
    assert value(done, "rocketmq_storage_size_bytes", kind="commitlog") > 0
    assert value(done, "rocketmq_storage_size_bytes", kind="consumequeue") > 0
    assert value(done, "rocketmq_storage_disk_free_bytes") > 0


async def test_histograms_are_cumulative_and_unknown_codes_share_one_label(
    metrics_cluster: tuple[Cluster, int], client: RemotingClient
) -> None:
    cluster, port = metrics_cluster
    addr = cluster.brokers["broker-a"].addr
    await ok(client, addr, send_v2(TOPIC, b"y"))
    for code in (9001, 9002, 9003):  # no route: REQUEST_CODE_NOT_SUPPORTED, one series
        assert (await client.invoke(addr, RemotingCommand.request(code, {}))).code == 3
    first = await scrape(port)
    latency = buckets(first, "rocketmq_rpc_latency_seconds", **SENDS)
    assert [le for le, _ in latency] == [*LATENCY_BOUNDS, float("inf")]
    counts = [count for _, count in latency]
    assert counts == sorted(counts)  # cumulative
    assert counts[-1] == value(first, "rocketmq_rpc_latency_seconds_count", **SENDS) > 0
    assert value(first, "rocketmq_rpc_latency_seconds_sum", **SENDS) > 0
    others = matching(first, "rocketmq_rpc_requests_total", request_code="other")
    assert list(others.values()) == [3], others
    assert dict(next(iter(others)))["response"] == "REQUEST_CODE_NOT_SUPPORTED"
    await asyncio.sleep(0.6)  # the loop-lag probe wakes every 0.5 s
    second = await scrape(port)
    lag_count = "rocketmq_event_loop_lag_seconds_count"
    assert value(second, lag_count) > value(first, lag_count)
    assert buckets(second, "rocketmq_event_loop_lag_seconds")[-1][1] == value(second, lag_count)


BAD = {
    "garbage": (b"\x16\x03\x01 not http at all\r\n\r\n", 400),
    "a header line without a colon": (b"GET /metrics HTTP/1.1\r\nnocolon\r\n\r\n", 400),
    "wrong path": (b"GET /admin HTTP/1.1\r\nHost: t\r\n\r\n", 404),
    "wrong method": (b"POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n", 405),
    "an oversize head": (b"GET /metrics HTTP/1.1\r\nX-Pad: " + b"a" * 20_000 + b"\r\n\r\n", 431),
    "a head cut short": (b"GET /metr", 400),
}


async def test_bad_http_gets_an_error_and_the_broker_still_serves(
    metrics_cluster: tuple[Cluster, int], client: RemotingClient
) -> None:
    cluster, port = metrics_cluster
    addr = cluster.brokers["broker-a"].addr
    # clients that never send: past MAX_CONNECTIONS the oldest are dropped, scrapes go on
    idle = [await asyncio.open_connection("127.0.0.1", port) for _ in range(MAX_CONNECTIONS + 4)]
    for name, (raw, status) in BAD.items():
        got, _headers, body = await http(port, raw, half_close=name == "a head cut short")
        assert got == status, (name, body)
    await scrape(port)
    async with asyncio.timeout(5):
        assert await idle[0][0].read() == b""  # the oldest was closed
    for _reader, writer in idle:
        writer.close()
    await ok(client, addr, send_v2(TOPIC, b"still serving"))
    _a, proc = started(cluster, "broker-a")
    assert [e for e in proc.events if e.get("level") == "error"] == []


def started(cluster: Cluster, name: str) -> tuple[BrokerProc, ServerProcess]:
    broker = cluster.brokers[name]
    assert broker.proc is not None
    return broker, broker.proc


async def test_minus_one_listens_on_nothing_more(
    metrics_cluster: tuple[Cluster, int], client: RemotingClient
) -> None:
    """metricsPort=-1: no /metrics and no port for it. (A taken port stops the broker since
    issue 31: tests/broker/test_metrics_port.py.)"""
    cluster, port = metrics_cluster
    cluster.add_broker("broker-c", metricsPort="-1")
    c, c_proc = started(cluster, "broker-c")
    await ok(client, c.addr, create_topic(TOPIC, 2))
    await ok(client, c.addr, send_v2(TOPIC, b"served without metrics"))
    events = {e.get("event") for e in c_proc.events}
    assert not events & {"metrics_listening", "start_failed"}
    ports = listening_ports(c_proc.proc.pid)
    assert ports == {c.port - 2, c.port, c.port + 1}  # VIP, main, HA: nothing for metrics
    a, a_proc = started(cluster, "broker-a")  # the check sees a metrics port where there is one
    assert listening_ports(a_proc.proc.pid) == {a.port - 2, a.port, a.port + 1, port}
