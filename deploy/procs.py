"""The launcher's servers: what to start (``plan``) and one running child (``Server``).

Masters broker-a (10911) and broker-b (10921) and slave k of the master on port P, on
P + 4 + 20 (k - 1): a broker holds four ports, listenPort - 2 (VIP) to listenPort + 1 (HA,
forced), so no two collide. Each server's metrics port is its own default, listenPort + 1000
(``METRICS_OFFSET``): the name server 10876, broker-a 11911, broker-b 11921,
their first slaves 11915 and 11925; the launcher sets none.

``--failover`` (``failover_plan``): the name server, etcd (``aiorocketmq.deploy.etcd``) and one
broker group, broker-a, of three replicas in controller mode -- broker-a-1, -2 and -3, brokerId
1 to 3, on the ports of broker-a and its first two slaves (10911, 10915, 10935) -- which elect
their master in etcd.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, NamedTuple, TextIO

from aiorocketmq.deploy import etcd

CONF_DIR = Path(__file__).resolve().parent / "conf"  # package data: deploy/conf/*.conf
NAMESRV = "namesrv"
MASTERS = (("broker-a", 10911), ("broker-b", 10921))  # brokerName, listenPort in its conf file
SLAVE = "SLAVE"
REPLICA = "REPLICA"  # --failover: a controller-mode broker, master or slave as etcd decides
FAILOVER_GROUP = "broker-a"
FAILOVER_REPLICAS = 3
SLAVE_STRIDE = 20  # ports between slave k and slave k + 1 of the same master
MAX_SLAVES = 9
HA_OFFSET = 1  # the HA port is listenPort + 1, forced (broker/listen.py, BrokerStartup)
# a server's default metricsPort is listenPort + this (remoting/metrics_port.py: the launcher
# imports no server code; tests/deploy checks that the two agree)
METRICS_OFFSET = 1000
PORT = re.compile(r"\bport=(\d+)")
VIP_PORT = re.compile(r"\bvip_port=(\d+)")
METRICS_PORT = re.compile(r"\bmetrics_port=(\d+)")
EPOCH = re.compile(r"\bepoch=(\d+)")
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
    emit(sys.stderr, f"mqcluster: {text}\n")


class Spec(NamedTuple):
    """One server: ``argv`` (after ``python``) starts it by hand from the repository root, as
    the README shows; the launcher adds its own options (``Cluster.argv``)."""

    name: str
    role: str  # namesrv, etcd, ASYNC_MASTER, SYNC_MASTER, SLAVE or REPLICA
    group: str  # the brokerName ("" for the name server)
    port: int  # its listenPort without --ephemeral
    argv: list[str]

    @property
    def metrics_port(self) -> int:
        """Its metrics port without --ephemeral: the servers' default, listenPort + 1000."""
        return self.port + METRICS_OFFSET

    @property
    def tier(self) -> int:
        """0 the name server (and etcd), 1 a master (or a controller-mode replica), 2 a
        slave: started in this order, stopped in reverse."""
        return 0 if self.role in (NAMESRV, etcd.ETCD) else 2 if self.role == SLAVE else 1


def slave_port(master_port: int, k: int) -> int:
    """Slave ``k`` (1..) of the master on ``master_port``. A broker holds listenPort - 2 (VIP)
    to listenPort + 1 (HA): masters P - 2 .. P + 1, slave 1 P + 2 .. P + 5, slave k 20 ports
    further on; with masters 10 apart, no two brokers share a port."""
    return master_port + 4 + SLAVE_STRIDE * (k - 1)


def plan(slaves: int = 0, sync: bool = False) -> list[Spec]:
    """The servers in start order: the name server, the masters, slave 1 of each group, ..."""
    todo = [
        (
            NAMESRV,
            NAMESRV,
            "",
            9876,
            ["-m", "aiorocketmq.namesrv", "-c", "deploy/conf/namesrv.conf"],
        )
    ]
    role = "SYNC_MASTER" if sync else "ASYNC_MASTER"
    for name, port in MASTERS:
        argv = ["-m", "aiorocketmq.broker", "-c", f"deploy/conf/{name}.conf"]
        if sync:  # the conf files say ASYNC_MASTER
            argv += ["--set", f"brokerRole={role}"]
        todo.append((name, role, name, port, argv))
    for k in range(1, slaves + 1):
        for name, master_port in MASTERS:
            port = slave_port(master_port, k)
            argv = [
                "-m",
                "aiorocketmq.broker",
                "-c",
                f"deploy/conf/{name}-s.conf",
            ]  # slave 1's file
            if k > 1:
                argv += ["--set", f"brokerId={k}", "--set", f"listenPort={port}"]
            todo.append((f"{name}-s{k}", SLAVE, name, port, argv))
    return [Spec(*each) for each in todo]


def failover_plan() -> list[Spec]:
    """``--failover``: the name server, etcd, then broker-a's three replicas in controller mode
    (brokerId 1..3, SYNC_MASTER once elected, a put acknowledged once every SyncStateSet
    member holds it: allAckInSyncStateSet), their controllerAddr etcd's client port."""
    ours = plan()[0:1]
    ours.append(Spec(etcd.ETCD, etcd.ETCD, "", etcd.CLIENT_PORT, []))  # argv: Cluster.argv
    master_port = dict(MASTERS)[FAILOVER_GROUP]
    for k in range(1, FAILOVER_REPLICAS + 1):
        port = master_port if k == 1 else slave_port(master_port, k - 1)
        argv = ["-m", "aiorocketmq.broker", "-c", f"deploy/conf/{FAILOVER_GROUP}.conf"]
        for key, value in (
            ("brokerId", k),
            ("listenPort", port),
            ("brokerRole", "SYNC_MASTER"),
            ("enableControllerMode", "true"),
            ("controllerAddr", f"127.0.0.1:{etcd.CLIENT_PORT}"),
            ("allAckInSyncStateSet", "true"),
        ):
            argv += ["--set", f"{key}={value}"]
        ours.append(Spec(f"{FAILOVER_GROUP}-{k}", REPLICA, FAILOVER_GROUP, port, argv))
    return ours


