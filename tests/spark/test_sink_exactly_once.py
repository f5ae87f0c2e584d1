"""The sink's ``exactlyOnce`` mode against a real cluster and the local Spark session (issue 34
item 1): half messages sent by the tasks, committed by the driver; an abort or a failed task
rolls its halves back; check-backs answered from the write's commit log. The brokers here
check pending halves every second (Java's default is every minute), and never give up on one
(``transactionCheckMax``), so a slow batch on a busy machine is not dropped.

The standalone-cluster test (an executor JVM killed mid-task, the driver restarted) is
tests/spark/test_sink_exactly_once_standalone.py."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from aiorocketmq.client import sync
from aiorocketmq.client.core import api
from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.protocol.codes import RequestCode
from aiorocketmq.remoting.protocol.message import MessageExt, decode_records
from aiorocketmq.spark.sink_txlog import (
    BATCH_PROPERTY,
    QUERY_PROPERTY,
    WRITER_PROPERTY,
    TxLog,
)
from tests.client.conftest import create_everywhere
from tests.cluster import Cluster, running
from tests.spark.test_sink import FIRST

pytestmark = [pytest.mark.spark, pytest.mark.slow]

FAST_CHECKS = {
    "transactionCheckInterval": "1000",
    "transactionTimeOut": "1500",
    "transactionCheckMax": "100000",
}
GET_MAX_OFFSET = RequestCode.GET_MAX_OFFSET
# an op message names the halves it ends: one (END_TRANSACTION, protocol.md 12.4), or
# several, comma-separated (END_TRANSACTION_BATCH, remoting/protocol/txbatch.py)
OP_TOPIC = "RMQ_SYS_TRANS_OP_HALF_TOPIC"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    root = Path(tmp_path_factory.mktemp("spark-eo-cluster"))
    with running(root, ("broker-a", "broker-b"), sets=FAST_CHECKS) as c:
        yield c


def wait_until(what: str, check: Any, limit: float = 120.0) -> None:
    deadline = time.monotonic() + limit
    while not check():
        assert time.monotonic() < deadline, f"never: {what}"
        time.sleep(0.2)


def ended(cluster: Cluster) -> int:
    """Half messages ended (committed or rolled back) on every broker so far: the half
    offsets their op messages name, read from each broker's op queue."""

    async def count() -> int:
        total = 0
        async with RemotingClient() as cli:
            for broker in cluster.brokers.values():
                offset = 0
                while True:
                    req = api.pull_message("cg_count_ops", OP_TOPIC, 0, offset, max_nums=32,
                                           sys_flag=api.FLAG_SUBSCRIPTION, suspend_ms=0,
                                           subscription="*")  # fmt: skip
                    resp = await cli.invoke(broker.addr, req)
                    if resp.code != 0:  # none there yet, or no more
                        break
                    total += sum(len(op.body.split(b",")) for op in decode_records(resp.body))
                    offset = int(resp.ext_fields["nextBeginOffset"])
        return total

    return asyncio.run(count())


def _sum_max_offsets(cluster: Cluster, topic: str) -> int:
    """GET_MAX_OFFSET of queue 0 of a system topic, asked of each broker (no route)."""

    async def count() -> int:
        total = 0
        async with RemotingClient() as cli:
            for broker in cluster.brokers.values():
                resp = await cli.invoke(broker.addr, api.queue_request(GET_MAX_OFFSET, topic, 0))
                total += api.parse_offset(resp) if resp.code == 0 else 0  # none there yet
        return total

    return asyncio.run(count())


def read_back(cluster: Cluster, topic: str, n: int, limit: float = 20.0) -> list[MessageExt]:
    """Every message of ``topic`` from offset 0 (a new consumer group each time) once ``n``
    arrived, or ``limit`` seconds passed; then a short quiet poll, so extra ones show too."""
    got: list[MessageExt] = []
    with sync.PullConsumer(f"read_{topic}_{uuid.uuid4().hex[:8]}", cluster.namesrv_addr,
                           **FIRST) as consumer:  # fmt: skip
        consumer.assign(consumer.fetch_message_queues(topic))
        deadline = time.monotonic() + limit
        while len(got) < n and time.monotonic() < deadline:
            got += consumer.poll(0.5)
        got += consumer.poll(0.3)
    return got


