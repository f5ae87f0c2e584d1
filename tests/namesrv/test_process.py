"""A real `mqnamesrv` process on port 0: registration over JSON and msgpack headers, routes,
KV config, liveness by connection close and by expiry (issue 4 tests)."""

from __future__ import annotations

import json
import subprocess
import sys
import zlib
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.config import ClientConfig
from aiorocketmq.remoting.protocol.codes import RequestCode, ResponseCode, SerializeType
from aiorocketmq.remoting.protocol.command import RemotingCommand
from aiorocketmq.remoting.protocol.register import (
    DataVersion,
    RegisterBrokerBody,
    TopicConfigWrapper,
)
from aiorocketmq.remoting.protocol.route import ClusterInfo, TopicRouteData, decode_topic_list
from aiorocketmq.remoting.protocol.topic import TopicConfig
from tests.harness import ServerProcess, serving
from tests.util import FAQ, wait_until


def namesrv_args(tmp: Path, *sets: str) -> list[str]:
    args = [
        "-m",
        "aiorocketmq.namesrv",
        "--listen-port",
        "0",
        "--set",
        f"kvConfigPath={tmp / 'kv.json'}",
    ]
    for item in sets:
        args += ["--set", item]
    return args


def start_namesrv(tmp: Path, *sets: str) -> ServerProcess:
    return ServerProcess(namesrv_args(tmp, *sets))


@pytest.fixture
def namesrv(tmp_path: Path) -> Iterator[ServerProcess]:
    with serving(namesrv_args(tmp_path)) as proc:
        yield proc


@pytest.fixture
async def clients() -> AsyncIterator[dict[SerializeType, RemotingClient]]:
    made = {t: RemotingClient(ClientConfig(serialize_type=t)) for t in SerializeType}
    yield made
    for cli in made.values():
        await cli.close()


def register_request(name: str, addr: str, *topics: str, broker_id: int = 0, counter: int = 1,
                     cluster: str = "DefaultCluster") -> RemotingCommand:  # fmt: skip
    table = {t: TopicConfig(topic_name=t, read_queue_nums=4, write_queue_nums=4) for t in topics}
    body = RegisterBrokerBody(topic_config_wrapper=TopicConfigWrapper(
        topic_config_table=table, data_version=DataVersion(counter, 1)
    )).encode()  # fmt: skip
    ext = {"brokerName": name, "brokerAddr": addr, "clusterName": cluster,
           "haServerAddr": addr + "1", "brokerId": str(broker_id), "compressed": "false",
           "bodyCrc32": str(zlib.crc32(body) & 0x7FFFFFFF)}  # fmt: skip
    return RemotingCommand.request(RequestCode.REGISTER_BROKER, ext, body)


async def route(cli: RemotingClient, addr: str, topic: str) -> RemotingCommand:
    return await cli.invoke(addr, RemotingCommand.request(105, {"topic": topic}))


async def test_register_over_each_header_type_and_read_routes(
    namesrv: ServerProcess, clients: dict[SerializeType, RemotingClient]
) -> None:
    """protocol.md 5.7 + 6.1: brokers register over JSON, ROCKETMQ and msgpack headers; the
    route merges them and parses as standard JSON with quoted brokerAddrs keys."""
    addr = f"127.0.0.1:{namesrv.listening_port()}"
    for i, (stype, cli) in enumerate(clients.items()):
        resp = await cli.invoke(addr, register_request(f"b{i}", f"127.0.0.1:{10911 + i}", "T"))
        assert resp.code == ResponseCode.SUCCESS, resp.remark
        assert resp.serialize_type == stype
    resp = await route(clients[SerializeType.JSON], addr, "T")
    assert resp.code == ResponseCode.SUCCESS
    raw = json.loads(resp.body)
    assert {b["brokerName"]: b["brokerAddrs"] for b in raw["brokerDatas"]} == {
        "b0": {"0": "127.0.0.1:10911"}, "b1": {"0": "127.0.0.1:10912"},
        "b2": {"0": "127.0.0.1:10913"}}  # fmt: skip
    data = TopicRouteData.decode(resp.body)
    assert sorted((q.broker_name, q.read_queue_nums, q.perm) for q in data.queue_datas) == [
        ("b0", 4, 6), ("b1", 4, 6), ("b2", 4, 6)]  # fmt: skip
    info = await clients[SerializeType.MSGPACK].invoke(addr, RemotingCommand.request(106))
    assert ClusterInfo.decode(info.body).cluster_addr_table == {
        "DefaultCluster": ["b0", "b1", "b2"]
    }
    topics = await clients[SerializeType.MSGPACK].invoke(addr, RemotingCommand.request(206))
    assert decode_topic_list(topics.body) == ["T"]


