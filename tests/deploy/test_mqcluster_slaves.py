"""`make run ARGS="--slaves 1"` (mqcluster --slaves / --sync; issue 18 item 7,
fidelity D11): a master/slave pair per broker group as real processes on free ports, its port
plan, its conf files, and the README's by-hand commands."""

from __future__ import annotations

import asyncio
import re
import shlex
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import pytest

from aiorocketmq.client.core import api
from aiorocketmq.deploy import launcher, procs
from aiorocketmq.deploy.cluster import Cluster
from aiorocketmq.remoting import metrics_port
from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.config import ClientConfig
from aiorocketmq.remoting.protocol.codes import ResponseCode, SerializeType
from aiorocketmq.remoting.protocol.message import decode_records
from tests.broker.wire import create_topic, pull, route, send_v2
from tests.deploy.launcher import Launcher, wait_all_gone
from tests.harness import ROOT

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc, prctl")

PAIRS = [("broker-a", "broker-a-s1"), ("broker-b", "broker-b-s1")]
FIVE = ["namesrv", "broker-a", "broker-b", "broker-a-s1", "broker-b-s1"]
TOPIC = "RunLocalHa"
QUEUE = 1
WAITING = {ResponseCode.TOPIC_NOT_EXIST, ResponseCode.PULL_NOT_FOUND}  # the slave not there yet


async def pulled_from(cli: RemotingClient, addr: str) -> list[bytes]:
    """Pull queue QUEUE of TOPIC from ``addr`` (a slave) until it answers FOUND: the slave
    copies the topic's config from its master every 10 s (SlaveSynchronize)."""
    async with asyncio.timeout(25):
        while True:
            req = pull("cg_run", TOPIC, QUEUE, 0, sys_flag=4, suspend_ms=0, subscription="*")
            if (resp := await cli.invoke(addr, req)).code not in WAITING:
                break
            await asyncio.sleep(0.2)
    assert resp.code == ResponseCode.SUCCESS, (resp.code, resp.remark)
    assert int(resp.ext_fields["nextBeginOffset"]) == 1
    return [msg.body for msg in decode_records(resp.body)]


async def test_a_message_sent_to_a_master_is_pulled_from_its_slave(
    launch: Callable[..., Launcher],
) -> None:
    """Issue 18 item 7 (fidelity D11): `--slaves 1 --sync` starts the name server, two
    SYNC_MASTER masters and a slave of each (brokerId 1, SLAVE, the group's brokerName, the HA
    port listenPort + 1), and says "cluster ready" once both slaves follow: a send to a
    master is answered SEND_OK at once (its slave holds it), the name server routes the
    group to both, and the message is pulled from the slave."""
    run = launch("--slaves", "1", "--sync", names=FIVE)
    run.wait_ready()
    ends = run.endpoints()
    for master, slave in PAIRS:
        assert "SYNC_MASTER" in ends[master] and f"SLAVE of {master}" in ends[slave], ends
        for name in (master, slave):
            port = int(run.addr(name).rpartition(":")[2])
            assert f"HA :{port + 1}" in ends[name], ends
    config = ClientConfig(serialize_type=SerializeType.JSON)  # what Java clients send
    async with RemotingClient(config) as cli:
        for master, _slave in PAIRS:
            addr = run.addr(master)
            assert (await cli.invoke(addr, create_topic(TOPIC, 2))).code == 0
            sent = await cli.invoke(addr, send_v2(TOPIC, master.encode(), queue_id=QUEUE))
            assert sent.code == ResponseCode.SUCCESS, (sent.code, sent.remark)  # not 11 / 12
            assert sent.ext_fields["queueId"] == str(QUEUE) and sent.ext_fields["msgId"]
        table = api.parse_route(await route(cli, run.addr("namesrv"), TOPIC))
        addrs = {data.broker_name: data.broker_addrs for data in table.broker_datas}
        assert addrs == {m: {0: run.addr(m), 1: run.addr(s)} for m, s in PAIRS}
        for master, slave in PAIRS:
            assert await pulled_from(cli, run.addr(slave)) == [master.encode()]


def test_sigterm_stops_slaves_then_masters_then_namesrv(launch: Callable[..., Launcher]) -> None:
    """Issue 18 item 7: with `--slaves 1`, SIGTERM to the launcher stops all five servers --
    the slaves before the masters, the masters before the name server, each with exit 0 --
    and leaves no process behind."""
    run = launch("--slaves", "1", names=FIVE)
    pids = run.wait_ready()
    run.proc.send_signal(signal.SIGTERM)
    assert run.wait_exit() == 0, run.text
    assert wait_all_gone(list(pids.values()), 1) == []
    namesrv_stopping = run.lines("namesrv", "stopping")
    assert len(namesrv_stopping) == 1, run.text
    for master, slave in PAIRS:
        assert run.lines(slave, "stopped")[0] < run.lines(master, "stopping")[0], run.text
        assert run.lines(master, "stopped")[0] < namesrv_stopping[0], run.text


def conf(path: str) -> dict[str, str]:
    lines = (ROOT / path).read_text().splitlines()
    return dict(line.split("=", 1) for line in lines if line and not line.startswith("#"))


