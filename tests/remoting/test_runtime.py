"""The process runtime: uvloop, `listening`, SIGTERM -> graceful stop, start-up failures."""

from __future__ import annotations

import signal
import socket

from remoting.protocol.frame import encode
from tests.harness import ServerProcess
from tests.remoting.echo_server import HANG
from tests.remoting.wire import RawPeer, request


def echo_server(*args: str) -> ServerProcess:
    return ServerProcess(["-m", "tests.remoting.echo_server", *args])


async def test_sigterm_stops_gracefully_with_exit_0() -> None:
    """design.md 9: SIGTERM sets the stop event; the server drains and exits 0 after `stopped`."""
    proc = echo_server("--listen-port", "0")
    try:
        port = proc.listening_port()
        peer = await RawPeer.connect(port)
        peer.send(request(1, opaque=5))
        assert (await peer.read()).opaque == 5
        await peer.close()
    finally:
        code = proc.stop()
    assert code == 0, proc.dump()
    events = [e["event"] for e in proc.events]
    assert events.index("listening") < events.index("stopping") < events.index("stopped")
    stopping = next(e for e in proc.events if e["event"] == "stopping")
    assert stopping["signal"] == "SIGTERM"
    assert all({"timestamp", "level"} <= set(e) for e in proc.events)  # JSON log lines


def test_port_in_use_fails_start_with_exit_1() -> None:
    """design.md 6: a server that cannot bind logs why and exits 1 (no traceback spew)."""
    with socket.socket() as taken:
        taken.bind(("0.0.0.0", 0))
        taken.listen()
        proc = echo_server("--listen-port", str(taken.getsockname()[1]))
        code = proc.proc.wait(20)
        proc.stop()
    assert code == 1, proc.dump()
    failed = [e for e in proc.events if e.get("event") == "start_failed"]
    assert len(failed) == 1 and "address already in use" in failed[0]["error"].lower()


def test_second_signal_forces_exit() -> None:
    """design.md 9: a second signal forces exit even while the graceful stop is under way."""
    proc = echo_server("--listen-port", "0")
    try:
        port = proc.listening_port()
        # a request that never finishes: the graceful stop waits on it for its 5 s drain
        with socket.create_connection(("127.0.0.1", port)) as sock:
            head, body = encode(request(HANG, opaque=1))
            sock.sendall(head + body)
            proc.proc.send_signal(signal.SIGTERM)
            proc.wait_for("stopping")
            proc.proc.send_signal(signal.SIGTERM)
            code = proc.proc.wait(10)
    finally:
        proc.stop()
    assert code == 128 + signal.SIGTERM
    assert any(e.get("event") == "forced_exit" for e in proc.events)
