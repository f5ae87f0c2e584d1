"""Helpers of the timer tests (issue 36): timer sends, reading a topic back, recall."""

from __future__ import annotations

import asyncio
import time

from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.protocol.batch import BatchItem, encode_batch
from aiorocketmq.remoting.protocol.codes import RequestCode
from aiorocketmq.remoting.protocol.command import RemotingCommand
from aiorocketmq.remoting.protocol.message import MessageExt, decode_records
from aiorocketmq.remoting.protocol.timer import (
    RECALL_HANDLE_FIELD,
    TIMER_TOPIC,
    RecallMessageRequestHeader,
    TimerProp,
)
from tests.broker.wire import max_offset, pull, send_v2


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def timer_send(
    topic: str, body: bytes, props: dict[str, str] | None = None, queue_id: int = 0
) -> RemotingCommand:
    return send_v2(topic, body, queue_id=queue_id, props=dict(props or {}))


async def send_at(
    cli: RemotingClient, addr: str, topic: str, body: bytes, deliver_ms: int, queue_id: int = 0
) -> RemotingCommand:
    """A message asking for ``deliver_ms``; the send's answer (asserted stored)."""
    resp = await cli.invoke(
        addr, timer_send(topic, body, {TimerProp.DELIVER_MS: str(deliver_ms)}, queue_id)
    )
    assert resp.code == 0, resp.remark
    return resp


def recall(topic: str, handle: str) -> RemotingCommand:
    hdr = RecallMessageRequestHeader(producer_group="pg_test", topic=topic, recall_handle=handle)
    return RemotingCommand.request(RequestCode.RECALL_MESSAGE, hdr.to_ext())


def handle_of(resp: RemotingCommand) -> str:
    return resp.ext_fields[RECALL_HANDLE_FIELD]


async def read_all(
    cli: RemotingClient, addr: str, topic: str, queue_id: int = 0
) -> list[MessageExt]:
    """Every message of a queue, pulled from offset 0 (no wait)."""
    out: list[MessageExt] = []
    offset, end = 0, await max_offset(cli, addr, topic, queue_id)
    while offset < end:
        resp = await cli.invoke(
            addr,
            pull("g_timer", topic, queue_id, offset, sys_flag=4, subscription="*", max_msgs=32),
        )
        assert resp.code == 0, (resp.code, resp.remark)
        msgs = decode_records(resp.body)
        out += msgs
        offset = msgs[-1].queue_offset + 1
    return out


async def wait_count(
    cli: RemotingClient, addr: str, topic: str, n: int, timeout: float, queue_id: int = 0
) -> int:
    """Poll a queue's max offset until it reaches ``n`` (or ``timeout``): the last seen."""
    deadline = time.monotonic() + timeout
    seen = await max_offset(cli, addr, topic, queue_id)
    while seen < n and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
        seen = await max_offset(cli, addr, topic, queue_id)
    return seen


async def waiting(cli: RemotingClient, addr: str) -> int:
    """Timer messages ever stored in rmq_sys_wheel_timer (rolls and markers too)."""
    return await max_offset(cli, addr, TIMER_TOPIC, 0)


def timer_batch(topic: str, bodies: list[bytes], props: dict[str, str]) -> RemotingCommand:
    """SEND_BATCH_MESSAGE to queue 0: ``props`` (the timer) common to every message."""
    cmd = send_v2(topic, encode_batch([BatchItem(b) for b in bodies]), queue_id=0, props=props)
    cmd.code = RequestCode.SEND_BATCH_MESSAGE
    return cmd
