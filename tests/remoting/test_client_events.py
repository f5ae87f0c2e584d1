"""RemotingClient for an SDK client instance: connect and connection-lost listeners, and a
capped backoff after failed connects (issue 14, item 2), against real sockets."""

from __future__ import annotations

import asyncio
import re
import socket
from collections.abc import AsyncIterator, Iterator

import pytest
from structlog.testing import capture_logs

from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.config import ClientConfig
from aiorocketmq.remoting.errors import RemotingConnectError
from aiorocketmq.remoting.protocol.command import RemotingCommand
from aiorocketmq.remoting.server import RemotingServer, bind_socket
from tests.conftest import ServerFactory
from tests.remoting.test_client import ECHO, Held, addr
from tests.util import wait_until


class Events:
    """Records what a client's listeners were told."""

    def __init__(self, cli: RemotingClient) -> None:
        self.opened: list[str] = []
        self.lost: list[str] = []
        cli.add_connect_listener(self.opened.append)
        cli.add_close_listener(self.lost.append)


@pytest.fixture
async def client() -> AsyncIterator[RemotingClient]:
    cli = RemotingClient()
    yield cli
    await cli.close()


async def echo(cli: RemotingClient, address: str) -> None:
    resp = await cli.invoke(address, RemotingCommand.request(ECHO, {"k": "v"}), timeout=2)
    assert resp.ext_fields == {"k": "v"}


async def test_connect_listener_fires_once_per_connection(
    start_server: ServerFactory, client: RemotingClient
) -> None:
    """Many requests share one connection: one connect event; a new connection, another."""
    server = await start_server(Held().routes())
    events = Events(client)
    await asyncio.gather(*(echo(client, addr(server.port)) for _ in range(50)))
    assert events.opened == [addr(server.port)]
    first = client.channel(addr(server.port))
    assert first is not None
    for ch in list(server.channels):
        ch.abort()
    await asyncio.wait_for(first.closed, 5)
    await echo(client, addr(server.port))
    assert events.opened == [addr(server.port)] * 2


async def test_close_listener_fires_when_the_server_closes_the_connection(
    start_server: ServerFactory, client: RemotingClient
) -> None:
    server = await start_server(Held().routes())
    events = Events(client)
    await echo(client, addr(server.port))
    assert events.lost == []
    for ch in list(server.channels):
        ch.close()
    await wait_until(lambda: events.lost == [addr(server.port)])


async def test_close_listener_fires_when_the_server_stops(
    start_server: ServerFactory, client: RemotingClient
) -> None:
    server = await start_server(Held().routes())
    events = Events(client)
    await echo(client, addr(server.port))
    await server.close(drain_timeout=1.0)
    await wait_until(lambda: events.lost == [addr(server.port)])
    assert events.opened == [addr(server.port)]


async def test_close_listener_fires_on_close_channel_but_not_on_client_close(
    start_server: ServerFactory,
) -> None:
    """close_channel is a loss the SDK must hear of; the client's own close() is not."""
    server = await start_server(Held().routes())
    cli = RemotingClient()
    events = Events(cli)
    await echo(cli, addr(server.port))
    cli.close_channel(addr(server.port))
    await wait_until(lambda: events.lost == [addr(server.port)])
    await echo(cli, addr(server.port))
    assert events.opened == [addr(server.port)] * 2
    await cli.close()
    await wait_until(lambda: not server.channels)
    assert events.lost == [addr(server.port)]


async def test_raising_listener_is_logged_and_does_not_stop_the_others(
    start_server: ServerFactory, client: RemotingClient
) -> None:
    server = await start_server(Held().routes())

    def broken(_addr: str) -> None:
        raise RuntimeError("listener bug")

    client.add_connect_listener(broken)
    client.add_close_listener(broken)
    events = Events(client)
    with capture_logs() as logs:
        await echo(client, addr(server.port))  # the request itself is not disturbed
        for ch in list(server.channels):
            ch.close()
        await wait_until(lambda: events.lost == [addr(server.port)])
    assert events.opened == [addr(server.port)]
    failed = [(e["event"], e["addr"]) for e in logs if e["log_level"] == "error"]
    assert failed == [
        ("connect_listener_failed", addr(server.port)),
        ("close_listener_failed", addr(server.port)),
    ]


