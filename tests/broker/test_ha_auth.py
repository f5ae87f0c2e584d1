"""The HA hello (broker/ha_auth.py): its frame, and the master's check of it against the ACL
rules -- white addresses, signature, admin, age and replay."""

from __future__ import annotations

import pytest

from aiorocketmq.broker.ha_auth import HEADER_SIZE, MAGIC, HAGate, Hello, body_size, hello, parse
from aiorocketmq.broker.ha_frames import HAProtocolError, encode_report
from aiorocketmq.remoting.acl.errors import AclError
from aiorocketmq.remoting.acl.rules import build
from aiorocketmq.remoting.protocol.signature import Credentials

RULES, _ = build([("f", {"globalWhiteRemoteAddresses": ["10.9.9.9"], "accounts": [
    {"accessKey": "innerKey1", "secretKey": "innerSecret", "admin": True},
    {"accessKey": "userKey01", "secretKey": "userSecret1"}]})], 0)  # fmt: skip
INNER = Credentials("innerKey1", "innerSecret")
NOW = 1_700_000_000_000


def frame(credentials: Credentials, now: int = NOW, nonce: str = "ab" * 16) -> Hello:
    data = hello(credentials, now, nonce)
    assert data[:4] == MAGIC and len(data) == HEADER_SIZE + body_size(data[:HEADER_SIZE])
    return parse(data[HEADER_SIZE:])


def test_a_hello_is_never_taken_for_an_offset_report() -> None:
    assert hello(INNER, NOW)[0] == 0xFF
    assert encode_report(2**62)[0] < 0x80  # an offset is never negative
    with pytest.raises(HAProtocolError):
        body_size(encode_report(12)[:HEADER_SIZE])


def test_the_master_takes_a_signed_hello_once() -> None:
    gate = HAGate()
    gate.check(RULES, "127.0.0.1", frame(INNER), NOW + 1000)
    with pytest.raises(AclError, match="replayed"):
        gate.check(RULES, "127.0.0.1", frame(INNER), NOW + 2000)
    gate.check(RULES, "127.0.0.1", frame(INNER, nonce="cd" * 16), NOW + 2000)


@pytest.mark.parametrize(
    ("hello_from", "ip", "reason"),
    [(None, "127.0.0.1", "no_access_key"),
     (Credentials("innerKey1", "wrongSecret"), "127.0.0.1", "signature"),
     (Credentials("userKey01", "userSecret1"), "127.0.0.1", "not_admin"),
     (Credentials("nobody001", "whatever1"), "127.0.0.1", "unknown_access_key")],
)  # fmt: skip
def test_the_master_refuses(hello_from: Credentials | None, ip: str, reason: str) -> None:
    with pytest.raises(AclError) as refused:
        HAGate().check(RULES, ip, frame(hello_from) if hello_from else None, NOW)
    assert refused.value.reason == reason


def test_an_old_hello_is_refused_and_a_white_address_needs_none() -> None:
    with pytest.raises(AclError, match="Stale"):
        HAGate().check(RULES, "127.0.0.1", frame(INNER, NOW - 10 * 60_000), NOW)
    HAGate().check(RULES, "10.9.9.9", None, NOW)
