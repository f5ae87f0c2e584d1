"""A broker against hostile or careless clients (issue 12): what one client sends never takes
the broker down, bloats it, or breaks things for others. Real broker processes; raw frames
where a client library would refuse to send what is tested."""

from __future__ import annotations

import asyncio
import json
import struct

import pytest

from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.protocol.codes import RequestCode, ResponseCode
from aiorocketmq.remoting.protocol.command import RemotingCommand
from aiorocketmq.remoting.protocol.frame import FrameDecoder, encode
from aiorocketmq.remoting.protocol.msgid import parse_offset_msg_id
from tests.broker.wire import create_topic, max_offset, send_v2
from tests.cluster import BrokerProc, Cluster
from tests.remoting.wire import RawPeer
from tests.util import rss_mib, wait_until

MiB = 1024 * 1024


def json_frame(code: int, ext: dict[str, str], body: bytes = b"", opaque: int = 1) -> bytes:
    """A JSON-header request as any peer may write it (``\\u`` escapes for non-ASCII)."""
    header = json.dumps(
        {"code": code, "language": "JAVA", "version": 409, "opaque": opaque, "flag": 0,
         "extFields": ext}, ensure_ascii=True
    ).encode()  # fmt: skip
    return struct.pack(">II", 4 + len(header) + len(body), len(header)) + header + body


async def ask(port: int, frame: bytes, timeout: float = 5.0) -> RemotingCommand:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(frame)
        decoder = FrameDecoder()
        async with asyncio.timeout(timeout):
            while True:
                data = await reader.read(65536)
                assert data, "the broker closed the connection"
                for cmd in decoder.feed(data):
                    if cmd.is_response:  # not a notice the broker sends us meanwhile
                        return cmd
    finally:
        writer.close()


def heartbeat_body(prefix: str, groups: int) -> bytes:
    """A heartbeat of ``groups`` new consumer groups: each makes the broker write its retry
    topic to disk before it answers."""
    consumers = [
        {"groupName": f"{prefix}{i}", "consumeType": "CONSUME_PASSIVELY",
         "messageModel": "CLUSTERING", "consumeFromWhere": "CONSUME_FROM_LAST_OFFSET",
         "subscriptionDataSet": [], "unitMode": False}
        for i in range(groups)
    ]  # fmt: skip
    data = {"clientID": f"{prefix}@1", "producerDataSet": [], "consumerDataSet": consumers}
    return json.dumps(data).encode()


def error_lines(broker: BrokerProc) -> list[str]:
    assert broker.proc is not None
    return [str(e["event"]) for e in broker.proc.events if e.get("level") == "error"]


@pytest.fixture
async def broker(cluster: Cluster, client: RemotingClient) -> BrokerProc:
    b = cluster.add_broker("broker-a", flushConsumerOffsetInterval="200")
    assert (await client.invoke(b.addr, create_topic("Known", 4))).code == 0
    return b


async def test_names_with_a_trailing_newline_are_refused(
    broker: BrokerProc, client: RemotingClient
) -> None:
    """TopicValidator's rule applies to the whole name: "Nl\\n" is refused (re.match with
    "$" accepted it, created it on disk and registered it)."""
    for request in (create_topic("Nl\n", 2), send_v2("Nl\n", b"x")):
        resp = await client.invoke(broker.addr, request)
        assert resp.code == ResponseCode.SYSTEM_ERROR
        assert "illegal characters" in (resp.remark or "")


@pytest.mark.parametrize("key", ["f", "h", "j"])  # sysFlag, flag, reconsumeTimes
async def test_int32_fields_out_of_range_get_a_clean_error(broker: BrokerProc, key: str) -> None:
    """Java Integer header fields outside int32: a clean SYSTEM_ERROR naming the field,
    nothing stored, no error-level line (there was a traceback, a `struct` remark)."""
    ext = dict(send_v2("Known", b"x").ext_fields, **{key: str(2**31)})
    resp = await ask(broker.port, json_frame(RequestCode.SEND_MESSAGE_V2, ext, b"x"))
    assert resp.code == ResponseCode.SYSTEM_ERROR
    assert resp.remark == f"the custom field <{key}> is invalid: '{2**31}'"
    assert error_lines(broker) == []


