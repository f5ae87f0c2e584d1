"""Master/slave replication (issue 18; protocol.md 12.8, fidelity D11 and §3.2): real
master and slave processes, the HA stream on listenPort + 1, byte-identical CommitLogs,
SYNC_MASTER's promise, slaves refusing sends and serving pulls, catching up after a restart.
"""

from __future__ import annotations

import asyncio
import shutil
import signal
import time
from pathlib import Path

from aiorocketmq.client.core import api
from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.protocol.codes import RequestCode as C
from aiorocketmq.remoting.protocol.codes import ResponseCode
from aiorocketmq.remoting.protocol.command import RemotingCommand
from aiorocketmq.remoting.protocol.message import decode_records
from aiorocketmq.remoting.protocol.register import RegisterBrokerBody, TopicConfigWrapper
from aiorocketmq.remoting.protocol.route import decode_kv_table
from tests.broker.wire import create_topic, pull, send_v2
from tests.cluster import BrokerProc, Cluster

QUEUES = 4
SEGMENT = 512 * 1024
SLAVE = {"brokerName": "broker-a", "brokerId": "1", "brokerRole": "SLAVE",
         "haSendHeartbeatInterval": "1000", "slaveSyncInterval": "300"}  # fmt: skip


async def max_phys(cli: RemotingClient, addr: str) -> int:
    resp = await cli.invoke(addr, RemotingCommand.request(C.GET_BROKER_RUNTIME_INFO))
    assert resp.code == 0, resp.remark
    return int(decode_kv_table(resp.body)["commitLogMaxOffset"])


async def caught_up(cli: RemotingClient, master: str, slave: str, timeout: float = 20) -> int:
    """Until the slave's CommitLog ends where the master's does; that offset."""
    async with asyncio.timeout(timeout):
        while True:
            want = await max_phys(cli, master)
            if want > 0 and await max_phys(cli, slave) == want:
                return want
            await asyncio.sleep(0.1)


async def send_many(
    cli: RemotingClient, addr: str, topic: str, n: int, depth: int = 16
) -> list[bytes]:
    """``n`` sends, ``depth`` at a time, spread over the queues; the bodies acknowledged."""
    todo, acked = iter(range(n)), list[bytes]()

    async def worker() -> None:
        for i in todo:
            body = b"m%06d" % i + bytes(i % 700)  # sizes vary: records cross segment ends
            resp = await cli.invoke(addr, send_v2(topic, body, queue_id=i % QUEUES), 10)
            assert resp.code == 0, (resp.code, resp.remark)
            acked.append(body)

    async with asyncio.TaskGroup() as tg:
        for _ in range(depth):
            tg.create_task(worker())
    return acked


async def bodies(cli: RemotingClient, addr: str, topic: str) -> list[bytes]:
    """Every message of the topic on one broker, pulled as consumer group cg."""
    out: list[bytes] = []
    for queue_id in range(QUEUES):
        offset = 0
        while True:
            req = pull("cg", topic, queue_id, offset, sys_flag=4, suspend_ms=0, subscription="*")
            resp = await cli.invoke(addr, req)
            if resp.code == ResponseCode.PULL_NOT_FOUND:
                break
            assert resp.code == 0, (resp.code, resp.remark)
            msgs = decode_records(resp.body)
            out += [m.body for m in msgs]
            offset = int(resp.ext_fields["nextBeginOffset"])
    return sorted(out)


async def topic_on(cli: RemotingClient, addr: str, topic: str) -> None:
    """Until the slave has copied the topic's config from its master (SlaveSynchronize)."""
    configs = RemotingCommand.request(C.GET_ALL_TOPIC_CONFIG)
    async with asyncio.timeout(10):
        while True:
            if topic.encode() in (await cli.invoke(addr, configs)).body:
                return
            await asyncio.sleep(0.1)


