"""ACL 1.0 request signatures (protocol.md 12.7, fidelity.md 3.5): what a signing client adds
to a request, and the content both sides sign. Pure: no I/O.

The content is the *values* of the request's ext fields, ordered by key in Java String order
(UTF-16 code units), skipping ``Signature`` (a server also skips ``_UNIQUE_KEY_QUERY``, see
``SERVER_SKIP``), UTF-8 encoded, then the raw body. The signature is
Base64(HMAC-SHA1(secretKey, content)).
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import operator
from binascii import b2a_base64
from collections.abc import Callable, Collection, Mapping
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


def _sorted(keys: tuple[str, ...]) -> list[str]:
    ordered = sorted(keys)
    if not "".join(ordered).isascii():  # code points and UTF-16 units order differently
        ordered.sort(key=_java_order)
    return ordered


Values = Callable[[dict[str, str]], "tuple[str, ...] | str"]


def _none(ext: dict[str, str]) -> tuple[str, ...]:
    return ()


def _getter(shape: tuple[str, ...], skip: frozenset[str]) -> Values:
    keys = [k for k in _sorted(shape) if k not in skip]
    # itemgetter of one key gives the value itself: "".join of a str is that str
    return operator.itemgetter(*keys) if keys else _none


# per skip, the values getter of each shape of ext keys seen: a client sends one shape per
# request type, in the same order every time, so the keys are sorted once per shape and the
# values read in one C call (a hot path: every signed request, on both sides)
_GETTERS: dict[frozenset[str], dict[tuple[str, ...], Values]] = {}
_MAX_SHAPES: Final = 512  # kept per skip; a client inventing shapes only empties the cache


def _text(ext: dict[str, str], skip: frozenset[str]) -> bytes:
    """The ext values ordered by key (Java String order), skipping ``skip``, UTF-8."""
    getters = _GETTERS.get(skip)
    if getters is None:
        getters = _GETTERS[skip] = {}
    shape = tuple(ext)
    values = getters.get(shape)
    if values is None:
        if len(getters) >= _MAX_SHAPES:
            getters.clear()
        values = getters[shape] = _getter(shape, skip)
    return "".join(values(ext)).encode()


def content(
    ext: Mapping[str, str], body: bytes | None, skip: Collection[str] = CLIENT_SKIP
) -> bytes:
    """The signed bytes: ext values ordered by key (Java String order), skipping ``skip``,
    UTF-8, then ``body``."""
    text = _text(dict(ext), frozenset(skip))
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
    return b2a_base64(_mac(secret_key, data, None), newline=False).decode("ascii")


def sign(cmd: RemotingCommand, credentials: Credentials) -> None:
    """Add ``AccessKey`` (and ``SecurityToken``) and the ``Signature`` over the rest to
    ``cmd`` (AclClientRPCHook.doBeforeRequest). Signing again re-signs."""
    ext = cmd.ext_fields
    ext[ACCESS_KEY] = credentials.access_key
    if credentials.security_token:
        ext[SECURITY_TOKEN] = credentials.security_token
    mac = _mac(credentials.secret_key, _text(ext, CLIENT_SKIP), cmd.body)
    ext[SIGNATURE] = b2a_base64(mac, newline=False).decode("ascii")


def verify(
    ext: dict[str, str], body: bytes | None, secret_key: str, skip: frozenset[str] = SERVER_SKIP
) -> bool:
    """Whether the request's ``Signature`` is the one ``secret_key`` gives, over the content a
    4.9.8 broker rebuilds (``SERVER_SKIP``; ``CLIENT_SKIP``: the content a client signed);
    compared in constant time."""
    sent = ext.get(SIGNATURE)
    if sent is None:
        return False
    expected = b2a_base64(_mac(secret_key, _text(ext, skip), body), newline=False)
    return hmac.compare_digest(sent.encode(), expected)