async def test_unknown_topic_is_topic_not_exist(
    namesrv: ServerProcess, clients: dict[SerializeType, RemotingClient]
) -> None:
    """protocol.md 5.7: a topic without queue data answers 17 with the original's remark,
    FAQ suffix included (fidelity 1.1, code 105)."""
    addr = f"127.0.0.1:{namesrv.listening_port()}"
    resp = await route(clients[SerializeType.JSON], addr, "Nowhere")
    assert (resp.code, resp.remark) == (
        17, "No topic route info in name server for the topic: Nowhere" + FAQ)  # fmt: skip


async def test_closed_broker_connection_removes_its_routes(
    namesrv: ServerProcess, clients: dict[SerializeType, RemotingClient]
) -> None:
    """protocol.md 11: a closed broker channel drops its brokers at once, logged with why."""
    addr = f"127.0.0.1:{namesrv.listening_port()}"
    broker = RemotingClient()
    await broker.invoke(addr, register_request("broker-a", "127.0.0.1:10911", "Gone"))
    assert (await route(clients[SerializeType.MSGPACK], addr, "Gone")).code == 0
    await broker.close()
    evicted = namesrv.wait_for("broker_evicted")
    assert (evicted["broker"], evicted["reason"]) == ("broker-a", "channel_closed")
    assert (await route(clients[SerializeType.MSGPACK], addr, "Gone")).code == 17


async def test_unregister_and_crc_and_bad_bodies(
    namesrv: ServerProcess, clients: dict[SerializeType, RemotingClient]
) -> None:
    """protocol.md 5.7: 104 drops the broker; a bodyCrc32 mismatch is "crc32 not match"; a
    malformed body is refused without harming the server."""
    addr = f"127.0.0.1:{namesrv.listening_port()}"
    cli = clients[SerializeType.MSGPACK]
    bad_crc = register_request("broker-x", "127.0.0.1:1", "X")
    bad_crc.ext_fields["bodyCrc32"] = "12345"
    resp = await cli.invoke(addr, bad_crc)
    assert (resp.code, resp.remark) == (1, "crc32 not match")
    garbage = register_request("broker-x", "127.0.0.1:1", "X")
    garbage.body, garbage.ext_fields["bodyCrc32"] = b"{not json", "0"
    assert (await cli.invoke(addr, garbage)).code == ResponseCode.SYSTEM_ERROR
    assert (await cli.invoke(addr, register_request("broker-a", "127.0.0.1:2", "Y"))).code == 0
    ident = {"brokerName": "broker-a", "brokerAddr": "127.0.0.1:2",
             "clusterName": "DefaultCluster", "brokerId": "0"}  # fmt: skip
    assert (await cli.invoke(addr, RemotingCommand.request(104, ident))).code == 0
    assert (await route(cli, addr, "Y")).code == 17


async def test_slave_learns_master_and_data_version_query(
    namesrv: ServerProcess, clients: dict[SerializeType, RemotingClient]
) -> None:
    """protocol.md 5.7: the REGISTER_BROKER response gives a slave masterAddr and haServerAddr;
    QUERY_DATA_VERSION says whether the registered version differs."""
    addr = f"127.0.0.1:{namesrv.listening_port()}"
    cli = clients[SerializeType.JSON]
    await cli.invoke(addr, register_request("broker-a", "127.0.0.1:10911", "T", counter=7))
    slave = await cli.invoke(addr, register_request("broker-a", "127.0.0.1:10931", broker_id=1))
    assert slave.ext_fields == {"masterAddr": "127.0.0.1:10911", "haServerAddr": "127.0.0.1:109111"}
    ident = {"brokerName": "broker-a", "brokerAddr": "127.0.0.1:10911",
             "clusterName": "DefaultCluster", "brokerId": "0"}  # fmt: skip
    same = json.dumps({"counter": 7, "timestamp": 1}).encode()
    resp = await cli.invoke(addr, RemotingCommand.request(322, ident, same))
    assert resp.ext_fields["changed"] == "false"
    newer = json.dumps({"counter": 8, "timestamp": 1}).encode()
    resp = await cli.invoke(addr, RemotingCommand.request(322, ident, newer))
    assert resp.ext_fields["changed"] == "true"


async def test_write_perm_and_delete_and_topics_by_cluster(
    namesrv: ServerProcess, clients: dict[SerializeType, RemotingClient]
) -> None:
    """protocol.md 5.7: 205/327 with their counts, 224 by cluster, 216 delete."""
    addr = f"127.0.0.1:{namesrv.listening_port()}"
    cli = clients[SerializeType.MSGPACK]
    await cli.invoke(addr, register_request("broker-a", "127.0.0.1:1", "A", "B", cluster="C1"))
    wipe = await cli.invoke(addr, RemotingCommand.request(205, {"brokerName": "broker-a"}))
    assert wipe.ext_fields == {"wipeTopicCount": "2"}
    assert TopicRouteData.decode((await route(cli, addr, "A")).body).queue_datas[0].perm == 4
    add = await cli.invoke(addr, RemotingCommand.request(327, {"brokerName": "broker-a"}))
    assert add.ext_fields == {"addTopicCount": "2"}
    by_cluster = await cli.invoke(addr, RemotingCommand.request(224, {"cluster": "C1"}))
    assert sorted(decode_topic_list(by_cluster.body)) == ["A", "B"]
    assert (await cli.invoke(addr, RemotingCommand.request(216, {"topic": "A"}))).code == 0
    assert (await route(cli, addr, "A")).code == 17


