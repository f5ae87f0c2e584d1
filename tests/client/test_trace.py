"""Message trace against real processes (issue 33 item 3; client/trace): a traced producer's
send and a traced consumer's consumption are found by ``mqadmin queryMsgTraceById`` run as a
process; the stored records are 4.9.8's text (TraceDataEncoder); trace is off by default;
``traceOn=false`` set at run time stops Pub records; a trace failure never fails a send.

broker-a has ``traceTopicEnable=true`` (RMQ_SYS_TRACE_TOPIC is created there at start, and
only there); broker-b has Apache's default (false)."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from aiorocketmq import (
    ConsumeFromWhere,
    ConsumeStatus,
    LocalTransactionState,
    Message,
    MessageExt,
    Producer,
    PullConsumer,
    PushConsumer,
    TransactionProducer,
)
from aiorocketmq.client import api
from aiorocketmq.client.admin import api_group
from aiorocketmq.client.trace.encoder import CONTENT_SPLITOR, FIELD_SPLITOR, TRACE_TOPIC
from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.config import ClientConfig
from aiorocketmq.remoting.protocol.codes import RequestCode, ResponseCode, SerializeType
from aiorocketmq.remoting.protocol.command import RemotingCommand
from aiorocketmq.remoting.protocol.message import decode_records
from aiorocketmq.remoting.protocol.topic import Perm
from tests.client.conftest import create_everywhere
from tests.cluster import Cluster
from tests.util import wait_until

ROOT = Path(__file__).resolve().parent.parent.parent
FAST: dict[str, Any] = {
    "rebalance_interval": 1000,
    "persist_consumer_offset_interval": 500,
    "poll_name_server_interval": 1000,
    "heartbeat_broker_interval": 1000,
    "consume_from_where": ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    c = Cluster(tmp_path_factory.mktemp("trace"))
    c.start_namesrv()
    try:
        c.add_broker("broker-a", traceTopicEnable="true")
        c.add_broker("broker-b")
        yield c
    finally:
        codes = c.stop()
        print(c.dump())
    assert all(code == 0 for code in codes.values()), codes


def unique(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:8]}"


async def mqadmin(cluster: Cluster, *argv: str, env: dict[str, str] | None = None) -> Any:
    """``mqadmin queryMsgTraceById ... --json`` as a process: (exit code, JSON or stderr)."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "aiorocketmq.client.admin", "queryMsgTraceById",
        "-n", cluster.namesrv_addr, *argv, cwd=ROOT, env={**os.environ, **(env or {})},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await proc.communicate()
    return proc.returncode, out.decode(), err.decode()


async def traces(
    cluster: Cluster, msg_id: str, *types: str, topic: str = "", env: dict[str, str] | None = None
) -> list[dict[str, Any]]:
    """Run ``mqadmin queryMsgTraceById -i msg_id --json`` until its records include each of
    ``types`` (30 s at most); the records."""
    extra = ["-t", topic] if topic else []
    last: Any = None
    async with asyncio.timeout(30):
        while True:
            code, out, err = await mqadmin(cluster, "-i", msg_id, *extra, "--json", env=env)
            last = (code, out, err)
            if code == 0:
                views = json.loads(out)
                if set(types) <= {v["msgType"] for v in views}:
                    return list(views)
            else:
                assert "no message" in err, last
            await asyncio.sleep(0.2)


def traced_consumer(
    cluster: Cluster, group: str, topic: str, got: list[MessageExt]
) -> PushConsumer:
    async def listener(msgs: list[MessageExt], ctx: object) -> ConsumeStatus:
        got.extend(msgs)
        return ConsumeStatus.CONSUME_SUCCESS

    c = PushConsumer(group, namesrv_addr=cluster.namesrv_addr, trace=True, **FAST)
    c.subscribe(topic)
    c.register_message_listener(listener)
    return c


async def raw_records(cluster: Cluster, msg_id: str, topic: str = TRACE_TOPIC) -> list[list[str]]:
    """The stored trace records about ``msg_id``, each split into its fields (QUERY_MESSAGE
    to broker-a, the trace topic's broker)."""
    addr = cluster.brokers["broker-a"].addr
    async with RemotingClient(ClientConfig(serialize_type=SerializeType.JSON)) as cli:
        req = api_group.query_message(topic, msg_id, 64, 0, api_group.LONG_MAX, unique=False)
        resp = await cli.invoke(addr, req)
    if resp.code == ResponseCode.QUERY_NOT_FOUND:
        return []
    assert resp.code == 0, resp.remark
    records = []
    for m in decode_records(resp.body, inflate=True):
        assert msg_id in m.keys  # the trace message is keyed by the traced id
        for record in m.body.decode().split(FIELD_SPLITOR):
            fields = record.split(CONTENT_SPLITOR)
            if msg_id in fields:
                records.append(fields)
    return records


