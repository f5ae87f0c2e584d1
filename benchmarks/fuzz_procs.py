"""Server processes for the fuzzer and the soak: started by PID, logs kept, RSS read.

``Server`` runs ``python -m aiorocketmq.namesrv`` or ``python -m aiorocketmq.broker`` with stdout
and stderr on one pipe; a reader thread parses each JSON log line as it arrives and keeps what the
judges need: counts per level, every warning and error (time, event, fields), lines that are not
JSON (a traceback printed outside structlog), and the last lines for a dump. A restart (clean or
SIGKILL) keeps the same port and the same log, each start marked by ``incarnation``.
"""

from __future__ import annotations

import io
import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
from collections import Counter, deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
NOTABLE = ("warning", "error", "critical", "exception")


@dataclass(frozen=True)
class LogEvent:
    at: float  # time.monotonic() when the line was read
    level: str
    event: str
    fields: dict[str, Any]
    incarnation: int


@dataclass
class Server:
    """One server process at a time (restarts replace it), on one port."""

    name: str
    argv: list[str]  # after the interpreter, without --listen-port
    port: int = 0
    incarnation: int = 0
    levels: Counter[str] = field(default_factory=Counter)
    notable: list[LogEvent] = field(default_factory=list)  # warnings and errors
    raw: list[str] = field(default_factory=list)  # lines that are not JSON (first 200)
    tail: deque[str] = field(default_factory=lambda: deque(maxlen=200))
    proc: subprocess.Popen[bytes] | None = None
    start_seconds: list[float] = field(default_factory=list)  # spawn -> `listening`, each start
    metrics_port: int | None = None  # from its `metrics_listening` event
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _reader: threading.Thread | None = None

    @property
    def addr(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def start(self, timeout: float = 120.0) -> None:
        """Spawn and wait for ``listening``; the first start takes any free port, later ones
        the same port."""
        self.incarnation += 1
        cmd = [sys.executable, *self.argv, "--listen-port", str(self.port)]
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        began = time.monotonic()
        self.proc = subprocess.Popen(
            cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, bufsize=0
        )
        self.port = self._wait_listening(timeout)
        self.start_seconds.append(time.monotonic() - began)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _wait_listening(self, timeout: float) -> int:
        assert self.proc is not None and self.proc.stdout is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.proc.stdout], [], [], 0.5)
            if not ready:
                if self.proc.poll() is not None:
                    break
                continue
            line = self.proc.stdout.readline()
            if not line:
                break
            event = self._take(line)
            if event is not None and event.get("event") == "listening":
                return int(event["port"])
        self.stop()
        raise RuntimeError(f"{self.name} did not log `listening`:\n" + "\n".join(self.tail))

    def _read(self) -> None:
        proc = self.proc
        assert proc is not None and proc.stdout is not None
        # buffered from here on: ``_wait_listening`` read the raw pipe a line at a time
        with io.BufferedReader(proc.stdout, 1 << 16) as lines:  # type: ignore[type-var]
            for line in lines:
                self._take(line)

    def _take(self, raw: bytes) -> dict[str, Any] | None:
        text = raw.decode(errors="replace").rstrip("\n")
        now = time.monotonic()
        with self._lock:
            self.tail.append(text)
            try:
                event = json.loads(text)
            except ValueError:
                event = None
            if not isinstance(event, dict):
                if text.strip() and len(self.raw) < 200:
                    self.raw.append(text)
                return None
            if event.get("event") == "metrics_listening":
                self.metrics_port = int(event.get("metrics_port") or 0) or None
            level = str(event.get("level", "?"))
            self.levels[level] += 1
            if level in NOTABLE:
                name = str(event.get("event", "?"))
                rest = {k: v for k, v in event.items() if k not in ("event", "level", "timestamp")}
                self.notable.append(LogEvent(now, level, name, rest, self.incarnation))
            return event

    def events_since(self, since: float, levels: Sequence[str] = NOTABLE) -> list[LogEvent]:
        with self._lock:
            return [e for e in self.notable if e.at >= since and e.level in levels]

    def errors(self) -> list[LogEvent]:
        return self.events_since(0.0, ("error", "critical", "exception"))

    def stop(self, timeout: float = 20.0) -> int | None:
        """SIGTERM, then SIGKILL after ``timeout``; the exit code (None if never started)."""
        proc = self.proc
        if proc is None:
            return None
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self._join()
        return proc.returncode

    def kill(self) -> None:
        """SIGKILL, as a crash or an OOM kill would end it."""
        proc = self.proc
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
        self._join()

    def _join(self) -> None:
        if self._reader is not None:
            self._reader.join(10)
        if self.proc is not None and self.proc.stdout is not None:
            self.proc.stdout.close()

    def restart(self, *, crash: bool) -> float:
        """Stop (SIGTERM, or SIGKILL if ``crash``) and start again on the same port; the
        seconds from spawn to ``listening``."""
        if crash:
            self.kill()
        else:
            self.stop()
        self.start()
        return self.start_seconds[-1]

    def memory(self) -> dict[str, int]:
        return memory_kib(self.pid)


def memory_kib(pid: int) -> dict[str, int]:
    """VmRSS, RssAnon and RssFile of ``pid`` in KiB (/proc/<pid>/status); {} once it is gone."""
    out: dict[str, int] = {}
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return out
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "RssAnon", "RssFile", "RssShmem"):
            out[key] = int(value.split()[0])
    return out


def sets(values: dict[str, str]) -> list[str]:
    return [arg for key, value in values.items() for arg in ("--set", f"{key}={value}")]


def namesrv(root: Path, **more: str) -> Server:
    values = {"kvConfigPath": str(root / "namesrv" / "kv.json"), "metricsPort": "0", **more}
    return Server("namesrv", ["-m", "aiorocketmq.namesrv", *sets(values)])


def broker(root: Path, namesrv_addr: str, conf: dict[str, str]) -> Server:
    """A broker started from a config file (``-c``, the name server in it too), as in
    production: UPDATE_BROKER_CONFIG persists to it, and a restart reads what it persisted."""
    path = root / "broker.conf"
    if not path.exists():
        values = {**conf, "namesrvAddr": namesrv_addr}
        path.write_text("".join(f"{k}={v}\n" for k, v in values.items()))
    return Server("broker", ["-m", "aiorocketmq.broker", "-c", str(path)])


def warning_rates(events: Sequence[LogEvent], since: float, until: float) -> tuple[float, int]:
    """(warnings per second on average over [since, until), most warnings in any one second)."""
    stamps = [e.at for e in events if since <= e.at < until and e.level == "warning"]
    seconds = max(until - since, 1e-9)
    per: Counter[int] = Counter(int(s - since) for s in stamps)
    return len(stamps) / seconds, max(per.values(), default=0)