def test_ports_conf_files_and_options() -> None:
    """Issue 18 item 7 (fidelity D11): masters keep 10911 / 10921, first slaves get 10915 /
    10925; with the most slaves allowed no two brokers share a port of the four each holds
    (VIP listenPort - 2 to HA listenPort + 1); each slave conf is RocketMQ's (brokerName of
    its group, brokerId 1, brokerRole SLAVE) and agrees with the launcher; --sync alone is
    refused."""
    specs = procs.plan(procs.MAX_SLAVES, True)
    ports = {spec.name: spec.port for spec in specs}
    assert [ports[n] for n in FIVE] == [9876, 10911, 10921, 10915, 10925]
    held = [p for spec in specs[1:] for p in range(spec.port - 2, spec.port + 2)]
    assert len(held) == len(set(held)) == 4 * (2 + 2 * procs.MAX_SLAVES)
    for spec in specs[1:]:
        keys = conf(spec.argv[spec.argv.index("-c") + 1])
        assert keys["brokerName"] == spec.group and keys["brokerClusterName"] == "DefaultCluster"
        if spec.name.endswith("-s1") or spec.role != "SLAVE":  # what the file itself says
            role = "SLAVE" if spec.role == "SLAVE" else "ASYNC_MASTER"
            assert (keys["brokerRole"], keys["brokerId"]) == (role, "1" if role == "SLAVE" else "0")
            assert keys["listenPort"] == str(spec.port)
            assert keys["storePathRootDir"] == f"./data/{spec.name}"
    with pytest.raises(SystemExit):
        launcher.parse_args(["--sync"])


def test_metrics_ports_of_make_run() -> None:
    """Issue 31 item 1: `make run` sets no metricsPort: each server's is its own default,
    listenPort + 1000 (the name server 10876, broker-a 11911, broker-b 11921, slaves on from
    11915), none another server's port even with the most slaves, and with `--ephemeral`
    (listen port 0) any free one."""
    assert procs.METRICS_OFFSET == metrics_port.METRICS_OFFSET
    specs = procs.plan(procs.MAX_SLAVES)
    ports = {spec.name: spec.metrics_port for spec in specs}
    assert [ports[n] for n in FIVE] == [10876, 11911, 11921, 11915, 11925]
    brokers = {p for spec in specs[1:] for p in range(spec.port - 2, spec.port + 2)}
    assert len(set(ports.values())) == len(specs) and not brokers & set(ports.values())
    assert 9876 not in ports.values()
    fixed, ephemeral = Cluster(Path("/d"), False), Cluster(Path("/d"), True)
    ephemeral.servers = [SimpleNamespace(port=9)]  # type: ignore[list-item]  # its name server
    for spec in specs:
        assert not any("metricsPort" in arg for arg in fixed.argv(spec) + ephemeral.argv(spec))
        assert "--listen-port" not in fixed.argv(spec)
        argv = ephemeral.argv(spec)
        assert argv[argv.index("--listen-port") + 1] == "0"  # so metrics on any free port


def printed(conf: Path) -> dict[str, str]:
    """What ``-p`` prints for a server started by hand with ``-c conf``: its effective keys."""
    module = "aiorocketmq.namesrv" if conf.name == "namesrv.conf" else "aiorocketmq.broker"
    done = subprocess.run([sys.executable, "-m", module, "-c", str(conf), "-p"], cwd=ROOT,
                          capture_output=True, text=True, check=True, timeout=120)  # fmt: skip
    return dict(line.split("=", 1) for line in done.stdout.splitlines())


@pytest.mark.parametrize("folder", ["deploy/conf", "deploy/conf/compose"])
def test_servers_started_by_hand_from_the_conf_files_meet_on_no_port(folder: str) -> None:
    """Issue 31, "Why" 1: broker-a-s.conf had no metricsPort, so a master and its slave started
    by hand both took 5557. Now every server of a folder, as ``-p`` shows it, has its own
    metrics port, listenPort + 1000, and no port of one is another's."""
    held: dict[int, str] = {}
    for conf in sorted((ROOT / folder).glob("*.conf")):
        keys = printed(conf)
        listen, metrics = int(keys["listenPort"]), int(keys["metricsPort"])
        assert metrics == listen + procs.METRICS_OFFSET, (conf.name, keys["metricsPort"])
        own = [listen] if conf.name == "namesrv.conf" else list(range(listen - 2, listen + 2))
        for port in [*own, metrics]:
            assert port not in held, (conf.name, port, held[port])
            held[port] = conf.name
    assert len({name for name in held.values()}) >= 4


def test_readme_commands_are_the_launchers() -> None:
    """Issue 18 "Done when": the README's master/slave section starts a SYNC_MASTER pair by
    hand with the very commands `make run ARGS="--slaves 1 --sync"` runs (it adds only its data
    directory and log format), and each of its `make run` options parses."""
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Master/slave replication", 1)[1].split("\n## ", 1)[0]
    typed = [
        shlex.split(line.split("#", 1)[0])[1:]
        for line in section.splitlines()
        if line.startswith(".venv/bin/python -m ")
    ]
    argv = {spec.name: spec.argv for spec in procs.plan(1, sync=True)}
    assert typed == [argv["namesrv"], argv["broker-a"], argv["broker-a-s1"]]
    make_args = re.findall(r'make run ARGS="([^"]+)"', section)
    assert "--slaves 1 --sync" in make_args
    for args in make_args:
        assert launcher.parse_args(shlex.split(args)).slaves == 1