def conf_path(arg: str) -> str:
    """A ``deploy/conf/...`` argument as the installed file (any other argument as it is)."""
    prefix = "deploy/conf/"
    return str(CONF_DIR / arg.removeprefix(prefix)) if arg.startswith(prefix) else arg


def event_in(line: str, event: str) -> bool:
    """Whether a log line (console or JSON) is the event ``event``."""
    return f" {event} " in line or f'"{event}"' in line


class Server:
    """One child process, in the current directory. Its output reaches ours line by line with
    its name in front, read by ``Cluster.pump``; its ``listening`` line tells its ports, a
    slave is ready once it also logged ``ha_master_connected`` (it follows its master), and
    ``metrics_listening`` tells the metrics port (a server without metrics warns that
    ``metricsPort`` is not one of its keys: then it has none). A controller-mode replica's
    ``controller_role role=MASTER`` line tells the epoch it became master at (``master_epoch``).

    etcd (``argv`` is its whole command line) is ready once its ``/health`` says so
    (``check``), on the client port it was given (``etcd_port``), its metrics there too."""

    def __init__(
        self, spec: Spec, argv: list[str], width: int, etcd_port: int | None = None
    ) -> None:
        self.spec = spec
        self.name = spec.name
        self.width = width
        self.port: int | None = None
        self.vip_port: int | None = None
        self.metrics_port: int | None = None
        self.listening = False
        self.following = spec.role != SLAVE
        self.metrics_known = False  # metrics_listening seen, or metricsPort refused
        self.master_epoch: int | None = None  # a replica: the epoch it last became master at
        self.etcd_port = etcd_port
        self._next_check = 0.0
        self.proc = subprocess.Popen(
            argv if spec.role == etcd.ETCD else [sys.executable, *argv],
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
        return self.listening and self.following and self.metrics_known

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

    def check(self) -> None:
        """etcd: whether it is ready yet (``/health``, at most every 0.2 s); a no-op for the
        others, whose lines say it."""
        if self.etcd_port is None or self.listening or time.monotonic() < self._next_check:
            return
        self._next_check = time.monotonic() + 0.2
        if etcd.healthy(self.etcd_port):
            self.port = self.metrics_port = self.etcd_port
            self.listening = self.metrics_known = True

    def _watch(self, line: str) -> None:
        if self.spec.role == REPLICA and event_in(line, "controller_role"):
            epoch = EPOCH.search(line)
            if "role=MASTER" in line and epoch:
                self.master_epoch = int(epoch[1])
            return
        if not self.listening and event_in(line, "listening"):
            match, vip = PORT.search(line), VIP_PORT.search(line)
            self.port = int(match[1]) if match else None
            self.vip_port = int(vip[1]) if vip else None
            self.listening = True
        elif not self.following and event_in(line, "ha_master_connected"):
            self.following = True
        elif event_in(line, "metrics_listening"):
            match = METRICS_PORT.search(line)
            self.metrics_port = int(match[1]) if match else None
            self.metrics_known = True
        elif "config_key_unknown" in line and "metricsPort" in line:
            self.metrics_known = True  # a server without metrics

    def exited(self) -> bool:
        return self.proc.poll() is not None and self.fd is None

    @property
    def stopped_clean(self) -> bool:
        """It exited 0 -- or, etcd, by the SIGTERM it was stopped with (etcd ends by it)."""
        code = self.proc.poll()
        return code == 0 or (self.spec.role == etcd.ETCD and code == -signal.SIGTERM)

    def how_it_ended(self) -> str:
        """How it ended: "exited with code 1" or "was killed by SIGKILL"."""
        code = self.proc.poll()
        if code is not None and code < 0:
            with contextlib.suppress(ValueError):
                return f"was killed by {signal.Signals(-code).name}"
            return f"was killed by signal {-code}"
        return f"exited with code {code}"

    def describe(self) -> str:
        """Its endpoints, for the "cluster ready" lines."""
        where = f"{self.name:<{self.width}} 127.0.0.1:{self.port}"
        metrics = ""
        if self.metrics_port is not None:
            metrics = f"metrics http://127.0.0.1:{self.metrics_port}/metrics"
        if self.spec.role in (NAMESRV, etcd.ETCD):
            return f"{where:<{self.width + 60}} {metrics}".rstrip()
        role = f"SLAVE of {self.spec.group}" if self.spec.role == SLAVE else self.spec.role
        if self.spec.role == REPLICA:
            role = f"{self.spec.group} replica"
        vip = f"VIP :{self.vip_port}" if self.vip_port is not None else "no VIP port"
        assert self.port is not None
        ports = f"{where:<{self.width + 17}} {role:<18} {vip}  HA :{self.port + HA_OFFSET}"
        return f"{ports:<{self.width + 60}} {metrics}".rstrip()
