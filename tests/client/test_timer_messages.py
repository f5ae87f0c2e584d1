"""Timer messages in the SDK (issue 36): ``Message(deliver_at=, delay=)`` on every send path,
``Producer.recall`` -- against a real name server and broker (the wheel: broker/store/timer*),
and the checks made before any network call."""

from __future__ import annotations

import base64
import time
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from aiorocketmq import (
    ConsumeFromWhere,
    LocalTransactionState,
    Message,
    MessageExt,
    MQBrokerError,
    MQClientError,
    Producer,
    PullConsumer,
    RecallHandle,
    SendResult,
    SendStatus,
    TransactionProducer,
)
from aiorocketmq.client import sync
from aiorocketmq.remoting.protocol.message import Prop
from tests.client.conftest import create_everywhere
from tests.cluster import Cluster, running

AHEAD = timedelta(seconds=2)  # far enough ahead that a send lands before it falls due


def _ms(when: datetime) -> int:
    return int(when.timestamp() * 1000)


# ------------------------------------------------------------------ no network


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"deliver_at": 1, "delay": timedelta(seconds=1)}, "deliver_at or delay, not both"),
        ({"deliver_at": datetime(2030, 1, 1)}, "must be an aware datetime"),
        ({"delay": timedelta(seconds=-1)}, "delay must not be negative"),
        ({"delay": 5}, "delay must be a datetime.timedelta"),
        ({"deliver_at": -5}, "epoch milliseconds"),
        ({"deliver_at": 1.5}, "epoch milliseconds"),
        ({"deliver_at": True}, "epoch milliseconds"),
        ({"deliver_at": 1, "delay_level": 3}, "delay_level or deliver_at/delay"),
    ],
)
def test_a_timer_that_cannot_be_sent_is_refused_at_once(
    kwargs: dict[str, object], words: str
) -> None:
    with pytest.raises(ValueError, match=words):
        Message("T", b"x", **kwargs)  # type: ignore[arg-type]


def test_timer_properties_are_5x_clients() -> None:
    """setDeliverTimeMs / setDelayTimeMs: the property, whichever way the message is encoded
    (with properties of its own, or without: the one-shot text)."""
    at = datetime(2031, 5, 6, 7, 8, 9, 123000, tzinfo=timezone(timedelta(hours=2)))
    want = "1935810489123"  # 2031-05-06T05:08:09.123Z
    plain = Message("T", b"x", deliver_at=at)
    assert plain.wire_properties()["TIMER_DELIVER_MS"] == want
    assert f"TIMER_DELIVER_MS\x01{want}\x02" in plain.wire_text("ID")
    with_props = Message("T", b"x", deliver_at=1_900_000_000_000, properties={"a": "b"})
    assert with_props.wire_properties()["TIMER_DELIVER_MS"] == "1900000000000"
    delayed = Message("T", b"x", delay=timedelta(minutes=1, microseconds=1500))
    assert delayed.wire_properties()["TIMER_DELAY_MS"] == "60001"
    assert "TIMER_DELAY_MS\x0160001\x02" in delayed.wire_text("ID")
    assert "TIMER" not in Message("T", b"x").wire_text("ID")


def test_recall_handle_is_5x_handle_v1() -> None:
    """RecallMessageHandle.HandleV1.buildHandle: "v1 topic broker timestamp id", URL-safe
    Base64 with padding; decodeHandle's refusal for anything else."""
    handle = RecallHandle("T", "broker-a", 1_900_000_000_001, "AC11000100002A9F0000000000000000")
    text = handle.encode()
    assert base64.urlsafe_b64decode(text) == b"v1 T broker-a 1900000000001 " + b"AC11" + (
        b"000100002A9F0000000000000000"
    )
    assert RecallHandle.parse(text) == handle and RecallHandle.parse(text.rstrip("=")) == handle
    for bad in ("", "%%%", base64.urlsafe_b64encode(b"v2 T b 1 id").decode()):
        with pytest.raises(ValueError, match="recall handle is invalid"):
            RecallHandle.parse(bad)


