"""RemotingServer against real sockets: dispatch, concurrency, responses, callbacks."""

from __future__ import annotations

import asyncio
import random

from structlog.testing import capture_logs

from aiorocketmq.remoting.channel import Channel
from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.dispatch import Bulkhead, Dispatcher, Route
from aiorocketmq.remoting.protocol.codes import ResponseCode, SerializeType
from aiorocketmq.remoting.protocol.command import RemotingCommand, response_to
from tests.conftest import ServerFactory
from tests.remoting.wire import RawPeer, request

ECHO, SLOW, FAIL, BLOCK = 1, 2, 3, 4


async def echo(req: RemotingCommand, ch: Channel) -> RemotingCommand:
    return response_to(req, ResponseCode.SUCCESS, ext_fields=dict(req.ext_fields), body=req.body)


async def jitter_echo(req: RemotingCommand, ch: Channel) -> RemotingCommand:
    await asyncio.sleep(random.random() / 1000)  # completes out of order
    return await echo(req, ch)


async def fail(req: RemotingCommand, ch: Channel) -> RemotingCommand:
    raise RuntimeError("boom")


def routes(**extra: Route) -> dict[int, Route]:
    table = {ECHO: Route(echo), SLOW: Route(jitter_echo), FAIL: Route(fail)}
    table.update({int(k[1:]): v for k, v in extra.items()})
    return table


async def test_listening_event_reports_the_real_port(start_server: ServerFactory) -> None:
    """design.md 7: one `listening` event with the real host and port (port 0 binds any)."""
    with capture_logs() as logs:
        server = await start_server(routes())
    events = [e for e in logs if e["event"] == "listening"]
    assert events == [{"event": "listening", "host": "127.0.0.1", "port": server.port,
                       "log_level": "info"}]  # fmt: skip
    assert server.port > 0


async def test_ten_thousand_pipelined_requests_get_their_own_opaques(
    start_server: ServerFactory,
) -> None:
    """Issue: 10,000 pipelined requests on one connection are all answered, each with the
    opaque of its request (handlers finish out of order)."""
    server = await start_server(routes())
    peer = await RawPeer.connect(server.port)
    n = 10_000
    for i in range(n):
        peer.send(request(SLOW, opaque=i - 5000, serialize_type=i % 3, seq=str(i)))
    seen: dict[int, RemotingCommand] = {}
    for _ in range(n):
        resp = await peer.read(timeout=30)
        seen[resp.opaque] = resp
    assert sorted(seen) == list(range(-5000, n - 5000))
    for opaque, resp in seen.items():
        i = opaque + 5000
        assert resp.is_response and resp.code == ResponseCode.SUCCESS
        assert resp.ext_fields == {"seq": str(i)}
        assert resp.serialize_type == i % 3  # answered in the request's header type
    await peer.close()


async def test_slow_handler_does_not_block_its_connection(start_server: ServerFactory) -> None:
    """design.md 5: each request runs as its own task; a slow one never blocks the others."""
    release = asyncio.Event()

    async def blocked(req: RemotingCommand, ch: Channel) -> RemotingCommand:
        await release.wait()
        return response_to(req, ResponseCode.SUCCESS)

    server = await start_server(routes(c4=Route(blocked)))
    peer = await RawPeer.connect(server.port)
    peer.send(request(BLOCK, opaque=1), request(ECHO, opaque=2))
    assert (await peer.read()).opaque == 2
    release.set()
    assert (await peer.read()).opaque == 1
    await peer.close()


async def test_unknown_code_is_not_supported(start_server: ServerFactory) -> None:
    """protocol.md 2.6: an unserved code gets 3 with remark ' request type <code> not supported'."""
    server = await start_server(routes())
    peer = await RawPeer.connect(server.port)
    peer.send(request(999, opaque=0, serialize_type=SerializeType.JSON))
    resp = await peer.read()
    assert (resp.code, resp.remark, resp.opaque) == (3, " request type 999 not supported", 0)
    assert resp.serialize_type == SerializeType.JSON
    await peer.close()


