"""Broker configuration at run time, as 4.9.8 has it (issue 13 item 3; fidelity D3, D8 and
§1.3 codes 25 and 26): UPDATE_BROKER_CONFIG and GET_BROKER_CONFIG over the JSON headers Java
clients send, against real processes."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from aiorocketmq.broker import java_keys
from aiorocketmq.broker.config import BrokerConfig
from aiorocketmq.broker.store.config import StoreConfig
from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.config import ServerConfig, config_keys
from aiorocketmq.remoting.protocol.codes import RequestCode as C
from aiorocketmq.remoting.protocol.codes import ResponseCode
from aiorocketmq.remoting.protocol.command import RemotingCommand
from tests.broker.wire import create_topic, route, send_v2
from tests.cluster import BROKER_DEFAULTS, Cluster
from tests.harness import serving

BLACK_LISTED = "Can not update config in black list."
FORBIDDEN = "the broker[127.0.0.1] sending message is forbidden"
KNOWN = config_keys(BrokerConfig) | config_keys(StoreConfig) | config_keys(ServerConfig)
SHOWN = KNOWN | java_keys.INFORMATIONAL | java_keys.FACT_KEYS
APACHE_KEYS = Path(__file__).with_name("apache_broker_config_keys.txt")


def update(text: str) -> RemotingCommand:
    return RemotingCommand.request(C.UPDATE_BROKER_CONFIG, {}, text.encode())


async def get_config(client: RemotingClient, addr: str) -> tuple[dict[str, str], int]:
    """GET_BROKER_CONFIG: the key=value lines and the version counter (what
    MQClientAPIImpl.getBrokerConfig reads: the body and ext ``version``)."""
    resp = await client.invoke(addr, RemotingCommand.request(C.GET_BROKER_CONFIG, {}))
    assert resp.code == 0, resp.remark
    lines = dict(line.split("=", 1) for line in resp.body.decode().splitlines())
    return lines, json.loads(resp.ext_fields["version"])["counter"]


async def route_perms(client: RemotingClient, namesrv: str, topic: str) -> list[int]:
    resp = await route(client, namesrv, topic)
    assert resp.code == 0, resp.remark
    return [q["perm"] for q in json.loads(resp.body)["queueDatas"]]


async def test_store_and_server_keys_are_accepted(
    cluster: Cluster, json_client: RemotingClient
) -> None:
    """fidelity D3 / §1.3 code 25 and 26: store keys are accepted; the answer names
    the keys that need a restart. Unknown keys follow Configuration.update's rule: it merges
    only keys its config objects already have (mergeIfExist) and sets only existing fields,
    so other keys are dropped silently and the rest of the request still applies. 26 shows
    the keys 25 accepts, with the values accepted last, and a newer version, and 4.9.8's
    keys we have no setting for (java_keys), which 25 ignores."""
    broker = cluster.add_broker("broker-a")
    before, version = await get_config(json_client, broker.addr)
    assert set(before) == SHOWN
    assert {"fileReservedTime", "flushIntervalCommitLog", "brokerPermission"} <= KNOWN
    body = (
        "fileReservedTime=48\nflushIntervalCommitLog=300\nmessageIndexEnable=false\n"
        "noSuchKey=1\nsendMessageThreadPoolNums=4\n"
    )
    resp = await json_client.invoke(broker.addr, update(body))
    assert (resp.code, resp.remark) == (
        0,
        "updated; takes effect after restart: flushIntervalCommitLog, messageIndexEnable; "
        "ignored, not a key of this broker: noSuchKey, sendMessageThreadPoolNums",
    )
    after, newer = await get_config(json_client, broker.addr)
    assert set(after) == SHOWN and newer > version
    assert after["sendMessageThreadPoolNums"] == before["sendMessageThreadPoolNums"]
    assert (
        after["fileReservedTime"],
        after["flushIntervalCommitLog"],
        after["messageIndexEnable"],
    ) == ("48", "300", "false")
    # a value set back to the running one needs no restart
    back = await json_client.invoke(
        broker.addr, update(f"flushIntervalCommitLog={before['flushIntervalCommitLog']}\n")
    )
    assert (back.code, back.remark) == (0, None)


async def test_get_broker_config_has_every_key_of_4_9_8(
    cluster: Cluster, json_client: RemotingClient
) -> None:
    """issue 33, difference 2: 4.9.8's GET_BROKER_CONFIG answers every field of BrokerConfig,
    NettyServerConfig, NettyClientConfig and MessageStoreConfig (178 keys, listed from
    Apache's own broker); ours answers each of them -- our value where we have the setting,
    else 4.9.8's default (thread pools sized by the CPU count as Java's), ``useTLS`` from
    tls.enable and ``rocketmqHome`` from ROCKETMQ_HOME -- and keeps its own keys."""
    broker = cluster.add_broker("broker-a")
    shown, _ = await get_config(json_client, broker.addr)
    lines = APACHE_KEYS.read_text(encoding="utf-8").splitlines()
    apache = {line for line in lines if line and not line.startswith("#")}
    assert len(apache) == 178
    assert sorted(apache - set(shown)) == []
    assert set(shown) >= KNOWN  # ours kept: metricsPort, aclFile, ...
    cpus = java_keys.cpus()
    assert shown["sendMessageThreadPoolNums"] == str(min(cpus, 4))
    assert shown["pullMessageThreadPoolNums"] == str(16 + 2 * cpus)
    assert (shown["useTLS"], shown["enableDLegerCommitLog"]) == ("false", "false")
    assert (shown["transientStorePoolEnable"], shown["aclEnable"]) == ("false", "false")
    assert shown["msgTraceTopicName"] == "RMQ_SYS_TRACE_TOPIC"
    assert Path(shown["rocketmqHome"]).is_absolute()
    assert shown["listenPort"] == str(broker.port)  # a setting of ours: its real value


async def test_black_listed_keys(cluster: Cluster, json_client: RemotingClient) -> None:
    """fidelity §1.3 code 25: AdminBrokerProcessor's black list (brokerConfigPath, rocketmqHome,
    configBlackList, plus BrokerConfig.configBlackList) refuses the whole request with
    NO_PERMISSION and Java's remark; nothing in it is applied."""
    broker = cluster.add_broker(
        "broker-a", configBlackList="configBlackList;brokerConfigPath;traceOn"
    )
    for body in ("brokerConfigPath=/tmp/x\n", "rocketmqHome=/tmp\n", "configBlackList=\n",
                 "fileReservedTime=1\ntraceOn=false\n"):  # fmt: skip
        resp = await json_client.invoke(broker.addr, update(body))
        assert (resp.code, resp.remark) == (ResponseCode.NO_PERMISSION, BLACK_LISTED), body
    lines, _ = await get_config(json_client, broker.addr)
    assert (lines["fileReservedTime"], lines["traceOn"]) == ("72", "true")


