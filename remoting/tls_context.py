"""SSLContexts from PEM files: a server's (``tls.server.*``) and a client's (``tls.client.*``, or
arguments) -- TlsHelper.buildSslContext.

Certificates and keys are PEM; a key may be PKCS#8 or traditional (``BEGIN RSA PRIVATE KEY``),
encrypted or not. Every failure to load one is a ConfigError naming the key and the file.

The SDK's clients take ``tls=client_context(...)``; our processes build theirs from
``TlsConfig`` (``client_context_from``).
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from pathlib import Path

from aiorocketmq.remoting.errors import ConfigError
from aiorocketmq.remoting.log import get_logger
from aiorocketmq.remoting.tls_config import ClientAuth, TlsConfig, TlsMode

log = get_logger(__name__)

_VERIFY_MODE = {
    ClientAuth.none: ssl.CERT_NONE,
    ClientAuth.optional: ssl.CERT_OPTIONAL,
    ClientAuth.require: ssl.CERT_REQUIRED,
}
_KEY_HINT = (
    "a wrong password, a key that is not the certificate's, or a key encrypted with a cipher "
    "OpenSSL 3 does not load by default, such as PBE-SHA1-RC4-128 (Apache's TLS guide): "
    "re-encrypt it with `openssl pkcs8 -topk8 -v2 aes-256-cbc`"
)


def _harden(ctx: ssl.SSLContext) -> None:
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.options |= ssl.OP_NO_RENEGOTIATION | ssl.OP_NO_COMPRESSION


def load_chain(
    ctx: ssl.SSLContext, cert: str, key: str, password: str | None, *, keys: str
) -> None:
    """``ctx.load_cert_chain`` with a ConfigError saying which of ``keys`` (the config keys'
    prefix, e.g. ``tls.server``) is wrong and why."""
    for name, path in ((f"{keys}.certPath", cert), (f"{keys}.keyPath", key)):
        if path and not Path(path).is_file():
            raise ConfigError(f"{name}: no such file: {path}")
    try:
        ctx.load_cert_chain(cert, key or None, password or None)
    except ssl.SSLError as exc:
        raise ConfigError(
            f"{keys}.certPath={cert}, {keys}.keyPath={key or cert}: cannot load the certificate "
            f"and key ({exc.reason or exc}): {_KEY_HINT}"
        ) from exc


def load_trust(ctx: ssl.SSLContext, path: str, *, key: str) -> None:
    """The CA certificates of the PEM file ``path`` (ConfigError naming ``key``)."""
    if not Path(path).is_file():
        raise ConfigError(f"{key}: no such file: {path}")
    try:
        ctx.load_verify_locations(cafile=path)
    except ssl.SSLError as exc:
        raise ConfigError(f"{key}={path}: no PEM certificate in it ({exc.reason or exc})") from exc


def server_context(config: TlsConfig) -> ssl.SSLContext:
    """The context of a TLS server: ``tls.server.*``, or in test mode a self-signed
    certificate made now (TlsHelper: test mode). Raises ConfigError."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    _harden(ctx)
    # no TLS 1.3 session tickets: clients keep their connections for hours, so resumption
    # would save little, and making two tickets is work added to every handshake
    ctx.num_tickets = 0
    if config.test_mode_enable and not config.server_cert_path:
        from aiorocketmq.remoting.tls_selfsigned import load_self_signed

        load_self_signed(ctx)
        log.warning("tls_test_mode", hint="a throw-away self-signed certificate: no security")
    else:
        load_chain(
            ctx,
            config.server_cert_path,
            config.server_key_path,
            config.server_key_password,
            keys="tls.server",
        )
    if config.server_need_client_auth is not ClientAuth.none:
        load_trust(ctx, config.server_trust_cert_path, key="tls.server.trustCertPath")
        ctx.verify_mode = _VERIFY_MODE[config.server_need_client_auth]
    return ctx


@dataclass(frozen=True, slots=True)
class ServerTls:
    """What a server does with TLS: its mode, its context (None when disabled) and how long
    a handshake may take (remoting.sniff)."""

    mode: TlsMode = TlsMode.disabled
    context: ssl.SSLContext | None = None
    handshake_timeout: float = 10.0

    def __post_init__(self) -> None:
        if self.mode is not TlsMode.disabled and self.context is None:
            raise ValueError(f"TLS mode {self.mode.value} needs an SSLContext")


def server_tls(config: TlsConfig) -> ServerTls:
    """The remoting port's TLS from ``tls.server.*`` (ConfigError when it cannot load)."""
    if config.server_mode is TlsMode.disabled:
        return ServerTls()
    return ServerTls(
        config.server_mode, server_context(config), config.handshake_timeout_millis / 1000
    )


def client_context(
    *,
    ca_file: str | None = None,
    cert_file: str | None = None,
    key_file: str | None = None,
    key_password: str | None = None,
    verify: bool = True,
    check_hostname: bool = False,
) -> ssl.SSLContext:
    """The context a client dials a TLS server with (``RemotingClient(tls=...)``).

    Args:
        ca_file: PEM CA certificates the server's chain must end in; None: the system's.
        cert_file, key_file, key_password: the client's own certificate (PEM) and key (PKCS#8
            or traditional, maybe encrypted), for a server that asks for one; ``key_file``
            None: the key is in ``cert_file``.
        verify: False trusts any server, as 4.9.8's default client does (``authServer=false``,
            or test mode): encrypted, but open to anyone in the middle.
        check_hostname: also require the server's certificate to name the host or IP dialled
            (4.9.8 never checks; brokers are dialled by the address the name server gives).

    Raises ConfigError when a file is missing or cannot be loaded.
    """
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    _harden(ctx)
    if verify:
        if ca_file:
            load_trust(ctx, ca_file, key="tls.client.trustCertPath")
        else:
            ctx.load_default_certs()
        ctx.check_hostname = check_hostname
    else:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    if cert_file or key_file:
        if not cert_file:
            raise ConfigError("tls.client.keyPath needs tls.client.certPath")
        load_chain(ctx, cert_file, key_file or "", key_password, keys="tls.client")
    return ctx


def client_context_from(config: TlsConfig) -> ssl.SSLContext:
    """The client context ``tls.client.*`` describe (used by our processes when
    ``tls.enable=true``, and by a slave on the HA port when ``tls.ha.enable=true``)."""
    return client_context(
        ca_file=config.client_trust_cert_path or None,
        cert_file=config.client_cert_path or None,
        key_file=config.client_key_path or None,
        key_password=config.client_key_password or None,
        # compat: TlsHelper -- test mode trusts any server; authServer=false too
        verify=config.client_auth_server and not config.test_mode_enable,
        check_hostname=config.client_check_hostname,
    )
