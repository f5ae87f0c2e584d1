"""Authentication of a slave's HA connection when the master has ACL on (ours: 4.9.8's HA port
takes anyone who connects, and streams them the whole CommitLog).

The slave's first bytes on the connection, when it has inner credentials, are one hello
frame; its offset reports follow as before (protocol.md 12.8):

    0xFF 'H' 'A' '1' | uint16 length | length bytes of UTF-8 JSON
    {"accessKey": ..., "nonce": <32 hex digits>, "timestamp": <ms>, "signature": ...}

``signature`` is the ACL 1.0 signature (Base64 HMAC-SHA1 with the secret key) over the
other three values in key order -- accessKey, nonce, timestamp -- as a signed request's
ext values are signed. An offset report never starts with 0xFF (offsets are not negative),
so a master tells a hello from a report by the first byte, and a master without ACL skips a
hello. A master with ACL on takes the connection only from a peer its global white
addresses (or the account's) match, or with a hello whose signature verifies, from an admin
account (the stream carries every topic), dated within ``WINDOW_MS`` of the master's clock
and with a nonce not seen in that window (a replayed hello is refused). A Java slave sends
no hello: it replicates from a master with ACL off only.
"""

from __future__ import annotations

import json
import secrets
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from aiorocketmq.broker.ha_frames import HAProtocolError
from aiorocketmq.remoting.acl.errors import AclError
from aiorocketmq.remoting.acl.guard import AclGuard
from aiorocketmq.remoting.acl.rules import Rules
from aiorocketmq.remoting.acl.validator import bad_signature, identify
from aiorocketmq.remoting.protocol.message import now_ms
from aiorocketmq.remoting.protocol.signature import Credentials, content, signature

MAGIC: Final = b"\xffHA1"
_HEADER: Final = struct.Struct(">4sH")
HEADER_SIZE: Final = _HEADER.size
MAX_BODY: Final = 4096
WINDOW_MS: Final = 5 * 60_000  # how far a hello's timestamp may be from the master's clock


@dataclass(frozen=True, slots=True)
class Hello:
    access_key: str
    nonce: str
    timestamp: int
    signature: str

    def fields(self) -> dict[str, str]:
        return {"accessKey": self.access_key, "nonce": self.nonce,
                "timestamp": str(self.timestamp)}  # fmt: skip


def hello(credentials: Credentials, now_ms: int, nonce: str | None = None) -> bytes:
    """The frame a slave with inner credentials sends first."""
    unsigned = Hello(credentials.access_key, nonce or secrets.token_hex(16), now_ms, "")
    fields = unsigned.fields()
    fields["signature"] = signature(credentials.secret_key, content(fields, None))
    body = json.dumps(fields, separators=(",", ":")).encode()
    return _HEADER.pack(MAGIC, len(body)) + body


def body_size(header: bytes) -> int:
    """The hello body's length from its 6-byte header; HAProtocolError if it is no hello."""
    magic, size = _HEADER.unpack(header)
    if magic != MAGIC or size > MAX_BODY:
        raise HAProtocolError("bad HA hello")
    return int(size)


def parse(body: bytes) -> Hello:
    try:
        obj = json.loads(body)
        return Hello(str(obj["accessKey"]), str(obj["nonce"]), int(obj["timestamp"]),
                     str(obj["signature"]))  # fmt: skip
    except (ValueError, KeyError, TypeError) as exc:
        raise HAProtocolError(f"bad HA hello: {exc}") from None


class HAGate:
    """The master's check of each slave connection against the broker's current rules."""

    def __init__(self, window_ms: int = WINDOW_MS) -> None:
        self.window_ms = window_ms
        self._seen: dict[str, int] = {}  # nonce -> its hello's timestamp, within the window

    def check(self, rules: Rules, ip: str, hello: Hello | None, now_ms: int) -> None:
        """Raises AclError when the slave may not replicate."""
        account = identify(rules, ip, hello.access_key if hello is not None else None)
        if account is None:
            return
        assert hello is not None  # identify refuses a peer with no access key
        expected = signature(account.secret_key, content(hello.fields(), None))
        if not secrets.compare_digest(expected, hello.signature):
            raise bad_signature(hello.access_key)
        if abs(now_ms - hello.timestamp) > self.window_ms or hello.nonce in self._seen:
            raise AclError(f"Stale or replayed HA hello for accessKey={hello.access_key}",
                           reason="signature")  # fmt: skip
        if not account.admin:
            raise AclError(f"Need admin permission for HA replication, but accessKey="
                           f"{hello.access_key} is not", reason="not_admin")  # fmt: skip
        self._seen = {n: t for n, t in self._seen.items() if abs(now_ms - t) <= self.window_ms}
        self._seen[hello.nonce] = hello.timestamp


Admit = Callable[[str, Hello | None], bool]  # (slave IP, its hello or None) -> replicate?


def admission(guard: AclGuard) -> Admit:
    """The master's check, against ``guard``'s current rules; a refusal is counted and
    logged as a refused request is (per client, once a minute)."""
    gate = HAGate()

    def admit(ip: str, hello: Hello | None) -> bool:
        try:
            gate.check(guard.files.rules, ip, hello, now_ms())
        except AclError as exc:
            guard.refused(exc, ip, hello.access_key if hello else None, port="ha")
            return False
        return True

    return admit