def retry_ms(exc: BaseException) -> int | None:
    """The window left, from a fast-failed connect's message; None for a real attempt."""
    match = re.search(r"\(retrying in (\d+) ms\)", str(exc))
    return int(match.group(1)) if match else None


async def connect_error(cli: RemotingClient, address: str) -> RemotingConnectError:
    with pytest.raises(RemotingConnectError) as info:
        await cli.invoke(address, RemotingCommand.request(ECHO), timeout=2)
    return info.value


@pytest.fixture
def refusing() -> Iterator[socket.socket]:
    """A bound socket that does not listen yet: connects to its port are refused."""
    sock = bind_socket("127.0.0.1", 0)
    yield sock
    sock.close()


async def test_failed_connect_backs_off_without_new_attempts(
    start_server: ServerFactory, refusing: socket.socket
) -> None:
    """After a failed connect, requests fail fast without a TCP attempt (even though the server
    is up by then) until the window passes; other addresses are not held back."""
    address = addr(refusing.getsockname()[1])
    loop = asyncio.get_running_loop()
    async with RemotingClient(ClientConfig(reconnect_backoff_initial_millis=500)) as cli:
        first = await connect_error(cli, address)
        assert retry_ms(first) is None
        server = RemotingServer(Held().routes(), sock=refusing, announce=False)
        await server.start()
        try:
            began = loop.time()
            fast = await connect_error(cli, address)
            with pytest.raises(RemotingConnectError, match=r"retrying in \d+ ms"):
                await cli.invoke_oneway(address, RemotingCommand.request(ECHO), timeout=2)
            # no TCP attempt: the errors show it (the server is up now, an attempt would
            # reach it); the bound only says both came inside the 500 ms window (~1 ms idle)
            assert loop.time() - began < 0.5
            assert str(fast).startswith(f"{first} (retrying in ")  # why, and when again
            left = retry_ms(fast)
            assert left is not None and 0 < left <= 500
            other = await start_server(Held().routes())
            await echo(cli, addr(other.port))  # another address: not held back
            await asyncio.sleep(0.05)
            assert not server.channels  # no connection reached the server
            await asyncio.sleep(left / 1000)
            await echo(cli, address)
            assert len(server.channels) == 1
        finally:
            await server.close(drain_timeout=1.0)


async def test_backoff_doubles_up_to_the_cap_and_success_resets_it(
    refusing: socket.socket,
) -> None:
    address = addr(refusing.getsockname()[1])
    config = ClientConfig(reconnect_backoff_initial_millis=100, reconnect_backoff_max_millis=400)
    async with RemotingClient(config) as cli:
        events = Events(cli)

        async def fail_then_window() -> int:
            """A real attempt that fails, then the window a fast-failed one reports."""
            assert retry_ms(await connect_error(cli, address)) is None
            left = retry_ms(await connect_error(cli, address))
            assert left is not None
            return left

        windows = []
        for _ in range(4):
            windows.append(left := await fail_then_window())
            await asyncio.sleep(left / 1000 + 0.01)
        # each window is over the one before (it doubled) and within its own bound
        assert 50 < windows[0] <= 100 < windows[1] <= 200 < windows[2] <= 400
        assert 200 < windows[3] <= 400  # capped
        server = RemotingServer(Held().routes(), sock=refusing, announce=False)
        await server.start()
        await echo(cli, address)
        await server.close(drain_timeout=1.0)  # refused again from now on
        await wait_until(lambda: events.lost == [address])
        left = await fail_then_window()
        assert 0 < left <= 100  # back to the initial window


async def test_zero_initial_backoff_turns_it_off(refusing: socket.socket) -> None:
    address = addr(refusing.getsockname()[1])
    async with RemotingClient(ClientConfig(reconnect_backoff_initial_millis=0)) as cli:
        for _ in range(3):
            assert retry_ms(await connect_error(cli, address)) is None
