"""Free ports for tests that need a fixed listen port: its neighbours a server takes too."""

from __future__ import annotations

import contextlib
import random
import socket
from pathlib import Path

METRICS_OFFSET = 1000  # README "Ports": a server's metricsPort defaults to listenPort + 1000


def _ephemeral_low() -> int:
    """The lowest port the kernel gives to connects and binds on port 0."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_listen_port(*offsets: int) -> int:
    """A port P, free now, with P + each of ``offsets`` free as well (a server started on it
    takes those too: a broker's VIP port P - 2 and HA port P + 1, the metrics port).

    Chosen below the ephemeral range: no connection of this or another test takes one of
    them as its local port, so a server stopped and started again on P finds them free
    (within the range, a restart under load met its HA port taken)."""
    low = _ephemeral_low()
    top = low - max((0, *offsets)) - 1
    bottom = 10_000 - min((0, *offsets))
    for _ in range(200):
        port = random.randrange(bottom, top) if top > bottom else 0
        if port == 0:
            with socket.create_server(("", 0)) as probe:
                port = probe.getsockname()[1]
        wanted = [port + offset for offset in offsets]
        if not all(0 < p < 65536 for p in wanted):
            continue
        with contextlib.ExitStack() as held:
            try:
                for p in [port, *wanted]:
                    held.enter_context(socket.create_server(("", p)))
            except OSError:
                continue
        return port
    raise AssertionError("no free port with free neighbours in 200 tries")