def commitlog_bytes(broker: BrokerProc) -> bytes:
    files = sorted((broker.store / "commitlog").iterdir())
    return b"".join(f.read_bytes() for f in files)


def pair(
    cluster: Cluster, role: str = "ASYNC_MASTER", master: dict[str, str] | None = None, **slave: str
) -> tuple[BrokerProc, BrokerProc]:
    small = {"mappedFileSizeCommitLog": str(SEGMENT)}  # several segments: ends crossed
    first = cluster.add_broker("broker-a", sets={**small, **(master or {})}, brokerRole=role)
    return first, cluster.add_broker("broker-a-s", sets={**small, **SLAVE, **slave})


async def test_slave_copies_the_commitlog_byte_for_byte_and_serves_pulls(
    cluster: Cluster, client: RemotingClient
) -> None:
    """protocol.md 12.8: the slave appends what the master streams unchanged (records split
    across frames and segment ends included) and replays it into its ConsumeQueues: the
    CommitLog files are identical and a pull from the slave returns what the master has."""
    master, slave = pair(cluster)
    assert (await client.invoke(master.addr, create_topic("HaT", QUEUES))).code == 0
    await send_many(client, master.addr, "HaT", 3000)
    end = await caught_up(client, master.addr, slave.addr)
    assert end > 2 * SEGMENT  # three segments at least
    await topic_on(client, slave.addr, "HaT")
    assert await bodies(client, slave.addr, "HaT") == await bodies(client, master.addr, "HaT")
    assert commitlog_bytes(slave) == commitlog_bytes(master)


async def test_a_slave_refuses_sends(cluster: Cluster, client: RemotingClient) -> None:
    """DefaultMessageStore.checkStoreStatus: a slave's store refuses puts; the send answers
    SERVICE_NOT_AVAILABLE with Java's remark."""
    _master, slave = pair(cluster)
    resp = await client.invoke(slave.addr, send_v2("HaT", b"x", queue_id=0))
    assert resp.code == ResponseCode.SERVICE_NOT_AVAILABLE
    assert resp.remark is not None and "messages are put to the slave" in resp.remark


async def test_the_name_server_gives_a_slave_its_master_and_ha_address(
    cluster: Cluster, client: RemotingClient
) -> None:
    """fidelity D11: the HA port is listenPort + 1 (forced, as BrokerStartup does) and a
    4.9.8-style slave registration (brokerId 1) is answered with the master's address and
    that HA address."""
    master = cluster.add_broker("broker-a", haListenPort="10912")
    body = RegisterBrokerBody(topic_config_wrapper=TopicConfigWrapper()).encode()
    register = api.request(C.REGISTER_BROKER, {
        "brokerName": "broker-a", "brokerAddr": "127.0.0.1:1", "clusterName": "DefaultCluster",
        "haServerAddr": "127.0.0.1:2", "brokerId": "1", "compressed": "false", "bodyCrc32": "0",
    }, body)  # fmt: skip
    deadline = time.monotonic() + 10
    while True:
        resp = await client.invoke(cluster.namesrv_addr, register)
        assert resp.code == 0, resp.remark
        if resp.ext_fields.get("masterAddr") or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.1)
    assert resp.ext_fields["masterAddr"] == master.addr
    assert resp.ext_fields["haServerAddr"] == f"127.0.0.1:{master.port + 1}"


async def test_sync_master_without_a_slave_answers_slave_not_available(
    cluster: Cluster, client: RemotingClient
) -> None:
    """CommitLog.handleHA: no slave connected -> SLAVE_NOT_AVAILABLE (11), stored anyway."""
    master = cluster.add_broker("broker-a", brokerRole="SYNC_MASTER")
    resp = await client.invoke(master.addr, send_v2("HaT", b"x", queue_id=0))
    assert resp.code == ResponseCode.SLAVE_NOT_AVAILABLE and resp.ext_fields["msgId"]


async def test_sync_master_acks_only_what_the_slave_has(
    cluster: Cluster, client: RemotingClient
) -> None:
    """Issue 18 item 4: SYNC_MASTER answers SEND_OK only once a slave holds the message, so
    every acknowledged message is on the slave even when the master is killed (SIGKILL)
    right after the last ack; with the slave frozen a send waits syncFlushTimeout and
    answers FLUSH_SLAVE_TIMEOUT (12)."""
    master, slave = pair(cluster, "SYNC_MASTER", {"syncFlushTimeout": "1000"})
    assert (await client.invoke(master.addr, create_topic("HaSync", QUEUES))).code == 0
    async with asyncio.timeout(20):  # until the slave is connected: SEND_OK, not 11
        while (await client.invoke(master.addr, send_v2("HaWarm", b"w", queue_id=0))).code:  # noqa: ASYNC110 -- state of another process
            await asyncio.sleep(0.1)
    acked = await send_many(client, master.addr, "HaSync", 400)
    slave_proc = slave.proc
    assert slave_proc is not None
    slave_proc.proc.send_signal(signal.SIGSTOP)  # a slave that takes nothing more in
    try:
        began = time.monotonic()
        stalled = await client.invoke(master.addr, send_v2("HaSync", b"late", queue_id=0), 5)
        assert stalled.code == ResponseCode.FLUSH_SLAVE_TIMEOUT  # 12, after syncFlushTimeout
        # waited its syncFlushTimeout (1 s); answered, not left to the request's own 5 s
        # timeout (generous for a busy machine)
        assert 0.9 < time.monotonic() - began < 4.5
    finally:
        slave_proc.proc.send_signal(signal.SIGCONT)
    cluster.kill_broker("broker-a")
    await topic_on(client, slave.addr, "HaSync")
    got = await bodies(client, slave.addr, "HaSync")
    assert set(acked) <= set(got) and len(acked) == 400


async def test_a_restarted_slave_catches_up_from_its_offset(
    cluster: Cluster, client: RemotingClient
) -> None:
    """HAClient: a slave reports its own max offset when it connects again, and the master
    resumes from there: after a restart (and messages sent meanwhile) the copies are
    identical again."""
    master, slave = pair(cluster)
    assert (await client.invoke(master.addr, create_topic("HaT", QUEUES))).code == 0
    await send_many(client, master.addr, "HaT", 500)
    first = await caught_up(client, master.addr, slave.addr)
    assert cluster.stop_broker("broker-a-s") == 0
    await send_many(client, master.addr, "HaT", 500)
    cluster.start_broker("broker-a-s")
    assert await caught_up(client, master.addr, slave.addr) > first
    await topic_on(client, slave.addr, "HaT")
    assert commitlog_bytes(slave) == commitlog_bytes(master)
    assert len(await bodies(client, slave.addr, "HaT")) == 1000


async def test_a_slave_copies_topics_offsets_and_groups_from_its_master(
    cluster: Cluster, client: RemotingClient
) -> None:
    """SlaveSynchronize (fidelity.md 3.2): topic config (21), consumer offsets (43), delay
    offsets (45) and subscription groups (201) are copied from the master; 43 and 45 are
    answered by the master."""
    master, slave = pair(cluster, slaveSyncInterval="300")
    assert (await client.invoke(master.addr, create_topic("HaMeta", 2))).code == 0
    where = {"consumerGroup": "cg_meta", "topic": "HaMeta", "queueId": "1"}
    commit = api.request(C.UPDATE_CONSUMER_OFFSET, {**where, "commitOffset": "7"})
    assert (await client.invoke(master.addr, commit)).code == 0
    group = api.request(C.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, None,
                        b'{"groupName":"cg_meta","retryMaxTimes":3}')  # fmt: skip
    assert (await client.invoke(master.addr, group)).code == 0
    offsets = await client.invoke(master.addr, RemotingCommand.request(C.GET_ALL_CONSUMER_OFFSET))
    assert b'"HaMeta@cg_meta"' in offsets.body
    delays = await client.invoke(master.addr, RemotingCommand.request(C.GET_ALL_DELAY_OFFSET))
    assert delays.code == 0 and b"offsetTable" in delays.body
    query = api.request(C.QUERY_CONSUMER_OFFSET, where)
    async with asyncio.timeout(15):
        while (await client.invoke(slave.addr, query)).ext_fields.get("offset") != "7":  # noqa: ASYNC110 -- state of another process
            await asyncio.sleep(0.1)
    topics = await client.invoke(slave.addr, RemotingCommand.request(C.GET_ALL_TOPIC_CONFIG))
    assert b'"HaMeta"' in topics.body
    groups = await client.invoke(
        slave.addr, RemotingCommand.request(C.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)
    )
    assert b'"retryMaxTimes":3' in groups.body


