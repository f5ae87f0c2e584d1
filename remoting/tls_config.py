"""TlsConfig: Apache RocketMQ 4.9.8's ``tls.*`` keys (TlsSystemConfig), read from a process's
``-c`` file and ``--set`` like every other key, then overlaid by ``tls.config.file``.

Our defaults differ from 4.9.8's where its default gives no security (README "Security: TLS"):

- ``tls.server.mode`` is ``disabled``: a server speaks plaintext only until it is given a
  certificate and a mode. 4.9.8 defaults to ``permissive`` with ``tls.test.mode.enable=true``,
  a self-signed certificate made at start that no client can check.
- ``tls.test.mode.enable`` is ``false``; setting it is the explicit option that brings back
  4.9.8's throw-away self-signed server certificate and a client that trusts any server.
- ``tls.client.authServer`` is ``true``: a client checks the server's chain against
  ``tls.client.trustCertPath`` (else the system's CAs). 4.9.8's ``false`` trusts any server.
- ``tls.config.file`` is unset: 4.9.8 reads ``/etc/rocketmq/tls.properties`` when it exists;
  name it to read it.
"""

from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar, Final

from aiorocketmq.remoting.config import Bounds, Value, build, config_values, parse_properties
from aiorocketmq.remoting.errors import ConfigError


class TlsMode(enum.Enum):
    """What a server does with a TLS and a plaintext connection on the same port (TlsMode)."""

    disabled = "disabled"  # plaintext only; a TLS attempt is closed
    permissive = "permissive"  # both, told apart by the first byte
    enforcing = "enforcing"  # TLS only; a plaintext connection is closed unread


class ClientAuth(enum.Enum):
    """Whether a server asks for the client's certificate (netty's ClientAuth)."""

    none = "none"
    optional = "optional"  # verified when the client sends one
    require = "require"  # a client without a valid certificate is refused


def _key(name: str) -> dict[str, str]:
    return {"key": name}


@dataclass(frozen=True, slots=True, kw_only=True)
class TlsConfig:
    """The ``tls.*`` keys of one process: its servers' side and its outbound connections'."""

    BOUNDS: ClassVar[Bounds] = {"handshake_timeout_millis": (1, None)}

    server_mode: TlsMode = field(default=TlsMode.disabled, metadata=_key("tls.server.mode"))
    config_file: str = field(default="", metadata=_key("tls.config.file"))
    test_mode_enable: bool = field(default=False, metadata=_key("tls.test.mode.enable"))
    server_need_client_auth: ClientAuth = field(
        default=ClientAuth.none, metadata=_key("tls.server.need.client.auth")
    )
    server_key_path: str = field(default="", metadata=_key("tls.server.keyPath"))
    server_key_password: str = field(default="", metadata=_key("tls.server.keyPassword"))
    server_cert_path: str = field(default="", metadata=_key("tls.server.certPath"))
    # compat: 4.9.8's false accepts any client certificate (an insecure trust manager); Python's
    # ssl always verifies one, against trustCertPath: the key is read and has no effect
    server_auth_client: bool = field(default=False, metadata=_key("tls.server.authClient"))
    server_trust_cert_path: str = field(default="", metadata=_key("tls.server.trustCertPath"))
    # outbound: broker -> name server, slave -> master (remoting and HA)
    client_enable: bool = field(default=False, metadata=_key("tls.enable"))
    client_key_path: str = field(default="", metadata=_key("tls.client.keyPath"))
    client_key_password: str = field(default="", metadata=_key("tls.client.keyPassword"))
    client_cert_path: str = field(default="", metadata=_key("tls.client.certPath"))
    client_auth_server: bool = field(default=True, metadata=_key("tls.client.authServer"))
    client_trust_cert_path: str = field(default="", metadata=_key("tls.client.trustCertPath"))
    # ours: also check that the server's certificate names the address dialled (4.9.8 never
    # does; brokers are dialled by the IP the name server gives, so certificates need IP SANs)
    client_check_hostname: bool = field(default=False, metadata=_key("tls.client.checkHostname"))
    # ours: the broker's HA port (listenPort + 1) speaks TLS only, and a slave dials it with
    # TLS (4.9.8's HA port has no TLS); both brokers of a group must agree
    ha_enable: bool = field(default=False, metadata=_key("tls.ha.enable"))
    # ours: a connection that began a TLS handshake must finish it within this time
    handshake_timeout_millis: int = field(
        default=10_000, metadata=_key("tls.server.handshakeTimeoutMillis")
    )

    def masked(self) -> TlsConfig:
        """This config with its key passwords hidden, for printing (``-p``)."""
        return dataclasses.replace(
            self,
            server_key_password="******" if self.server_key_password else "",
            client_key_password="******" if self.client_key_password else "",
        )


# compat: TlsHelper.extractTlsConfigFromFile -- what the file may set (not the mode, not
# tls.enable); our own keys are read from it too
FILE_KEYS: Final = frozenset({
    "tls.test.mode.enable", "tls.server.need.client.auth", "tls.server.keyPath",
    "tls.server.keyPassword", "tls.server.certPath", "tls.server.authClient",
    "tls.server.trustCertPath", "tls.client.keyPath", "tls.client.keyPassword",
    "tls.client.certPath", "tls.client.authServer", "tls.client.trustCertPath",
    "tls.client.checkHostname", "tls.server.handshakeTimeoutMillis",
})  # fmt: skip


def with_config_file(config: TlsConfig) -> TlsConfig:
    """``config`` with the keys ``tls.config.file`` (when set) gives over its own.

    Raises ConfigError when the file named cannot be read, or holds a bad value."""
    if not config.config_file:
        return config
    path = Path(config.config_file)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"tls.config.file: cannot read {path}: {exc.strerror}") from exc
    overrides = {k: v for k, v in parse_properties(text, str(path)).items() if k in FILE_KEYS}
    values = {k: Value(v, "tls") for k, v in config_values(config).items()}
    return build(TlsConfig, {**values, **overrides})


def load(config: TlsConfig) -> TlsConfig:
    """A process's TLS settings: ``tls.config.file`` applied, then checked (ConfigError)."""
    config = with_config_file(config)
    check(config)
    return config


def serves_tls(config: TlsConfig) -> bool:
    """Whether a server of this process needs a certificate: its port or its HA port."""
    return config.server_mode is not TlsMode.disabled or config.ha_enable


def check(config: TlsConfig) -> None:
    """Refuse a configuration that cannot serve as asked (ConfigError, one line)."""
    if not serves_tls(config):
        return
    why = (
        f"tls.server.mode={config.server_mode.value}"
        if config.server_mode is not TlsMode.disabled
        else "tls.ha.enable=true"
    )
    if not config.test_mode_enable:
        missing = [
            key
            for key, value in (
                ("tls.server.certPath", config.server_cert_path),
                ("tls.server.keyPath", config.server_key_path),
            )
            if not value
        ]
        if missing:
            raise ConfigError(
                f"{why} needs {' and '.join(missing)} "
                "(or tls.test.mode.enable=true for a throw-away self-signed certificate)"
            )
    if config.server_need_client_auth is not ClientAuth.none and not config.server_trust_cert_path:
        raise ConfigError(
            f"tls.server.need.client.auth={config.server_need_client_auth.value} needs "
            "tls.server.trustCertPath (the CA certificates client certificates must chain to)"
        )