async def test_bad_value_applies_nothing(cluster: Cluster, json_client: RemotingClient) -> None:
    """fidelity D3 (a deliberate difference: Java skips a value it cannot parse and answers
    SUCCESS): a bad value is refused with a remark naming the key, and no key of the request
    is applied."""
    broker = cluster.add_broker("broker-a")
    resp = await json_client.invoke(broker.addr, update("traceOn=false\nmaxMessageSize=big\n"))
    assert (resp.code, resp.remark) == (
        ResponseCode.SYSTEM_ERROR,
        "UPDATE_BROKER_CONFIG: maxMessageSize: expected int, got 'big'",
    )
    resp = await json_client.invoke(broker.addr, update("diskMaxUsedSpaceRatio=101\n"))
    assert (resp.code, resp.remark) == (
        ResponseCode.SYSTEM_ERROR,
        "UPDATE_BROKER_CONFIG: diskMaxUsedSpaceRatio: must be between 0 and 100, got 101",
    )
    lines, _ = await get_config(json_client, broker.addr)
    assert (lines["traceOn"], lines["maxMessageSize"]) == ("true", str(4 * 1024 * 1024))
    assert lines["diskMaxUsedSpaceRatio"] == "75"
    sent = await json_client.invoke(broker.addr, send_v2("Live", b"x"))
    assert (sent.code, sent.ext_fields["TRACE_ON"]) == (0, "true")


async def test_live_keys_take_effect(cluster: Cluster, json_client: RemotingClient) -> None:
    """fidelity D3: a broker key (traceOn) and a store key (maxMessageSize) change the running
    broker at once, without a restart."""
    broker = cluster.add_broker("broker-a")
    big = b"x" * 2048
    assert (await json_client.invoke(broker.addr, send_v2("Live", big))).code == 0
    resp = await json_client.invoke(broker.addr, update("maxMessageSize=1024\ntraceOn=false\n"))
    assert (resp.code, resp.remark) == (0, None)
    refused = await json_client.invoke(broker.addr, send_v2("Live", big))
    assert refused.code == ResponseCode.MESSAGE_ILLEGAL
    assert "msg body length limit 1024B" in str(refused.remark)  # fidelity D14: bytes
    small = await json_client.invoke(broker.addr, send_v2("Live", b"x" * 1000))
    assert (small.code, small.ext_fields["TRACE_ON"]) == (0, "false")


async def test_update_is_persisted_across_restart(
    cluster: Cluster, json_client: RemotingClient, tmp_path: Path
) -> None:
    """fidelity D3: Configuration.persist writes to the file the broker was started with
    (-c); the previous content is kept as <file>.bak; a restart starts with the new values
    (a live one and one that needed the restart)."""
    conf = tmp_path / "broker.conf"
    settings = {**BROKER_DEFAULTS, "brokerName": "broker-a",
                "storePathRootDir": str(tmp_path / "store")}  # fmt: skip
    original = "# the operator's comment\n" + "".join(f"{k}={v}\n" for k, v in settings.items())
    conf.write_text(original)
    argv = [
        "-m",
        "aiorocketmq.broker",
        "-c",
        str(conf),
        "-n",
        cluster.namesrv_addr,
        "--listen-port",
        "0",
    ]
    with serving(argv) as first:
        addr = f"127.0.0.1:{first.listening_port()}"
        resp = await json_client.invoke(addr, update("fileReservedTime=48\ntraceOn=false\n"))
        assert (resp.code, resp.remark) == (0, None)
        period = await json_client.invoke(addr, update("registerNameServerPeriod=2000\n"))
        assert period.remark == "updated; takes effect after restart: registerNameServerPeriod"
    text = conf.read_text()
    assert text.startswith("# the operator's comment\n")
    for line in ("registerNameServerPeriod=2000", "fileReservedTime=48", "traceOn=false"):
        assert f"{line}\n" in text
    assert (tmp_path / "broker.conf.bak").read_text().startswith("# the operator's comment\n")
    with serving(argv) as second:
        addr = f"127.0.0.1:{second.listening_port()}"
        lines, _ = await get_config(json_client, addr)
        assert (lines["fileReservedTime"], lines["traceOn"]) == ("48", "false")
        assert lines["registerNameServerPeriod"] == "2000"