async def test_handler_exception_is_system_error_and_connection_stays(
    start_server: ServerFactory,
) -> None:
    """protocol.md 2.6: a handler that raised answers SYSTEM_ERROR; the connection stays open."""
    server = await start_server(routes())
    peer = await RawPeer.connect(server.port)
    with capture_logs() as logs:
        peer.send(request(FAIL, opaque=7))
        resp = await peer.read()
    assert (resp.code, resp.remark, resp.opaque) == (1, "RuntimeError: boom", 7)
    assert [e["event"] for e in logs if e["log_level"] == "error"] == ["handler_failed"]
    peer.send(request(ECHO, opaque=8))
    assert (await peer.read()).opaque == 8
    await peer.close()


async def test_missing_header_field_is_system_error_naming_it(start_server: ServerFactory) -> None:
    """protocol.md 2.5: a missing required field answers SYSTEM_ERROR with a remark naming it."""
    from aiorocketmq.remoting.protocol.headers.send import SendMessageHeader

    async def send(req: RemotingCommand, ch: Channel) -> RemotingCommand:
        SendMessageHeader.from_ext(req.ext_fields, v2=True)
        return response_to(req, ResponseCode.SUCCESS)

    server = await start_server(routes(c310=Route(send)))
    peer = await RawPeer.connect(server.port)
    peer.send(request(310, opaque=1, a="pg"))
    resp = await peer.read()
    assert resp.code == ResponseCode.SYSTEM_ERROR
    assert resp.remark is not None and "<b>" in resp.remark
    await peer.close()


async def test_oneway_requests_get_no_response(start_server: ServerFactory) -> None:
    """protocol.md 2.3: a oneway request (flag bit 1) is never answered, not even an error."""
    got = asyncio.Event()

    async def note(req: RemotingCommand, ch: Channel) -> RemotingCommand:
        got.set()
        return response_to(req, ResponseCode.SUCCESS)

    server = await start_server(routes(c5=Route(note)))
    peer = await RawPeer.connect(server.port)
    for code in (5, FAIL, 999):
        cmd = request(code, opaque=100 + code)
        cmd.flag = 2
        peer.send(cmd)
    peer.send(request(ECHO, opaque=1))
    assert (await peer.read()).opaque == 1
    await asyncio.wait_for(got.wait(), 5)
    peer.send(request(ECHO, opaque=2))
    assert (await peer.read()).opaque == 2  # still nothing for the oneways
    await peer.close()


async def test_idle_connection_is_closed(start_server: ServerFactory) -> None:
    """Issue: idle connections are closed after serverChannelMaxIdleTimeSeconds (120 s default,
    1 s here)."""
    server = await start_server(routes(), server_channel_max_idle_time_seconds=1)
    peer = await RawPeer.connect(server.port)
    peer.send(request(ECHO, opaque=1))
    await peer.read()
    assert await peer.closed_by_peer(timeout=5)


async def test_close_listeners_hear_every_disconnect(start_server: ServerFactory) -> None:
    """Issue: connection-closed callbacks (name server and broker liveness need them)."""
    server = await start_server(routes())
    closed: asyncio.Queue[Channel] = asyncio.Queue()
    server.add_close_listener(closed.put_nowait)
    peer = await RawPeer.connect(server.port)
    peer.send(request(ECHO, opaque=1))
    await peer.read()
    local = peer.writer.get_extra_info("sockname")
    await peer.close()
    ch = await asyncio.wait_for(closed.get(), 5)
    assert ch.peer == f"127.0.0.1:{local[1]}"
    assert not server.channels


async def test_server_requests_use_the_peers_header_type(start_server: ServerFactory) -> None:
    """protocol.md 1: server-initiated requests go out in the type the peer used first."""
    channels: asyncio.Queue[Channel] = asyncio.Queue()

    async def hello(req: RemotingCommand, ch: Channel) -> RemotingCommand:
        channels.put_nowait(ch)
        return response_to(req, ResponseCode.SUCCESS)

    server = await start_server(routes(c34=Route(hello)))
    for stype in SerializeType:
        peer = await RawPeer.connect(server.port)
        peer.send(request(34, opaque=1, serialize_type=stype))
        await peer.read()
        ch = await channels.get()
        call = asyncio.ensure_future(ch.request(RemotingCommand.request(40, {"g": "x"}), 5))
        notice = await peer.read()
        assert (notice.code, notice.ext_fields, notice.serialize_type) == (40, {"g": "x"}, stype)
        assert not notice.is_response
        reply = response_to(notice, ResponseCode.SUCCESS, remark="ok")
        peer.send(reply)
        assert (await call).remark == "ok"
        await peer.close()


