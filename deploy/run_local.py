"""``make run``: a local cluster without Docker -- a name server on 9876 and brokers broker-a
(10911) and broker-b (10921), data under ./data, logs to this terminal.

``--slaves N`` adds N slaves to each broker group (``make run ARGS="--slaves 1"``): brokerId 1..N,
brokerRole SLAVE, the group's brokerName, data under ./data/broker-a-s1 and so on; ``--sync``
makes the masters SYNC_MASTER (else ASYNC_MASTER). Slave k of the master on port P listens on
P + 4 + 20 (k - 1): 10915, 10935, ... for broker-a and 10925, 10945, ... for broker-b. A broker
holds four ports, listenPort - 2 (VIP) to listenPort + 1 (HA, forced), so no two collide.
"cluster ready" waits until every slave follows its master.

Stop it with Ctrl-C, ``kill <launcher pid>`` (SIGTERM) or by closing the terminal (SIGHUP): the
slaves stop first, then the masters, then the name server (each group: SIGTERM, up to 10 s,
then SIGKILL), and the launcher exits 0. Each process is started with this interpreter, in its
own session (only the launcher sees Ctrl-C, so the order holds) and with PR_SET_PDEATHSIG: if
the launcher dies, even by SIGKILL, the kernel sends every server SIGTERM. The launcher asks
the same for itself, so it stops the cluster when ``make`` dies.

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
from typing import Any, NamedTuple, TextIO

ROOT = Path(__file__).resolve().parent.parent
NAMESRV = "namesrv"
MASTERS = (("broker-a", 10911), ("broker-b", 10921))  # brokerName, listenPort in its conf file
SLAVE = "SLAVE"
SLAVE_STRIDE = 20  # ports between slave k and slave k + 1 of the same master
MAX_SLAVES = 9
HA_OFFSET = 1  # the HA port is listenPort + 1, forced (broker/listen.py, BrokerStartup)
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
STOP_TIMEOUT = 10.0  # seconds each group of servers gets between SIGTERM and SIGKILL
FOLLOW_TIMEOUT = 30.0  # seconds a listening slave gets to connect to its master's HA port
PORT = re.compile(r"\bport=(\d+)")
VIP_PORT = re.compile(r"\bvip_port=(\d+)")
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


class Spec(NamedTuple):
    """One server: ``argv`` (after ``python``) starts it by hand from the repository root, as
    the README shows; the launcher adds its own options (``Cluster.argv``)."""

    name: str
    role: str  # namesrv, ASYNC_MASTER, SYNC_MASTER or SLAVE
    group: str  # the brokerName ("" for the name server)
    port: int  # its listenPort without --ephemeral
    argv: list[str]

    @property
    def tier(self) -> int:
        """0 the name server, 1 a master, 2 a slave: started in this order, stopped in reverse."""
        return 0 if self.role == NAMESRV else 2 if self.role == SLAVE else 1


def slave_port(master_port: int, k: int) -> int:
    """Slave ``k`` (1..) of the master on ``master_port``. A broker holds listenPort - 2 (VIP)
    to listenPort + 1 (HA): masters P - 2 .. P + 1, slave 1 P + 2 .. P + 5, slave k 20 ports
    further on; with masters 10 apart, no two brokers share a port."""
    return master_port + 4 + SLAVE_STRIDE * (k - 1)


def plan(slaves: int = 0, sync: bool = False) -> list[Spec]:
    """The servers in start order: the name server, the masters, slave 1 of each group, ..."""
    specs = [Spec(NAMESRV, NAMESRV, "", 9876, ["-m", "namesrv", "-c", "deploy/conf/namesrv.conf"])]
    role = "SYNC_MASTER" if sync else "ASYNC_MASTER"
    for name, port in MASTERS:
        argv = ["-m", "broker", "-c", f"deploy/conf/{name}.conf"]
        if sync:  # the conf files say ASYNC_MASTER
            argv += ["--set", f"brokerRole={role}"]
        specs.append(Spec(name, role, name, port, argv))
    for k in range(1, slaves + 1):
        for name, master_port in MASTERS:
            port = slave_port(master_port, k)
            argv = ["-m", "broker", "-c", f"deploy/conf/{name}-s.conf"]  # slave 1's file
            if k > 1:
                argv += ["--set", f"brokerId={k}", "--set", f"listenPort={port}"]
            specs.append(Spec(f"{name}-s{k}", SLAVE, name, port, argv))
    return specs


class Server:
    """One child process. Its output reaches ours line by line with its name in front, read by
    ``Cluster.pump``; its ``listening`` line tells its ports, and a slave is ready once it also
    logged ``ha_master_connected`` (it follows its master)."""

    def __init__(self, spec: Spec, argv: list[str], width: int) -> None:
        self.spec = spec
        self.name = spec.name
        self.width = width
        self.port: int | None = None
        self.vip_port: int | None = None
        self.listening = False
        self.following = spec.role != SLAVE
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

    @property
    def ready(self) -> bool:
        return self.listening and self.following

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
            self._watch(line)
            emit(sys.stdout, f"{self.name:<{self.width}} | {line}\n")

    def _watch(self, line: str) -> None:
        if not self.listening and _event(line, "listening"):
            match, vip = PORT.search(line), VIP_PORT.search(line)
            self.port = int(match[1]) if match else None
            self.vip_port = int(vip[1]) if vip else None
            self.listening = True
        elif not self.following and _event(line, "ha_master_connected"):
            self.following = True

    def exited(self) -> bool:
        return self.proc.poll() is not None and self.fd is None

    def describe(self) -> str:
        """Its endpoints, for the "cluster ready" lines."""
        where = f"{self.name:<{self.width}} 127.0.0.1:{self.port}"
        if self.spec.role == NAMESRV:
            return where
        role = f"SLAVE of {self.spec.group}" if self.spec.role == SLAVE else self.spec.role
        vip = f"VIP :{self.vip_port}" if self.vip_port is not None else "no VIP port"
        assert self.port is not None
        return f"{where:<{self.width + 17}} {role:<18} {vip}  HA :{self.port + HA_OFFSET}"


def _event(line: str, event: str) -> bool:
    """Whether a log line (console or JSON) is the event ``event``."""
    return f" {event} " in line or f'"{event}"' in line


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

    def argv(self, spec: Spec) -> list[str]:
        """``spec.argv`` with its data under --data, console logs, and with --ephemeral port 0
        and the name server's real address."""
        argv = [*spec.argv, "--log-format", "console"]
        if spec.role == NAMESRV:
            argv += ["--set", f"kvConfigPath={self.data}/namesrv/kvConfig.json"]
        else:
            argv += ["--set", f"storePathRootDir={self.data}/{spec.name}"]
        if self.ephemeral:
            argv += ["--listen-port", "0"]
            if spec.role != NAMESRV:
                argv += ["-n", f"127.0.0.1:{self.servers[0].port}"]
        return argv

    def start(self, specs: list[Spec]) -> bool:
        """In tiers -- the name server, the masters, the slaves -- each ready before the next
        starts, so brokers register at once and slaves find their masters."""
        width = max(8, *(len(spec.name) for spec in specs))
        for tier in sorted({spec.tier for spec in specs}):
            wave = []
            for spec in specs:
                if spec.tier == tier:
                    wave.append(Server(spec, self.argv(spec), width))
                    say(f"{spec.name} started, pid {wave[-1].proc.pid}")
            self.servers += wave
            if not self.wait_ready(wave):
                return False
        return True

    def wait_ready(self, wave: list[Server]) -> bool:
        """Until each server of ``wave`` is ready; False on a stop signal or a failure. A slave
        that does not follow its master within FOLLOW_TIMEOUT is passed with a warning (it
        keeps trying)."""
        began = time.monotonic()
        while not all(server.ready for server in wave):
            if self.signal is not None:
                return False
            for server in wave:
                if server.exited():
                    say(f"{server.name} failed to start")
                    return False
                if server.listening and server.port is None:
                    say(f"{server.name}: no port in its listening line")
                    return False
                if not server.following and time.monotonic() - began > FOLLOW_TIMEOUT:
                    say(f"{server.name} has not reached its master yet; it keeps trying")
                    server.following = True
            self.pump(0.2)
        return True

    def watch(self) -> None:
        """Until a stop signal, or until a server exits by itself."""
        while self.signal is None:
            if any(s.proc.poll() is not None for s in self.servers):
                say("a process exited; stopping the cluster")
                return
            self.pump(0.2)

    def stop(self) -> bool:
        """Slaves first, then masters (they unregister from the name server), then the name
        server: SIGTERM, up to STOP_TIMEOUT, then SIGKILL. True when every server exited 0."""
        if self.signal is not None:
            say(f"{signal.Signals(self.signal).name}: stopping the cluster")
        for tier in sorted({s.spec.tier for s in self.servers}, reverse=True):
            group = [s for s in self.servers if s.spec.tier == tier]
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


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="a local name server and two broker groups")
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
    parser.add_argument(
        "--slaves",
        type=int,
        default=0,
        metavar="N",
        help=f"N slaves (brokerId 1..N) per broker group, 0 to {MAX_SLAVES} (default: 0)",
    )
    parser.add_argument(
        "--sync",
        action="store_true",
        help="SYNC_MASTER masters: a send is answered once a slave holds it (needs --slaves)",
    )
    args = parser.parse_args(argv)
    if not 0 <= args.slaves <= MAX_SLAVES:
        parser.error(f"--slaves: 0 to {MAX_SLAVES}, got {args.slaves}")
    if args.sync and not args.slaves:
        parser.error("--sync needs --slaves 1 or more (else every send is SLAVE_NOT_AVAILABLE)")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    die_with_parent(os.getppid())  # when `make` dies, stop the cluster too
    cluster = Cluster(args.data.resolve(), args.ephemeral)
    for signum in STOP_SIGNALS:
        signal.signal(signum, cluster.on_signal)
    cluster.data.mkdir(parents=True, exist_ok=True)
    if cluster.start(plan(args.slaves, args.sync)):
        for server in cluster.servers:
            say(server.describe())
        count = len(cluster.servers)
        say(f"cluster ready ({count} processes); stop it with Ctrl-C or `kill {os.getpid()}`")
        cluster.watch()
    clean = cluster.stop()
    return 0 if clean and cluster.signal is not None else 1


if __name__ == "__main__":
    sys.exit(main())
