"""Runtime role changes in controller mode (issue 35 Build item 2; broker.roles, 5.x
ReplicasManager.changeToMaster / changeToSlave over AutoSwitchHAService), driven the way a
5.x controller drives them -- NOTIFY_BROKER_ROLE_CHANGED (1008) -- against real broker
processes: a slave promoted at a new epoch takes writes and is brokerId 0 in the name
server's route at once; the old master, back as a slave, cuts off the tail it wrote after
the promotion (also when killed in the middle of that cut) and ends byte-identical to the
new master; a demoted master acknowledges nothing that was in flight."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
from pathlib import Path

from aiorocketmq.broker.store import cutmark
from aiorocketmq.client.core import api
from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.errors import RemotingError
from aiorocketmq.remoting.protocol.codes import RequestCode as C
from aiorocketmq.remoting.protocol.codes import ResponseCode
from aiorocketmq.remoting.protocol.command import RemotingCommand
from aiorocketmq.remoting.protocol.message import decode_records
from aiorocketmq.remoting.protocol.route import TopicRouteData
from tests.broker.test_replication import caught_up, commitlog_bytes, max_phys, topic_on
from tests.broker.wire import create_topic, pull, send_v2
from tests.cluster import BrokerProc, Cluster
from tests.scrape import scrape, value

QUEUES = 4
SEGMENT = 128 * 1024  # the old master's own tail spans several CommitLog segments
GROUP = {
    "brokerName": "broker-a",
    "enableControllerMode": "true",
    "mappedFileSizeCommitLog": str(SEGMENT),
    "haSendHeartbeatInterval": "500",
    "slaveSyncInterval": "300",
    # registrations only at start and at role changes: the route a test reads is the one
    # the last role change made, not one a periodic round made since
    "registerNameServerPeriod": "60000",
}
Message = tuple[int, int, int, str, bytes]  # queue id, queue offset, CommitLog offset, id, body


def notify(master: BrokerProc, master_id: int, epoch: int) -> RemotingCommand:
    """NOTIFY_BROKER_ROLE_CHANGED as 5.x's controller sends it (a SyncStateSet body)."""
    ext = {"masterAddress": master.addr, "masterEpoch": str(epoch),
           "masterBrokerId": str(master_id), "syncStateSetEpoch": "1"}  # fmt: skip
    return RemotingCommand.request(C.NOTIFY_BROKER_ROLE_CHANGED, ext,
                                   b'{"syncStateSet":[],"syncStateSetEpoch":1}')  # fmt: skip


async def role(
    cli: RemotingClient, to: BrokerProc, master: BrokerProc, mid: int, epoch: int
) -> None:
    """Tell ``to`` that ``master`` (brokerId ``mid``) leads at ``epoch``, as a controller
    does: again after a connection lost (a broker just restarted), until it answers."""
    async with asyncio.timeout(20):
        while True:
            try:
                resp = await cli.invoke(to.addr, notify(master, mid, epoch), 10)
            except RemotingError:
                await asyncio.sleep(0.1)
                continue
            assert resp.code == 0, resp.remark
            return


async def epochs(cli: RemotingClient, broker: BrokerProc) -> list[tuple[int, int]]:
    """GET_BROKER_EPOCH_CACHE (1007): the broker's epoch entries."""
    resp = await cli.invoke(broker.addr, RemotingCommand.request(C.GET_BROKER_EPOCH_CACHE))
    assert resp.code == 0, resp.remark
    return [(e["epoch"], e["startOffset"]) for e in json.loads(resp.body)["epochList"]]


async def route(cli: RemotingClient, cluster: Cluster, topic: str) -> dict[int, str]:
    resp = await cli.invoke(cluster.namesrv_addr, api.get_route(topic))
    assert resp.code == 0, resp.remark
    (data,) = TopicRouteData.decode(resp.body).broker_datas
    return {int(k): v for k, v in data.broker_addrs.items()}


async def send_many(cli: RemotingClient, broker: BrokerProc, topic: str, n: int, tag: str) -> None:
    """``n`` acknowledged sends, bodies ``<tag><i>`` padded to ~2 KB, over the queues."""
    for i in range(n):
        body = f"{tag}{i:05d}".encode() + bytes(2000)
        resp = await cli.invoke(broker.addr, send_v2(topic, body, queue_id=i % QUEUES), 10)
        assert resp.code == 0, (resp.code, resp.remark)