def eo_write(df: Any, cluster: Cluster, **options: str) -> None:
    writer = df.write.format("rocketmq").mode("append").option("nameServer", cluster.namesrv_addr)
    writer = writer.option("exactlyOnce", "true")
    for key, value in options.items():
        writer = writer.option(key, value)
    writer.save()


def test_batch_write_commits_every_row_once(spark: Any, cluster: Cluster) -> None:
    """df.write with exactlyOnce: every row visible once, after the job; each message names
    its write, batch and task attempt; rows with a queueId in row order in that queue."""
    asyncio.run(create_everywhere(cluster, "EoBatch"))
    rows = [(b"r%04d" % i, i % 4 if i % 3 else None, f"k{i % 5}") for i in range(400)]
    df = spark.createDataFrame(rows, "body binary, queueId int, keys string")  # 2 slices
    eo_write(df, cluster, topic="EoBatch")
    got = read_back(cluster, "EoBatch", 400)
    assert sorted(m.body for m in got) == sorted(b for b, _, _ in rows)
    writers = {m.properties[WRITER_PROPERTY] for m in got}
    assert len(writers) == 2  # one per task
    assert {m.properties[BATCH_PROPERTY] for m in got} == {"0"}
    assert len({m.properties[QUERY_PROPERTY] for m in got}) == 1
    by_body = {b: (q, k) for b, q, k in rows}
    for writer in writers:  # within a task, a queue's rows in row order
        mine = [m for m in got if m.properties[WRITER_PROPERTY] == writer]
        for where in {(m.broker_name, m.queue_id) for m in mine}:
            in_queue = [m.body for m in mine if (m.broker_name, m.queue_id) == where]
            assert in_queue == sorted(in_queue), where
    for m in got:  # a row's queueId names its queue (broker-a has every id)
        queue_id, _ = by_body[m.body]
        if queue_id is not None:
            assert (m.broker_name, m.queue_id) == ("broker-a", queue_id)
    keyed: dict[str, set[tuple[str, int]]] = {}  # a key's rows (no queueId) share one queue
    for m in got:
        queue_id, key = by_body[m.body]
        if queue_id is None:
            keyed.setdefault(key, set()).add((m.broker_name, m.queue_id))
    assert all(len(queues) == 1 for queues in keyed.values()), keyed


def stream_files(spark: Any, tmp_path: Path, rows: list[tuple[str]], files: int) -> Path:
    """``rows`` as ``files`` parquet files (a file per micro-batch with maxFilesPerTrigger 1)."""
    source = tmp_path / "in"
    spark.createDataFrame(rows, "body string").repartition(files).write.parquet(str(source))
    return source


