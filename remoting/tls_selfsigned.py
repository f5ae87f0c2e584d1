"""A throw-away self-signed server certificate for ``tls.test.mode.enable=true``
(TlsHelper's test mode, netty's SelfSignedCertificate). It proves nothing to a client: only
for trying TLS out. Needs the ``cryptography`` package, imported only here."""

from __future__ import annotations

import datetime
import ssl
import tempfile
from pathlib import Path

from aiorocketmq.remoting.errors import ConfigError


def load_self_signed(ctx: ssl.SSLContext) -> None:
    """Load a new EC key and a one-year certificate for ``localhost`` into ``ctx``."""
    try:
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import NameOID
    except ImportError:
        raise ConfigError(
            "tls.test.mode.enable=true needs the 'cryptography' package to make its "
            "self-signed certificate (pip install cryptography), or set tls.server.certPath "
            "and tls.server.keyPath"
        ) from None
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=365))
        .sign(key, hashes.SHA256())
    )
    pem = cert.public_bytes(serialization.Encoding.PEM) + key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    with tempfile.TemporaryDirectory(prefix="aiorocketmq-tls-") as tmp:
        path = Path(tmp) / "self-signed.pem"  # readable by us only (the directory is 0700)
        path.write_bytes(pem)
        ctx.load_cert_chain(path)
