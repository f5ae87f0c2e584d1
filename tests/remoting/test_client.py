"""RemotingClient against a real server: lazy (re)connect, timeouts, loss, limits, routes."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator

import pytest

from aiorocketmq.remoting.channel import Channel
from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.config import ClientConfig
from aiorocketmq.remoting.dispatch import Route
from aiorocketmq.remoting.errors import (
    RemotingConnectError,
    RemotingTimeoutError,
    RemotingTooMuchRequestError,
)
from aiorocketmq.remoting.protocol.codes import ResponseCode, SerializeType
from aiorocketmq.remoting.protocol.command import RemotingCommand, response_to
from tests.conftest import ServerFactory
from tests.util import wait_until

ECHO, HOLD, NOTE = 1, 2, 3


class Held:
    """A handler that parks until released, counting arrivals."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.arrived = 0
        self.types: list[int] = []
        self.channels: list[Channel] = []

    async def echo(self, req: RemotingCommand, ch: Channel) -> RemotingCommand:
        self.types.append(req.serialize_type)
        self.channels.append(ch)
        await asyncio.sleep(random.random() / 500)
        return response_to(req, ResponseCode.SUCCESS, ext_fields=req.ext_fields, body=req.body)

    async def hold(self, req: RemotingCommand, ch: Channel) -> RemotingCommand:
        self.arrived += 1
        await self.release.wait()
        return response_to(req, ResponseCode.SUCCESS)

    def routes(self) -> dict[int, Route]:
        return {ECHO: Route(self.echo), HOLD: Route(self.hold)}


@pytest.fixture
async def client() -> AsyncIterator[RemotingClient]:
    cli = RemotingClient()
    yield cli
    await cli.close()


def addr(port: int) -> str:
    return f"127.0.0.1:{port}"


async def test_many_requests_share_one_connection(
    start_server: ServerFactory, client: RemotingClient
) -> None:
    """Issue: many requests in flight on one connection, matched by opaque."""
    held = Held()
    server = await start_server(held.routes())

    async def call(i: int) -> None:
        resp = await client.invoke(addr(server.port), RemotingCommand.request(ECHO, {"i": str(i)}))
        assert resp.ext_fields == {"i": str(i)}

    await asyncio.gather(*(call(i) for i in range(1000)))
    assert len(server.channels) == 1
    assert set(held.types) == {SerializeType.MSGPACK}  # our default header type


async def test_json_is_selectable(start_server: ServerFactory) -> None:
    """Issue: default serialize type msgpack, JSON selectable (to talk to Apache servers)."""
    held = Held()
    server = await start_server(held.routes())
    async with RemotingClient(ClientConfig(serialize_type=SerializeType.JSON)) as cli:
        resp = await cli.invoke(addr(server.port), RemotingCommand.request(ECHO, {"k": "v"}))
    assert resp.serialize_type == SerializeType.JSON
    assert held.types == [SerializeType.JSON]


async def test_timeout_raises_and_connection_stays_usable(
    start_server: ServerFactory, client: RemotingClient
) -> None:
    """Issue: a timeout raises a typed error (also a TimeoutError), leaving the connection open."""
    held = Held()
    server = await start_server(held.routes())
    with pytest.raises(RemotingTimeoutError) as info:
        await client.invoke(addr(server.port), RemotingCommand.request(HOLD), timeout=0.2)
    assert isinstance(info.value, TimeoutError)
    ch = client.channel(addr(server.port))
    assert ch is not None
    resp = await client.invoke(addr(server.port), RemotingCommand.request(ECHO, {"a": "b"}))
    assert resp.ext_fields == {"a": "b"}
    assert client.channel(addr(server.port)) is ch
    held.release.set()


async def test_lost_connection_fails_all_pending_at_once(
    start_server: ServerFactory, client: RemotingClient
) -> None:
    """Issue: a lost connection fails every pending request at once with a typed error, and the
    next request re-opens a connection."""
    held = Held()
    server = await start_server(held.routes())
    calls = [
        asyncio.ensure_future(
            client.invoke(addr(server.port), RemotingCommand.request(HOLD), timeout=30)
        )
        for _ in range(20)
    ]
    await wait_until(lambda: held.arrived == 20)
    loop = asyncio.get_running_loop()
    began = loop.time()
    for ch in list(server.channels):
        ch.abort()
    results = await asyncio.gather(*calls, return_exceptions=True)
    assert all(isinstance(r, RemotingConnectError) for r in results)
    assert loop.time() - began < 5  # at once, not after the 30 s timeout
    held.release.set()
    resp = await client.invoke(addr(server.port), RemotingCommand.request(ECHO, {"x": "1"}))
    assert resp.ext_fields == {"x": "1"}


async def test_invoke_many_answers_each_request_in_order(start_server: ServerFactory) -> None:
    """invoke_many: every request written before any answer is awaited, each its own answer
    or error in order (a held one times out alone, the others answered), its slots given
    back; a refused connection fails every request."""
    held = Held()
    server = await start_server(held.routes())
    async with RemotingClient(ClientConfig(client_async_semaphore_value=4)) as cli:
        requests = [RemotingCommand.request(ECHO, {"i": str(i)}) for i in range(3)]
        requests.insert(1, RemotingCommand.request(HOLD))
        answers = await cli.invoke_many(addr(server.port), requests, timeout=0.5)
        assert [a.ext_fields if isinstance(a, RemotingCommand) else type(a) for a in answers] == [
            {"i": "0"}, RemotingTimeoutError, {"i": "1"}, {"i": "2"},
        ]  # fmt: skip
        more = [RemotingCommand.request(ECHO, {"j": str(j)}) for j in range(4)]
        again = await cli.invoke_many(addr(server.port), more, timeout=5)
        assert [a.ext_fields for a in again if isinstance(a, RemotingCommand)] == [
            {"j": str(j)} for j in range(4)
        ]  # the 4 slots were given back
        refused = await cli.invoke_many("127.0.0.1:1", more[:2], timeout=2)
        assert [type(a) for a in refused] == [RemotingConnectError] * 2
    held.release.set()


