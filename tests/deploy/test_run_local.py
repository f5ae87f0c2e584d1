"""`make run` (deploy/run_local.py) against real processes: the cluster stops on SIGTERM, SIGINT
and SIGHUP, with or without a reader on its output, and never outlives its launcher (issue
"`make run` orphans"). Each test runs its own cluster on free ports (`--ephemeral`)."""

from __future__ import annotations

import contextlib
import os
import re
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.harness import ROOT

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc, prctl")

SCRIPT = ROOT / "deploy" / "run_local.py"
NAMES = ["namesrv", "broker-a", "broker-b"]


class Launcher:
    """run_local.py --ephemeral --data DIR; stdout and stderr through one pipe that this test
    reads only when asked (select with a deadline), so it can also stop reading altogether."""

    def __init__(self, data: Path) -> None:
        argv = [sys.executable, str(SCRIPT), "--ephemeral", "--data", str(data)]
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.output = b""
        self.children: dict[str, int] = {}

    def read(self, timeout: float) -> bool:
        """Read what there is within ``timeout``; False at end of output."""
        assert self.proc.stdout is not None
        if self.proc.stdout.closed:
            return False
        fd = self.proc.stdout.fileno()
        if select.select([fd], [], [], timeout)[0]:
            chunk = os.read(fd, 65536)
            self.output += chunk
            return bool(chunk)
        return True

    def wait_ready(self, timeout: float = 30.0) -> dict[str, int]:
        """Read up to the `cluster ready` line; the servers' PIDs by name."""
        deadline = time.monotonic() + timeout
        while b"cluster ready" not in self.output:
            left = deadline - time.monotonic()
            assert left > 0, f"not ready within {timeout} s:\n{self.text}"
            assert self.read(left), f"launcher exited {self.proc.wait()}:\n{self.text}"
        pids = re.findall(r"run_local: (\S+) started, pid (\d+)", self.text)
        self.children = {name: int(pid) for name, pid in pids}
        assert list(self.children) == NAMES, self.text
        return self.children

    def wait_exit(self, timeout: float = 30.0) -> int:
        """Keep reading (a full pipe must not block the launcher) until it exits; its code."""
        deadline = time.monotonic() + timeout
        while self.read(max(0.0, deadline - time.monotonic())):
            assert time.monotonic() < deadline, f"still running after {timeout} s:\n{self.text}"
        return self.proc.wait(max(0.1, deadline - time.monotonic()))

    @property
    def text(self) -> str:
        return self.output.decode(errors="replace")

    def lines(self, name: str, event: str) -> list[int]:
        """Indexes of the output lines where server ``name`` logged ``event``."""
        pattern = re.compile(rf"^{re.escape(name)}\s+\| \S+ \[\w+\s*\] {event}\b")
        return [i for i, line in enumerate(self.text.splitlines()) if pattern.match(line)]


def gone(pid: int) -> bool:
    """True once ``pid`` has exited: reaped, or a zombie its new parent did not reap yet (when
    that parent is this test process, a subreaper, it reaps it here)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return True
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    if not fields["State"].strip().startswith("Z"):
        return False
    if int(fields["PPid"]) == os.getpid():
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)
    return True


def wait_all_gone(pids: list[int], timeout: float) -> list[int]:
    """Poll until every pid has exited; the survivors when time is up."""
    deadline = time.monotonic() + timeout
    while (alive := [p for p in pids if not gone(p)]) and time.monotonic() < deadline:
        time.sleep(0.05)
    return alive


def children_of(pid: int) -> list[int]:
    """The PIDs of ``pid``'s children, from /proc (empty once it is gone)."""
    found: list[int] = []
    for path in Path(f"/proc/{pid}/task").glob("*/children"):
        with contextlib.suppress(OSError):
            found += [int(child) for child in path.read_text().split()]
    return found


def kill_survivors(pids: list[int]) -> None:
    """SIGKILL, by PID, every server of ours still alive (its command line says it is ours)."""
    for pid in pids:
        with contextlib.suppress(OSError):
            if not gone(pid) and b"deploy/conf/" in Path(f"/proc/{pid}/cmdline").read_bytes():
                os.kill(pid, signal.SIGKILL)


@pytest.fixture
def launcher(tmp_path: Path) -> Iterator[Launcher]:
    started = Launcher(tmp_path)
    try:
        yield started
    finally:
        pids = {*started.children.values(), *children_of(started.proc.pid)}
        if started.proc.poll() is None:
            started.proc.kill()
            started.proc.wait()
        kill_survivors(sorted(pids))
        if started.proc.stdout is not None:
            started.proc.stdout.close()
        print(started.text)


@pytest.mark.parametrize(
    "signum", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP], ids=lambda s: s.name
)
def test_stop_signal_stops_brokers_then_namesrv_and_exits_0(
    launcher: Launcher, signum: signal.Signals
) -> None:
    """Issue "`make run` orphans": SIGTERM (`kill <pid>`), SIGINT (Ctrl-C) and SIGHUP (terminal
    closed) to the launcher stop every server -- the brokers before the name server, each
    with exit 0 -- and the launcher exits 0."""
    pids = launcher.wait_ready()
    launcher.proc.send_signal(signum)
    assert launcher.wait_exit() == 0, launcher.text
    assert wait_all_gone(list(pids.values()), 1) == []
    namesrv_stopping = launcher.lines("namesrv", "stopping")
    assert len(namesrv_stopping) == 1, launcher.text
    for broker in ("broker-a", "broker-b"):
        assert launcher.lines(broker, "stopped")[0] < namesrv_stopping[0], launcher.text


def test_closed_terminal_stops_cluster(launcher: Launcher) -> None:
    """Issue "`make run` orphans": the terminal closed -- SIGHUP with nobody left reading the
    launcher's output -- still stops every server and the launcher exits 0: a broken stdout
    neither kills its pump threads nor blocks the stop."""
    pids = launcher.wait_ready()
    assert launcher.proc.stdout is not None
    launcher.proc.stdout.close()
    launcher.proc.send_signal(signal.SIGHUP)
    assert launcher.proc.wait(30) == 0
    assert wait_all_gone(list(pids.values()), 1) == []


def test_servers_stop_by_themselves_when_launcher_is_killed(
    launcher: Launcher, tmp_path: Path
) -> None:
    """Issue "`make run` orphans": SIGKILL of the launcher leaves no server behind: each gets
    SIGTERM from the kernel (PR_SET_PDEATHSIG) and stops gracefully with nobody reading its
    output -- the brokers' abort files are gone, so their next start is a clean one."""
    pids = launcher.wait_ready()
    aborts = [tmp_path / broker / "abort" for broker in ("broker-a", "broker-b")]
    assert all(path.exists() for path in aborts)
    launcher.proc.kill()
    launcher.proc.wait()
    assert wait_all_gone(list(pids.values()), 15) == []
    assert not any(path.exists() for path in aborts)
