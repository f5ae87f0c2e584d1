"""The exactly-once sink on a Spark standalone cluster (issue 34 "Done when"): a master and a
worker on 127.0.0.1 started with pyspark's own launcher (tests/spark/test_standalone.py's
machinery), a streaming query from a source topic to a target topic with ``exactlyOnce``;
the executor JVM is killed with SIGKILL in the middle of a task, later the driver is killed
the same way (mid-task too), and a second driver resumes from the checkpoint until the source
is drained. The target topic then holds every source row exactly once.

"In the middle of a task" is seen on the brokers: once a batch was committed, the test waits
until the next batch's first task has sent 30 half messages (300 of its 2,000 rows, 10 rows
a half), then kills. The
killed task's halves are left pending (pyspark's daemon ends the executor's Python workers
with their JVM): invisible, and rolled back by a check-back once their batch is committed
without them. A Python UDF drops a file naming each task attempt (stage, partition,
attempt): a second attempt proves a task was running when the executor died.

The brokers check a half only once it is a minute old (``transactionTimeOut``), so no half is
copied (each check appends a copy) while the test watches the half queues grow."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from aiorocketmq.client import Message
from aiorocketmq.client.sync import Producer, PullConsumer
from aiorocketmq.remoting.protocol.message import MessageExt
from tests.client.conftest import create_everywhere
from tests.cluster import Cluster, running
from tests.spark import test_sink_exactly_once, test_standalone
from tests.spark.test_sink_exactly_once import read_back
from tests.spark.test_standalone import Standalone, group, stop

pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.timeout(900)]

# the module's fixture: a master and a worker
standalone = test_standalone.standalone

CHECKS = {
    "transactionCheckInterval": "1000",
    "transactionTimeOut": "60000",
    "transactionCheckMax": "100000",
}
TASK_ROWS = 2000  # a batch: 4 tasks (2 brokers x 2 queues), one after the other (1 core)
PER_BATCH, ROWS = 4 * TASK_ROWS, 6 * 4 * TASK_ROWS  # 6 batches
MID_WRITE = 30  # halves (10 rows each: batchSize) a task has sent when it is killed


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    root = Path(tmp_path_factory.mktemp("spark-eo-standalone"))
    with running(root, ("broker-a", "broker-b"), sets=CHECKS) as c:
        yield c


DRIVER = r"""
import json, os, sys
from pyspark import TaskContext
from pyspark.sql import SparkSession, functions as F

master, namesrv, source, target, checkpoint, signals, trigger = sys.argv[1:8]
conf = json.loads(sys.argv[8])
builder = SparkSession.builder.master(master).appName("aiorocketmq-exactly-once")
for key, value in conf.items():
    builder = builder.config(key, value)
spark = builder.getOrCreate()
import aiorocketmq.spark
aiorocketmq.spark.register(spark)

seen = set()


def attempt(body):
    ctx = TaskContext.get()
    key = (ctx.stageId(), ctx.partitionId(), ctx.attemptNumber())
    if key not in seen:
        seen.add(key)
        open(os.path.join(signals, "%d-%d-%d" % key), "w").close()
    return body


df = (spark.readStream.format("rocketmq").option("nameServer", namesrv)
      .option("subscribe", source).option("startingOffsets", "earliest")
      .option("maxOffsetsPerTrigger", "PER_BATCH").load())
writer = (df.select(F.udf(attempt, "binary")("body").alias("body"))
          .writeStream.format("rocketmq").option("nameServer", namesrv)
          .option("topic", target).option("exactlyOnce", "true")
          # small requests, so a task is still writing for a while (the kill lands mid-task)
          .option("batchSize", "10")
          .option("checkpointLocation", checkpoint))
if trigger == "availableNow":
    writer = writer.trigger(availableNow=True)
