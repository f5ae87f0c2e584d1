"""Real etcd servers for tests: one member or a cluster of three, on free ports, their data in
a temp dir, stopped by PID.

``make setup`` installs Debian's etcd-server when ``etcd`` is missing; without it the tests
that use these are skipped, saying why. Reuse::

    with etcd_server(tmp_path) as etcd:         # one member
        etcd.endpoint                           # "127.0.0.1:P", a controllerAddr
        etcd.restart()                          # same ports and data
        etcd.pause(); etcd.resume()             # SIGSTOP / SIGCONT
    with etcd_cluster(tmp_path, 3) as cluster:  # three members, one raft group
        cluster.controller_addr                 # "127.0.0.1:P1;127.0.0.1:P2;127.0.0.1:P3"
        cluster.members[0].stop()
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.ports import free_listen_port


def etcd_binary() -> str:
    """etcd's path; skips the test when it is not installed."""
    path = shutil.which("etcd")
    if path is None:
        pytest.skip("etcd is not installed (make setup installs Debian's etcd-server)")
    return path


class EtcdMember:
    """One etcd process. ``initial_cluster`` names every member (``name=http://peer``)."""

    def __init__(self, base: Path, name: str, client_port: int, peer_port: int, token: str) -> None:
        self.name = name
        self.client_port = client_port
        self.peer_port = peer_port
        self.token = token
        self.data_dir = base / f"{name}.etcd"
        self.log = base / f"{name}.log"
        self.initial_cluster = f"{name}={self.peer_url}"
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def endpoint(self) -> str:
        return f"127.0.0.1:{self.client_port}"

    @property
    def client_url(self) -> str:
        return f"http://{self.endpoint}"

    @property
    def peer_url(self) -> str:
        return f"http://127.0.0.1:{self.peer_port}"

    def start(self) -> None:
        assert self.proc is None or self.proc.poll() is not None, "already running"
        argv = [
            etcd_binary(),
            "--name", self.name,
            "--data-dir", str(self.data_dir),
            "--listen-client-urls", self.client_url,
            "--advertise-client-urls", self.client_url,
            "--listen-peer-urls", self.peer_url,
            "--initial-advertise-peer-urls", self.peer_url,
            "--initial-cluster", self.initial_cluster,
            "--initial-cluster-state", "new",
            "--initial-cluster-token", self.token,
            "--logger", "zap",
        ]  # fmt: skip
        with self.log.open("ab") as log:
            self.proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)

    def healthy(self) -> bool:
        """etcd's /health says true: this member serves reads through a leader."""
        try:
            with urllib.request.urlopen(f"{self.client_url}/health", timeout=2) as resp:
                return bool(json.loads(resp.read()).get("health") == "true")
        except (OSError, ValueError, urllib.error.URLError):
            return False

    def wait_healthy(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while not self.healthy():
            if self.proc is not None and self.proc.poll() is not None:
                raise RuntimeError(f"etcd {self.name} exited {self.proc.returncode}: {self.dump()}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"etcd {self.name} not healthy in {timeout} s: {self.dump()}")
            time.sleep(0.05)

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM by PID (SIGCONT first, should it be paused), then SIGKILL."""
        proc = self.proc
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGCONT)
        proc.terminate()
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def restart(self) -> None:
        """Stopped and started again on its ports and data."""
        self.stop()
        self.start()
        self.wait_healthy()

    def pause(self) -> None:
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGSTOP)

    def resume(self) -> None:
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGCONT)

    def dump(self) -> str:
        try:
            return self.log.read_text(errors="replace")[-4000:]
        except OSError:
            return ""


class EtcdCluster:
    def __init__(self, members: list[EtcdMember]) -> None:
        self.members = members

    @property
    def controller_addr(self) -> str:
        """Every member's client endpoint, as ``controllerAddr`` takes them."""
        return ";".join(m.endpoint for m in self.members)


def _member_ports(taken: set[int]) -> tuple[int, int]:
    """A client port and the peer port after it, free now and not ``taken`` by another
    member of the cluster being made (none of which listens yet)."""
    while True:
        client = free_listen_port(1)
        if not {client, client + 1} & taken:
            taken |= {client, client + 1}
            return client, client + 1


@contextlib.contextmanager
def etcd_cluster(base: Path, size: int = 3) -> Iterator[EtcdCluster]:
    """``size`` etcd members forming one cluster, healthy; all stopped by PID on exit."""
    etcd_binary()
    token = f"t-{uuid.uuid4().hex[:12]}"
    members, taken = [], set[int]()
    for i in range(size):
        client, peer = _member_ports(taken)
        members.append(EtcdMember(base, f"m{i}", client, peer, token))
    initial = ",".join(f"{m.name}={m.peer_url}" for m in members)
    for m in members:
        m.initial_cluster = initial
    try:
        for m in members:
            m.start()
        for m in members:
            m.wait_healthy()
        yield EtcdCluster(members)
    finally:
        for m in members:
            m.stop()


@contextlib.contextmanager
def etcd_server(base: Path) -> Iterator[EtcdMember]:
    """One etcd member, healthy; stopped by PID on exit."""
    with etcd_cluster(base, 1) as cluster:
        yield cluster.members[0]