async def test_a_traced_send_and_its_consumption_are_found_by_mqadmin(cluster: Cluster) -> None:
    """features.md 5.1: a Pub record per send (TRACE_ON and MSG_REGION from the answer),
    SubBefore / SubAfter around the listener call, in TraceDataEncoder's format; mqadmin
    queryMsgTraceById prints Apache's columns."""
    topic, group = unique("TraceT"), unique("trace_cg")
    await create_everywhere(cluster, topic)
    got: list[MessageExt] = []
    async with Producer(unique("trace_pg"), namesrv_addr=cluster.namesrv_addr, trace=True) as p:
        pgroup = p.group
        sent = await p.send(Message(topic, b"hello trace", tags="TagA", keys=["k1", "k2"]))
        async with traced_consumer(cluster, group, topic, got):
            await wait_until(lambda: len(got) == 1, timeout=30)
            views = await traces(cluster, sent.msg_id, "Pub", "SubAfter")
    addr = cluster.brokers[sent.queue.broker_name].addr
    pub = next(v for v in views if v["msgType"] == "Pub")
    assert (pub["groupName"], pub["topic"], pub["tags"], pub["keys"], pub["status"]) == (
        pgroup, topic, "TagA", "k1 k2", "success")  # fmt: skip
    assert (pub["offSetMsgId"], pub["storeHost"], pub["clientHost"]) == (
        sent.offset_msg_id, addr, "127.0.0.1")  # fmt: skip
    sub = next(v for v in views if v["msgType"] == "SubAfter")
    assert (sub["groupName"], sub["status"], sub["keys"]) == (group, "success", "k1 k2")

    # the stored text, field by field (TraceDataEncoder.encoderFromContextBean)
    records = {r[0]: r for r in await raw_records(cluster, sent.msg_id)}
    assert set(records) == {"Pub", "SubBefore", "SubAfter"}
    p_, b_, a_ = records["Pub"], records["SubBefore"], records["SubAfter"]
    assert p_[:1] + p_[2:10] + p_[11:] == [
        "Pub", "DefaultRegion", pgroup, topic, sent.msg_id, "TagA", "k1 k2", addr, "11",
        "0", sent.offset_msg_id, "true"]  # fmt: skip
    assert p_[1].isdigit() and p_[10].isdigit()
    # SubBefore: the region is the message's MSG_REGION property, which no broker stores
    # without a send hook (Java writes "null" too)
    assert b_[:1] + b_[2:4] + b_[5:] == ["SubBefore", "null", group, sent.msg_id, "0", "k1 k2"]
    assert a_[:2] == ["SubAfter", b_[4]]  # the SubBefore's request id
    assert a_[2:3] + a_[4:7] + a_[8:] == [sent.msg_id, "true", "k1 k2", "0", group]
    assert a_[3].isdigit() and a_[7].isdigit()

    # the table: Apache's columns, a Pub table and one per consumer group
    code, out, err = await mqadmin(cluster, "-i", sent.msg_id)
    assert code == 0, err
    for header in ("#ProducerGroup", "#ConsumerGroup", "#SendTime", "#ConsumerTime",
                   "#CostTimes", "#Status", pgroup, group, "success"):  # fmt: skip
        assert header in out, out


async def test_trace_is_off_by_default_and_the_topic_only_where_enabled(cluster: Cluster) -> None:
    """A producer and consumer without ``trace=True`` write nothing (4.9.8's default); the
    broker creates RMQ_SYS_TRACE_TOPIC (1 queue, perm 6) only with traceTopicEnable, routes
    it, and refuses to create it by hand (a system topic)."""
    topic = unique("TraceOff")
    await create_everywhere(cluster, topic)
    got: list[MessageExt] = []

    async def listener(msgs: list[MessageExt], ctx: object) -> ConsumeStatus:
        got.extend(msgs)
        return ConsumeStatus.CONSUME_SUCCESS

    async with Producer(unique("plain_pg"), namesrv_addr=cluster.namesrv_addr) as plain:
        assert plain.trace_dispatcher is None
        quiet = await plain.send(Message(topic, b"untraced", keys="quiet"))
        c = PushConsumer(unique("plain_cg"), namesrv_addr=cluster.namesrv_addr, **FAST)
        c.subscribe(topic)
        c.register_message_listener(listener)
        async with c:
            await wait_until(lambda: len(got) == 1, timeout=30)
    # a traced send after them: once its record is there, any of theirs would be too
    async with Producer(unique("marker_pg"), namesrv_addr=cluster.namesrv_addr, trace=True) as p:
        marker = await p.send(Message(topic, b"traced"))
    await traces(cluster, marker.msg_id, "Pub")
    code, _, err = await mqadmin(cluster, "-i", quiet.msg_id)
    assert code == 1 and "no message" in err, err

    async with RemotingClient(ClientConfig(serialize_type=SerializeType.JSON)) as cli:
        tables = {}
        for name, broker in cluster.brokers.items():
            resp = await cli.invoke(broker.addr, api.request(RequestCode.GET_ALL_TOPIC_CONFIG))
            tables[name] = json.loads(resp.body)["topicConfigTable"]
        route = api.parse_route(await cli.invoke(cluster.namesrv_addr, api.get_route(TRACE_TOPIC)))
        refused = await cli.invoke(cluster.brokers["broker-a"].addr,
                                   api.create_topic(TRACE_TOPIC, 4))  # fmt: skip
    trace = tables["broker-a"][TRACE_TOPIC]
    assert (trace["readQueueNums"], trace["writeQueueNums"], trace["perm"]) == (
        1,
        1,
        Perm.READ | Perm.WRITE,
    )
    assert TRACE_TOPIC not in tables["broker-b"]
    assert [q.broker_name for q in route.queue_datas] == ["broker-a"]
    assert refused.code == 1 and "conflict with system topic" in (refused.remark or "")


