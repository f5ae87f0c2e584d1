"""``mqcluster`` (``make run``, deploy/launcher.py) as the deploy tests drive it: a launcher on
free ports whose output is read only when asked, and the checks that none of its servers
outlives it. It runs as ``python -m aiorocketmq.deploy.launcher`` from the repository root: the
console script of a venv installed elsewhere would run that checkout's code."""

from __future__ import annotations

import contextlib
import os
import re
import select
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.harness import ROOT

LAUNCHER = [sys.executable, "-m", "aiorocketmq.deploy.launcher"]
NAMES = ["namesrv", "broker-a", "broker-b"]


class Launcher:
    """mqcluster --ephemeral --data DIR; stdout and stderr through one pipe that this test
    reads only when asked (select with a deadline), so it can also stop reading altogether."""

    def __init__(self, data: Path, *options: str, names: list[str] | None = None) -> None:
        argv = [*LAUNCHER, "--ephemeral", "--data", str(data), *options]
        self.proc = subprocess.Popen(
            argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        )
        self.output = b""
        self.names = names or NAMES  # the servers it must start, in order
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
        pids = re.findall(r"mqcluster: (\S+) started, pid (\d+)", self.text)
        self.children = {name: int(pid) for name, pid in pids}
        assert list(self.children) == self.names, self.text
        return self.children

    def wait_exit(self, timeout: float = 30.0) -> int:
        """Keep reading (a full pipe must not block the launcher) until it exits; its code."""
        deadline = time.monotonic() + timeout
        while self.read(max(0.0, deadline - time.monotonic())):
            assert time.monotonic() < deadline, f"still running after {timeout} s:\n{self.text}"
        return self.proc.wait(max(0.1, deadline - time.monotonic()))

    def run_beside(
        self, argv: list[str], env: dict[str, str], timeout: float = 300
    ) -> tuple[str, int]:
        """Run ``argv`` from the repository root (stdout and stderr together), reading this
        launcher's output meanwhile so its pipe never fills and blocks the servers' logging;
        its output and exit code. ``timeout`` only ends a hung run (a busy machine takes
        several times the usual seconds): killed, it fails its test by its exit code."""
        with tempfile.TemporaryFile() as out:
            proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
            deadline = time.monotonic() + timeout
            while proc.poll() is None:
                if time.monotonic() > deadline:
                    proc.kill()
                self.read(0.1)
            out.seek(0)
            return out.read().decode(errors="replace"), proc.wait()

    @property
    def text(self) -> str:
        return self.output.decode(errors="replace")

    def endpoints(self) -> dict[str, str]:
        """What the launcher printed before "cluster ready": by server, its address, then for a
        broker its role, VIP and HA ports."""
        found = re.findall(r"^mqcluster:\s+(\S+)\s+(127\.0\.0\.1:\d+.*)$", self.text, re.M)
        return {name: rest.strip() for name, rest in found}

    def addr(self, name: str) -> str:
        return self.endpoints()[name].split()[0]

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
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            if not gone(pid) and (b"deploy/conf/" in cmdline or b"/acl/" in cmdline):  # --acl
                os.kill(pid, signal.SIGKILL)


def close(launcher: Launcher) -> None:
    """Kill the launcher if it still runs, then every server of it still alive (by PID); print
    its output."""
    pids = {*launcher.children.values(), *children_of(launcher.proc.pid)}
    if launcher.proc.poll() is None:
        launcher.proc.kill()
        launcher.proc.wait()
    kill_survivors(sorted(pids))
    if launcher.proc.stdout is not None:
        launcher.proc.stdout.close()
    print(launcher.text)
