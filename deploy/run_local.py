"""``make run``: a local cluster without Docker -- a name server on 9876 and brokers broker-a
(10911) and broker-b (10921), data under ./data, logs to this terminal.

Stop it with Ctrl-C, ``kill <launcher pid>`` (SIGTERM) or by closing the terminal (SIGHUP): the
brokers stop first, then the name server (each: SIGTERM, up to 10 s, then SIGKILL), and the
launcher exits 0. Each process is started with this interpreter, in its own session (only the
launcher sees Ctrl-C, so the order holds) and with PR_SET_PDEATHSIG: if the launcher dies, even
by SIGKILL, the kernel sends every server SIGTERM. The launcher asks the same for itself, so it
stops the cluster when ``make`` dies.

``--data DIR`` puts all state under DIR; ``--ephemeral`` runs every process on a free port (the
brokers find the name server through its ``listening`` line). Tests use both.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import functools
import os
import re
import select
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import FrameType
from typing import Any, TextIO

ROOT = Path(__file__).resolve().parent.parent
SERVERS = [  # name, module, config file, the --set that puts its data under --data
    ("namesrv", "namesrv", "namesrv.conf", "kvConfigPath={}/namesrv/kvConfig.json"),
    ("broker-a", "broker", "broker-a.conf", "storePathRootDir={}/broker-a"),
    ("broker-b", "broker", "broker-b.conf", "storePathRootDir={}/broker-b"),
]
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
STOP_TIMEOUT = 10.0  # seconds each group of servers gets between SIGTERM and SIGKILL
PORT = re.compile(r"\bport=(\d+)")
PR_SET_PDEATHSIG = 1


def _find_prctl() -> Any:
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):  # not Linux
        return None


_PRCTL = _find_prctl()  # looked up now: a child between fork and exec must not load libraries


def die_with_parent(parent: int) -> None:
    """Ask the kernel for SIGTERM when our parent dies (PR_SET_PDEATHSIG; a no-op without
    prctl). Runs in each child between fork and exec, so it stays tiny."""
    if _PRCTL is not None:
        _PRCTL(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    if os.getppid() != parent:  # it died before we asked
        os._exit(1)


def emit(stream: TextIO, text: str) -> None:
    """Write to our stdout or stderr. Once that fails (the terminal was closed, the pipe lost its
    reader) the stream goes to /dev/null: output must never stop the launcher from stopping."""
    try:
        try:
            stream.write(text)
        except UnicodeError:  # not in the stream's encoding: escape it, carry on
            stream.write(text.encode("ascii", "backslashreplace").decode("ascii"))
        stream.flush()
    except (OSError, ValueError):
        with contextlib.suppress(OSError, ValueError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, stream.fileno())
            os.close(devnull)
            stream.flush()  # what the failed write left buffered, into /dev/null


def say(text: str) -> None:
    emit(sys.stderr, f"run_local: {text}\n")


class Server:
    """One child process. Its output reaches ours line by line with its name in front, read by
    ``Cluster.pump``; its ``listening`` line tells its port."""

    def __init__(self, name: str, argv: list[str]) -> None:
        self.name = name
        self.port: int | None = None
        self.ready = False
        self.proc = subprocess.Popen(
            [sys.executable, *argv],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # Ctrl-C reaches only us: we stop them in order
            preexec_fn=functools.partial(die_with_parent, os.getpid()),
        )
        assert self.proc.stdout is not None
        self.fd: int | None = self.proc.stdout.fileno()  # None at end of output
        self._partial = b""

    def read(self) -> None:
        """Pass on what the server wrote, whatever becomes of our stdout."""
        assert self.fd is not None
        data = os.read(self.fd, 65536)
        if not data:
            self.fd = None
            data = b"\n" if self._partial else b""
        *lines, self._partial = (self._partial + data).split(b"\n")
        for raw in lines:
            line = raw.decode(errors="replace")
            if not self.ready and (" listening " in line or '"listening"' in line):
                match = PORT.search(line)
                self.port = int(match[1]) if match else None
                self.ready = True
            emit(sys.stdout, f"{self.name:<8} | {line}\n")

    def exited(self) -> bool:
        return self.proc.poll() is not None and self.fd is None


class Cluster:
    """The servers, and the launcher's only thread: with other threads alive, a launcher killed
    by SIGKILL would hand its children from thread to dying thread, and each hand-over sends
    PR_SET_PDEATHSIG again -- a second SIGTERM, which forces a server's exit."""

    def __init__(self, data: Path, ephemeral: bool) -> None:
        self.data = data
        self.ephemeral = ephemeral
        self.servers: list[Server] = []
        self.signal: int | None = None  # the stop signal, once one came

    def on_signal(self, signum: int, _frame: FrameType | None) -> None:
        self.signal = signum  # only a flag: the main loop acts on it

    def pump(self, timeout: float) -> None:
        """Pass on the servers' output for up to ``timeout`` seconds (less if a pipe closes)."""
        open_ = {s.fd: s for s in self.servers if s.fd is not None}
        if not open_:
            time.sleep(timeout)
            return
        for fd in select.select(list(open_), [], [], timeout)[0]:
            open_[fd].read()

    def argv(self, module: str, conf: str, data_key: str) -> list[str]:
        argv = ["-m", module, "-c", f"deploy/conf/{conf}", "--log-format", "console"]
        argv += ["--set", data_key.format(self.data)]
        if self.ephemeral:
            argv += ["--listen-port", "0"]
            if module == "broker":
                argv += ["-n", f"127.0.0.1:{self.servers[0].port}"]
        return argv

    def start(self) -> bool:
        """One at a time, the name server first, so brokers register at once."""
        for name, module, conf, data_key in SERVERS:
            server = Server(name, self.argv(module, conf, data_key))
            self.servers.append(server)
            say(f"{name} started, pid {server.proc.pid}")
            while not server.ready:
                if self.signal is not None:
                    return False
                if server.exited():
                    say(f"{name} failed to start")
                    return False
                self.pump(0.2)
            if server.port is None:
                say(f"{name}: no port in its listening line")
                return False
        return True

    def watch(self) -> None:
        """Until a stop signal, or until a server exits by itself."""
        while self.signal is None:
            if any(s.proc.poll() is not None for s in self.servers):
                say("a process exited; stopping the cluster")
                return
            self.pump(0.2)

    def stop(self) -> bool:
        """Brokers first (they unregister from the name server), then the name server: SIGTERM,
        up to STOP_TIMEOUT, then SIGKILL. True when every server exited 0."""
        if self.signal is not None:
            say(f"{signal.Signals(self.signal).name}: stopping the cluster")
        for group in (self.servers[1:], self.servers[:1]):
            for server in group:
                if server.proc.poll() is None:
                    server.proc.send_signal(signal.SIGTERM)
            self.wait(group, STOP_TIMEOUT)
            for server in group:
                if server.proc.poll() is None:
                    say(f"{server.name} did not stop in {STOP_TIMEOUT:g} s: SIGKILL")
                    server.proc.kill()
            self.wait(group, 2.0)  # their last lines
        return [s.proc.wait() for s in self.servers] == [0] * len(self.servers)

    def wait(self, group: list[Server], timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not all(s.exited() for s in group) and time.monotonic() < deadline:
            self.pump(0.05)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="a local name server and two brokers")
    parser.add_argument(
        "--data",
        type=Path,
        default=ROOT / "data",
        metavar="DIR",
        help="where all state goes (default: ./data)",
    )
    parser.add_argument(
        "--ephemeral", action="store_true", help="every process on a free port (for tests)"
    )
    args = parser.parse_args(argv)
    die_with_parent(os.getppid())  # when `make` dies, stop the cluster too
    cluster = Cluster(args.data.resolve(), args.ephemeral)
    for signum in STOP_SIGNALS:
        signal.signal(signum, cluster.on_signal)
    cluster.data.mkdir(parents=True, exist_ok=True)
    if cluster.start():
        ports = ", ".join(f"{s.name} 127.0.0.1:{s.port}" for s in cluster.servers)
        say(f"cluster ready: {ports}; stop it with Ctrl-C or `kill {os.getpid()}`")
        cluster.watch()
    clean = cluster.stop()
    return 0 if clean and cluster.signal is not None else 1


if __name__ == "__main__":
    sys.exit(main())
