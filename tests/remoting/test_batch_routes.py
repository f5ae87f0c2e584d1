"""Batch routes (remoting.dispatch): the requests of one code that one read delivers go to the
route's batch handler together; answers that must wait come back ``Deferred`` and one task
answers them all. Real server and sockets; the handlers are plain functions of the test."""

from __future__ import annotations

import asyncio

from aiorocketmq.remoting.channel import Channel
from aiorocketmq.remoting.dispatch import Bulkhead, Deferred, Route
from aiorocketmq.remoting.protocol.codes import ResponseCode
from aiorocketmq.remoting.protocol.command import RemotingCommand, response_to
from tests.conftest import ServerFactory
from tests.remoting.wire import RawPeer, request

SEND = 7
BUSY = "[TIMEOUT_CLEAN_QUEUE]broker busy"


async def test_a_deferred_run_holds_its_bulkhead_slot_until_answered(
    start_server: ServerFactory,
) -> None:
    """A run whose answers are Deferred (a SYNC_FLUSH broker's sends of one read, waiting for
    their flush) is in flight until it is answered, each request holding a slot as it would
    alone: with a bulkhead of two slots and a run of two, a request arriving meanwhile waits for
    a slot and gets SYSTEM_BUSY past the group's wait limit; once the run is answered, the
    slots serve again."""
    took, settle = asyncio.Event(), asyncio.Event()

    async def one(req: RemotingCommand, ch: Channel) -> RemotingCommand:
        return response_to(req, ResponseCode.SUCCESS, "alone")

    async def answers(reqs: list[RemotingCommand]) -> list[RemotingCommand]:
        await settle.wait()
        return [response_to(r, ResponseCode.SUCCESS, "run") for r in reqs]

    def many(reqs: list[RemotingCommand], ch: Channel) -> Deferred:
        took.set()
        return Deferred(len(reqs), answers(reqs))

    server = await start_server(
        {SEND: Route(one, group="send", batch=many)},
        {"send": Bulkhead(limit=2, max_wait_ms=50, busy_remark=BUSY)},
    )
    first, second = await RawPeer.connect(server.port), await RawPeer.connect(server.port)
    first.send(request(SEND, opaque=1), request(SEND, opaque=2))  # one write: one run
    await asyncio.wait_for(took.wait(), 5)
    second.send(request(SEND, opaque=3))
    busy = await second.read()
    assert (busy.opaque, busy.code, busy.remark) == (3, ResponseCode.SYSTEM_BUSY, BUSY)
    settle.set()
    got = {(r.opaque, r.remark) for r in [await first.read(), await first.read()]}
    assert got == {(1, "run"), (2, "run")}
    second.send(request(SEND, opaque=4))  # the slot is free again
    alone = await second.read()
    assert (alone.opaque, alone.code, alone.remark) == (4, ResponseCode.SUCCESS, "alone")
    await first.close()
    await second.close()


async def test_a_run_is_no_longer_than_the_free_slots(start_server: ServerFactory) -> None:
    """Each request of a run takes a bulkhead slot: with one slot, requests that arrive
    together are handled one at a time, as if alone (the batch handler never sees them); the
    second waits for the slot and, past the wait limit, is SYSTEM_BUSY."""
    release, batched = asyncio.Event(), []

    async def one(req: RemotingCommand, ch: Channel) -> RemotingCommand:
        await release.wait()
        return response_to(req, ResponseCode.SUCCESS, "alone")

    def many(reqs: list[RemotingCommand], ch: Channel) -> list[RemotingCommand]:
        batched.append(len(reqs))
        return [response_to(r, ResponseCode.SUCCESS, "run") for r in reqs]

    server = await start_server(
        {SEND: Route(one, group="send", batch=many)},
        {"send": Bulkhead(limit=1, max_wait_ms=50, busy_remark=BUSY)},
    )
    peer = await RawPeer.connect(server.port)
    peer.send(request(SEND, opaque=1), request(SEND, opaque=2))
    busy = await peer.read()
    assert (busy.opaque, busy.code, busy.remark) == (2, ResponseCode.SYSTEM_BUSY, BUSY)
    release.set()
    first = await peer.read()
    assert (first.opaque, first.code, first.remark) == (1, ResponseCode.SUCCESS, "alone")
    assert batched == []
    await peer.close()
