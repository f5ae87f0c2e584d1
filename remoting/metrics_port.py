"""Where a server's ``/metrics`` listens: ``metricsPort``, by default ``listenPort + 1000``.

Ours only (4.9.8 has no metrics endpoint; 5.x's ``metricsPromExporterPort`` is a fixed 5557).
A fixed default sent every server of a host to one port: the second broker served no metrics
and its port answered with the first one's (issue 31). Like the VIP port (listenPort - 2) and
the HA port (listenPort + 1), the metrics port follows the listen port, 1000 above it: a broker
holds listenPort - 2 to + 1, brokers of one host sit a few ports apart (10911, 10915, 10921,
...; ``make run``'s plan reaches 11086 with nine slaves per group), so no small offset misses
every neighbour, and 1000 is past all of them (the name server's 9876 gives 10876, below them).
Listen port 0 (any free port) gives metrics port 0 too: any free one, logged
(``metrics_listening``), never ``0 + 1000``.
"""

from __future__ import annotations

import socket

from aiorocketmq.remoting.errors import ConfigError
from aiorocketmq.remoting.server import bind_socket

METRICS_OFFSET = 1000
OFF = -1  # metricsPort=-1: no /metrics
KEY = "metricsPort"


def metrics_port(configured: int | None, listen_port: int) -> int:
    """``metricsPort`` when set (0 = any free port, -1 = off), else ``listen_port + 1000``
    (0 for listen port 0). ConfigError when that is past 65535."""
    if configured is not None:
        return configured
    if listen_port == 0:
        return 0
    port = listen_port + METRICS_OFFSET
    if port > 65535:
        raise ConfigError(
            f"{KEY}: listenPort {listen_port} + {METRICS_OFFSET} is past 65535: set {KEY} "
            f"(0 = any free port, {OFF} = no metrics)"
        )
    return port


def bind_metrics(host: str, port: int) -> socket.socket:
    """The metrics socket on ``host:port``, bound, not yet listening. A port that cannot be
    bound is an error naming it and the key to change (the server refuses to start: serving
    on without metrics would leave a scraper reading another server's, or nothing)."""
    try:
        return bind_socket(host, port)
    except OSError as exc:
        raise OSError(
            f"the metrics port {port} on {host} cannot be bound ({exc.strerror or exc}): set "
            f"{KEY} to a free port (0 = any free port, {OFF} = no metrics)"
        ) from exc
