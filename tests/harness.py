"""Real server processes for tests: start, wait for `listening`, read JSON logs, stop by PID."""

from __future__ import annotations

import contextlib
import json
import os
import resource
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


class ServerProcess:
    """A child process whose stdout is JSON log lines (structlog, as runtime.run sets it up)."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        env: dict[str, str] | None = None,
        open_files: int | None = None,
        default_metrics_port: bool = False,
        prefix: Sequence[str] = (),
    ) -> None:
        """``open_files``: the child's RLIMIT_NOFILE, soft and hard (it cannot raise it);
        ``default_metrics_port``: the server's own default ``metricsPort``, not any free port;
        ``prefix``: a command that execs the interpreter in place (``ip netns exec NS``: the
        child's PID stays the server's, so signals reach it)."""
        own = argv if default_metrics_port else with_metrics_port(argv)
        self.argv = [*prefix, sys.executable, *own]
        self.lines: list[str] = []
        self._cond = threading.Condition()
        self.proc = subprocess.Popen(
            self.argv,
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env={**os.environ, **(env or {})},
            text=True,
            preexec_fn=None if open_files is None else _limit_open_files(open_files),
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            with self._cond:
                self.lines.append(line.rstrip("\n"))
                self._cond.notify_all()

    @property
    def events(self) -> list[dict[str, Any]]:
        out = []
        with self._cond:
            lines = list(self.lines)
        for line in lines:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if isinstance(event, dict):
                out.append(event)
        return out

    def wait_for(self, event: str, timeout: float = 20.0, count: int = 1) -> dict[str, Any]:
        """The ``count``-th log event named ``event``; raises if the process dies or time is up."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                found = [e for e in self.events if e.get("event") == event]
                if len(found) >= count:
                    return found[count - 1]
                if self.proc.poll() is not None and not self._reader.is_alive():
                    raise RuntimeError(f"process exited {self.proc.returncode} before {event!r}")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"no {event!r} event within {timeout} s")
                self._cond.wait(min(left, 0.2))

    def listening_port(self, timeout: float = 60.0) -> int:
        return int(self.wait_for("listening", timeout)["port"])

    def metrics_port(self, timeout: float = 20.0) -> int:
        """Where the server serves /metrics (its ``metrics_listening`` event)."""
        return int(self.wait_for("metrics_listening", timeout)["metrics_port"])

    def stop(self, timeout: float = 30.0) -> int:
        """SIGTERM, wait up to ``timeout``, then SIGKILL; returns the exit code. A broker's
        graceful stop drains requests for up to 5 s, then flushes and saves its tables: 30 s
        leaves room for a busy machine (a stop that needs no drain takes well under 1 s)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._reader.join(5)
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        return self.proc.returncode

    def dump(self) -> str:
        return "\n".join(self.lines)


def with_metrics_port(argv: Sequence[str]) -> list[str]:
    """Our servers serve /metrics on listenPort + 1000 by default; a test server takes any free
    port instead (a test that restarts a server on its port must not meet the metrics port
    taken), unless the test chose one (``metricsPort``)."""
    if list(argv[:2]) in (["-m", "aiorocketmq.broker"], ["-m", "aiorocketmq.namesrv"]) and not any(
        "metricsPort" in arg for arg in argv
    ):
        return [*argv, "--set", "metricsPort=0"]
    return list(argv)


def _limit_open_files(n: int) -> Callable[[], None]:
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (n, n))

    return limit


@contextlib.contextmanager
def serving(argv: Sequence[str], **options: object) -> Iterator[ServerProcess]:
    """A server process, listening; afterwards stopped by its PID, its log printed, and its
    exit code checked to be 0 (it survived whatever the test did to it)."""
    proc = ServerProcess(argv, **options)  # type: ignore[arg-type]
    try:
        proc.listening_port()
        yield proc
    finally:
        code = proc.stop()
        print(proc.dump())
    assert code == 0, f"{' '.join(argv)} exited {code}"
