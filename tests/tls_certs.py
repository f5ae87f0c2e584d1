"""Certificates made in the test run (cryptography): a CA and the certificates it signs, and
self-signed ones, written as PEM files under a test's directory. No key is ever committed."""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

KeyFormat = Literal["pkcs8", "traditional"]
PrivateKey = rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey


@dataclass(frozen=True)
class Pair:
    """A certificate and its key, as PEM files."""

    cert: Path
    key: Path
    password: str | None = None


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _key(kind: str) -> PrivateKey:
    if kind == "rsa":
        return rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return ec.generate_private_key(ec.SECP256R1())


def _write_key(key: PrivateKey, path: Path, fmt: KeyFormat, password: str | None) -> None:
    encryption: serialization.KeySerializationEncryption = (
        serialization.BestAvailableEncryption(password.encode())
        if password
        else serialization.NoEncryption()
    )
    private_format = (
        serialization.PrivateFormat.PKCS8
        if fmt == "pkcs8"
        else serialization.PrivateFormat.TraditionalOpenSSL
    )
    path.write_bytes(key.private_bytes(serialization.Encoding.PEM, private_format, encryption))


def _builder(subject: x509.Name, issuer: x509.Name, key: PrivateKey) -> x509.CertificateBuilder:
    now = datetime.datetime.now(datetime.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=1))
    )


def _sans(hosts: tuple[str, ...]) -> x509.SubjectAlternativeName:
    names: list[x509.GeneralName] = []
    for host in hosts:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    return x509.SubjectAlternativeName(names)


class CA:
    """A certificate authority written to ``directory/<name>-ca.pem``."""

    def __init__(self, directory: Path, name: str = "test", kind: str = "ec") -> None:
        self.directory = directory
        self.key = _key(kind)
        self.name = _name(f"{name} CA")
        self.cert = (
            _builder(self.name, self.name, self.key)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(self.key, hashes.SHA256())
        )
        self.path = directory / f"{name}-ca.pem"
        self.path.write_bytes(self.cert.public_bytes(serialization.Encoding.PEM))

    def issue(
        self,
        name: str,
        *,
        hosts: tuple[str, ...] = ("127.0.0.1", "localhost"),
        client: bool = False,
        kind: str = "ec",
        fmt: KeyFormat = "pkcs8",
        password: str | None = None,
    ) -> Pair:
        """A server (or ``client``) certificate for ``hosts``, signed by this CA."""
        key = _key(kind)
        usage = ExtendedKeyUsageOID.CLIENT_AUTH if client else ExtendedKeyUsageOID.SERVER_AUTH
        cert = (
            _builder(_name(name), self.name, key)
            .add_extension(_sans(hosts), critical=False)
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
            .sign(self.key, hashes.SHA256())
        )
        return _write(self.directory, name, cert, key, fmt, password)


def self_signed(
    directory: Path,
    name: str,
    *,
    hosts: tuple[str, ...] = ("127.0.0.1", "localhost"),
    kind: str = "ec",
    fmt: KeyFormat = "pkcs8",
    password: str | None = None,
) -> Pair:
    """A self-signed certificate: its own trust anchor (``Pair.cert`` is the CA file too)."""
    key = _key(kind)
    cert = (
        _builder(_name(name), _name(name), key)
        .add_extension(_sans(hosts), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    return _write(directory, name, cert, key, fmt, password)


def _write(
    directory: Path,
    name: str,
    cert: x509.Certificate,
    key: PrivateKey,
    fmt: KeyFormat,
    password: str | None,
) -> Pair:
    pair = Pair(directory / f"{name}.pem", directory / f"{name}.key", password)
    pair.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    _write_key(key, pair.key, fmt, password)
    return pair
