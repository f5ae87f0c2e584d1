"""NamesrvConfig: NamesrvConfig's keys that apply to us, with RocketMQ's defaults."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from aiorocketmq.remoting.config import Bounds


def _default_kv_path() -> str:
    # compat: NamesrvConfig.kvConfigPath = ${user.home}/namesrv/kvConfig.json
    return str(Path.home() / "namesrv" / "kvConfig.json")


@dataclass(frozen=True, slots=True, kw_only=True)
class NamesrvConfig:
    BOUNDS: ClassVar[Bounds] = {
        "scan_not_active_broker_interval": (1, None),
        "broker_channel_expired_time": (1, None),
        "metrics_port": (-1, 65535),
        "acl_file_watch_interval": (100, None),
    }

    kv_config_path: str = field(default_factory=_default_kv_path)
    order_message_enable: bool = False
    scan_not_active_broker_interval: int = 10_000  # ms between liveness scans
    broker_channel_expired_time: int = 120_000  # ms of silence before a broker is evicted
    # ours: /metrics in Prometheus text format on this port (on metricsHost); unset =
    # listenPort + 1000 (remoting.metrics_port), 0 = any free port, -1 = off; a port that
    # cannot be bound stops the name server from starting
    metrics_port: int | None = None
    # ours: the address /metrics binds; "" = the name server's bindAddress
    metrics_host: str = ""
    # ours (4.9.8's name server has no ACL): the requests that change its state need a
    # signature from an admin account of the ACL files, read as the broker reads them
    # (namesrv.acl); route lookups and the other reads stay open
    acl_enable: bool = False
    # the default ACL file; "" = ${ROCKETMQ_HOME}/conf/plain_acl.yml as the broker's (4.9.8's
    # -Drocketmq.acl.plain.file), the current directory standing in for an unset ROCKETMQ_HOME
    acl_file: str = ""
    # more ACL files (*.yml, *.yaml, recursively); "" = ${ROCKETMQ_HOME}/conf/acl
    acl_dir: str = ""
    # ms between looks at the ACL files for changes (4.9.8's broker: 5000)
    acl_file_watch_interval: int = 5_000


DEFAULT_LISTEN_PORT = 9876
# compat: Java's name server binds 0.0.0.0; ours answers only on loopback unless bindAddress
# says otherwise (a name server open to every network lets anyone register a broker)
DEFAULT_BIND_ADDRESS = "127.0.0.1"
