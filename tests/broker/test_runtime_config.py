"""UPDATE_BROKER_CONFIG (25) at run time cannot take a broker down (issue 29 item 4, N4): keys
naming a path, the store's layout, the broker's identity, role or addresses, or a listener are
refused whoever asks (broker.runtime_keys.REFUSED, the documented list), and values that
would stop the broker serving or delete data are refused (broker.runtime_keys.BOUNDS). Real
broker processes started from a config file, as Configuration.persist rewrites it."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from aiorocketmq.broker.config import BrokerConfig
from aiorocketmq.broker.runtime_keys import BOUNDS, REFUSED, why_refused
from aiorocketmq.broker.settings import LIVE_KEYS
from aiorocketmq.broker.store.config import StoreConfig
from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.config import ServerConfig, config_values
from aiorocketmq.remoting.protocol.codes import RequestCode as C
from aiorocketmq.remoting.protocol.codes import ResponseCode
from aiorocketmq.remoting.protocol.command import RemotingCommand
from tests.broker.wire import create_topic, route, send_v2, view
from tests.cluster import BROKER_DEFAULTS, Cluster
from tests.harness import ROOT, serving

BLACK_LISTED = "Can not update config in black list."
APACHE_BLACK_LIST = {"brokerConfigPath", "rocketmqHome", "configBlackList"}
# a value the request could set that would pass the config file's own checks
SAMPLE = {
    "storePathRootDir": "/tmp/elsewhere",
    "storePathCommitLog": "/tmp/elsewhere/commitlog",
    "brokerConfigPath": "/tmp/x.conf",
    "rocketmqHome": "/tmp",
    "configBlackList": "",
    "mappedFileSizeCommitLog": "8192",
    "mappedFileSizeConsumeQueue": "40",
    "maxHashSlotNum": "10",
    "maxIndexNum": "40",
    "timerPrecisionMs": "100",
    "timerRollWindowSlot": "10",
    "mappedFileSizeTimerLog": "4000",
    "brokerClusterName": "OtherCluster",
    "brokerName": "broker-z",
    "brokerId": "1",
    "brokerRole": "SLAVE",
    "haMasterAddress": "127.0.0.1:1",
    "namesrvAddr": "127.0.0.1:1",
    "brokerIP1": "10.6.6.6",
    "brokerIP2": "10.6.6.6",
    "listenPort": "1",
    "bindAddress": "127.0.0.2",
    "haListenPort": "1",
    "metricsPort": "1",
    "metricsHost": "0.0.0.0",
    "frameMaxLength": "1024",
    "serverChannelMaxIdleTimeSeconds": "1",
    "serverConnectionMaxInFlight": "1",
    "serverWriteStallTimeoutMillis": "1",
    "serverOutputBufferMaxBytes": str(1 << 20),
    "serverPartialFrameMaxBytes": str(1 << 20),
    "metricsBearerTokenFile": "/tmp/token",
    "aclEnable": "true",
    "aclFile": "/tmp/acl.yml",
    "aclDir": "/tmp/acl",
    "innerClientAuthenticationCredentials": '{"accessKey":"innerKey1","secretKey":"innerSecret"}',
    "enableControllerMode": "true",
    "controllerAddr": "127.0.0.1:1",
}
# keys REFUSED_PATTERNS refuses, whether this broker has them or not: every storePath*, the
# ACL and TLS keys of 4.9.8 (AclConstants, TlsSystemConfig) and others naming a file
PATTERN_SAMPLE = {
    "storePathIndex": "/tmp/elsewhere/index",
    "storePathConsumeQueue": "/tmp/elsewhere/cq",
    "storePathEpochFile": "/tmp/elsewhere/epoch",
    "aclEnable": "false",
    "aclFile": "/tmp/plain_acl.yml",
    "aclConfigDir": "/tmp/acl",
    "rocketmq.acl.plain.file": "/tmp/plain_acl.yml",
    "tls.enable": "false",
    "tls.server.mode": "disabled",
    "tls.server.keyPath": "/tmp/k.pem",
    "tls.server.keyPassword": "x",
    "tls.server.certPath": "/tmp/c.pem",
    "tls.server.trustCertPath": "/tmp/ca.pem",
    "tls.client.keyPath": "/tmp/k.pem",
    "tls.client.certPath": "/tmp/c.pem",
    "tls.test.mode.enable": "true",
    "tls.config.file": "/tmp/tls.properties",
    "kvConfigPath": "/tmp/kv.json",
    "rocketmq.home.dir": "/tmp",
    "accessKey": "RocketMQ",
    "secretKey": "12345678",
    "metricsBearerToken": "t",
    # issue 35: how the broker reaches etcd (broker/controller/access.py)
    "controllerTlsEnable": "false",
    "controllerTlsTrustCertPath": "/tmp/ca.pem",
    "controllerTlsCertPath": "/tmp/c.pem",
    "controllerTlsKeyPath": "/tmp/k.pem",
    "controllerUsername": "root",
    "controllerPasswordFile": "/tmp/etcd-password",
}


def update(text: str) -> RemotingCommand:
    return RemotingCommand.request(C.UPDATE_BROKER_CONFIG, {}, text.encode())


@pytest.fixture
def conf_broker(cluster: Cluster, tmp_path: Path) -> Iterator[tuple[list[str], Path]]:
    """A broker's command line started from a config file (-c), and that file."""
    conf = tmp_path / "broker.conf"
    settings = {**BROKER_DEFAULTS, "brokerName": "broker-a",
                "storePathRootDir": str(tmp_path / "store")}  # fmt: skip
    conf.write_text("".join(f"{k}={v}\n" for k, v in settings.items()))
    yield (
        [
            "-m",
            "aiorocketmq.broker",
            "-c",
            str(conf),
            "-n",
            cluster.namesrv_addr,
            "--listen-port",
            "0",
        ],
        conf,
    )