def eo_stream(spark: Any, cluster: Cluster, source: Path, checkpoint: Path, topic: str) -> Any:
    query = (
        spark.readStream.schema("body string")
        .option("maxFilesPerTrigger", 1)
        .parquet(str(source))
        .writeStream.format("rocketmq")
        .option("nameServer", cluster.namesrv_addr)
        .option("topic", topic)
        .option("exactlyOnce", "true")
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(120)
    assert query.exception() is None
    return query


def test_stream_rerun_of_a_committed_batch_is_rolled_back(
    spark: Any, cluster: Cluster, tmp_path: Path
) -> None:
    """A stream with exactlyOnce writes every row once, a commit-log record per batch. Then
    the driver "dies" after the sink's commit of the last batch but before Spark logged it
    (its ``commits/1`` removed): the restarted query re-runs batch 1 with the same id, sends
    its rows again as new halves, and the sink's commit rolls them back -- no row twice."""
    asyncio.run(create_everywhere(cluster, "EoStream"))
    rows = [(f"s{i:03}",) for i in range(150)]
    source, checkpoint = stream_files(spark, tmp_path, rows, 2), tmp_path / "cp"
    query = eo_stream(spark, cluster, source, checkpoint, "EoStream")
    assert [p["numInputRows"] > 0 for p in query.recentProgress] == [True, True]
    got = read_back(cluster, "EoStream", 150)
    assert sorted(m.body for m in got) == sorted(b.encode() for (b,) in rows)
    txlog = TxLog(str(checkpoint / "rocketmq-sink"), "stream")
    assert txlog.batches() == [0, 1]
    first = txlog.read(1)
    assert first is not None and len(first.writers) == 1  # one file, one task
    in_batch_1 = len(first.halves)
    ended_before = ended(cluster)
    for name in ("1", ".1.crc"):  # Hadoop's checksum file goes with it
        (checkpoint / "commits" / name).unlink(missing_ok=True)
    eo_stream(spark, cluster, source, checkpoint, "EoStream")  # re-runs batch 1
    # the re-run's halves and the first run's again: each ends once (a second END of a half
    # is answered SUCCESS and writes nothing)
    wait_until(
        "the re-run's halves rolled back", lambda: ended(cluster) >= ended_before + in_batch_1
    )
    assert txlog.read(1) == first  # the first commit stays the record
    got = read_back(cluster, "EoStream", 151, limit=3)  # waits: a 151st would show
    assert sorted(m.body for m in got) == sorted(b.encode() for (b,) in rows)


def test_abort_rolls_the_finished_tasks_halves_back(spark: Any, cluster: Cluster) -> None:
    """``abort`` of a batch job rolls back the halves its finished tasks reported (the writer
    called as Spark calls it: write() for a task, then abort() on the driver)."""
    from aiorocketmq.spark.sink import BatchWriter, HalvesCommit, make_writer

    asyncio.run(create_everywhere(cluster, "EoAbort"))
    schema = spark.createDataFrame([], "body binary").schema
    options = {"nameServer": cluster.namesrv_addr, "topic": "EoAbort", "exactlyOnce": "true"}
    writer = make_writer(options, schema, False, streaming=False)
    assert isinstance(writer, BatchWriter)
    batch = pa.RecordBatch.from_pydict({"body": [b"a%02d" % i for i in range(40)]})
    ended_before = ended(cluster)
    message = writer.write(iter([batch]))
    assert isinstance(message, HalvesCommit) and message.rows == 40
    assert message.halves is not None and message.sent == len(message.halves.halves) == 1
    writer.abort([message, None])  # one task finished, one failed
    wait_until("its half rolled back", lambda: ended(cluster) >= ended_before + message.sent)
    assert read_back(cluster, "EoAbort", 1, limit=3) == []


HALF_TOPIC = "RMQ_SYS_TRANS_HALF_TOPIC"


def halves_stored(cluster: Cluster) -> int:
    """Records in the half queues: each check round appends every half it checks again."""
    return _sum_max_offsets(cluster, HALF_TOPIC)


def test_a_failed_tasks_halves_never_become_visible(spark: Any, cluster: Cluster) -> None:
    """A task that fails after sending halves (a row names a queue the topic lacks): the job
    fails and none of its rows is ever visible; its halves are ended (rolled back by the task
    on its way out, or by a check-back: the job is marked aborted)."""
    asyncio.run(create_everywhere(cluster, "EoFail", queues=2))
    rows = [(b"f%03d" % i, i % 2) for i in range(300)] + [(b"bad", 7)]
    df = spark.createDataFrame(rows, "body binary, queueId int").coalesce(1)
    ended_before = ended(cluster)
    with pytest.raises(Exception, match="queueId 7 is not a writable queue of topic EoFail"):
        eo_write(df, cluster, topic="EoFail")
    wait_until("some halves ended", lambda: ended(cluster) > ended_before)
    settled(cluster)
    assert read_back(cluster, "EoFail", 1, limit=3) == []


def settled(cluster: Cluster, quiet: float = 3.0) -> None:
    """Wait until no half is pending anywhere: each check round (every second here) copies
    every pending half older than 1.5 s, so the half queues stop growing only when none is."""
    last, since = halves_stored(cluster), time.monotonic()
    deadline = since + 120
    while time.monotonic() - since < quiet:
        assert time.monotonic() < deadline, "halves still pending after 120 s"
        time.sleep(0.5)
        now = halves_stored(cluster)
        if now != last:
            last, since = now, time.monotonic()


def test_check_backs_answer_from_the_commit_log(cluster: Cluster, tmp_path: Path) -> None:
    """Halves nobody ends (as a killed task's, or a driver's that died) are settled by the
    brokers' check-backs, which the answerer answers from the stream's commit log: ROLLBACK
    for a task attempt its batch's record does not list (A), COMMIT for one it lists once
    the record's ENDs were sent if its END failed (B), UNKNOWN -- left pending -- for a
    batch with no record yet (D) until it gets one. A record whose committer died before
    its ENDs (C) is finished by the answerer itself; one it cannot read is passed over."""
    from aiorocketmq.spark.options import write_options
    from aiorocketmq.spark.sink_answerer import Settings, ensure
    from aiorocketmq.spark.sink_exactly_once import write
    from aiorocketmq.spark.sink_rows import Columns
    from aiorocketmq.spark.sink_txlog import Record, process_token, stream_place

    asyncio.run(create_everywhere(cluster, "EoChecks"))
    checkpoint = str(tmp_path / "cp")
    options = {"nameServer": cluster.namesrv_addr, "topic": "EoChecks", "exactlyOnce": "true",
               "checkpointLocation": checkpoint}  # fmt: skip
    opts = write_options(options, streaming=True)
    place = stream_place(opts.producer_group, checkpoint)
    junk = Path(place.log_dir) / "junk" / f"{0:020d}.json"  # an unreadable record: skipped
    junk.parent.mkdir(parents=True)
    junk.write_text("not a record")
    ensure(Settings(place, opts.name_server, opts.access, opts.send_timeout_ms, os.getpid()))
    try:

        def task(batch: int, prefix: str) -> Any:
            rows = pa.RecordBatch.from_pydict({"body": [f"{prefix}{i:02}" for i in range(30)]})
            return write(opts, Columns(body="body"), place, batch, iter([rows]))[1]

        task(3, "a")  # A: a task killed mid-write (or any attempt the record leaves out)
        b, c, d = task(3, "b"), task(4, "c"), task(5, "d")
        txlog = TxLog(place.log_dir, place.query)
        assert txlog.record(3, Record((b.writer,), tuple(b.halves), process_token())) is None
        txlog.finished(3, [h[5] for h in b.halves])  # B's ENDs "failed" (never sent, in fact)
        dead = f"{socket.gethostname()} {2**22 + 1} 0"  # no such pid (pid_max is at most 2**22)
        assert txlog.record(4, Record((c.writer,), tuple(c.halves), dead)) is None
        want = {f"{p}{i:02}".encode() for p in "bc" for i in range(30)}
        assert {m.body for m in read_back(cluster, "EoChecks", 60, limit=120)} == want
        # D: checked again and again (each check round re-appends every half it asks about),
        # answered UNKNOWN: not visible (COMMIT), yet visible once its batch is recorded
        # below (a ROLLBACK is for good); A: ROLLBACK, never visible
        stored = halves_stored(cluster)
        more = 3 * len(d.halves)  # D's halves, each copied by three more rounds
        wait_until("D checked thrice more", lambda: halves_stored(cluster) >= stored + more)
        assert {m.body for m in read_back(cluster, "EoChecks", 61, limit=2)} == want
        assert txlog.record(5, Record((d.writer,), tuple(d.halves), process_token())) is None
        txlog.finished(5, [h[5] for h in d.halves])
        want |= {f"d{i:02}".encode() for i in range(30)}
        got = read_back(cluster, "EoChecks", 90, limit=120)
        assert sorted(m.body for m in got) == sorted(want)  # each once
    finally:
        pid = int((Path(place.log_dir) / "answerer.lock").read_text())
        os.kill(pid, signal.SIGTERM)


def test_a_stream_needs_a_local_checkpoint_and_its_group_is_the_checkpoints() -> None:
    """exactlyOnce on a stream keeps its log in the checkpoint: the option is required, on a
    file system plain Python reaches; the halves' group is the same for every spelling of
    the checkpoint's path (a restarted driver finds its group again)."""
    from pyspark.sql.types import BinaryType, StructField, StructType

    from aiorocketmq.spark.sink import make_writer
    from aiorocketmq.spark.sink_txlog import stream_place

    schema = StructType([StructField("body", BinaryType())])
    options = {"nameServer": "127.0.0.1:9876", "topic": "T", "exactlyOnce": "true"}
    with pytest.raises(ValueError, match="needs the checkpointLocation option on writeStream"):
        make_writer(options, schema, False, streaming=True)
    hdfs = options | {"checkpointLocation": "hdfs://nn:8020/cp"}
    with pytest.raises(ValueError, match="on a local or mounted file system"):
        make_writer(hdfs, schema, False, streaming=True)
    places = {stream_place("pg", p) for p in ("/data/cp", "file:/data/cp", "file:///data/cp")}
    assert len(places) == 1
    (place,) = places
    assert place.group.startswith("pg_eo_") and place.log_dir == "/data/cp/rocketmq-sink"
    assert stream_place("pg", "/data/other").group != place.group
