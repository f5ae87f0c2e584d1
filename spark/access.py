"""The source's and sink's credentials and TLS (issue 32 item 4): options named so Kafka
connector users find them (README "Spark" says which Kafka option each stands for), turned
into the SDK's security keywords where the clients are made.

The secret options (``secretKey``, ``securityToken``, ``tls.keyPassword``) are never shown:
not in this object's ``repr``, nor in an error about them. Their names match Spark's default
``spark.redaction.regex`` (``(?i)secret|password|token|access[.]?key``), so Spark shows them as
``*********(redacted)`` in plans and the UI. Nothing here does I/O until ``keywords()``
reads the PEM files, on the process that makes a client.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass, field

from aiorocketmq.client import SecuritySettings, tls_context


@dataclass(frozen=True)
class Access:
    """Hashable: the processes' client caches are keyed by it (clients of different
    accounts never share one)."""

    access_key: str | None = None
    secret_key: str | None = field(default=None, repr=False)
    security_token: str | None = field(default=None, repr=False)
    tls: bool = False
    tls_ca_file: str | None = None
    tls_cert_file: str | None = None
    tls_key_file: str | None = None
    tls_key_password: str | None = field(default=None, repr=False)
    tls_check_hostname: bool = True

    def keywords(self) -> SecuritySettings:
        """For ``Producer(...)``/``PullConsumer(...)``; reads the TLS files (OSError or
        ssl.SSLError naming the problem)."""
        tls: bool | ssl.SSLContext = self.tls
        if self.tls_ca_file or self.tls_cert_file:
            tls = tls_context(
                self.tls_ca_file,
                cert_file=self.tls_cert_file,
                key_file=self.tls_key_file,
                key_password=self.tls_key_password,
                check_hostname=self.tls_check_hostname,
            )
        return SecuritySettings(
            access_key=self.access_key,
            secret_key=self.secret_key,
            security_token=self.security_token,
            tls=tls,
        )


def access(given: dict[str, object]) -> Access:
    """The Access of the security options in ``given`` (camelCase name -> parsed value),
    which are removed from it; ValueError for a combination that does not fit, never quoting
    a secret."""
    values = {name: given.pop(name) for name in list(given) if name in FIELDS}
    ak, sk = values.get("accessKey"), values.get("secretKey")
    if (ak is None) != (sk is None):
        raise ValueError("accessKey and secretKey go together: give both or neither")
    if "securityToken" in values and ak is None:
        raise ValueError("securityToken needs accessKey and secretKey")
    if "tls.keyFile" in values and "tls.certFile" not in values:
        raise ValueError("tls.keyFile needs tls.certFile (the client certificate)")
    if "tls.keyPassword" in values and "tls.keyFile" not in values:
        raise ValueError("tls.keyPassword needs tls.keyFile")
    if "tls.checkHostname" in values and "tls.caFile" not in values:
        raise ValueError(
            "tls.checkHostname applies only with tls.caFile (else nothing is verified)"
        )
    files = any(name in values for name in ("tls.caFile", "tls.certFile"))
    if values.get("tls") is False and files:
        raise ValueError("tls is false but tls.caFile or tls.certFile is given")
    fields = {FIELDS[name]: value for name, value in values.items()}
    if files:
        fields["tls"] = True  # a CA or a certificate means TLS
    return Access(**fields)  # type: ignore[arg-type]


# camelCase option -> Access field
FIELDS = {
    "accessKey": "access_key",
    "secretKey": "secret_key",
    "securityToken": "security_token",
    "tls": "tls",
    "tls.caFile": "tls_ca_file",
    "tls.certFile": "tls_cert_file",
    "tls.keyFile": "tls_key_file",
    "tls.keyPassword": "tls_key_password",
    "tls.checkHostname": "tls_check_hostname",
}
SECRETS = frozenset({"secretKey", "securityToken", "tls.keyPassword"})