async def update_broker_config(cluster: Cluster, text: str) -> None:
    async with RemotingClient(ClientConfig(serialize_type=SerializeType.JSON)) as cli:
        for broker in cluster.brokers.values():
            req = RemotingCommand.request(RequestCode.UPDATE_BROKER_CONFIG, {}, text.encode())
            resp = await cli.invoke(broker.addr, req)
            assert resp.code == 0, resp.remark


async def test_trace_on_turned_off_at_run_time_stops_pub_records(cluster: Cluster) -> None:
    """r#3258 / fidelity D3: ``updateBrokerConfig traceOn=false`` makes every send's answer
    say TRACE_ON=false, and a traced producer writes no Pub record for it
    (SendMessageTraceHookImpl); consumers' records are not gated; true again, they are back."""
    topic = unique("TraceOn")
    await create_everywhere(cluster, topic)
    got: list[MessageExt] = []
    async with Producer(unique("on_pg"), namesrv_addr=cluster.namesrv_addr, trace=True) as p:
        await update_broker_config(cluster, "traceOn=false\n")
        try:
            off = await p.send(Message(topic, b"while off"))
        finally:
            await update_broker_config(cluster, "traceOn=true\n")
        on = await p.send(Message(topic, b"on again"))
        async with traced_consumer(cluster, unique("on_cg"), topic, got):
            await wait_until(lambda: len(got) == 2, timeout=30)
            await traces(cluster, on.msg_id, "Pub", "SubAfter")
            views = await traces(cluster, off.msg_id, "SubAfter")
    # the Pub of ``on`` was queued after any of ``off``'s, and is stored
    assert sorted(v["msgType"] for v in views) == ["SubAfter", "SubBefore"]


async def test_a_lite_consumer_and_a_transaction_are_traced(cluster: Cluster) -> None:
    """DefaultLitePullConsumer with enableMsgTrace: each pull that found messages is a
    SubBefore / SubAfter; a transactional producer's half is a Pub of msgType 1 and its end an
    EndTransaction record (EndTransactionTraceHookImpl), COMMIT_MESSAGE, not from a check."""
    topic = unique("TraceTx")
    await create_everywhere(cluster, topic)

    class Commit:
        async def execute_local_transaction(
            self, msg: Message, arg: object
        ) -> LocalTransactionState:
            return LocalTransactionState.COMMIT_MESSAGE

        async def check_local_transaction(self, msg: MessageExt) -> LocalTransactionState:
            return LocalTransactionState.COMMIT_MESSAGE

    group = unique("tx_pg")
    async with TransactionProducer(group, Commit(), namesrv_addr=cluster.namesrv_addr,
                                   trace=True) as tx:  # fmt: skip
        sent = await tx.send_message_in_transaction(Message(topic, b"tx", tags="T", keys="o1"))
    lite_group = unique("lite_cg")
    async with PullConsumer(lite_group, namesrv_addr=cluster.namesrv_addr, trace=True,
                            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
                            rebalance_interval=1000) as lite:  # fmt: skip
        lite.subscribe(topic)
        polled: list[MessageExt] = []
        async with asyncio.timeout(30):
            while not polled:
                polled += await lite.poll(1.0)
        views = await traces(cluster, sent.msg_id, "Pub", "EndTransaction", "SubAfter")
    by_type = {r[0]: r for r in await raw_records(cluster, sent.msg_id)}
    assert by_type["Pub"][11] == "1"  # Trans_Msg_Half
    end = by_type["EndTransaction"]
    assert end[2:9] == ["DefaultRegion", group, topic, sent.msg_id, "T", "o1",
                        cluster.brokers[sent.queue.broker_name].addr]  # fmt: skip
    assert end[9:] == ["2", sent.transaction_id, "COMMIT_MESSAGE", "false"]
    sub = next(v for v in views if v["msgType"] == "SubAfter")
    assert (sub["groupName"], sub["status"]) == (lite_group, "success")


