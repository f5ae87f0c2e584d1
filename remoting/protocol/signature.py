"""ACL 1.0 request signatures (protocol.md 12.7, fidelity.md 3.5): what a signing client adds
to a request, and the content both sides sign. Pure: no I/O.

The content is the *values* of the request's ext fields, ordered by key in Java String order
(UTF-16 code units), skipping ``Signature`` (a server also skips ``_UNIQUE_KEY_QUERY``, see
``SERVER_SKIP``), UTF-8 encoded, then the raw body. The signature is
Base64(HMAC-SHA1(secretKey, content)).
"""

from __future__ import annotations

import base64
import functools
import hashlib
import hmac
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Final

from aiorocketmq.remoting.protocol.command import RemotingCommand

ACCESS_KEY: Final = "AccessKey"
SIGNATURE: Final = "Signature"
SECURITY_TOKEN: Final = "SecurityToken"
ONS_CHANNEL: Final = "OnsChannel"  # ali-ons adds and signs OnsChannel=ALIYUN
UNIQUE_KEY_QUERY: Final = "_UNIQUE_KEY_QUERY"

# the ext fields a credential adds; with ACL off a server ignores them (protocol.md 12.7)
CREDENTIAL_FIELDS: Final = frozenset({ACCESS_KEY, SIGNATURE, SECURITY_TOKEN, ONS_CHANNEL})

CLIENT_SKIP: Final = frozenset({SIGNATURE})  # compat: AclUtils.combineRequestContent
# compat: PlainAccessValidator.parse -- the broker leaves _UNIQUE_KEY_QUERY out of the content
SERVER_SKIP: Final = frozenset({SIGNATURE, UNIQUE_KEY_QUERY})


@dataclass(frozen=True, slots=True)
class Credentials:
    """An access key and its secret (SessionCredentials). The secret and the token never
    appear in ``repr`` or logs."""

    access_key: str
    secret_key: str = field(repr=False)
    security_token: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if not self.access_key or not self.secret_key:
            raise ValueError("access_key and secret_key must both be non-empty")

    def __repr__(self) -> str:
        return f"Credentials(access_key={self.access_key!r}, secret_key='***')"


def _java_order(key: str) -> bytes:
    return key.encode("utf-16-be")  # Java compares UTF-16 code units


def _text(ext: Mapping[str, str], skip: Collection[str]) -> bytes:
    """The ext values ordered by key (Java String order), skipping ``skip``, UTF-8."""
    keys = sorted(ext)
    if not "".join(keys).isascii():  # code points and UTF-16 units order differently
        keys.sort(key=_java_order)
    return "".join([ext[k] for k in keys if k not in skip]).encode()


def content(
    ext: Mapping[str, str], body: bytes | None, skip: Collection[str] = CLIENT_SKIP
) -> bytes:
    """The signed bytes: ext values ordered by key (Java String order), skipping ``skip``,
    UTF-8, then ``body``."""
    text = _text(ext, skip)
    return text + body if body else text


@functools.lru_cache(maxsize=1024)
def _pads(secret_key: str) -> tuple[hashlib._Hash, hashlib._Hash]:
    """HMAC's inner and outer hashes with the key's pads already absorbed (RFC 2104): per
    request only the message is hashed, half the cost of ``hmac.new`` (a hot path: every
    signed request, on both sides)."""
    key = secret_key.encode()
    if len(key) > 64:  # SHA-1's block size
        key = hashlib.sha1(key).digest()
    key = key.ljust(64, b"\0")
    inner = hashlib.sha1(bytes(b ^ 0x36 for b in key))
    outer = hashlib.sha1(bytes(b ^ 0x5C for b in key))
    return inner, outer


def _mac(secret_key: str, text: bytes, body: bytes | None) -> bytes:
    """HMAC-SHA1 of ``text`` then ``body``, each hashed where it is (no copy of the body)."""
    inner, outer = _pads(secret_key)
    h = inner.copy()
    h.update(text)
    if body:
        h.update(body)
    o = outer.copy()
    o.update(h.digest())
    return o.digest()


def signature(secret_key: str, data: bytes) -> str:
    """Base64(HMAC-SHA1(secret_key, data)) (AclSigner.calSignature)."""
    return base64.b64encode(_mac(secret_key, data, None)).decode("ascii")


def sign(cmd: RemotingCommand, credentials: Credentials) -> None:
    """Add ``AccessKey`` (and ``SecurityToken``) and the ``Signature`` over the rest to
    ``cmd`` (AclClientRPCHook.doBeforeRequest). Signing again re-signs."""
    ext = cmd.ext_fields
    ext[ACCESS_KEY] = credentials.access_key
    if credentials.security_token:
        ext[SECURITY_TOKEN] = credentials.security_token
    mac = _mac(credentials.secret_key, _text(ext, CLIENT_SKIP), cmd.body)
    ext[SIGNATURE] = base64.b64encode(mac).decode("ascii")


def verify(ext: Mapping[str, str], body: bytes | None, secret_key: str) -> bool:
    """Whether the request's ``Signature`` is the one ``secret_key`` gives, over the content a
    4.9.8 broker rebuilds (``SERVER_SKIP``); compared in constant time."""
    sent = ext.get(SIGNATURE)
    if sent is None:
        return False
    expected = base64.b64encode(_mac(secret_key, _text(ext, SERVER_SKIP), body))
    return hmac.compare_digest(sent.encode(), expected)
