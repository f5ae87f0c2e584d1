"""``mqcluster --failover``'s etcd: the controller's store (broker/controller), one member on
loopback, its data under ``<data>/etcd``.

The binary is the one ``make setup`` installs (Debian's etcd-server, ``/usr/bin/etcd``), or any
``etcd`` on the PATH. Its client port is 12379 and its peer port 12380 (not etcd's own 2379 and
2380, where Debian's packaged service may already run); with ``--ephemeral`` both are free
ports chosen at start. It logs warnings and errors only (``--log-level warn``): the launcher
passes its lines on like the servers'. It is ready when its ``/health`` says true (it serves
reads through a leader); its ``/metrics`` is on the client port.
"""

from __future__ import annotations

import json
import shutil
import socket
import urllib.error
import urllib.request
from pathlib import Path

ETCD = "etcd"  # its Spec's name and role
ETCD_DIR = "etcd"  # under the data directory
CLIENT_PORT = 12379
PEER_PORT = 12380
MISSING = (
    "etcd is not installed: `make setup` installs Debian's etcd-server (or put etcd on the PATH)"
)


def binary() -> str | None:
    """etcd's path, or None."""
    return shutil.which("etcd")


def free_port() -> int:
    """A loopback port free now (the kernel's choice)."""
    with socket.create_server(("127.0.0.1", 0)) as probe:
        return int(probe.getsockname()[1])


def argv(path: str, data: Path, client_port: int, peer_port: int) -> list[str]:
    """One member named ``etcd``, plaintext on 127.0.0.1, data in ``data``."""
    client, peer = f"http://127.0.0.1:{client_port}", f"http://127.0.0.1:{peer_port}"
    return [
        path,
        "--name", ETCD,
        "--data-dir", str(data),
        "--listen-client-urls", client,
        "--advertise-client-urls", client,
        "--listen-peer-urls", peer,
        "--initial-advertise-peer-urls", peer,
        "--initial-cluster", f"{ETCD}={peer}",
        "--initial-cluster-state", "new",
        "--logger", "zap",
        "--log-level", "warn",
    ]  # fmt: skip


def healthy(client_port: int, timeout: float = 1.0) -> bool:
    """etcd's ``/health`` on ``client_port`` says true."""
    url = f"http://127.0.0.1:{client_port}/health"
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            return bool(json.loads(resp.read()).get("health") == "true")
    except (OSError, ValueError, urllib.error.URLError):
        return False
