"""mqadmin's timer views against the shared cluster: getTimerCheckPoint (60) and
getTimerMetrics (61), of one broker and of the cluster; 5.x's binary checkpoint and its
metrics JSON read as a 5.x broker writes them."""

from __future__ import annotations

import asyncio
import json
import re
import struct
from datetime import timedelta
from typing import Any

from aiorocketmq import Message, Producer
from aiorocketmq.client.admin.cmd_cluster import progress_cell
from aiorocketmq.client.admin.cmd_timer import decode_checkpoint, flat
from tests.admin.test_topic_cmds import unique
from tests.cluster import Cluster


def test_checkpoint_of_a_broker_and_of_a_cluster(admin: Any, cluster: Cluster) -> None:
    a, b = cluster.brokers["broker-a"].addr, cluster.brokers["broker-b"].addr
    run = admin("getTimerCheckPoint", "-b", a)
    assert run.code == 0, run.err
    rows = {line.split()[0]: line.split()[1:] for line in run.out.splitlines() if line.strip()}
    assert rows["Key"] == ["Value"] and int(rows["lastReadTimeMs"][0]) > 0
    both = admin("getTimerCheckPoint", "-c", "DefaultCluster", "--json").json
    assert sorted(d["brokerAddr"] for d in both) == sorted([a, b])
    assert all("lastReadTimeMs" in d["checkpoint"] for d in both)


def test_metrics_count_a_waiting_timer(admin: Any, cluster: Cluster) -> None:
    """A timer an hour ahead waits: the broker's pending figure counts it."""
    topic = unique("TimerAdmin")
    a = cluster.brokers["broker-a"].addr
    assert admin("updateTopic", "-b", a, "-t", topic, "-r", "1", "-w", "1").code == 0

    def pending() -> int:
        data = admin("getTimerMetrics", "-b", a, "--json").json
        assert [d["brokerAddr"] for d in data] == [a]
        return int(data[0]["metrics"]["pending"])

    before = pending()

    async def send() -> None:
        async with Producer("pg_timer_admin", namesrv_addr=cluster.namesrv_addr) as p:
            for _ in range(100):  # the route may lag the topic's creation a moment
                route = await p.fetch_publish_message_queues(topic)
                if route:
                    break
                await asyncio.sleep(0.05)
            await p.send(Message(topic, b"later", delay=timedelta(hours=1)))

    asyncio.run(send())
    assert pending() == before + 1
    run = admin("getTimerMetrics", "-b", a)
    assert run.code == 0 and "pending" in run.out, run.err
    # 5.x's runtime keys (28): the #Timer(Progress) line, its congestion counting the timer
    assert f"{a}  #Timer(Progress)  " in run.out, run.out
    (data,) = admin("getTimerMetrics", "-b", a, "--json").json
    assert re.fullmatch(r"\d+-\d+\(\d+\.\dw, \d+\.\d, \d+\.\d\)", data["timerProgress"])


def test_5x_bodies_are_read() -> None:
    """TimerCheckpoint.encode's 7 longs; TimerMetricsSerializeWrapper's JSON, flattened;
    ClusterListSubCommand's #Timer(Progress) cell."""
    body = struct.pack(">7q", 1_700_000_000_000, 52, 7, 9, 1, 2, 3)
    point = decode_checkpoint(body)
    assert point["lastReadTimeMs"] == 1_700_000_000_000 and point["dataVersion.counter"] == 3
    assert decode_checkpoint(body[:32])["masterTimerQueueOffset"] == 9
    assert decode_checkpoint(json.dumps({"lastReadTimeMs": 5}).encode()) == {"lastReadTimeMs": 5}
    wrapper = {"dataVersion": {"counter": 1}, "timingCount": {"T": {"count": 4}}}
    assert flat(wrapper) == [("dataVersion.counter", 1), ("timingCount.T.count", 4)]
    kv = {"timerReadBehind": "3", "timerOffsetBehind": "4", "timerCongestNum": "25000",
          "timerEnqueueTps": "1.25", "timerDequeueTps": "0.0"}  # fmt: skip
    assert progress_cell(kv) == "3-4(2.5w, 1.3, 0.0)"  # Java's %.1f rounds half up
    assert progress_cell({}) is None