def test_every_refused_key_has_a_sample() -> None:
    assert set(SAMPLE) == set(REFUSED)


@pytest.mark.slow
async def test_refused_keys_change_nothing(
    cluster: Cluster, json_client: RemotingClient, conf_broker: tuple[list[str], Path]
) -> None:
    """N4: storePathRootDir, storePathCommitLog and namesrvAddr (and every other key of
    REFUSED) are refused with NO_PERMISSION and a remark naming the key; nothing of the
    request is applied or written to the config file, so after a restart the broker still
    serves its own store and registers with its name server."""
    argv, conf = conf_broker
    original = conf.read_text()
    with serving(argv) as first:
        addr = f"127.0.0.1:{first.listening_port()}"
        assert (await json_client.invoke(addr, create_topic("Kept", 1))).code == 0
        sent = await json_client.invoke(addr, send_v2("Kept", b"before"))
        assert sent.code == 0, sent.remark
        for key, value in SAMPLE.items():
            resp = await json_client.invoke(addr, update(f"traceOn=false\n{key}={value}\n"))
            assert resp.code == ResponseCode.NO_PERMISSION, (key, resp.remark)
            if key in APACHE_BLACK_LIST:
                assert resp.remark == BLACK_LISTED
            else:
                assert re.search(rf"\b{key} \(", str(resp.remark)), resp.remark
                assert "config file and restart" in str(resp.remark)
        # the three of N4 together, as the fuzzer sent them
        n4 = "storePathRootDir=/tmp/n4\nstorePathCommitLog=/tmp/n4/c\nnamesrvAddr=10.0.0.1:9876\n"
        resp = await json_client.invoke(addr, update(n4))
        assert resp.code == ResponseCode.NO_PERMISSION
        assert all(k in str(resp.remark) for k in ("storePathRootDir", "namesrvAddr"))
    assert conf.read_text() == original
    assert not (conf.parent / "broker.conf.bak").exists()
    with serving(argv) as second:
        addr = f"127.0.0.1:{second.listening_port()}"
        assert (await view(json_client, addr, sent.ext_fields["msgId"])).body == b"before"
        resp = await route(json_client, cluster.namesrv_addr, "Kept")
        assert resp.code == 0, resp.remark


