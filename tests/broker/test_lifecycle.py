"""Broker lifecycle against real processes: registration, graceful stop, restart, SIGKILL,
silence, SYNC_FLUSH durability, flow control, configuration (issue 6 "Tests")."""

from __future__ import annotations

import asyncio
import random
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.errors import RemotingError
from aiorocketmq.remoting.protocol.codes import ResponseCode
from tests.broker.wire import create_topic, route, send_v2, total_messages, view
from tests.cluster import Cluster
from tests.harness import ROOT
from tests.util import wait_until


async def test_graceful_stop_drops_route_and_restart_keeps_everything(
    cluster: Cluster, client: RemotingClient
) -> None:
    """design.md 9: a graceful stop unregisters at once (no 120 s wait); a restart on the
    same store serves the same topics and messages."""
    broker = cluster.add_broker("broker-a")
    ids = []
    for i in range(20):
        resp = await client.invoke(broker.addr, send_v2("Durable", f"m{i}".encode()))
        assert resp.code == 0, resp.remark
        ids.append(resp.ext_fields["msgId"])
    assert (await route(client, cluster.namesrv_addr, "Durable")).code == 0
    assert cluster.stop_broker("broker-a") == 0
    assert (await route(client, cluster.namesrv_addr, "Durable")).code == 17
    assert cluster.brokers["broker-a"].proc is not None
    assert any(e["event"] == "broker_unregistered" for e in cluster.ns.events)
    cluster.start_broker("broker-a")
    assert (await route(client, cluster.namesrv_addr, "Durable")).code == 0
    assert await total_messages(client, broker.addr, "Durable", 4) == 20
    for i, msg_id in enumerate(ids):
        assert (await view(client, broker.addr, msg_id)).body == f"m{i}".encode()


async def test_sigkill_drops_route_when_the_connection_closes(
    cluster: Cluster, client: RemotingClient
) -> None:
    """protocol.md 11: a dead broker's closed connection removes it at once."""
    cluster.add_broker("broker-a")
    await client.invoke(cluster.brokers["broker-a"].addr, create_topic("Killed", 2))
    assert (await route(client, cluster.namesrv_addr, "Killed")).code == 0
    cluster.kill_broker("broker-a")
    await wait_until(lambda: any(e.get("event") == "broker_evicted" for e in cluster.ns.events))
    assert (await route(client, cluster.namesrv_addr, "Killed")).code == 17


async def test_silent_broker_is_evicted_after_the_expiry(
    tmp_path: Path, client: RemotingClient
) -> None:
    """protocol.md 11: a broker that stops registering (SIGSTOP keeps its connection open) is
    evicted once brokerChannelExpiredTime (2 s here) passes, and re-registers when it wakes."""
    cluster = Cluster(
        tmp_path,
        namesrv_sets={"brokerChannelExpiredTime": "2000", "scanNotActiveBrokerInterval": "200"},
    )
    cluster.start_namesrv()
    try:
        broker = cluster.add_broker("broker-a")
        await client.invoke(broker.addr, create_topic("Quiet", 2))
        assert broker.proc is not None
        broker.proc.proc.send_signal(signal.SIGSTOP)
        try:
            evicted = cluster.ns.wait_for("broker_evicted", timeout=15)
            assert (evicted["broker"], evicted["reason"]) == ("broker-a", "expired")
            assert (await route(client, cluster.namesrv_addr, "Quiet")).code == 17
        finally:
            broker.proc.proc.send_signal(signal.SIGCONT)
        registered = cluster.ns.wait_for("broker_registered", count=2, timeout=15)
        assert registered["broker"] == "broker-a"  # the 1 s registration brings it back
        assert (await route(client, cluster.namesrv_addr, "Quiet")).code == 0
    finally:
        codes = cluster.stop()
        print(cluster.dump())
    assert codes == {"broker-a": 0, "namesrv": 0}


@pytest.mark.slow
async def test_sync_flush_broker_killed_under_load_loses_nothing_acknowledged(
    cluster: Cluster, client: RemotingClient
) -> None:
    """Issue 6: with SYNC_FLUSH, every send answered SUCCESS before a SIGKILL is read back
    bit-exact after restart."""
    broker = cluster.add_broker("broker-a", flushDiskType="SYNC_FLUSH")
    await client.invoke(broker.addr, create_topic("Acked", 4))
    acked: dict[str, bytes] = {}
    stop = asyncio.Event()

    async def producer(n: int) -> None:
        seq = 0
        while not stop.is_set():
            body = f"p{n}-{seq}-".encode() + random.randbytes(random.randrange(1, 2000))
            try:
                resp = await client.invoke(broker.addr, send_v2("Acked", body), 3)
            except RemotingError:
                return  # the broker died under us: this send was never acknowledged
            if resp.code == ResponseCode.SUCCESS:
                acked[resp.ext_fields["msgId"]] = body
            seq += 1

    producers = [asyncio.ensure_future(producer(n)) for n in range(16)]
    await wait_until(lambda: len(acked) >= 300, timeout=30)
    cluster.kill_broker("broker-a")
    stop.set()
    await asyncio.gather(*producers)
    cluster.start_broker("broker-a")
    for msg_id, body in acked.items():
        assert (await view(client, broker.addr, msg_id)).body == body