@pytest.mark.parametrize("queues", ["0", "-1"])
async def test_auto_create_without_queues_is_refused(
    broker: BrokerProc, client: RemotingClient, queues: str
) -> None:
    """defaultTopicQueueNums <= 0 cannot make a topic a message can go to: TOPIC_NOT_EXIST,
    nothing created, nothing stored (a 0-queue topic took the message before)."""
    req = send_v2("NoQueues", b"x")
    req.ext_fields["d"] = queues
    resp = await client.invoke(broker.addr, req)
    assert resp.code == ResponseCode.TOPIC_NOT_EXIST, resp.remark
    assert "defaultTopicQueueNums" in (resp.remark or "")
    assert await max_offset(client, broker.addr, "NoQueues", 0) == 0


async def test_query_message_is_capped_and_fits_a_frame(
    cluster: Cluster, client: RemotingClient
) -> None:
    """QUERY_MESSAGE: maxNum is capped at maxMsgsNumBatch (64), and a key whose matches
    outgrow a frame (6 x 3.9 MiB here) is answered with the newest that fit, never with a
    frame no client can read (it could not be queried at all)."""
    broker = cluster.add_broker("broker-a")
    for _ in range(70):
        resp = await client.invoke(broker.addr, send_v2("Q", b"s", props={"KEYS": "many"}))
        assert resp.code == 0
    for _ in range(6):
        big = send_v2("Q", b"b" * (4 * MiB - 100 * 1024), props={"KEYS": "big"})
        assert (await client.invoke(broker.addr, big, 10)).code == 0

    async def query(key: str, max_num: int) -> RemotingCommand:
        ext = {"topic": "Q", "key": key, "maxNum": str(max_num), "beginTimestamp": "0",
               "endTimestamp": str(2**62)}  # fmt: skip
        return await client.invoke(
            broker.addr, RemotingCommand.request(RequestCode.QUERY_MESSAGE, ext), 10
        )

    many = await query("many", 1000)
    assert many.code == 0 and _records(many.body) == 64
    big = await query("big", 10)
    assert big.code == 0 and 1 <= _records(big.body) < 6
    assert len(big.body) < 16 * MiB


def _records(body: bytes) -> int:
    count, pos = 0, 0
    while pos < len(body):
        pos += struct.unpack_from(">i", body, pos)[0]
        count += 1
    return count


@pytest.mark.slow
async def test_a_client_that_never_reads_big_views_leaves_the_broker_bounded(
    cluster: Cluster, client: RemotingClient
) -> None:
    """Item 5 as seen: 600 VIEW_MESSAGE_BY_ID requests for a 4 MiB message (one small write)
    from a client that never reads took the broker from 42 MB to 2.5 GB and slowed everyone.
    Now requests wait while its output is unread: RSS grows by less than 100 MiB, and another
    client is answered within a second throughout."""
    broker = cluster.add_broker("broker-a", serverWriteStallTimeoutMillis="5000")
    sent = await client.invoke(broker.addr, send_v2("Big", b"v" * (4 * MiB - 1024)), 10)
    assert sent.code == 0
    _host, offset = parse_offset_msg_id(sent.ext_fields["msgId"])
    assert broker.proc is not None
    pid = broker.proc.proc.pid
    base = rss_mib(pid)
    view = RemotingCommand.request(RequestCode.VIEW_MESSAGE_BY_ID, {"offset": str(offset)})
    frames = []
    for i in range(600):
        view.opaque = i
        head, body = encode(view)
        frames.append(head + body)
    hog = await RawPeer.connect(broker.port)
    hog.send_raw(b"".join(frames))
    peak = base
    for _ in range(10):
        await asyncio.sleep(0.2)
        peak = max(peak, rss_mib(pid))
        async with asyncio.timeout(1):
            assert await max_offset(client, broker.addr, "Big", sent_queue(sent)) == 1
    assert peak - base < 100, f"RSS grew {peak - base:.0f} MiB"
    broker.proc.wait_for("peer_not_reading", timeout=20)
    await hog.close()


def sent_queue(resp: RemotingCommand) -> int:
    return int(resp.ext_fields["queueId"])


async def test_a_heartbeat_whose_connection_closes_leaves_no_client(
    broker: BrokerProc, client: RemotingClient
) -> None:
    """A heartbeat whose connection closes while the broker writes its groups' retry topics
    to disk leaves no client behind (a dead one stayed registered for 120 s)."""
    groups = [f"gone{i}" for i in range(20)]  # 20 retry topics: 20 file writes to outlast
    _reader, writer = await asyncio.open_connection("127.0.0.1", broker.port)
    writer.write(json_frame(RequestCode.HEART_BEAT, {}, heartbeat_body("gone", 20)))
    await writer.drain()
    writer.transport.abort()  # gone before the answer
    proc = broker.proc
    assert proc is not None
    await wait_until(lambda: any(e.get("topic") == "%RETRY%gone19" for e in proc.events))

    async def members(group: str) -> int:
        ext = {"consumerGroup": group}
        req = RemotingCommand.request(RequestCode.GET_CONSUMER_LIST_BY_GROUP, ext)
        resp = await client.invoke(broker.addr, req)
        return len(json.loads(resp.body)["consumerIdList"]) if resp.code == 0 else 0

    assert [await members(g) for g in groups] == [0] * 20


@pytest.mark.slow
async def test_offsets_committed_while_the_broker_stops_are_kept(
    cluster: Cluster, client: RemotingClient
) -> None:
    """Shutdown drains requests first and saves offsets after: every commit acknowledged
    before the connection went is there after a restart (offsets saved before the drain
    lost the commits answered during it)."""
    broker = cluster.add_broker("broker-a")
    assert (await client.invoke(broker.addr, create_topic("Commits", 8))).code == 0
    acked = [-1] * 8
    clients = [RemotingClient() for _ in range(8)]

    async def committer(q: int) -> None:
        offset = 0
        while True:
            offset += 1
            ext = {"consumerGroup": "cg", "topic": "Commits", "queueId": str(q),
                   "commitOffset": str(offset)}  # fmt: skip
            req = RemotingCommand.request(RequestCode.UPDATE_CONSUMER_OFFSET, ext)
            try:
                resp = await clients[q].invoke(broker.addr, req, 2)
            except Exception:  # noqa: BLE001 -- the broker went away: the end of the run
                return
            if resp.code != 0:
                return
            acked[q] = offset

    runs = [asyncio.ensure_future(committer(q)) for q in range(8)]
    await wait_until(lambda: min(acked) > 50, timeout=10)
    # a request still running when the stop begins (50 retry topics written to disk), so
    # the drain takes a while and commits keep being answered during it
    _reader, writer = await asyncio.open_connection("127.0.0.1", broker.port)
    try:
        writer.write(json_frame(RequestCode.HEART_BEAT, {}, heartbeat_body("late", 50)))
        await writer.drain()
        await asyncio.sleep(0.01)
        # stopped from a thread: the committers keep committing while the broker stops
        assert await asyncio.to_thread(cluster.stop_broker, "broker-a") == 0
    finally:
        writer.close()
    await asyncio.gather(*runs)
    for c in clients:
        await c.close()
    cluster.start_broker("broker-a")
    client.close_channel(broker.addr)
    for q in range(8):
        ext = {"consumerGroup": "cg", "topic": "Commits", "queueId": str(q)}
        req = RemotingCommand.request(RequestCode.QUERY_CONSUMER_OFFSET, ext)
        stored = int((await client.invoke(broker.addr, req)).ext_fields["offset"])
        assert stored >= acked[q], (q, stored, acked[q])