async def messages(cli: RemotingClient, broker: BrokerProc, topic: str) -> list[Message]:
    """Every message of the topic on one broker, pulled: ids and offsets included."""
    out: list[Message] = []
    for queue_id in range(QUEUES):
        offset = 0
        while True:
            req = pull("cg", topic, queue_id, offset, sys_flag=4, suspend_ms=0, subscription="*")
            resp = await cli.invoke(broker.addr, req)
            if resp.code == ResponseCode.PULL_NOT_FOUND:
                break
            assert resp.code == 0, (resp.code, resp.remark)
            out += [(m.queue_id, m.queue_offset, m.commit_log_offset, m.msg_id, m.body)
                    for m in decode_records(resp.body)]  # fmt: skip
            offset = int(resp.ext_fields["nextBeginOffset"])
    return out


def state(pid: int) -> str:
    """The process state letter in /proc/<pid>/stat (T: stopped)."""
    return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]


async def stopped(broker: BrokerProc, timeout: float = 30) -> None:
    """Until the broker process stops itself (SIGSTOP: tests.broker.stopping_broker): its
    state in /proc is T. Raises if it exits or time is up."""
    assert broker.proc is not None
    async with asyncio.timeout(timeout):
        while state(broker.proc.proc.pid) != "T":
            assert broker.proc.proc.poll() is None, broker.proc.dump()
            await asyncio.sleep(0.05)


async def test_promoted_slave_leads_and_the_old_master_cuts_its_own_tail(
    cluster: Cluster, client: RemotingClient
) -> None:
    """5.x controller mode: B, promoted at epoch 2, is brokerId 0 in the route at once and
    takes writes; A, which went on acknowledging writes of its own after the promotion and
    then died, comes back as B's slave, agrees on epochs in the HA handshake, cuts its log
    back to the consistent point -- killed (SIGKILL) in the middle of that cut, it finishes
    the cut when it starts again -- and copies: its messages, ids and offsets, CommitLog
    bytes and epoch entries are then B's, and none of its own tail is left."""
    a = cluster.add_broker("a", sets={**GROUP, "brokerId": "1"})
    b = cluster.add_broker("b", sets={**GROUP, "brokerId": "2"})
    fenced = await client.invoke(a.addr, send_v2("RoleT", b"x", queue_id=0))
    assert fenced.code == ResponseCode.SERVICE_NOT_AVAILABLE  # no role yet: no put
    await role(client, a, a, 1, 1)
    await role(client, b, a, 1, 1)
    assert (await client.invoke(a.addr, create_topic("RoleT", QUEUES))).code == 0
    await send_many(client, a, "RoleT", 200, "e1-")
    fork = await caught_up(client, a.addr, b.addr)
    await topic_on(client, b.addr, "RoleT")
    assert await route(client, cluster, "RoleT") == {0: a.addr, 2: b.addr}

    await role(client, b, b, 2, 2)  # the controller promotes B
    assert await route(client, cluster, "RoleT") == {0: b.addr}  # at once, not in 30 s
    await send_many(client, a, "RoleT", 150, "a-only-")  # A, not told, still acknowledges
    await send_many(client, b, "RoleT", 150, "e2-")
    assert await max_phys(client, a.addr) > fork + 2 * SEGMENT
    cluster.kill_broker("a")

    # A back as B's slave: its cut stops at the first CommitLog segment it deletes, dies
    cluster.start_broker("a", module="tests.broker.stopping_broker",
                         env={"STOP_AT": "unlink:commitlog/0000:1"})  # fmt: skip
    told = asyncio.create_task(role(client, a, b, 2, 2))
    await stopped(a)
    assert cutmark.read(a.store) == fork  # in the middle of its cut
    cluster.kill_broker("a")
    with contextlib.suppress(RemotingError, AssertionError, TimeoutError):
        await told  # the answer may or may not have left before the stop
    cluster.start_broker("a")
    assert cutmark.read(a.store) is None  # the start finished the cut
    assert await route(client, cluster, "RoleT") == {0: b.addr}  # fenced: not registered
    await role(client, a, b, 2, 2)
    await caught_up(client, b.addr, a.addr)

    mine, theirs = await messages(client, a, "RoleT"), await messages(client, b, "RoleT")
    assert mine == theirs and len(theirs) == 350
    assert not [m for m in mine if m[4].startswith(b"a-only-")]
    assert commitlog_bytes(a) == commitlog_bytes(b)
    assert await epochs(client, a) == await epochs(client, b) == [(1, 0), (2, fork)]
    assert await route(client, cluster, "RoleT") == {0: b.addr, 1: a.addr}
    stale = await client.invoke(a.addr, notify(a, 1, 1))  # an order older than epoch 2
    assert stale.code == ResponseCode.SYSTEM_ERROR and "older" in (stale.remark or "")
    assert b.proc is not None
    found = await scrape(b.proc.metrics_port())
    assert value(found, "rocketmq_broker_role", role="MASTER") == 1
    assert value(found, "rocketmq_broker_role", role="SLAVE") == 0
    assert value(found, "rocketmq_broker_epoch") == 2
    assert value(found, "rocketmq_broker_role_changes_total") == 2


