"""Issue 31 item 6: `make run ARGS="--slaves 1 --keep-going"` -- a master killed, the rest of
the cluster keeps running, and a consumer reads what the master had from its slave (README,
"Master/slave replication")."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import sys
from collections.abc import Callable

import pytest

from aiorocketmq.client import (
    ConsumeFromWhere,
    ConsumeStatus,
    Message,
    MessageExt,
    Producer,
    PushConsumer,
)
from aiorocketmq.client.core import api
from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.protocol.codes import RequestCode as C
from aiorocketmq.remoting.protocol.codes import ResponseCode
from tests.broker.wire import create_topic, pull
from tests.deploy.launcher import Launcher, gone, wait_all_gone

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc, prctl")

FIVE = ["namesrv", "broker-a", "broker-b", "broker-a-s1", "broker-b-s1"]
TOPIC = "KeepGoing"
COUNT = 100


async def draining(run: Launcher, done: Callable[[], bool], timeout: float, what: str) -> None:
    """Until ``done()``, reading the launcher's output meanwhile (a full pipe would block it)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not done():
        assert loop.time() < deadline, f"{what}: not within {timeout} s\n{run.text}"
        run.read(0)
        await asyncio.sleep(0.1)


async def slave_ready(addr: str) -> None:
    """Until the slave holds all COUNT messages and knows TOPIC (it copies topic configs from
    its master every 10 s: a slave that never got the topic answers pulls TOPIC_NOT_EXIST)."""
    async with RemotingClient() as cli:
        while True:
            total = 0
            for q in range(2):
                resp = await cli.invoke(addr, api.queue_request(C.GET_MAX_OFFSET, TOPIC, q))
                total += api.parse_offset(resp, addr) if resp.code == 0 else 0
            req = pull("cg_probe", TOPIC, 0, 0, sys_flag=4, suspend_ms=0, subscription="*")
            if total == COUNT and (await cli.invoke(addr, req)).code == ResponseCode.SUCCESS:
                return
            await asyncio.sleep(0.2)


@pytest.mark.timeout(240)  # a cluster of five, 10 s for the slave to copy the topic, a consumer
async def test_a_dead_master_leaves_the_cluster_running_and_its_slave_serving(
    launch: Callable[..., Launcher],
) -> None:
    run = launch("--slaves", "1", "--keep-going", names=FIVE)
    pids = run.wait_ready(60)
    namesrv, master, slave = run.addr("namesrv"), run.addr("broker-a"), run.addr("broker-a-s1")
    async with RemotingClient() as admin:  # on broker-a alone: every message goes to its group
        assert (await admin.invoke(master, create_topic(TOPIC, 2))).code == 0
    sent = [b"m%03d" % i for i in range(COUNT)]
    async with Producer("pg_keep_going", namesrv_addr=namesrv) as producer:
        for body in sent:
            await producer.send(Message(TOPIC, body))
    probe = asyncio.create_task(slave_ready(slave))
    await draining(run, probe.done, 40, "the slave holds every message and the topic")
    await probe

    os.kill(pids["broker-a"], signal.SIGKILL)
    said = (f"mqcluster: broker-a (pid {pids['broker-a']}) was killed by SIGKILL unexpectedly; "
            "--keep-going: namesrv, broker-b, broker-a-s1, broker-b-s1 keep running")  # fmt: skip
    await draining(run, lambda: said in run.text, 30, "the launcher names the dead master")
    mark = len(run.text)

    got: set[bytes] = set()

    async def listener(msgs: list[MessageExt], _ctx: object) -> ConsumeStatus:
        got.update(m.body for m in msgs)
        return ConsumeStatus.CONSUME_SUCCESS

    first = ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
    consumer = PushConsumer("cg_keep_going", namesrv_addr=namesrv, consume_from_where=first)
    consumer.subscribe(TOPIC, "*")
    consumer.register_message_listener(listener)
    async with consumer:
        await draining(run, lambda: got >= set(sent), 60, "every message read from the slave")
    assert got == set(sent)
    assert run.proc.poll() is None, run.text  # the launcher runs on
    assert [name for name, pid in pids.items() if gone(pid)] == ["broker-a"], run.text
    later = run.text[mark:]
    assert re.search(r"^(namesrv|broker-b|broker-a-s1|broker-b-s1)\s+\| ", later, re.M), later

    run.proc.send_signal(signal.SIGTERM)
    assert run.wait_exit() == 1, run.text  # a server died: not a clean run
    assert "stopped; not every server exited 0 (broker-a was killed by SIGKILL)" in run.text
    assert wait_all_gone(list(pids.values()), 5) == []
