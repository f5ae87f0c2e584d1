"""TLS between real processes (issue 32 item 3, features.md 8): name server and broker ports
in enforcing and permissive mode, the broker registering with a TLS-only name server, a slave
replicating over a TLS HA port, a plaintext send to an enforcing broker never stored, the
keys read from ``-c``, ``--set`` and ``tls.config.file``, test mode, and start-up refusals.
Certificates are made in the run (tests/tls_certs.py)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import struct
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from aiorocketmq.client.core import api
from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.errors import RemotingConnectError
from aiorocketmq.remoting.protocol.codes import RequestCode as C
from aiorocketmq.remoting.protocol.codes import ResponseCode
from aiorocketmq.remoting.protocol.command import RemotingCommand
from aiorocketmq.remoting.protocol.frame import encode
from aiorocketmq.remoting.protocol.route import decode_kv_table
from aiorocketmq.remoting.tls_context import client_context
from tests.broker.test_replication import caught_up, send_many
from tests.broker.wire import create_topic, route, send_v2
from tests.cluster import Cluster, running
from tests.harness import ROOT, ServerProcess
from tests.remoting.wire import RawPeer
from tests.tls_certs import CA
from tests.util import wait_until


class Pki:
    """One CA; a server certificate for 127.0.0.1 (RSA, encrypted PKCS#8) and a client one
    (EC, encrypted traditional), as a broker group would be given."""

    def __init__(self, root: Path) -> None:
        self.root = root
        ca = CA(root, "cluster")
        self.ca = str(ca.path)
        self.server = ca.issue("server", kind="rsa", fmt="pkcs8", password="server-pw")
        self.client = ca.issue("client", client=True, fmt="traditional", password="client-pw")

    def server_keys(self, mode: str, auth: str = "require") -> dict[str, str]:
        return {
            "tls.server.mode": mode,
            "tls.server.certPath": str(self.server.cert),
            "tls.server.keyPath": str(self.server.key),
            "tls.server.keyPassword": self.server.password or "",
            "tls.server.need.client.auth": auth,
            "tls.server.trustCertPath": self.ca,
        }

    def client_keys(self) -> dict[str, str]:
        return {
            "tls.enable": "true",
            "tls.client.certPath": str(self.client.cert),
            "tls.client.keyPath": str(self.client.key),
            "tls.client.keyPassword": self.client.password or "",
            "tls.client.trustCertPath": self.ca,
        }


@pytest.fixture
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return Pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture
async def tls_client(pki: Pki) -> AsyncIterator[RemotingClient]:
    cli = RemotingClient(tls=client_context(ca_file=pki.ca, cert_file=str(pki.client.cert),
                                            key_file=str(pki.client.key),
                                            key_password=pki.client.password))  # fmt: skip
    yield cli
    await cli.close()


@pytest.fixture
def tls_cluster(tmp_path: Path, pki: Pki) -> Iterator[Cluster]:
    """A name server serving TLS only, configured through ``-c`` and ``tls.config.file``."""
    tls_file = tmp_path / "tls.properties"
    keys = pki.server_keys("permissive")  # the mode in the file is not read (TlsHelper)
    tls_file.write_text("".join(f"{k}={v}\n" for k, v in keys.items()))
    conf = tmp_path / "namesrv.conf"
    conf.write_text(
        f"tls.server.mode=enforcing\ntls.config.file={tls_file}\n"
        f"kvConfigPath={tmp_path / 'kv.json'}\nmetricsPort=0\n"
    )
    cluster = Cluster(tmp_path)
    cluster.namesrv = ServerProcess(
        ["-m", "aiorocketmq.namesrv", "-c", str(conf), "--listen-port", "0"]
    )
    try:
        cluster.namesrv_port = cluster.namesrv.listening_port()
        yield cluster
    finally:
        codes = cluster.stop()
        print(cluster.dump())
    assert all(code == 0 for code in codes.values()), codes


@contextlib.contextmanager
def cluster_of(root: Path, namesrv_sets: dict[str, str]) -> Iterator[Cluster]:
    """tests.cluster.running with a name server given ``namesrv_sets``."""
    cluster = Cluster(root, namesrv_sets={"metricsPort": "0", **namesrv_sets})
    cluster.start_namesrv()
    try:
        yield cluster
    finally:
        codes = cluster.stop()
        print(cluster.dump())
    assert all(code == 0 for code in codes.values()), codes


async def stored(cli: RemotingClient, addr: str) -> int:
    """The broker's CommitLog max offset: 0 while nothing was ever stored."""
    info = await cli.invoke(addr, RemotingCommand.request(C.GET_BROKER_RUNTIME_INFO))
    return int(decode_kv_table(info.body)["commitLogMaxOffset"])


def plaintext(cmd: RemotingCommand) -> bytes:
    cmd.serialize_type = 0  # JSON, as a Java client
    head, body = encode(cmd)
    return head + body


async def test_a_broker_registers_with_a_tls_only_name_server(
    tls_cluster: Cluster, pki: Pki, tls_client: RemotingClient
) -> None:
    """tls.enable on the broker: its registrations reach a name server that takes TLS only
    and requires a client certificate; the name server's own keys came from -c and
    tls.config.file. A plaintext client of the name server gets nothing."""
    broker = tls_cluster.add_broker("broker-a", sets={**pki.server_keys("enforcing"),
                                                      **pki.client_keys()})  # fmt: skip
    resp = await tls_client.invoke(broker.addr, create_topic("TlsTopic"))
    assert resp.code == ResponseCode.SUCCESS, resp.remark

    # registered at the topic's creation, else within a registration period (1 s) or a few on
    # a busy machine (a TLS handshake past the client's 3 s connect timeout is tried again)
    async with asyncio.timeout(45):
        while True:
            if (await route(tls_client, tls_cluster.namesrv_addr, "TlsTopic")).code == 0:
                break
            await asyncio.sleep(0.1)
    plain = RemotingClient()
    try:
        with pytest.raises(RemotingConnectError):
            await route(plain, tls_cluster.namesrv_addr, "TlsTopic")
    finally:
        await plain.close()
    # the name server's log line comes through its pipe: waited for, not read at once
    refused = tls_cluster.ns.wait_for("connection_refused", 60)
    assert "enforcing" in refused["reason"]


async def test_an_enforcing_broker_stores_nothing_a_plaintext_client_sends(
    tmp_path: Path, pki: Pki, tls_client: RemotingClient
) -> None:
    """Enforcing: a plaintext SEND_MESSAGE_V2 (auto-create on) on the main and the VIP port is
    closed unread: no message stored, no topic created (4.9.8 still processes it, r#10110).
    TLS sends are stored."""
    with running(tmp_path) as cluster:
        broker = cluster.add_broker("broker-a", sets=pki.server_keys("enforcing", "none"))
        for port in (broker.port, broker.port - 2):
            peer = await RawPeer.connect(port)
            peer.send_raw(plaintext(send_v2("PlainTopic", b"never")) * 3)
            assert await peer.closed_by_peer()
        assert await stored(tls_client, broker.addr) == 0
        topics = await tls_client.invoke(
            broker.addr, RemotingCommand.request(C.GET_ALL_TOPIC_CONFIG)
        )
        assert "PlainTopic" not in json.loads(topics.body)["topicConfigTable"]
        sent = await tls_client.invoke(broker.addr, send_v2("TlsTopic", b"stored"))
        assert sent.code == ResponseCode.SUCCESS, sent.remark
        assert await stored(tls_client, broker.addr) > 0
        assert broker.proc is not None
        assert broker.proc.wait_for("connection_refused", 60), "the refusal is logged"


@pytest.mark.slow
async def test_a_slave_replicates_over_a_tls_ha_port(
    tmp_path: Path, pki: Pki, tls_client: RemotingClient
) -> None:
    """tls.ha.enable on both brokers: the slave follows the master over TLS with its client
    certificate (required by the master); a plaintext peer on the HA port gets nothing."""
    # a name server that takes TLS too: the brokers dial it with tls.enable
    with cluster_of(tmp_path, pki.server_keys("permissive", "none")) as cluster:
        both = {**pki.server_keys("enforcing"), **pki.client_keys(), "tls.ha.enable": "true",
                "haSendHeartbeatInterval": "1000", "slaveSyncInterval": "300"}  # fmt: skip
        master = cluster.add_broker("broker-a", sets=both)
        role = {"brokerName": "broker-a", "brokerId": "1", "brokerRole": "SLAVE"}
        slave = cluster.add_broker("broker-a-s", sets={**both, **role})
        assert master.proc is not None
        master.proc.wait_for("ha_slave_connected", timeout=30)
        await send_many(tls_client, master.addr, "HaTls", 200)
        end = await caught_up(tls_client, master.addr, slave.addr, timeout=60)
        assert end > 0
        peer = await RawPeer.connect(master.port + 1)
        peer.send_raw(struct.pack(">q", 0))  # a plaintext slave's first report
        data = b""
        async with asyncio.timeout(20):
            while chunk := await peer.reader.read(65536):
                data += chunk
        assert data == b""  # no CommitLog byte, no frame: only the close
        await peer.close()


async def test_test_mode_serves_a_throw_away_certificate(tmp_path: Path) -> None:
    """tls.test.mode.enable=true (explicit): a self-signed certificate made at start; a
    client that trusts any server (Apache's default client) is served, one that checks is
    refused; plaintext is served on the same port (permissive)."""
    sets = ["--set", "tls.server.mode=permissive", "--set", "tls.test.mode.enable=true",
            "--set", f"kvConfigPath={tmp_path / 'kv.json'}"]  # fmt: skip
    proc = ServerProcess(["-m", "aiorocketmq.namesrv", "--listen-port", "0", *sets])
    try:
        port = proc.listening_port()
        addr = f"127.0.0.1:{port}"
        for tls in (client_context(verify=False), None):
            cli = RemotingClient(tls=tls)
            try:
                resp = await cli.invoke(addr, api.get_route("Nothing"))
                assert resp.code == ResponseCode.TOPIC_NOT_EXIST
            finally:
                await cli.close()
        checking = RemotingClient(tls=client_context())
        try:
            with pytest.raises(RemotingConnectError, match="CERTIFICATE_VERIFY_FAILED"):
                await checking.invoke(addr, api.get_route("Nothing"))
        finally:
            await checking.close()
        assert proc.wait_for("tls_test_mode")
    finally:
        assert proc.stop() == 0
        print(proc.dump())


def run_namesrv(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "aiorocketmq.namesrv", "--listen-port", "0", *args],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


def test_a_mode_without_a_certificate_refuses_to_start(pki: Pki, tmp_path: Path) -> None:
    """tls.server.mode enforcing without a certificate, a key that will not load, a missing
    tls.config.file: one line on stderr, exit 1; -p shows the tls keys, password hidden."""
    bad = run_namesrv("--set", "tls.server.mode=enforcing")
    assert bad.returncode == 1
    assert bad.stderr == (
        "config error: tls.server.mode=enforcing needs tls.server.certPath and "
        "tls.server.keyPath (or tls.test.mode.enable=true for a throw-away self-signed "
        "certificate)\n"
    )
    missing = run_namesrv("--set", f"tls.config.file={tmp_path / 'none.properties'}")
    assert missing.returncode == 1
    assert "tls.config.file: cannot read" in missing.stderr
    keys = {**pki.server_keys("enforcing"), "tls.server.keyPassword": "wrong"}
    sets = [a for k, v in keys.items() for a in ("--set", f"{k}={v}")]
    wrong = run_namesrv(*sets, "--set", f"kvConfigPath={tmp_path / 'kv.json'}")
    assert wrong.returncode == 1
    assert "tls.server.keyPath" in wrong.stdout and "cannot load" in wrong.stdout
    shown = run_namesrv(*sets, "-p")
    assert shown.returncode == 0
    assert "tls.server.mode=enforcing\n" in shown.stdout
    assert "tls.server.keyPassword=******\n" in shown.stdout
    assert "wrong" not in shown.stdout


async def test_the_default_is_plaintext_only(cluster: Cluster, pki: Pki) -> None:
    """No tls key: the port serves plaintext and closes a TLS attempt (ours: 4.9.8 defaults
    to permissive with a test certificate)."""
    broker = cluster.add_broker("broker-a")
    cli = RemotingClient(tls=client_context(ca_file=pki.ca))
    try:
        with pytest.raises(RemotingConnectError):
            await cli.invoke(broker.addr, RemotingCommand.request(C.GET_BROKER_RUNTIME_INFO))
    finally:
        await cli.close()
    proc = broker.proc
    assert proc is not None
    await wait_until(lambda: any(e.get("event") == "connection_refused" for e in proc.events), 10)