async def test_kv_config_persists_across_restart(tmp_path: Path) -> None:
    """Issue 4: KV config codes 100/101/102/219, persisted to kvConfigPath as JSON."""
    proc = start_namesrv(tmp_path)
    cli = RemotingClient()
    try:
        addr = f"127.0.0.1:{proc.listening_port()}"
        put = {"namespace": "ORDER_TOPIC_CONFIG", "key": "Orders", "value": "broker-a:4"}
        assert (await cli.invoke(addr, RemotingCommand.request(100, put))).code == 0
        put2 = {"namespace": "ns2", "key": "k", "value": "v"}
        assert (await cli.invoke(addr, RemotingCommand.request(100, put2))).code == 0
        gone = {"namespace": "ns2", "key": "k"}
        assert (await cli.invoke(addr, RemotingCommand.request(102, gone))).code == 0
        missing = await cli.invoke(addr, RemotingCommand.request(101, gone))
        assert (missing.code, missing.remark) == (22, "No config item, Namespace: ns2 Key: k")
    finally:
        await cli.close()
        assert proc.stop() == 0
    saved = json.loads((tmp_path / "kv.json").read_text())
    assert saved == {"configTable": {"ORDER_TOPIC_CONFIG": {"Orders": "broker-a:4"}}}
    proc = start_namesrv(tmp_path)
    cli = RemotingClient()
    try:
        addr = f"127.0.0.1:{proc.listening_port()}"
        ask = {"namespace": "ORDER_TOPIC_CONFIG", "key": "Orders"}
        got = await cli.invoke(addr, RemotingCommand.request(101, ask))
        assert got.ext_fields == {"value": "broker-a:4"}
        table = await cli.invoke(addr, RemotingCommand.request(219, {"namespace": "ns2"}))
        assert table.code == 22
        reg = await cli.invoke(addr, register_request("broker-a", "127.0.0.1:1", "Orders"))
        assert json.loads(reg.body) == {"table": {"Orders": "broker-a:4"}}
    finally:
        await cli.close()
        assert proc.stop() == 0


async def test_silent_broker_is_evicted_after_short_expiry(tmp_path: Path) -> None:
    """protocol.md 11: a scan every scanNotActiveBrokerInterval evicts brokers silent for
    brokerChannelExpiredTime (shortened via --set), logging the broker and why."""
    proc = start_namesrv(tmp_path, "brokerChannelExpiredTime=1000",
                         "scanNotActiveBrokerInterval=200")  # fmt: skip
    cli = RemotingClient()
    try:
        addr = f"127.0.0.1:{proc.listening_port()}"
        await cli.invoke(addr, register_request("broker-s", "127.0.0.1:3", "Quiet"))
        assert (await route(cli, addr, "Quiet")).code == 0
        evicted = proc.wait_for("broker_evicted", timeout=10)
        assert (evicted["broker"], evicted["reason"]) == ("broker-s", "expired")
        await wait_until(lambda: cli.channel(addr) is None)  # Java closes the channel too
        assert (await route(cli, addr, "Quiet")).code == 17
    finally:
        await cli.close()
        assert proc.stop() == 0


def test_mqnamesrv_console_script_defaults() -> None:
    """Issue 4: `mqnamesrv` starts as a new user would start it: port 9876 by default, the
    kv config under ~/namesrv, the 10 s scan and 120 s expiry."""
    script = Path(sys.executable).with_name("mqnamesrv")
    result = subprocess.run([script, "-p"], capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stderr
    lines = dict(line.split("=", 1) for line in result.stdout.splitlines())
    assert lines["listenPort"] == "9876"
    assert lines["kvConfigPath"] == str(Path.home() / "namesrv" / "kvConfig.json")
    assert lines["scanNotActiveBrokerInterval"] == "10000"
    assert lines["brokerChannelExpiredTime"] == "120000"
    assert lines["orderMessageEnable"] == "false"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--listen-port", "70000"], "--listen-port: listenPort: must be between 0 and 65535"),
        (["--set", "scanNotActiveBrokerInterval=0"], "--set: scanNotActiveBrokerInterval: must"),
        (["--set", "serverChannelMaxIdleTimeSeconds=0"], "--set: serverChannelMaxIdleTimeSeconds"),
    ],
)
def test_values_it_cannot_run_with_exit_1(argv: list[str], message: str) -> None:
    """Standards, bad config: one line naming the key and where it came from, exit 1 (a zero
    interval once made a busy loop)."""
    script = Path(sys.executable).with_name("mqnamesrv")
    result = subprocess.run([script, *argv], capture_output=True, text=True, timeout=30)
    assert result.returncode == 1
    assert result.stderr.startswith(f"config error: {message}")
    assert result.stderr.count("\n") == 1
