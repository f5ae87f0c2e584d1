"""The SDK's edge (issue 30): remoting failures reach the user as MQClientError subclasses
carrying ``retriable`` and the RemotingError as ``__cause__``, never as a RemotingError.

Real sockets only: a port nobody listens on, and a bare asyncio server on port 0 that reads
and never answers."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator

import pytest

import aiorocketmq
from aiorocketmq import Message, MQClientError, MQConnectionError, MQTimeoutError, Producer
from aiorocketmq.client import api
from aiorocketmq.remoting.errors import RemotingError


def closed_port() -> str:
    """An address nobody listens on: a port the kernel gave out, then closed."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"


@pytest.fixture
async def silent() -> AsyncIterator[str]:
    """A server that accepts, reads everything and says nothing."""

    async def swallow(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while await reader.read(65536):
            pass
        writer.close()

    server = await asyncio.start_server(swallow, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"127.0.0.1:{port}"
    finally:
        server.close()
        await server.wait_closed()


def no_remoting_error(exc: BaseException) -> None:
    """The error and the causes it wraps are MQClientErrors down to the RemotingError they
    translate (whose own cause may be an OSError)."""
    chain: list[BaseException] = [exc]
    while chain[-1].__cause__ is not None:
        chain.append(chain[-1].__cause__)
    first = next(i for i, e in enumerate(chain) if isinstance(e, RemotingError))
    assert first > 0 and all(isinstance(e, MQClientError) for e in chain[:first]), chain


async def test_a_send_to_a_closed_port_raises_mq_connection_error() -> None:
    async with Producer("pg_edge", namesrv_addr=closed_port(), send_msg_timeout=2000) as p:
        with pytest.raises(MQConnectionError) as info:
            await p.send(Message("Edge", b"x"))
    assert info.value.retriable
    no_remoting_error(info.value)


async def test_a_server_that_never_answers_gives_mq_timeout_error(silent: str) -> None:
    async with Producer("pg_edge", namesrv_addr=silent, send_msg_timeout=300) as p:
        with pytest.raises(MQTimeoutError) as info:
            await p.send(Message("Edge", b"x"))
    assert info.value.retriable and isinstance(info.value, TimeoutError)
    no_remoting_error(info.value)


async def test_the_request_layer_translates_each_call(silent: str) -> None:
    """api.Remote, the one edge every SDK call goes through (and mqadmin's)."""
    remote = api.Remote.open()
    try:
        with pytest.raises(MQConnectionError) as refused:
            await remote.invoke(closed_port(), api.all_topics(), 2.0)
        assert isinstance(refused.value.__cause__, RemotingError)
        with pytest.raises(MQTimeoutError) as late:
            await remote.invoke(silent, api.all_topics(), 0.2)
        assert isinstance(late.value.__cause__, RemotingError)
        with pytest.raises(MQConnectionError):
            await remote.invoke_oneway(closed_port(), api.all_topics(), 2.0)
    finally:
        await remote.close()


def test_remoting_error_is_not_public() -> None:
    assert "RemotingError" not in aiorocketmq.__all__
    for name in ("MQClientError", "MQConnectionError", "MQTimeoutError", "MQBrokerError"):
        assert name in aiorocketmq.__all__
        assert issubclass(getattr(aiorocketmq, name), MQClientError)