async def test_bulkhead_answers_busy_past_its_wait_limit(start_server: ServerFactory) -> None:
    """design.md 5: a request that waited past its group's limit gets SYSTEM_BUSY and the
    group's remark, instead of queueing without bound."""
    release = asyncio.Event()

    async def blocked(req: RemotingCommand, ch: Channel) -> RemotingCommand:
        await release.wait()
        return response_to(req, ResponseCode.SUCCESS)

    server = await start_server(
        {BLOCK: Route(blocked, group="send")},
        {"send": Bulkhead(limit=1, max_wait_ms=50, busy_remark="[TIMEOUT_CLEAN_QUEUE]broker busy")},
    )
    peer = await RawPeer.connect(server.port)
    peer.send(request(BLOCK, opaque=1), request(BLOCK, opaque=2))
    busy = await peer.read()
    assert (busy.opaque, busy.code, busy.remark) == (2, 2, "[TIMEOUT_CLEAN_QUEUE]broker busy")
    release.set()
    assert (await peer.read()).opaque == 1
    await peer.close()


async def test_close_drains_in_flight_requests(start_server: ServerFactory) -> None:
    """design.md 9: a graceful stop finishes in-flight requests before closing connections."""
    started = asyncio.Event()

    async def slow(req: RemotingCommand, ch: Channel) -> RemotingCommand:
        started.set()
        await asyncio.sleep(0.2)
        return response_to(req, ResponseCode.SUCCESS, remark="done")

    server = await start_server(routes(c6=Route(slow)))
    peer = await RawPeer.connect(server.port)
    peer.send(request(6, opaque=1))
    await started.wait()
    closing = asyncio.ensure_future(server.close(drain_timeout=5))
    assert (await peer.read()).remark == "done"
    await closing
    assert await peer.closed_by_peer()


async def test_plain_function_handlers_are_answered_inline(start_server: ServerFactory) -> None:
    """design.md 5 (ours): a handler that is a plain function is answered from the read
    callback without a task; its errors are handled exactly like a coroutine handler's."""
    seen: list[asyncio.Task[object] | None] = []

    def plain(req: RemotingCommand, ch: Channel) -> RemotingCommand:
        seen.append(asyncio.current_task())
        if req.ext_fields.get("fail"):
            raise ValueError("bad value")
        return response_to(req, ResponseCode.SUCCESS, remark="plain")

    server = await start_server(routes(c7=Route(plain)))
    peer = await RawPeer.connect(server.port)
    peer.send(request(7, opaque=1), request(7, opaque=2, fail="1"))
    first, second = await peer.read(), await peer.read()
    assert (first.opaque, first.code, first.remark) == (1, 0, "plain")
    assert (second.opaque, second.code, second.remark) == (2, 1, "ValueError: bad value")
    oneway = request(7, opaque=3)
    oneway.flag = 2
    peer.send(oneway, request(ECHO, opaque=4))
    assert (await peer.read()).opaque == 4
    assert seen == [None, None, None]  # no task was made for them
    await peer.close()


async def test_coroutine_handlers_start_inline_and_move_to_a_task_when_waiting(
    start_server: ServerFactory,
) -> None:
    """design.md 5 (ours): a coroutine handler's first step runs inline (no Task is made for
    one that never waits); one that waits is handed to a Task mid-flight, keeps its state,
    and never blocks the connection."""
    steps: list[str] = []
    release = asyncio.Event()

    async def two_steps(req: RemotingCommand, ch: Channel) -> RemotingCommand:
        steps.append(f"start {isinstance(asyncio.current_task(), asyncio.Task)}")
        await release.wait()
        steps.append(f"resumed {isinstance(asyncio.current_task(), asyncio.Task)}")
        return response_to(req, ResponseCode.SUCCESS, remark="two")

    async def quick(req: RemotingCommand, ch: Channel) -> RemotingCommand:
        steps.append(f"quick {isinstance(asyncio.current_task(), asyncio.Task)}")
        return response_to(req, ResponseCode.SUCCESS, remark="quick")

    server = await start_server(routes(c8=Route(two_steps), c9=Route(quick)))
    peer = await RawPeer.connect(server.port)
    peer.send(request(8, opaque=1), request(9, opaque=2))
    assert (await peer.read()).remark == "quick"
    release.set()
    assert (await peer.read()).remark == "two"
    assert steps == ["start False", "quick False", "resumed True"]
    await peer.close()


