"""Issue 31 item 7: a consumer's first start prints no warning -- it printed
``rebalance_no_consumer_list`` (a rebalance woken by the first broker's answer to the start-up
heartbeat asked another broker, which the heartbeat had not reached yet) -- and a broker that
restarted, forgetting the group's consumers, is told them again at once (issue 35 item 3)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

from aiorocketmq.client import Message
from aiorocketmq.client.core import api
from aiorocketmq.client.sync import Producer
from aiorocketmq.remoting.client import RemotingClient
from tests.client.conftest import create_everywhere
from tests.cluster import Cluster
from tests.deploy.launcher import Launcher, close
from tests.harness import ROOT

WARNING = "rebalance_no_consumer_list"

# a push consumer of the README's kind; "consuming" once a message arrived, then it runs until
# its stdin closes. Rebalances every second; heartbeats only at start (and every 10 minutes).
CONSUMER = """
import asyncio, sys
from aiorocketmq.client import ConsumeFromWhere, ConsumeStatus, PushConsumer

async def main(namesrv, topic):
    got = asyncio.Event()

    async def on_messages(msgs, _ctx):
        got.set()
        return ConsumeStatus.CONSUME_SUCCESS

    consumer = PushConsumer("cg_warnings", namesrv_addr=namesrv, rebalance_interval=1000,
                            heartbeat_broker_interval=600_000,
                            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
    consumer.subscribe(topic, "*")
    consumer.register_message_listener(on_messages)
    async with consumer:
        await got.wait()
        print("consuming", flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)

asyncio.run(main(sys.argv[1], sys.argv[2]))
"""


def test_the_quick_start_example_starts_without_a_warning(tmp_path: Path) -> None:
    """`make run`, then `python examples/quickstart.py`, as the README has it: a fresh cluster,
    a first start of the group -- and no warning among the lines it prints."""
    launcher = Launcher(tmp_path / "data")
    try:
        launcher.wait_ready()
        env = {**os.environ, "NAMESRV_ADDR": launcher.addr("namesrv")}
        out, code = launcher.run_beside([sys.executable, "examples/quickstart.py"], env)
    finally:
        close(launcher)
    assert code == 0, out
    assert "all 10 received" in out, out
    assert WARNING not in out, out


async def consumer_ids(addr: str, group: str) -> list[str]:
    """The group's consumers as the broker at ``addr`` knows them (none: [])."""
    async with RemotingClient() as client:
        resp = await client.invoke(addr, api.consumer_list(group))
    return api.parse_consumer_list(resp) if resp.code == 0 else []


def test_first_start_is_quiet_and_a_restarted_broker_is_told_the_group_at_once(
    two_brokers: Cluster, tmp_path: Path
) -> None:
    """Two brokers (the start-up heartbeat reaches them one after the other): the first start
    says nothing. Then broker-b restarts and forgets the group's consumers; the consumer's
    next heartbeat is 10 minutes away, but the dropped connection has the SDK fetch the
    route and beat to broker-b at once (issue 35 item 3), so broker-b knows the consumer
    again within seconds. (Before, its rebalances were told "no consumer for this group"
    until the next heartbeat, and warned ``rebalance_no_consumer_list``.)"""
    topic = "RebalanceWarnings"
    asyncio.run(create_everywhere(two_brokers, topic))
    with Producer("pg_warnings", namesrv_addr=two_brokers.namesrv_addr) as producer:
        for i in range(8):
            producer.send(Message(topic, b"m%d" % i))
    errors = tmp_path / "consumer.err"
    with errors.open("w") as err:
        proc = subprocess.Popen([sys.executable, "-c", CONSUMER, two_brokers.namesrv_addr, topic],
                                cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=err, text=True)  # fmt: skip
    try:
        assert proc.stdout is not None and proc.stdin is not None
        assert proc.stdout.readline() == "consuming\n", errors.read_text()
        assert WARNING not in errors.read_text()
        addr = two_brokers.brokers["broker-b"].addr
        before = asyncio.run(consumer_ids(addr, "cg_warnings"))
        assert len(before) == 1, before
        two_brokers.stop_broker("broker-b")
        two_brokers.start_broker("broker-b")
        deadline = time.monotonic() + 120  # far below the 10-minute heartbeat
        while asyncio.run(consumer_ids(addr, "cg_warnings")) != before:
            assert proc.poll() is None, errors.read_text()
            assert time.monotonic() < deadline, errors.read_text()
            time.sleep(0.2)
        proc.stdin.close()
        assert proc.wait(60) == 0, errors.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for stream in (proc.stdin, proc.stdout):
            if stream is not None and not stream.closed:
                stream.close()
