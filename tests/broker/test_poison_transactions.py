"""No poison pill in the transaction check rounds (issue 29, build item 3): a half message
whose copy the store refuses for good -- its properties 10 bytes under the limit, so the
check count the copy adds no longer fits -- used to end every round at it, and no half
behind it was ever checked again. It is now moved aside to TRANS_CHECK_MAX_TIME_TOPIC
(counted on /metrics) and the round goes on to the next half."""

from __future__ import annotations

import asyncio

from aiorocketmq.remoting.protocol.command import RemotingCommand
from aiorocketmq.remoting.protocol.message import (
    MAX_PROPERTIES_BYTES,
    decode_record,
    encode_properties,
)
from aiorocketmq.remoting.protocol.topic import TRANS_CHECK_MAX_TIME_TOPIC
from tests.broker.test_transactions import Producer, messages, producer, setup, until
from tests.broker.wire import view
from tests.cluster import Cluster
from tests.scrape import scrape, value

__all__ = ["producer"]  # the fixture, shared

FAT, THIN = "7F0000010000000000000000000F", "7F00000100000000000000000010"
COMMIT = 8


async def test_a_half_whose_copy_can_never_be_stored_holds_back_no_other(
    cluster: Cluster, producer: Producer
) -> None:
    """Two halves, unanswered: the first's properties are 10 bytes under 32767, the second's
    small. The first cannot be copied for a check (PROPERTIES_SIZE_EXCEEDED, for good): it
    goes to TRANS_CHECK_MAX_TIME_TOPIC unchecked, counted once; the second is checked, and
    its commit delivers it."""
    broker = await setup(cluster, producer)
    cli, addr = producer.cli, broker.addr
    await producer.register(addr)
    stored = {"TRAN_MSG": "true", "PGROUP": producer.group, "UNIQ_KEY": FAT, "PAD": "",
              "CLUSTER": "DefaultCluster", "REAL_TOPIC": "TxT", "REAL_QID": "1"}  # fmt: skip
    pad = MAX_PROPERTIES_BYTES - 10 - len(encode_properties(stored).encode())
    fat = await producer.half(addr, "TxT", b"fat", FAT, PAD="p" * pad)
    half = await view(cli, addr, fat.ext_fields["msgId"])
    assert len(encode_properties(half.properties).encode()) == MAX_PROPERTIES_BYTES - 10
    await producer.half(addr, "TxT", b"thin", THIN)
    check = await asyncio.wait_for(producer.checks.get(), 15)
    assert decode_record(check.body).properties["UNIQ_KEY"] == THIN
    await producer.answer(addr, check, COMMIT)
    delivered = await until(lambda: messages(cli, addr, "TxT"), bool)
    assert [m.body for m in delivered] == [b"thin"]
    moved = await until(lambda: messages(cli, addr, TRANS_CHECK_MAX_TIME_TOPIC, 0), bool)
    assert [m.body for m in moved] == [b"fat"]
    assert broker.proc is not None
    metrics = await scrape(broker.proc.metrics_port())
    name = "rocketmq_transaction_halves_set_aside_total"
    assert value(metrics, name, status="PROPERTIES_SIZE_EXCEEDED") == 1
    set_aside = [e for e in broker.proc.events if e.get("event") == "transaction_half_set_aside"]
    assert len(set_aside) == 1 and set_aside[0]["msg_id"] == FAT, set_aside
    assert set_aside[0]["level"] == "warning"  # a client's doing, not a broken invariant


async def test_a_half_that_no_longer_fits_at_all_is_dropped_and_holds_back_no_other(
    cluster: Cluster, producer: Producer
) -> None:
    """A half of 2 KiB, then maxMessageSize lowered to 1 KiB (a live key): neither its check
    copy nor its move to TRANS_CHECK_MAX_TIME_TOPIC can be stored, ever. Its chain is closed
    without a copy, counted; the small half behind it is checked."""
    broker = await setup(cluster, producer)
    cli, addr = producer.cli, broker.addr
    await producer.register(addr)
    await producer.half(addr, "TxT", b"b" * 2048, FAT)
    lowered = await cli.invoke(addr, RemotingCommand.request(25, {}, b"maxMessageSize=1024"))
    assert lowered.code == 0, lowered.remark
    await producer.half(addr, "TxT", b"thin", THIN)
    check = await asyncio.wait_for(producer.checks.get(), 15)
    assert decode_record(check.body).properties["UNIQ_KEY"] == THIN
    assert broker.proc is not None
    metrics = await scrape(broker.proc.metrics_port())
    name = "rocketmq_transaction_halves_set_aside_total"
    assert value(metrics, name, status="MESSAGE_ILLEGAL") == 1
    (set_aside,) = [e for e in broker.proc.events if e.get("event") == "transaction_half_set_aside"]
    assert set_aside["msg_id"] == FAT and set_aside["to"].startswith("nowhere"), set_aside
    assert await messages(cli, addr, TRANS_CHECK_MAX_TIME_TOPIC, 0) == []