async def test_first_step_may_use_timeouts_task_groups_and_outbound_requests(
    start_server: ServerFactory,
) -> None:
    """Issue 12 item 9: a handler may use ``asyncio.timeout``, ``TaskGroup`` and an outbound
    request in its very first statement, although that step runs inline; a timeout that
    expires after the hand-over to a Task still fires as TimeoutError."""
    upstream = await start_server(routes())

    async def with_timeout(req: RemotingCommand, ch: Channel) -> RemotingCommand:
        async with asyncio.timeout(1):
            await asyncio.sleep(0)
        return response_to(req, ResponseCode.SUCCESS, remark="in time")

    async def expiring(req: RemotingCommand, ch: Channel) -> RemotingCommand:
        try:
            async with asyncio.timeout(0.05):
                await asyncio.Event().wait()  # never set
        except TimeoutError:
            return response_to(req, ResponseCode.SUCCESS, remark="timed out")
        return response_to(req, ResponseCode.SYSTEM_ERROR, remark="not reached")

    async def expired_at_once(req: RemotingCommand, ch: Channel) -> RemotingCommand:
        try:  # due before the Task that takes the handler over has even run
            async with asyncio.timeout(0):
                await asyncio.Event().wait()
        except TimeoutError:
            return response_to(req, ResponseCode.SUCCESS, remark="at once")
        return response_to(req, ResponseCode.SYSTEM_ERROR, remark="not reached")

    async def with_group(req: RemotingCommand, ch: Channel) -> RemotingCommand:
        async with asyncio.TaskGroup() as group:
            parts = [group.create_task(asyncio.sleep(0, result=n)) for n in "abc"]
        return response_to(req, ResponseCode.SUCCESS, remark="".join(p.result() for p in parts))

    async def forwarding(req: RemotingCommand, ch: Channel) -> RemotingCommand:
        async with RemotingClient() as client:
            upstream_req = RemotingCommand.request(ECHO, {"via": "upstream"})
            answer = await client.invoke(f"127.0.0.1:{upstream.port}", upstream_req, 2.0)
        return response_to(req, ResponseCode.SUCCESS, remark=answer.ext_fields["via"])

    server = await start_server(
        routes(c11=Route(with_timeout), c12=Route(expiring), c13=Route(with_group),
               c14=Route(forwarding), c15=Route(expired_at_once))
    )  # fmt: skip
    peer = await RawPeer.connect(server.port)
    for code in (11, 12, 13, 14, 15):
        peer.send(request(code, opaque=code))
    answers = {}
    for _ in range(5):
        resp = await peer.read()
        answers[resp.opaque] = (resp.code, resp.remark)
    assert answers == {11: (0, "in time"), 12: (0, "timed out"), 13: (0, "abc"),
                       14: (0, "upstream"), 15: (0, "at once")}  # fmt: skip
    await peer.close()


async def test_dispatch_from_inside_a_task_runs_the_handler_as_its_own_task() -> None:
    """A request dispatched by code already running in a task (not a protocol callback) gets
    a Task of its own from the start; its timeouts are its own, not the caller's."""

    async def timed(req: RemotingCommand, ch: object) -> RemotingCommand:
        async with asyncio.timeout(1):
            await asyncio.sleep(0)
        return response_to(req, ResponseCode.SUCCESS, remark="own task")

    answers: list[RemotingCommand | None] = []
    dispatcher = Dispatcher({21: Route(timed)})
    task = dispatcher.dispatch(request(21, opaque=3), None, lambda _req, resp: answers.append(resp))
    assert task is not None
    await task
    assert [a.remark for a in answers if a is not None] == ["own task"]