async def test_refused_connection_is_a_connect_error(client: RemotingClient) -> None:
    """Issue: connection failures raise RemotingConnectError."""
    with pytest.raises(RemotingConnectError):
        await client.invoke("127.0.0.1:1", RemotingCommand.request(ECHO), timeout=2)


async def test_too_many_in_flight_is_a_typed_error(start_server: ServerFactory) -> None:
    """design.md 5: a semaphore bounds in-flight requests; the wait counts against the timeout."""
    held = Held()
    server = await start_server(held.routes())
    async with RemotingClient(ClientConfig(client_async_semaphore_value=1)) as cli:
        first = asyncio.ensure_future(
            cli.invoke(addr(server.port), RemotingCommand.request(HOLD), timeout=10)
        )
        await wait_until(lambda: held.arrived == 1)
        with pytest.raises(RemotingTooMuchRequestError):
            await cli.invoke(addr(server.port), RemotingCommand.request(ECHO), timeout=0.2)
        held.release.set()
        assert (await first).code == ResponseCode.SUCCESS


async def test_a_slow_peer_never_starves_the_others(start_server: ServerFactory) -> None:
    """Issue 14 item 2: the in-flight limit is per address. A peer holding every slot of its
    own still lets requests to another peer through at once."""
    held = Held()
    slow = await start_server(held.routes())
    fast = await start_server(Held().routes())
    async with RemotingClient(ClientConfig(client_async_semaphore_value=2)) as cli:
        parked = [
            asyncio.ensure_future(cli.invoke(addr(slow.port), RemotingCommand.request(HOLD), 10))
            for _ in range(2)
        ]
        await wait_until(lambda: held.arrived == 2)
        # not behind the slow peer's 10 s holds (4 s: room for a busy machine)
        answer = await cli.invoke(addr(fast.port), RemotingCommand.request(ECHO), timeout=4)
        assert answer.code == ResponseCode.SUCCESS
        with pytest.raises(RemotingTooMuchRequestError):
            await cli.invoke(addr(slow.port), RemotingCommand.request(ECHO), timeout=0.2)
        held.release.set()
        assert [(await p).code for p in parked] == [ResponseCode.SUCCESS] * 2


async def test_oneways_to_a_peer_that_does_not_read_are_bounded() -> None:
    """Issue 14 item 2 (clientOnewaySemaphoreValue): oneway sends waiting for a peer that
    stopped reading hold a slot each; past the per-address cap the next one fails at once
    with RemotingTooMuchRequestError instead of piling up."""

    stop = asyncio.Event()

    async def never_read(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await stop.wait()
        writer.close()

    peer = await asyncio.start_server(never_read, "127.0.0.1", 0)
    port = peer.sockets[0].getsockname()[1]
    try:
        async with RemotingClient(ClientConfig(client_oneway_semaphore_value=2)) as cli:
            big = RemotingCommand.request(NOTE, {}, bytes(8 << 20))
            await cli.invoke_oneway(addr(port), big, timeout=2)  # fills the socket buffers
            results = await asyncio.gather(
                *(cli.invoke_oneway(addr(port), RemotingCommand.request(NOTE), timeout=0.5)
                  for _ in range(3)),
                return_exceptions=True,
            )  # fmt: skip
            kinds = sorted(type(r).__name__ for r in results)
            assert kinds == [
                "RemotingSendRequestError", "RemotingSendRequestError",
                "RemotingTooMuchRequestError",
            ], results  # fmt: skip
    finally:
        stop.set()
        peer.close()
        await peer.wait_closed()


async def test_oneway_is_delivered_without_response(
    start_server: ServerFactory, client: RemotingClient
) -> None:
    """Issue: invoke_oneway only writes; the server runs the handler and answers nothing."""
    got: asyncio.Queue[RemotingCommand] = asyncio.Queue()

    async def note(req: RemotingCommand, ch: Channel) -> RemotingCommand:
        got.put_nowait(req)
        return response_to(req, ResponseCode.SUCCESS)

    server = await start_server({NOTE: Route(note)})
    await client.invoke_oneway(addr(server.port), RemotingCommand.request(NOTE, {"n": "1"}))
    req = await asyncio.wait_for(got.get(), 5)
    assert req.is_oneway and req.ext_fields == {"n": "1"}


async def test_server_requests_reach_the_client_routes(start_server: ServerFactory) -> None:
    """Issue: requests arriving from the server go to the client's handler table (brokers call
    clients back for transaction checks and consumer-change notices)."""
    held = Held()
    server = await start_server(held.routes())

    async def check(req: RemotingCommand, ch: Channel) -> RemotingCommand:
        return response_to(req, ResponseCode.SUCCESS, ext_fields={"state": "COMMIT"})

    async with RemotingClient(routes={39: Route(check)}) as cli:
        await cli.invoke(addr(server.port), RemotingCommand.request(ECHO))
        (server_side,) = held.channels
        resp = await server_side.request(RemotingCommand.request(39), timeout=5)
        assert resp.ext_fields == {"state": "COMMIT"}
        unknown = await server_side.request(RemotingCommand.request(12345), timeout=5)
        assert unknown.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