@pytest.mark.slow
async def test_keys_naming_files_or_security_are_refused(
    json_client: RemotingClient, conf_broker: tuple[list[str], Path]
) -> None:
    """Issue 32 item 2: UPDATE_BROKER_CONFIG never sets a key naming a file or directory (every
    storePath*, the ACL file and directory, the TLS key and certificate paths, tls.config.file,
    metricsBearerTokenFile) or a security setting (aclEnable, tls.*, keys and secrets),
    whether the broker has the key or not: 16 (NO_PERMISSION, the answer Apache gives a
    black-listed key) with a remark naming the key and why, nothing applied, nothing
    written to the config file. A key a request may set is still taken and persisted."""
    argv, conf = conf_broker
    original = conf.read_text()
    with serving(argv) as broker:
        addr = f"127.0.0.1:{broker.listening_port()}"
        for key, value in PATTERN_SAMPLE.items():
            resp = await json_client.invoke(addr, update(f"traceOn=false\n{key}={value}\n"))
            assert resp.code == ResponseCode.NO_PERMISSION, (key, resp.code, resp.remark)
            remark = str(resp.remark)
            assert re.search(rf"\b{re.escape(key)} \((names a file|a path|a security)", remark)
            assert "config file and restart" in remark, remark
            assert value not in remark or value in ("false", "true", "x", "t"), remark
        assert conf.read_text() == original
        assert not (conf.parent / "broker.conf.bak").exists()
        sent = await json_client.invoke(addr, send_v2("Kept", b"x"))
        assert sent.ext_fields["TRACE_ON"] == "true"  # traceOn=false was never applied
        resp = await json_client.invoke(addr, update("traceOn=false\nfileReservedTime=48\n"))
        assert (resp.code, resp.remark) == (0, None)
    assert "traceOn=false" in conf.read_text() and "fileReservedTime=48" in conf.read_text()


def test_no_key_a_request_may_set_names_a_file() -> None:
    """Every key this broker has whose default is a path, and every key REFUSED_PATTERNS
    matches, is refused; the keys a request may set (LIVE_KEYS, BOUNDS) are not."""
    values = config_values(BrokerConfig(), StoreConfig(), ServerConfig())
    for key, default in values.items():
        if "/" in default:
            assert why_refused(key) is not None, key
    for key in LIVE_KEYS | BOUNDS.keys():
        assert why_refused(key) is None, key
    for key in PATTERN_SAMPLE:
        assert why_refused(key) is not None, key


async def test_values_out_of_bounds_are_refused(
    cluster: Cluster, json_client: RemotingClient
) -> None:
    """N4: maxMessageSize=1 (which refused every send at once) and every other value outside
    BOUNDS is refused with SYSTEM_ERROR naming the key and its bounds; nothing is applied;
    a value within them is taken."""
    broker = cluster.add_broker("broker-a")
    for key, (least, most) in BOUNDS.items():
        for bad in [least - 1, *([] if most is None else [most + 1])]:
            resp = await json_client.invoke(broker.addr, update(f"traceOn=false\n{key}={bad}\n"))
            assert resp.code == ResponseCode.SYSTEM_ERROR, (key, bad, resp.remark)
            assert f"UPDATE_BROKER_CONFIG: {key}: must be " in str(resp.remark), resp.remark
            assert str(resp.remark).endswith(f", got {bad}"), resp.remark
    future = "startAcceptSendRequestTimeStamp=99999999999999\n"
    resp = await json_client.invoke(broker.addr, update(future))
    assert resp.code == ResponseCode.SYSTEM_ERROR
    assert "startAcceptSendRequestTimeStamp" in str(resp.remark)
    for hours in ("x", "04;25", "4;;16"):  # found by benchmarks/fuzz.py: "x" never came round
        resp = await json_client.invoke(broker.addr, update(f"deleteWhen={hours}\n"))
        assert resp.code == ResponseCode.SYSTEM_ERROR, hours
        assert "deleteWhen: must be hours of the day" in str(resp.remark)
    resp = await json_client.invoke(broker.addr, update("deleteWhen=04;16\n"))
    assert (resp.code, resp.remark) == (0, None)
    sent = await json_client.invoke(broker.addr, send_v2("Bounds", b"x" * 2000))
    assert (sent.code, sent.ext_fields["TRACE_ON"]) == (0, "true")  # nothing applied
    resp = await json_client.invoke(broker.addr, update("maxMessageSize=1024\n"))
    assert (resp.code, resp.remark) == (0, None)
    refused = await json_client.invoke(broker.addr, send_v2("Bounds", b"x" * 2000))
    assert refused.code == ResponseCode.MESSAGE_ILLEGAL


def test_the_refused_keys_are_documented() -> None:
    """Issue 29 item 4 asks for a documented list: docs/compatibility.md names every key
    REFUSED holds."""
    doc = (ROOT / "docs" / "compatibility.md").read_text()
    row = next(line for line in doc.splitlines() if line.startswith("| D3 |"))
    missing = [k for k in REFUSED if f"`{k}`" not in row]
    assert not missing, missing
