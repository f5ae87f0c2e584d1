"""The broker's listeners: the main port, the VIP port (listenPort - 2) and the HA port
(listenPort + 1, forced whatever haListenPort says, as Java's BrokerStartup does).

Java's BrokerController always opens a second server on ``listenPort - 2``
(``fastListenPort``) with every processor except PULL_MESSAGE. Java clients up to 4.4.0
(``vipChannelEnabled`` true by default), and later ones started with
``-Dcom.rocketmq.sendMessageWithVIPChannel=true``, send most requests there
(``MixAll.brokerVIPChannel``).
"""

from __future__ import annotations

import contextlib
import socket
from typing import NamedTuple

import structlog

from aiorocketmq.remoting.dispatch import Routes
from aiorocketmq.remoting.protocol.codes import RequestCode
from aiorocketmq.remoting.server import bind_socket

log = structlog.get_logger(__name__)

VIP_OFFSET = 2
HA_OFFSET = 1
_ATTEMPTS = 40  # port 0: tries to find a free port whose port - 2 and port + 1 are free too


class Listeners(NamedTuple):
    main: socket.socket
    vip: socket.socket | None
    ha: socket.socket

    def close(self) -> None:
        for sock in self:
            if sock is not None:
                sock.close()


def bind_listeners(host: str, port: int) -> Listeners:
    """The main socket on ``port`` (0 = any free one), the VIP socket on its port - 2 and the
    HA socket on its port + 1. Raises OSError when the HA port is taken (Java fails to start
    too).

    compat: Java fails to start when the VIP port is taken; here the broker serves the main
    port alone and logs ``vip_port_unavailable`` (the main port is what 4.5+ clients use).
    """
    for attempt in range(1, _ATTEMPTS + 1):
        main = bind_socket(host, port)
        number = main.getsockname()[1]
        try:
            ha = bind_socket(host, number + HA_OFFSET)
        except OSError as exc:
            main.close()
            if port != 0 or attempt == _ATTEMPTS:
                raise OSError(
                    f"the HA port {number + HA_OFFSET} (listenPort + 1) is taken"
                ) from exc
            continue
        vip = None
        with contextlib.suppress(OSError):
            if number - VIP_OFFSET > 0:
                vip = bind_socket(host, number - VIP_OFFSET)
        if vip is None and port == 0 and attempt < _ATTEMPTS:
            main.close()  # port 0: another free port may have a free port - 2
            ha.close()
            continue
        if vip is None:
            log.warning("vip_port_unavailable", port=number - VIP_OFFSET)
        return Listeners(main, vip, ha)
    raise AssertionError("unreachable")


def vip_routes(routes: Routes) -> Routes:
    """The main table without PULL_MESSAGE (BrokerController.registerProcessor: pulls go to
    the main port only; on the VIP port they get REQUEST_CODE_NOT_SUPPORTED)."""
    return {code: route for code, route in routes.items() if code != RequestCode.PULL_MESSAGE}
