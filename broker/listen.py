"""The broker's two listeners: the main port and the VIP port, listenPort - 2.

Java's BrokerController always opens a second server on ``listenPort - 2``
(``fastListenPort``) with every processor except PULL_MESSAGE. Java clients up to 4.4.0
(``vipChannelEnabled`` true by default), and later ones started with
``-Dcom.rocketmq.sendMessageWithVIPChannel=true``, send most requests there
(``MixAll.brokerVIPChannel``).
"""

from __future__ import annotations

import contextlib
import socket

import structlog

from remoting.dispatch import Routes
from remoting.protocol.codes import RequestCode
from remoting.server import bind_socket

log = structlog.get_logger(__name__)

VIP_OFFSET = 2
_ATTEMPTS = 20  # port 0: tries to find a free port whose port - 2 is free too


def bind_listeners(host: str, port: int) -> tuple[socket.socket, socket.socket | None]:
    """The main socket on ``port`` (0 = any free one) and the VIP socket on its port - 2.

    compat: Java fails to start when the VIP port is taken; here the broker serves the main
    port alone and logs ``vip_port_unavailable`` (the main port is what 4.5+ clients use).
    """
    attempt = 1
    while True:
        main = bind_socket(host, port)
        vip_port = main.getsockname()[1] - VIP_OFFSET
        with contextlib.suppress(OSError):
            if vip_port > 0:
                return main, bind_socket(host, vip_port)
        if port != 0 or attempt == _ATTEMPTS:
            log.warning("vip_port_unavailable", port=vip_port)
            return main, None
        main.close()  # port 0: another free port may have a free port - 2
        attempt += 1


def vip_routes(routes: Routes) -> Routes:
    """The main table without PULL_MESSAGE (BrokerController.registerProcessor: pulls go to
    the main port only; on the VIP port they get REQUEST_CODE_NOT_SUPPORTED)."""
    return {code: route for code, route in routes.items() if code != RequestCode.PULL_MESSAGE}