async def test_checks_before_any_network_call() -> None:
    """Nothing listens on 127.0.0.1:1: a call that reached the network would fail with a
    connection error, not these."""
    async with Producer("pg_timer_local", namesrv_addr="127.0.0.1:1") as p:
        with pytest.raises(MQClientError, match=r"timer messages .* only"):
            await p.send_batch([Message("T", b"a"), Message("T", b"b", delay=AHEAD)])
        no_handle = SendResult(SendStatus.SEND_OK, "ID1", "OFF", None, 0)  # type: ignore[arg-type]
        with pytest.raises(MQClientError, match="ID1 has no recall handle"):
            await p.recall("T", no_handle)
        with pytest.raises(MQClientError, match="recall handle is invalid"):
            await p.recall("T", "not-a-handle")
        other = RecallHandle("Other", "broker-a", 1, "ID2")
        with pytest.raises(MQClientError, match="topic not match"):
            await p.recall("T", other)
        with pytest.raises(MQClientError, match="topic is not supported"):
            await p.recall("%RETRY%g", other)


# ------------------------------------------------------------------ against a broker


@pytest.fixture
def one_broker(tmp_path: Path) -> Iterator[Cluster]:
    with running(tmp_path, ("broker-a",)) as cluster:
        yield cluster


@pytest.fixture
async def producer(one_broker: Cluster) -> AsyncIterator[Producer]:
    async with Producer("pg_timer", namesrv_addr=one_broker.namesrv_addr) as p:
        yield p


