"""Free ports for tests that need a fixed listen port: its neighbours a server takes too."""

from __future__ import annotations

import contextlib
import socket

METRICS_OFFSET = 1000  # README "Ports": a server's metricsPort defaults to listenPort + 1000


def free_listen_port(*offsets: int) -> int:
    """A port P, free now, with P + each of ``offsets`` free as well (a server started on it
    takes those too: a broker's VIP port P - 2 and HA port P + 1, the metrics port)."""
    for _ in range(200):
        with socket.create_server(("", 0)) as probe:
            port: int = probe.getsockname()[1]
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
