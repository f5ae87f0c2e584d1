"""``make run``: a local cluster without Docker -- a name server on 9876 and brokers broker-a
(10911) and broker-b (10921), data under ./data, logs to this terminal, Ctrl-C stops all.

Each process is started with this interpreter and stopped by its PID (SIGTERM, then SIGKILL).
"""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROCESSES = [
    ("namesrv ", ["-m", "namesrv", "-c", "deploy/conf/namesrv.conf", "--log-format", "console"]),
    ("broker-a", ["-m", "broker", "-c", "deploy/conf/broker-a.conf", "--log-format", "console"]),
    ("broker-b", ["-m", "broker", "-c", "deploy/conf/broker-b.conf", "--log-format", "console"]),
]


def pump(name: str, proc: subprocess.Popen[str], ready: threading.Event) -> None:
    assert proc.stdout is not None
    for line in proc.stdout:
        if " listening " in line or '"listening"' in line:
            ready.set()
        sys.stdout.write(f"{name} | {line}")
        sys.stdout.flush()


def start(name: str, argv: list[str]) -> tuple[subprocess.Popen[str], threading.Event]:
    proc = subprocess.Popen(
        [sys.executable, *argv],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # Ctrl-C reaches only us: we stop them in order
    )
    ready = threading.Event()
    threading.Thread(target=pump, args=(name, proc, ready), daemon=True).start()
    return proc, ready


def stop(procs: list[subprocess.Popen[str]]) -> int:
    for proc in reversed(procs):  # brokers first: they unregister from the name server
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
    return max((p.returncode or 0) for p in procs) if procs else 0


def main() -> int:
    (ROOT / "data").mkdir(exist_ok=True)
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt))
    procs: list[subprocess.Popen[str]] = []
    try:
        for name, argv in PROCESSES:
            proc, ready = start(name, argv)
            procs.append(proc)
            # one at a time, the name server first, so brokers register at once
            while not ready.wait(0.2):
                if proc.poll() is not None:
                    print(f"{name.strip()} failed to start", file=sys.stderr)
                    return stop(procs) or 1
        print(
            "cluster ready: namesrv 127.0.0.1:9876, broker-a :10911, broker-b :10921;"
            " Ctrl-C stops it",
            file=sys.stderr,
        )
        while all(p.poll() is None for p in procs):
            time.sleep(0.5)
        print("a process exited; stopping the cluster", file=sys.stderr)
        return stop(procs) or 1
    except KeyboardInterrupt:
        return stop(procs)


if __name__ == "__main__":
    sys.exit(main())