async def _receive(
    cluster: Cluster, topic: str, want: set[bytes], timeout: float = 60.0
) -> dict[bytes, tuple[MessageExt, int]]:
    """Poll ``topic`` until every body of ``want`` came: each with the local time (ms) it
    was received. Other bodies too, if any came."""
    got: dict[bytes, tuple[MessageExt, int]] = {}
    pull = PullConsumer(f"cg_{topic}", namesrv_addr=cluster.namesrv_addr,
                        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)  # fmt: skip
    pull.subscribe(topic, "*")
    deadline = time.monotonic() + timeout
    async with pull:
        while not want <= got.keys():
            assert time.monotonic() < deadline, f"only {sorted(got)} of {sorted(want)} came"
            for msg in await pull.poll(timeout=0.5):
                got.setdefault(msg.body, (msg, time.time_ns() // 1_000_000))
    return got


def _on_time(got: dict[bytes, tuple[MessageExt, int]], body: bytes, due_ms: int) -> MessageExt:
    """Not before it fell due (local clock: the broker runs on this machine)."""
    msg, received = got[body]
    assert received >= due_ms, f"{body!r} came {due_ms - received} ms early"
    assert Prop.REAL_TOPIC not in msg.properties  # delivered to its real topic, restored
    return msg


async def test_each_send_path_waits_until_due(one_broker: Cluster, producer: Producer) -> None:
    """send (deliver_at as a datetime, as epoch ms; delay), send_orderly, send_oneway: none
    is delivered before its time; a send's result carries its recall handle."""
    await create_everywhere(one_broker, "TimerPaths", queues=2)
    start = datetime.now(UTC)
    at = start + AHEAD
    sent = await producer.send(Message("TimerPaths", b"at", deliver_at=at))
    epoch = await producer.send(Message("TimerPaths", b"epoch", deliver_at=_ms(at)))
    delayed = await producer.send(Message("TimerPaths", b"delay", tags="A", delay=AHEAD))
    await producer.send_orderly(Message("TimerPaths", b"orderly", deliver_at=at), "k")
    await producer.send_oneway(Message("TimerPaths", b"oneway", deliver_at=at))
    for result in (sent, epoch, delayed):
        assert result.status is SendStatus.SEND_OK and result.recall_handle
        handle = RecallHandle.parse(result.recall_handle)
        assert (handle.topic, handle.broker_name, handle.msg_id) == (
            "TimerPaths", "broker-a", result.msg_id)  # fmt: skip
    bodies = {b"at", b"epoch", b"delay", b"orderly", b"oneway"}
    got = await _receive(one_broker, "TimerPaths", bodies)
    for body in bodies:
        _on_time(got, body, _ms(start + AHEAD))
    assert got[b"delay"][0].tags == "A"
    assert got[b"at"][0].properties[Prop.UNIQ_KEY] == sent.msg_id


async def test_a_batch_of_timers_waits_until_due(one_broker: Cluster, producer: Producer) -> None:
    """send_batch of timer messages only: each waits for its own time on our broker."""
    await create_everywhere(one_broker, "TimerBatch", queues=1)
    start = datetime.now(UTC)
    batch = [Message("TimerBatch", b"b1", deliver_at=start + AHEAD),
             Message("TimerBatch", b"b2", delay=AHEAD + timedelta(seconds=1))]  # fmt: skip
    sent = await producer.send_batch(batch)
    assert sent.status is SendStatus.SEND_OK and sent.recall_handle is None
    got = await _receive(one_broker, "TimerBatch", {b"b1", b"b2"})
    _on_time(got, b"b1", _ms(start + AHEAD))
    _on_time(got, b"b2", _ms(start + AHEAD + timedelta(seconds=1)))


async def test_a_past_time_is_delivered_at_once(one_broker: Cluster, producer: Producer) -> None:
    await create_everywhere(one_broker, "TimerPast", queues=1)
    sent = await producer.send(Message("TimerPast", b"past", deliver_at=1))
    assert sent.recall_handle is None  # stored as a normal message: nothing to recall
    await _receive(one_broker, "TimerPast", {b"past"})


async def test_too_far_ahead_is_the_brokers_refusal(
    one_broker: Cluster, producer: Producer
) -> None:
    """timerMaxDelaySec (3 days): MESSAGE_ILLEGAL (13) with 5.x's remark, not retried."""
    await create_everywhere(one_broker, "TimerFar", queues=1)
    with pytest.raises(MQBrokerError) as refused:
        await producer.send(Message("TimerFar", b"far", delay=timedelta(days=3, seconds=60)))
    assert refused.value.code == 13 and "timer message illegal" in refused.value.remark


async def test_recall_cancels_a_waiting_timer(one_broker: Cluster, producer: Producer) -> None:
    """Two timers of one slot: the recalled one never comes, the other does; recalling after
    delivery is refused: ILLEGAL_OPERATION (604) "recall failed, ..."."""
    await create_everywhere(one_broker, "TimerRecall", queues=1)
    at = datetime.now(UTC) + timedelta(seconds=3)
    kept = await producer.send(Message("TimerRecall", b"kept", deliver_at=at))
    gone = await producer.send(Message("TimerRecall", b"gone", deliver_at=at))
    assert await producer.recall("TimerRecall", gone) == gone.msg_id
    got = await _receive(one_broker, "TimerRecall", {b"kept"})
    assert b"gone" not in got  # the same slot as "kept": it would have come with it
    with pytest.raises(MQBrokerError) as late:
        await producer.recall("TimerRecall", kept)
    assert late.value.code == 604 and "recall failed" in late.value.remark


async def test_recall_by_message_id(one_broker: Cluster, producer: Producer) -> None:
    """A handle built from a deliver_at message's id, broker and time files the same slot."""
    await create_everywhere(one_broker, "TimerById", queues=1)
    at_ms = _ms(datetime.now(UTC) + timedelta(seconds=3))
    kept = await producer.send(Message("TimerById", b"kept", deliver_at=at_ms))
    gone = await producer.send(Message("TimerById", b"gone", deliver_at=at_ms))
    handle = RecallHandle("TimerById", gone.queue.broker_name, at_ms, gone.msg_id)
    assert await producer.recall("TimerById", handle) == gone.msg_id
    got = await _receive(one_broker, "TimerById", {b"kept"})
    assert b"gone" not in got and got[b"kept"][0].properties[Prop.UNIQ_KEY] == kept.msg_id


async def test_a_handle_with_the_slots_own_time_still_recalls(
    one_broker: Cluster, producer: Producer
) -> None:
    """A handle a broker answered before it added 5.x's + 1 (the slot's own time, a boundary)
    still cancels its message."""
    await create_everywhere(one_broker, "TimerOldHandle", queues=1)
    at_ms = _ms(datetime.now(UTC) + timedelta(seconds=3)) // 1000 * 1000 + 500
    kept = await producer.send(Message("TimerOldHandle", b"kept", deliver_at=at_ms))
    gone = await producer.send(Message("TimerOldHandle", b"gone", deliver_at=at_ms))
    slot = at_ms // 1000 * 1000  # its TIMER_OUT_MS (precision 1000)
    handle = RecallHandle("TimerOldHandle", gone.queue.broker_name, slot, gone.msg_id)
    assert await producer.recall("TimerOldHandle", handle) == gone.msg_id
    got = await _receive(one_broker, "TimerOldHandle", {b"kept"})
    assert b"gone" not in got and got[b"kept"][0].properties[Prop.UNIQ_KEY] == kept.msg_id


class _Commit:
    async def execute_local_transaction(self, msg: Message, arg: object) -> LocalTransactionState:
        return LocalTransactionState.COMMIT_MESSAGE

    async def check_local_transaction(self, msg: MessageExt) -> LocalTransactionState:
        return LocalTransactionState.COMMIT_MESSAGE


async def test_a_transactional_timer_starts_on_commit(one_broker: Cluster) -> None:
    await create_everywhere(one_broker, "TimerTx", queues=1)
    start = datetime.now(UTC)
    async with TransactionProducer("pg_timer_tx", _Commit(),
                                   namesrv_addr=one_broker.namesrv_addr) as tx:  # fmt: skip
        result = await tx.send_message_in_transaction(
            Message("TimerTx", b"tx", deliver_at=start + AHEAD)
        )
    assert result.local_transaction_state is LocalTransactionState.COMMIT_MESSAGE
    got = await _receive(one_broker, "TimerTx", {b"tx"})
    _on_time(got, b"tx", _ms(start + AHEAD))


def test_the_blocking_client_sends_and_recalls(one_broker: Cluster) -> None:
    """client.sync: the same Message, and recall."""
    topic = "TimerSync"
    with sync.Producer("pg_timer_sync", namesrv_addr=one_broker.namesrv_addr) as p:
        sync.run(create_everywhere(one_broker, topic, queues=1))
        at = datetime.now(UTC) + timedelta(seconds=3)
        kept = p.send(Message(topic, b"kept", deliver_at=at))
        gone = p.send(Message(topic, b"gone", deliver_at=at))
        assert kept.recall_handle and p.recall(topic, gone.recall_handle or "") == gone.msg_id
    got = sync.run(_receive(one_broker, topic, {b"kept"}))
    assert b"gone" not in got
    _on_time(got, b"kept", _ms(at))


def test_the_readme_example_runs_as_written(one_broker: Cluster) -> None:
    """README "Timer messages": its example, only the name server's address this cluster's
    (its recall raises, failing the run, unless the broker recalled the reminder)."""
    import re
    import subprocess
    import sys

    sync.run(create_everywhere(one_broker, "ExampleTopic", queues=1))
    root = Path(__file__).resolve().parents[2]
    readme = (root / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Timer messages", 1)[1].split("\n## ", 1)[0]
    (code,) = re.findall(r"```python\n(.*?)```", section, re.S)
    assert '"127.0.0.1:9876"' in code
    code = code.replace('"127.0.0.1:9876"', repr(one_broker.namesrv_addr))
    done = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True,
                          text=True, timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr
