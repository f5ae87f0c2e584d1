"""What every client class takes to reach a secured cluster (issue 32): ACL 1.0 credentials
and TLS, as four keywords with the same names everywhere (``access_key``, ``secret_key``,
``security_token``, ``tls``), gathered here into ``Security`` for the client instance and
its RemotingClient.

Credentials are Apache's ``AclClientRPCHook(new SessionCredentials(accessKey, secretKey))``:
every request the client sends is signed (remoting/protocol/signature.py). ``tls`` is
``ClientConfig.useTLS``: one setting for the name-server and broker connections alike.

The secret and the token never leave this object: not in ``repr``, logs or error messages
(the access key may: it names the account, and a broker's refusal quotes it).
"""

from __future__ import annotations

import functools
import ssl
from dataclasses import dataclass, field
from typing import TypedDict

from aiorocketmq.remoting.errors import ConfigError
from aiorocketmq.remoting.protocol.signature import Credentials
from aiorocketmq.remoting.tls_context import client_context

Tls = bool | ssl.SSLContext | None  # the ``tls=`` keyword


@dataclass(frozen=True, slots=True, kw_only=True)
class SecurityOptions:
    """The four security keywords every client class takes (a base of each client's options).

    ``access_key`` / ``secret_key`` (both or neither) and ``security_token`` (optional,
    signed along, as SessionCredentials'): an ACL 1.0 account; ``tls``: True, an
    ``ssl.SSLContext``, or None/False for plaintext (see ``tls_context``)."""

    access_key: str | None = None
    secret_key: str | None = field(default=None, repr=False)
    security_token: str | None = field(default=None, repr=False)
    tls: Tls = None


class SecuritySettings(TypedDict, total=False):
    """SecurityOptions's fields as keywords (a base of each client's keyword TypedDict)."""

    access_key: str | None
    secret_key: str | None
    security_token: str | None
    tls: Tls


@functools.cache
def unverified_context() -> ssl.SSLContext:
    """What ``tls=True`` means: TLS that verifies nothing -- any certificate, any host name --
    as Apache's client does by default (``tls.test.mode.enable`` / ``tls.client.authServer``
    false: InsecureTrustManagerFactory). It encrypts, but a man in the middle can read
    everything: pass a context from ``tls_context(ca_file=...)`` to verify the servers. One
    context per process, so clients with ``tls=True`` share their connections."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


def tls_context(
    ca_file: str | None = None,
    *,
    cert_file: str | None = None,
    key_file: str | None = None,
    key_password: str | None = None,
    check_hostname: bool = True,
) -> ssl.SSLContext:
    """An ``ssl.SSLContext`` for ``tls=``, from PEM files, as Apache's ``tls.client.*`` keys:
    ``ca_file`` (trustCertPath, with authServer=true): the servers' certificates must chain
    to it, and with ``check_hostname`` name the address the client connects to (an IP
    address must be in the certificate's subjectAltName); without ``ca_file`` nothing is
    verified, as ``tls=True``. ``cert_file`` and ``key_file`` (certPath, keyPath,
    keyPassword): this client's certificate, for servers that ask for one
    (``tls.server.need.client.auth``). Files that cannot be read or used raise OSError
    naming the file and the problem."""
    if key_file is not None and cert_file is None:
        raise ValueError("key_file needs cert_file (the client certificate)")
    try:  # the servers' own client context (tls.client.*), with the SDK's defaults
        return client_context(ca_file=ca_file, cert_file=cert_file, key_file=key_file,
                              key_password=key_password, verify=ca_file is not None,
                              check_hostname=check_hostname)  # fmt: skip
    except ConfigError as exc:
        raise OSError(str(exc)) from exc


@dataclass(frozen=True, slots=True)
class Security:
    """Resolved settings: the credentials to sign with and the TLS context, if any."""

    credentials: Credentials | None = None
    tls: ssl.SSLContext | None = None

    @classmethod
    def of(cls, options: SecurityOptions) -> Security:
        """From a client's options; ValueError (never quoting a secret) or TypeError when
        they do not fit together."""
        return cls.from_keywords(
            options.access_key, options.secret_key, options.security_token, options.tls
        )

    @classmethod
    def from_keywords(
        cls,
        access_key: str | None,
        secret_key: str | None,
        security_token: str | None = None,
        tls: Tls = None,
    ) -> Security:
        if (access_key is None) != (secret_key is None):
            raise ValueError("access_key and secret_key go together: give both or neither")
        credentials = None
        if access_key is not None and secret_key is not None:
            if not access_key or not secret_key:
                raise ValueError("access_key and secret_key must not be empty")
            credentials = Credentials(access_key, secret_key, security_token or None)
        elif security_token is not None:
            raise ValueError("security_token needs access_key and secret_key")
        return cls(credentials, _context(tls))

    def key(self) -> tuple[object, ...]:
        """What separates client instances: the credentials by value, the context by
        identity (``tls=True`` is one shared context)."""
        return (self.credentials, self.tls)  # an SSLContext hashes by identity

    def __repr__(self) -> str:
        ak = self.credentials.access_key if self.credentials is not None else None
        return f"Security(access_key={ak!r}, tls={self.tls is not None})"


NONE = Security()  # no credentials, plaintext: what a client gets without the keywords


def _context(tls: Tls) -> ssl.SSLContext | None:
    if tls is None or tls is False:
        return None
    if tls is True:
        return unverified_context()
    if isinstance(tls, ssl.SSLContext):
        return tls
    raise TypeError(f"tls: True, an ssl.SSLContext, or None/False; got {type(tls).__name__}")
