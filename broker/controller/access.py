"""How the controller's etcd client proves who it is and encrypts: etcd's own mechanisms.

- TLS to etcd (``controllerTlsEnable``): the server's chain is checked against
  ``controllerTlsTrustCertPath`` (a PEM CA bundle; unset: the system's CAs) and its name
  against the address dialled (certificates need the endpoints' IP or DNS names);
  ``controllerTlsCertPath`` / ``controllerTlsKeyPath`` give a client certificate for an etcd
  started with ``--client-cert-auth``. The files are PEM as Apache's ``tls.client.*`` files
  are (trustCertPath, certPath, keyPath); an encrypted key is refused (gRPC takes no key
  password).
- etcd's user/password auth (``etcdctl auth enable``): ``controllerUsername`` and
  ``controllerPasswordFile``, a file holding the password -- never the password in a config
  file or on a command line (as ``metricsBearerTokenFile``). The user needs a role granting
  readwrite on the controller's prefix (layout.ROOT).

Every file is read when the access is loaded: a missing or unreadable one is a ConfigError
naming its key, before anything is dialled. The password is in no repr, log line or message.
aetcd 1.0 dials only plaintext: ``make_client`` gives it a TLS channel (``TlsClient``).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from aiorocketmq.broker.config import BrokerConfig
from aiorocketmq.remoting.errors import ConfigError

# what each setting is called where it came from (the broker's keys; mqadmin passes its flags)
KEYS: Final[Mapping[str, str]] = {
    "tls": "controllerTlsEnable",
    "ca": "controllerTlsTrustCertPath",
    "cert": "controllerTlsCertPath",
    "key": "controllerTlsKeyPath",
    "username": "controllerUsername",
    "password": "controllerPasswordFile",
}


@dataclass(frozen=True, slots=True)
class EtcdAccess:
    """TLS material (PEM bytes, read already) and etcd credentials; all unset: plaintext,
    unauthenticated (etcd's default)."""

    tls: bool = False
    ca: bytes | None = field(default=None, repr=False)
    cert: bytes | None = field(default=None, repr=False)
    key: bytes | None = field(default=None, repr=False)
    username: str | None = None
    password: str | None = field(default=None, repr=False)

    def describe(self) -> str:
        """What this access uses, for messages (no secret)."""
        parts = ["TLS" if self.tls else "plaintext"]
        if self.cert is not None:
            parts.append("a client certificate")
        if self.username is not None:
            parts.append(f"user {self.username!r}")
        return ", ".join(parts)


def _read(path: str, name: str) -> bytes:
    try:
        return Path(path).expanduser().read_bytes()
    except OSError as e:
        raise ConfigError(f"{name}: cannot read {path}: {e.strerror}") from None


def load_access(
    *,
    tls: bool = False,
    ca_path: str = "",
    cert_path: str = "",
    key_path: str = "",
    username: str = "",
    password_file: str = "",
    names: Mapping[str, str] = KEYS,
) -> EtcdAccess:
    """The access these settings describe, its files read; ConfigError (naming the setting,
    ``names``) when one is missing, unreadable or does not fit."""
    tls_files = [(k, v) for k, v in (("ca", ca_path), ("cert", cert_path), ("key", key_path)) if v]
    if tls_files and not tls:
        raise ConfigError(f"{names[tls_files[0][0]]} is set but {names['tls']} is not true")
    if bool(cert_path) != bool(key_path):
        have, lack = ("cert", "key") if cert_path else ("key", "cert")
        raise ConfigError(f"{names[have]} needs {names[lack]} (a client certificate and its key)")
    if bool(username) != bool(password_file):
        have, lack = ("username", "password") if username else ("password", "username")
        raise ConfigError(f"{names[have]} needs {names[lack]} (etcd's user and its password)")
    ca = _read(ca_path, names["ca"]) if ca_path else None
    cert = _read(cert_path, names["cert"]) if cert_path else None
    key = _read(key_path, names["key"]) if key_path else None
    if key is not None and b"ENCRYPTED" in key:
        raise ConfigError(f"{names['key']}: {key_path} is encrypted (give an unencrypted PEM key)")
    password = None
    if password_file:
        password = _read(password_file, names["password"]).decode(errors="replace")
        password = password.rstrip("\r\n")
        if not password:
            raise ConfigError(f"{names['password']}: {password_file} is empty")
    return EtcdAccess(tls, ca, cert, key, username or None, password)


def access_from_config(config: BrokerConfig) -> EtcdAccess:
    """The broker's access to etcd (its ``controllerTls*`` and credential keys)."""
    return load_access(
        tls=config.controller_tls_enable,
        ca_path=config.controller_tls_trust_cert_path,
        cert_path=config.controller_tls_cert_path,
        key_path=config.controller_tls_key_path,
        username=config.controller_username,
        password_file=config.controller_password_file,
    )


def make_client(aetcd: Any, access: EtcdAccess, host: str, port: int, timeout: float) -> Any:
    """An aetcd Client for one endpoint with this access (not connected yet)."""
    kwargs: dict[str, Any] = {"host": host, "port": port, "timeout": timeout}
    if access.username is not None:
        kwargs.update(username=access.username, password=access.password)
    if not access.tls:
        return aetcd.Client(**kwargs)
    grpc = importlib.import_module("grpc")  # aetcd's own dependency: here only when aetcd is
    credentials = grpc.ssl_channel_credentials(access.ca, access.key, access.cert)
    return _tls_client_class(aetcd)(credentials, **kwargs)


_TLS_CLASS: dict[int, Any] = {}


def _tls_client_class(aetcd: Any) -> Any:
    """aetcd.Client dialling TLS (made once aetcd is imported: it is not at import time)."""
    cls = _TLS_CLASS.get(id(aetcd))
    if cls is None:
        base = aetcd.Client

        def init(self: Any, credentials: Any, **kwargs: Any) -> None:
            base.__init__(self, **kwargs)
            self._credentials = credentials

        cls = _TLS_CLASS[id(aetcd)] = type(
            "TlsClient", (base,), {"__init__": init, "connect": _tls_connect}
        )
    return cls


async def _tls_connect(self: Any) -> None:
    """aetcd 1.0's Client.connect on ``rpc.secure_channel`` (its own uses insecure_channel
    only): the channel, then etcd's Authenticate when credentials are set, then the stubs.
    An error is left as gRPC raises it (etcd.py turns it into an EtcdError)."""
    import asyncio

    from aetcd import rpc, watcher

    if self._connected.is_set():
        return
    if self._is_connecting:
        await asyncio.wait_for(self._connected.wait(), self._connect_wait_timeout)
        return
    try:
        self._is_connecting = True
        target = f"{self._host}:{self._port}"
        self.channel = rpc.secure_channel(
            target, self._credentials, options=list(self._options.items())
        )
        if self._username is not None and self._password is not None:
            self.auth_stub = rpc.AuthStub(self.channel)
            request = rpc.AuthenticateRequest(name=self._username, password=self._password)
            resp = await self.auth_stub.Authenticate(request, timeout=self._timeout)
            self.metadata = (("token", resp.token),)
        self.kvstub = rpc.KVStub(self.channel)
        self.clusterstub = rpc.ClusterStub(self.channel)
        self.leasestub = rpc.LeaseStub(self.channel)
        self.maintenancestub = rpc.MaintenanceStub(self.channel)
        self._watcher = watcher.Watcher(
            rpc.WatchStub(self.channel), timeout=self._timeout, metadata=self.metadata
        )
        self._connected.set()
    finally:
        self._is_connecting = False
