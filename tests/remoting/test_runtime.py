"""The process runtime: uvloop, `listening`, SIGTERM/SIGHUP -> graceful stop, start-up failures,
logging that survives a broken stdout."""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.protocol.command import RemotingCommand
from aiorocketmq.remoting.protocol.frame import encode
from aiorocketmq.remoting.protocol.route import decode_topic_list
from tests.harness import ROOT, ServerProcess
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


def namesrv_argv(tmp: Path) -> list[str]:
    kv = f"kvConfigPath={tmp / 'kv.json'}"
    return [
        "-m",
        "aiorocketmq.namesrv",
        "--listen-port",
        "0",
        "--set",
        kv,
        "--set",
        "metricsPort=0",
    ]


def test_sighup_stops_gracefully_with_exit_0(tmp_path: Path) -> None:
    """Issue "`make run` orphans": SIGHUP (the terminal closed) is a stop signal like SIGTERM:
    the server logs `stopping` with its name and exits 0."""
    proc = ServerProcess(namesrv_argv(tmp_path))
    try:
        proc.listening_port()
        proc.proc.send_signal(signal.SIGHUP)
        code = proc.proc.wait(10)
    finally:
        proc.stop()
    assert code == 0, proc.dump()
    assert proc.wait_for("stopping")["signal"] == "SIGHUP"
    assert [e["event"] for e in proc.events][-1] == "stopped"


def namesrv_without_reader(tmp: Path) -> tuple[subprocess.Popen[bytes], int]:
    """A name server whose stdout pipe loses its reader right after the `listening` line: every
    later log write fails with EPIPE. Returns the process and its port."""
    proc = subprocess.Popen(
        [sys.executable, *namesrv_argv(tmp)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    assert proc.stdout is not None
    fd, buffered = proc.stdout.fileno(), b""
    deadline = time.monotonic() + 20
    try:
        while (left := deadline - time.monotonic()) > 0:
            if not select.select([fd], [], [], left)[0]:
                continue
            chunk = os.read(fd, 65536)
            assert chunk, f"exited {proc.wait()} before listening: {buffered!r}"
            buffered += chunk
            for line in buffered.split(b"\n")[:-1]:  # complete lines only
                event = json.loads(line) if line.startswith(b"{") else {}
                if event.get("event") == "listening":
                    proc.stdout.close()
                    return proc, int(event["port"])
        raise TimeoutError(f"no listening line within 20 s: {buffered!r}")
    except BaseException:
        proc.kill()
        proc.wait()
        raise


async def test_broken_stdout_neither_drops_requests_nor_blocks_stopping(tmp_path: Path) -> None:
    """Issue "`make run` orphans": once nobody reads its stdout, a server still serves requests
    that log (a protocol callback's `frame_error`, a handler's `broker_write_perm_wiped`) and
    still stops on SIGTERM with exit 0 -- no exception from the log write, no exit code 120
    from the interpreter's final flush."""
    proc, port = namesrv_without_reader(tmp_path)
    cli = RemotingClient()
    try:
        bad = await RawPeer.connect(port)
        bad.send_raw(b"GET / HTTP/1.1\r\nHost: namesrv\r\n\r\n")  # logs frame_error
        assert await bad.closed_by_peer()
        addr = f"127.0.0.1:{port}"
        wipe = await cli.invoke(addr, RemotingCommand.request(205, {"brokerName": "b"}))
        assert (wipe.code, wipe.ext_fields) == (0, {"wipeTopicCount": "0"})
        topics = await cli.invoke(addr, RemotingCommand.request(206))  # GET_ALL_TOPIC_LIST
        assert (topics.code, decode_topic_list(topics.body)) == (0, [])
        await cli.close()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0
    finally:
        await cli.close()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