async def test_a_slave_ahead_of_its_master_cuts_back_and_copies_again(
    cluster: Cluster, client: RemotingClient, tmp_path: Path
) -> None:
    """Issue 18 item 3: a slave whose CommitLog runs past its master's (here: the master came
    back from an older copy of its disk) truncates to the master's end, says so
    (``ha_slave_truncated``), and copies from there: byte-identical again."""
    master, slave = pair(cluster)
    assert (await client.invoke(master.addr, create_topic("HaT", QUEUES))).code == 0
    await send_many(client, master.addr, "HaT", 300)
    await caught_up(client, master.addr, slave.addr)
    assert cluster.stop_broker("broker-a") == 0
    shutil.copytree(master.store, tmp_path / "older")
    cluster.start_broker("broker-a")
    async with RemotingClient() as fresh:  # the old connection went with the old process
        await send_many(fresh, master.addr, "HaT", 100)
        ahead = await caught_up(fresh, master.addr, slave.addr)  # the slave has the 100 too
    assert cluster.stop_broker("broker-a") == 0
    shutil.rmtree(master.store)
    shutil.copytree(tmp_path / "older", master.store)  # the master forgets the 100
    cluster.start_broker("broker-a")
    assert slave.proc is not None and slave.proc.wait_for("ha_slave_truncated", 10)
    async with RemotingClient() as fresh:
        assert await caught_up(fresh, master.addr, slave.addr) < ahead
        await send_many(fresh, master.addr, "HaT", 40)
        await caught_up(fresh, master.addr, slave.addr)
    assert commitlog_bytes(slave) == commitlog_bytes(master)


async def test_a_new_slave_starts_at_the_masters_first_byte(
    cluster: Cluster, client: RemotingClient
) -> None:
    """HAClient: an empty slave takes the master's first offset whatever it is (here the
    master's first CommitLog file is gone, as retention removes it), so its copy starts
    there and is the master's byte for byte (D11a: 4.9.8 starts at the last file)."""
    master = cluster.add_broker("broker-a", sets={"mappedFileSizeCommitLog": str(SEGMENT)})
    assert (await client.invoke(master.addr, create_topic("HaT", QUEUES))).code == 0
    await send_many(client, master.addr, "HaT", 3000)
    assert cluster.stop_broker("broker-a") == 0
    files = sorted((master.store / "commitlog").iterdir())
    assert len(files) >= 3
    files[0].unlink()  # what retention does to the oldest file
    cluster.start_broker("broker-a")
    small = {"mappedFileSizeCommitLog": str(SEGMENT)}
    slave = cluster.add_broker("broker-a-s", sets={**small, **SLAVE})
    async with RemotingClient() as fresh:  # the old connection went with the old process
        await caught_up(fresh, master.addr, slave.addr)
    assert commitlog_bytes(slave) == commitlog_bytes(master)
    assert sorted(f.name for f in (slave.store / "commitlog").iterdir()) == [
        f.name for f in files[1:]
    ]