query = writer.start()
query.awaitTermination()
print(json.dumps({"batches": [p["batchId"] for p in query.recentProgress]}))
""".replace("PER_BATCH", str(PER_BATCH))


def start_driver(
    standalone: Standalone, cluster: Cluster, tmp: Path, trigger: str, log: Path
) -> subprocess.Popen[bytes]:
    conf = {
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.ui.enabled": "false",
        "spark.executor.memory": "512m",
        "spark.cores.max": "1",
        "spark.sql.shuffle.partitions": "2",
        "spark.sql.execution.arrow.maxRecordsPerBatch": "50",
    }
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYSPARK")}
    env |= {"SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable}
    env |= {"PYSPARK_DRIVER_PYTHON": sys.executable}
    argv = [standalone.url, cluster.namesrv_addr, "EoSource", "EoTarget", str(tmp / "cp"),
            str(tmp / "signals"), trigger, json.dumps(conf)]  # fmt: skip
    with log.open("ab") as out:
        return subprocess.Popen([sys.executable, "-c", DRIVER, *argv], cwd=tmp, env=env,
                                stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)  # fmt: skip


def committed(cluster: Cluster) -> int:
    """Messages visible in the target topic (the sum of its queues' max offsets)."""
    with PullConsumer("eo_standalone_count", cluster.namesrv_addr) as c:
        return sum(c.max_offset(mq) for mq in c.fetch_message_queues("EoTarget"))


def signals(tmp: Path) -> set[tuple[int, int, int]]:
    found = set()
    for f in (tmp / "signals").iterdir():
        stage, partition, attempt = f.name.split("-")
        found.add((int(stage), int(partition), int(attempt)))
    return found


def executors(standalone: Standalone) -> list[int]:
    """This cluster's executor JVMs (they run in <worker work dir>/<app>/<id>)."""
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        with contextlib.suppress(OSError):
            cmdline = (proc / "cmdline").read_bytes()
            cwd = (proc / "cwd").readlink()
            if b"CoarseGrainedExecutorBackend" in cmdline and cwd.is_relative_to(standalone.work):
                found.append(int(proc.name))
    return found


def wait(what: str, check: Any, driver: subprocess.Popen[bytes], log: Path, limit: float) -> None:
    deadline = time.monotonic() + limit
    while not check():
        assert driver.poll() is None, f"the driver ended: {log.read_text(errors='replace')[-4000:]}"
        assert time.monotonic() < deadline, f"never: {what}: {log.read_text()[-3000:]}"
        time.sleep(0.1)


def halves_stored(cluster: Cluster) -> int:
    """Records in the brokers' half queues (every half message sent so far)."""
    return test_sink_exactly_once.halves_stored(cluster)


def mid_write(cluster: Cluster, driver: subprocess.Popen[bytes], log: Path) -> int:
    """Wait until a batch is committed, then until the next one's first task has sent
    ``MID_WRITE`` halves (it sends ``TASK_ROWS`` rows, 10 a half); the halves stored then."""
    mark = committed(cluster)
    wait("a batch committed", lambda: committed(cluster) > mark, driver, log, 300)
    start = halves_stored(cluster)
    wait("a task writing", lambda: halves_stored(cluster) >= start + MID_WRITE, driver, log, 120)
    return halves_stored(cluster) - start


def kill_executor_mid_task(
    standalone: Standalone,
    cluster: Cluster,
    tmp: Path,
    driver: subprocess.Popen[bytes],
    log: Path,
) -> None:
    """SIGKILL the executor JVM while a task writes; return once a task was attempted
    again."""
    before = signals(tmp)
    for _ in range(2):  # a busy machine may look only once a task sent all its halves:
        sent = mid_write(cluster, driver, log)  # then the next batch's first task
        if sent < TASK_ROWS:
            break
    pids = executors(standalone)
    assert pids
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
    assert sent < TASK_ROWS, sent  # the first task of the batch was still writing
    wait("a task attempted again", lambda: any(a > 0 for _, _, a in signals(tmp) - before),
         driver, log, 300)  # fmt: skip


def twice(got: list[MessageExt]) -> list[tuple[object, ...]]:
    """The messages whose body shows more than once: where and from what."""
    counts = Counter(m.body for m in got)
    return [
        (m.body, m.properties.get("SPARK_BATCH"), m.properties.get("SPARK_WRITER"),
         m.properties.get("UNIQ_KEY"), m.broker_name, m.queue_id, m.queue_offset)
        for m in got if counts[m.body] > 1
    ]  # fmt: skip


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL ``proc`` and its process group (the driver's JVM and Python workers), by PID."""
    for pid in group(proc.pid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    proc.wait(timeout=60)


def test_exactly_once_through_an_executor_kill_and_a_driver_restart(
    standalone: Standalone, cluster: Cluster, tmp_path: Path
) -> None:
    asyncio.run(create_everywhere(cluster, "EoSource", 2))
    asyncio.run(create_everywhere(cluster, "EoTarget", 4))
    bodies = [f"e{i:05}".encode() for i in range(ROWS)]
    with Producer("eo_standalone_source", namesrv_addr=cluster.namesrv_addr) as p:
        for start in range(0, ROWS, 100):
            p.send_batch([Message("EoSource", b) for b in bodies[start : start + 100]])
    (tmp_path / "signals").mkdir()
    log = tmp_path / "driver.log"
    driver = start_driver(standalone, cluster, tmp_path, "processingTime", log)
    try:
        kill_executor_mid_task(standalone, cluster, tmp_path, driver, log)
        # later, the driver
        mid_write(cluster, driver, log)
        kill_group(driver)
        assert committed(cluster) < ROWS, "the source ran dry before the driver was killed"
    finally:
        stop(driver)
    # a new driver resumes from the checkpoint, drains the source and ends
    driver = start_driver(standalone, cluster, tmp_path, "availableNow", log)
    try:
        assert driver.wait(timeout=500) == 0, log.read_text(errors="replace")[-4000:]
    finally:
        stop(driver)
    got = read_back(cluster, "EoTarget", ROWS, limit=120)
    assert sorted(m.body for m in got) == bodies, twice(got)  # each source row exactly once
