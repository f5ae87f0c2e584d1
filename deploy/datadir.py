"""The launcher's data directory (``./data`` by default): one launcher at a time holds its lock
file, and ``mqcluster --reset`` empties it, but never while a launcher holds it.

The lock is an ``flock`` on ``DIR/mqcluster.pid`` (which holds the launcher's PID, for the
message): the kernel drops it when the launcher exits, however it exits, so a stale file
never blocks anyone. ``--reset`` removes only what the launcher made -- ``namesrv``, the
brokers' directories and the lock file -- and names anything else it leaves alone.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
from collections.abc import Iterable
from pathlib import Path

LOCK_FILE = "mqcluster.pid"


class Busy(Exception):
    """A launcher holds the directory's lock; ``str()`` says which."""


def shown(path: Path) -> str:
    """``path`` as the user thinks of it: ``./data`` under the current directory."""
    try:
        return f"./{path.relative_to(Path.cwd())}"
    except ValueError:
        return str(path)


def lock(data: Path) -> int:
    """Take ``data``'s lock for this process (the returned fd holds it; it is closed on exec,
    so the servers do not hold it); Busy when a running launcher holds it."""
    data.mkdir(parents=True, exist_ok=True)
    fd = os.open(data / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.read(fd, 32).decode(errors="replace").strip() or "?"
        os.close(fd)
        raise Busy(f"a cluster (launcher pid {holder}) is running from {shown(data)}") from None
    os.ftruncate(fd, 0)
    os.write(fd, f"{os.getpid()}\n".encode())
    return fd


def _size(path: Path) -> int:
    if not path.is_dir() or path.is_symlink():
        return path.lstat().st_size
    return sum(p.lstat().st_size for p in path.rglob("*"))


def _human(size: int) -> str:
    value = float(size)
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "bytes" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def reset(data: Path, ours: Iterable[str]) -> list[str]:
    """Empty ``data`` of the entries named ``ours`` (and the lock file), then remove it if
    nothing else is left; what happened, line by line. Busy while a launcher runs from it."""
    if not data.is_dir():
        return [f"nothing to remove: {shown(data)} does not exist"]
    fd = lock(data)
    try:
        names = {*ours, LOCK_FILE}
        gone = [p for p in sorted(data.iterdir()) if p.name in names and p.name != LOCK_FILE]
        size = sum(_size(p) for p in gone)
        for path in gone:
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink()
        (data / LOCK_FILE).unlink()
    finally:
        os.close(fd)
    left = sorted(p.name for p in data.iterdir())
    report = [
        f"removed {', '.join(f'{shown(data)}/{p.name}' for p in gone)} ({_human(size)})"
        if gone
        else f"nothing to remove in {shown(data)}"
    ]
    if left:
        report.append(f"left alone in {shown(data)} (not the launcher's): {', '.join(left)}")
    else:
        with contextlib.suppress(OSError):
            data.rmdir()
            report.append(f"removed {shown(data)}")
    return report
