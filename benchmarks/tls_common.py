"""TLS for the benchmarks: a self-signed RSA-2048 server certificate for 127.0.0.1 made in the
run (cryptography, a dev dependency), the broker keys that serve it, and the client context
that trusts it. RSA-2048 as in Apache's TLS guide: the handshake cost users will meet."""

from __future__ import annotations

import datetime
import ipaddress
import ssl
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID

from aiorocketmq.remoting.tls_context import client_context


def make_certificate(directory: Path) -> tuple[Path, Path]:
    """``(cert, key)`` PEM files of a self-signed certificate for 127.0.0.1."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "bench")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "bench.pem", directory / "bench.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


def server_sets(cert: Path, key: Path, mode: str = "permissive") -> list[str]:
    """``--set`` values for a server taking TLS and plaintext on its port."""
    return [f"tls.server.mode={mode}", f"tls.server.certPath={cert}", f"tls.server.keyPath={key}"]


def trusting(cert: Path) -> ssl.SSLContext:
    """A client context that checks the server against ``cert``."""
    return client_context(ca_file=str(cert), check_hostname=True)