async def test_a_trace_failure_never_fails_a_send(cluster: Cluster) -> None:
    """A trace topic the broker will not take (read-only here) costs the traced producer
    nothing: its sends succeed, the failed trace batches are counted."""
    topic, trace_topic = unique("TraceFail"), unique("ReadOnlyTrace")
    await create_everywhere(cluster, topic)
    async with RemotingClient(ClientConfig(serialize_type=SerializeType.JSON)) as cli:
        for broker in cluster.brokers.values():
            resp = await cli.invoke(broker.addr, api.create_topic(trace_topic, 1, Perm.READ))
            assert resp.code == 0, resp.remark
    async with Producer(unique("fail_pg"), namesrv_addr=cluster.namesrv_addr, trace=True,
                        trace_topic=trace_topic) as p:  # fmt: skip
        for i in range(3):
            assert (await p.send(Message(topic, b"x%d" % i))).status is api.SendStatus.SEND_OK
        dispatcher = p.trace_dispatcher
        assert dispatcher is not None
        await wait_until(lambda: dispatcher.failed == 3, timeout=30)
        assert dispatcher.sent == 0


async def test_a_customized_trace_topic(cluster: Cluster) -> None:
    """customizedTraceTopic: records go to the producer's and consumer's own topic, and
    ``queryMsgTraceById -t`` reads them there."""
    topic, trace_topic = unique("TraceCustom"), unique("MyTrace")
    await create_everywhere(cluster, topic)
    async with RemotingClient(ClientConfig(serialize_type=SerializeType.JSON)) as cli:
        resp = await cli.invoke(cluster.brokers["broker-a"].addr, api.create_topic(trace_topic, 1))
        assert resp.code == 0, resp.remark
    async with Producer(unique("custom_pg"), namesrv_addr=cluster.namesrv_addr, trace=True,
                        trace_topic=trace_topic) as p:  # fmt: skip
        sent = await p.send(Message(topic, b"custom"))
    await traces(cluster, sent.msg_id, "Pub", topic=trace_topic)
    assert await raw_records(cluster, sent.msg_id) == []  # nothing in RMQ_SYS_TRACE_TOPIC


async def test_records_are_opentelemetry_spans_too(cluster: Cluster) -> None:
    """Ours (the otel extra): with opentelemetry-api installed, a traced client's records are
    also spans of the tracer provider the program set, To_<topic> and From_<topic>."""
    sdk_trace = pytest.importorskip("opentelemetry.sdk.trace")
    in_memory = pytest.importorskip("opentelemetry.sdk.trace.export.in_memory_span_exporter")
    from opentelemetry import trace as otel
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    provider = otel.get_tracer_provider()
    if not isinstance(provider, sdk_trace.TracerProvider):
        provider = sdk_trace.TracerProvider()
        otel.set_tracer_provider(provider)  # once a process: later tests add a processor
    exporter = in_memory.InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    topic = unique("TraceSpans")
    await create_everywhere(cluster, topic)
    got: list[MessageExt] = []
    async with Producer(unique("span_pg"), namesrv_addr=cluster.namesrv_addr, trace=True) as p:
        sent = await p.send(Message(topic, b"span"))
        async with traced_consumer(cluster, unique("span_cg"), topic, got):
            await wait_until(lambda: len(got) == 1, timeout=30)

            def names() -> set[str]:
                return {
                    s.name
                    for s in exporter.get_finished_spans()
                    if (s.attributes or {}).get("messaging.message.id") == sent.msg_id
                }

            await wait_until(lambda: names() == {f"To_{topic}", f"From_{topic}"}, timeout=30)


async def test_mqadmin_send_message_with_trace(cluster: Cluster) -> None:
    """SendMessageCommand's ``-m true`` (msgTraceEnable): the tool's producer is traced; its
    Pub record is written before the command exits."""
    topic = unique("TraceTool")
    await create_everywhere(cluster, topic)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "aiorocketmq.client.admin", "sendMessage", "-n",
        cluster.namesrv_addr, "-t", topic, "-p", "from the tool", "-m", "true", "--json",
        cwd=ROOT, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await proc.communicate()
    assert proc.returncode == 0, err
    msg_id = json.loads(out)["msgId"]
    views = await traces(cluster, msg_id, "Pub")
    assert views[0]["topic"] == topic