async def test_broker_permission_is_advertised(
    cluster: Cluster, json_client: RemotingClient
) -> None:
    """fidelity D3: brokerPermission=4 through 25 bumps the topic data version and registers
    before answering (BrokerController.registerBrokerAll gives every topic the broker's perm
    when it is not read+write), so the name server's route shows perm 4 at once and keeps it;
    6 brings the topics' own perms back."""
    broker = cluster.add_broker("broker-a")
    assert (await json_client.invoke(broker.addr, create_topic("Drain", 2))).code == 0
    assert await route_perms(json_client, cluster.namesrv_addr, "Drain") == [6]
    resp = await json_client.invoke(broker.addr, update("brokerPermission=4\n"))
    assert (resp.code, resp.remark) == (0, None)
    assert await route_perms(json_client, cluster.namesrv_addr, "Drain") == [4]
    await asyncio.sleep(1.5)  # a periodic registration since (registerNameServerPeriod 1 s)
    assert await route_perms(json_client, cluster.namesrv_addr, "Drain") == [4]
    resp = await json_client.invoke(broker.addr, update("brokerPermission=6\n"))
    assert resp.code == 0
    assert await route_perms(json_client, cluster.namesrv_addr, "Drain") == [6]


async def test_unwritable_broker_refuses_order_topics_only(
    cluster: Cluster, json_client: RemotingClient
) -> None:
    """fidelity D8: AbstractSendMessageProcessor.msgCheck refuses a send with NO_PERMISSION
    and Java's remark only when the broker is not writable and the topic is an order topic
    (TopicConfig.order); other topics are stored. A broker started unwritable advertises
    it in its first registration."""
    broker = cluster.add_broker("broker-a")
    assert (await json_client.invoke(broker.addr, create_topic("Ordered", order="true"))).code == 0
    assert (await json_client.invoke(broker.addr, create_topic("Plain"))).code == 0
    assert (await json_client.invoke(broker.addr, update("brokerPermission=4\n"))).code == 0
    refused = await json_client.invoke(broker.addr, send_v2("Ordered", b"x"))
    assert (refused.code, refused.remark) == (ResponseCode.NO_PERMISSION, FORBIDDEN)
    batch = send_v2("Ordered", b"x")
    batch.code = C.SEND_BATCH_MESSAGE
    refused = await json_client.invoke(broker.addr, batch)
    assert (refused.code, refused.remark) == (ResponseCode.NO_PERMISSION, FORBIDDEN)
    assert (await json_client.invoke(broker.addr, send_v2("Plain", b"x"))).code == 0
    assert (await json_client.invoke(broker.addr, update("brokerPermission=6\n"))).code == 0
    assert (await json_client.invoke(broker.addr, send_v2("Ordered", b"x"))).code == 0
    readonly = cluster.add_broker("broker-b", brokerPermission="4")
    assert (await json_client.invoke(readonly.addr, create_topic("Held"))).code == 0
    assert await route_perms(json_client, cluster.namesrv_addr, "Held") == [4]


async def test_unsaved_update_is_said(
    cluster: Cluster, json_client: RemotingClient, tmp_path: Path
) -> None:
    """fidelity D3: when the config file cannot be written (Java logs it and answers SUCCESS),
    the live change still holds and the remark says the file was not saved."""
    conf = tmp_path / "broker.conf"
    conf.write_text(f"brokerName=broker-a\nstorePathRootDir={tmp_path / 'store'}\n")
    (tmp_path / "broker.conf.tmp").mkdir()  # atomic_write's temporary file cannot be made
    sets = [f"--set={k}={v}" for k, v in BROKER_DEFAULTS.items()]
    argv = ["-m", "aiorocketmq.broker", "-c", str(conf), "-n", cluster.namesrv_addr,
            "--listen-port", "0", *sets]  # fmt: skip
    with serving(argv) as broker:
        addr = f"127.0.0.1:{broker.listening_port()}"
        resp = await json_client.invoke(addr, update("traceOn=false\n"))
        assert (resp.code, resp.remark) == (0, f"updated; not saved: {conf}: Is a directory")
        lines, _ = await get_config(json_client, addr)
        assert lines["traceOn"] == "false"
    assert "traceOn" not in conf.read_text()