async def test_slow_sends_get_system_busy_instead_of_queueing(
    cluster: Cluster, client: RemotingClient
) -> None:
    """protocol.md 2.6 / issue 6: a send that waited more than waitTimeMillsInSendQueue for a
    slot is answered SYSTEM_BUSY with the [TIMEOUT_CLEAN_QUEUE] remark (1 slot, 1 ms here)."""
    broker = cluster.add_broker(
        "broker-a",
        flushDiskType="SYNC_FLUSH",
        sendMessageMaxInFlight="1",
        waitTimeMillsInSendQueue="1",
    )
    await client.invoke(broker.addr, create_topic("Busy", 1))
    results = await asyncio.gather(
        *(client.invoke(broker.addr, send_v2("Busy", b"x" * 100, queue_id=0)) for _ in range(200))
    )
    busy = [r for r in results if r.code == ResponseCode.SYSTEM_BUSY]
    stored = [r for r in results if r.code == ResponseCode.SUCCESS]
    assert busy and stored and len(busy) + len(stored) == 200
    assert busy[0].remark is not None
    assert busy[0].remark.startswith("[TIMEOUT_CLEAN_QUEUE]broker busy, start flow control")
    assert await total_messages(client, broker.addr, "Busy", 1) == len(stored)


def test_mqbroker_loads_a_rocketmq_broker_conf(tmp_path: Path) -> None:
    """Issue 6: an existing broker.conf loads (unknown keys are warned about, not fatal); -n
    and --listen-port override it; -p prints what loads back."""
    conf = tmp_path / "broker.conf"
    conf.write_text(
        "brokerClusterName = ProdCluster\nbrokerName = broker-x\nbrokerId = 0\n"
        "deleteWhen = 04\nfileReservedTime = 48\nbrokerRole = ASYNC_MASTER\n"
        "flushDiskType = SYNC_FLUSH\nnamesrvAddr = 10.0.0.1:9876\nbrokerIP1 = 10.0.0.5\n"
        "storePathRootDir = /data/rocketmq\nautoCreateTopicEnable = false\n"
        "someFutureKey = whatever\n"
    )
    script = Path(sys.executable).with_name("mqbroker")
    argv = [
        str(script),
        "-c",
        str(conf),
        "-n",
        "127.0.0.1:9876;127.0.0.2:9876",
        "--listen-port",
        "10999",
        "-p",
    ]
    result = subprocess.run(argv, capture_output=True, text=True, timeout=30, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    lines = dict(line.split("=", 1) for line in result.stdout.splitlines())
    assert lines["brokerClusterName"] == "ProdCluster" and lines["brokerName"] == "broker-x"
    assert lines["namesrvAddr"] == "127.0.0.1:9876;127.0.0.2:9876"
    assert lines["listenPort"] == "10999" and lines["flushDiskType"] == "SYNC_FLUSH"
    assert lines["autoCreateTopicEnable"] == "false" and lines["brokerIP1"] == "10.0.0.5"
    assert lines["registerNameServerPeriod"] == "30000"


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ("mappedFileSizeCommitLog=0", "mappedFileSizeCommitLog: must be at least 4096, got 0"),
        ("maxIndexNum=1", "maxIndexNum: must be at least 2, got 1"),
        ("flushIntervalCommitLog=-5", "flushIntervalCommitLog: must be at least 1, got -5"),
        ("diskMaxUsedSpaceRatio=101", "diskMaxUsedSpaceRatio: must be between 0 and 100, got 101"),
        ("sendMessageMaxInFlight=0", "sendMessageMaxInFlight: must be at least 1, got 0"),
        ("defaultTopicQueueNums=0", "defaultTopicQueueNums: must be at least 1, got 0"),
    ],
)
def test_values_it_cannot_run_with_exit_1(tmp_path: Path, setting: str, message: str) -> None:
    """Standards, bad config: a value out of range is one clear line and exit 1, before
    anything is created on disk (these once crashed at start, or started and hung)."""
    result = run_broker(tmp_path, setting)
    assert result.returncode == 1
    assert result.stderr == f"config error: --set: {message}\n"
    assert not (tmp_path / "store").exists()


def test_bad_delay_levels_exit_1(tmp_path: Path) -> None:
    result = run_broker(tmp_path, "messageDelayLevel=1s 5x")
    assert result.returncode == 1
    assert result.stderr == "config error: bad delay level '5x' in messageDelayLevel\n"


def run_broker(tmp_path: Path, setting: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "aiorocketmq.broker", "--listen-port", "0", "--set", setting]
    argv += ["--set", f"storePathRootDir={tmp_path / 'store'}", "-n", "127.0.0.1:1"]
    return subprocess.run(argv, capture_output=True, text=True, timeout=30, cwd=ROOT)