async def test_a_demoted_master_acknowledges_nothing_in_flight(
    cluster: Cluster, client: RemotingClient
) -> None:
    """A SYNC_MASTER send waiting for its (frozen) slave when the master is made a slave is
    answered SERVICE_NOT_AVAILABLE at once -- not acknowledged, not FLUSH_SLAVE_TIMEOUT --
    and every send after it gets 4.9.8's slave answer."""
    m = cluster.add_broker("m", sets={**GROUP, "brokerId": "1", "brokerRole": "SYNC_MASTER",
                                      "syncFlushTimeout": "30000"})  # fmt: skip
    s = cluster.add_broker("s", sets={**GROUP, "brokerId": "2"})
    await role(client, m, m, 1, 1)
    await role(client, s, m, 1, 1)
    assert (await client.invoke(m.addr, create_topic("RoleSync", QUEUES))).code == 0
    async with asyncio.timeout(20):  # until the slave is connected: SEND_OK, not 11
        while (await client.invoke(m.addr, send_v2("RoleSync", b"w", queue_id=0))).code:  # noqa: ASYNC110 -- state of another process
            await asyncio.sleep(0.1)
    assert s.proc is not None
    s.proc.proc.send_signal(signal.SIGSTOP)
    try:
        before = await max_phys(client, m.addr)
        sending = asyncio.create_task(
            client.invoke(m.addr, send_v2("RoleSync", b"in flight", queue_id=0), 40)
        )
        async with asyncio.timeout(20):  # until it is appended, waiting for the slave
            while await max_phys(client, m.addr) == before:  # noqa: ASYNC110 -- another process
                await asyncio.sleep(0.05)
        await role(client, m, s, 2, 2)  # the controller made s the master
        answer = await sending
        assert answer.code == ResponseCode.SERVICE_NOT_AVAILABLE, (answer.code, answer.remark)
        after = await client.invoke(m.addr, send_v2("RoleSync", b"late", queue_id=0))
        assert after.code == ResponseCode.SERVICE_NOT_AVAILABLE
        assert after.remark is not None and "messages are put to the slave" in after.remark
    finally:
        s.proc.proc.send_signal(signal.SIGCONT)


async def test_role_requests_need_controller_mode(cluster: Cluster, client: RemotingClient) -> None:
    """5.x: GET_BROKER_EPOCH_CACHE answers "this request only for controllerMode " without
    it; so does NOTIFY_BROKER_ROLE_CHANGED here (5.x answers SUCCESS, doing nothing), and
    the static role stays."""
    a = cluster.add_broker("a")
    for req in (notify(a, 7, 3), RemotingCommand.request(C.GET_BROKER_EPOCH_CACHE)):
        resp = await client.invoke(a.addr, req)
        assert (resp.code, resp.remark) == (1, "this request only for controllerMode ")
    assert (await client.invoke(a.addr, send_v2("RoleS", b"x", queue_id=0))).code == 0
