"""Remote-address patterns (remoting.acl.address), with the cases of 4.9.8's
RemoteAddressStrategyTest: which pattern gives which strategy, what each matches, and the
patterns refused at load."""

from __future__ import annotations

import pytest

from aiorocketmq.remoting.acl.address import (
    ALWAYS,
    NEVER,
    One,
    OneOf,
    Range,
    expand_ip,
    matcher,
    remote_ip,
)
from aiorocketmq.remoting.acl.errors import AclError


@pytest.mark.parametrize(
    ("pattern", "kind"),
    [
        (None, NEVER), ("", NEVER), ("  ", NEVER),
        ("*", ALWAYS), ("*.*.*.*", ALWAYS), ("*:*:*:*:*:*:*:*", ALWAYS),
        ("127.0.0.1", One), ("127.0.0.1,127.0.0.2,127.0.0.3", OneOf), ("127.0.0.{1,2,3}", OneOf),
        ("127.0.0.1-200", Range), ("127.0.0.*", Range), ("127.0.1-20.*", Range),
        ("1050:0000:0000:0000:0005:0600:300c:326b", One),
        ("1050::0005:0600:300c:3261,1050::0005:0600:300c:3262", OneOf),
        ("1050::0005:0600:300c:3261:{1,2,3}", OneOf), ("1050::0005:0600:300c:3261:1-200", Range),
        ("1050:0005:0600:300c:3261:*", Range), ("1050::0005:0600:300c:3261:1-20:*", Range),
    ],
)  # fmt: skip
def test_the_strategy_a_pattern_gives(pattern: str | None, kind: object) -> None:
    got = matcher(pattern)
    assert got is kind if not isinstance(kind, type) else isinstance(got, kind)


@pytest.mark.parametrize(
    "pattern",
    ["256.0.0.1", "::1ggg", "127.0.0.1,2,3}", "192.168.{1}", "{192.168.1}", "127.0.0.2-1",
     "127.0.0.-1-200", "127.0.0.0-256", "10.*", "1:2:*:4"],
)  # fmt: skip
def test_patterns_refused_at_load(pattern: str) -> None:
    with pytest.raises(AclError):
        matcher(pattern)


def test_one_address() -> None:
    v4, v6 = matcher("127.0.0.1"), matcher("::1")
    assert v4.match("127.0.0.1") and not v4.match("127.0.0.2") and not v4.match("")
    assert v6.match("::1") and v6.match("0000:0000:0000:0000:0000:0000:0000:0001")
    assert not v6.match("::2")


@pytest.mark.parametrize("pattern", ["127.0.0.1,127.0.0.2,127.0.0.3", "127.0.0.{1,2,3}"])
def test_a_set_of_addresses(pattern: str) -> None:
    m = matcher(pattern)
    assert [m.match(f"127.0.0.{i}") for i in range(5)] == [False, True, True, True, False]


@pytest.mark.parametrize(
    "pattern", ["1050::0005:0600:300c:1,1050::0005:0600:300c:2,1050::0005:0600:300c:3",
                "1050::0005:0600:300c:{1,2,3}"],
)  # fmt: skip
def test_a_set_of_ipv6_addresses(pattern: str) -> None:
    m = matcher(pattern)
    got = [m.match(f"1050:0000:0000:0000:0005:0600:300c:{i}") for i in range(5)]
    assert got == [False, True, True, True, False]


@pytest.mark.parametrize(
    ("pattern", "low", "high"),
    [("127.0.0.1-200", 1, 200), ("127.0.0.*", 0, 255), ("127.*.*.*", 0, 255)],
)
def test_a_range_of_the_last_octet(pattern: str, low: int, high: int) -> None:
    m = matcher(pattern)
    for i in range(-10, 300):
        assert m.match(f"127.0.0.{i}") == (low <= i <= high), i


def test_a_range_of_an_inner_octet() -> None:
    m = matcher("127.0.1-200.*")
    assert m.match("127.0.1.0") and m.match("127.0.200.255") and not m.match("127.0.201.1")
    assert matcher("192.100-150.*.*").match("192.130.0.2")
    assert not matcher("192.100-150.*.*").match("192.151.0.2")


@pytest.mark.parametrize(
    ("pattern", "head", "low", "high"),
    [("1050::0005:0600:300c:1-200", "1050::0005:0600:300c:", 1, 0x200),
     ("1050::0005:0600:300c:*", "1050::0005:0600:300c:", 0, 0xFFFF),
     ("1050::0005:0600:300c:1-200:*", "1050::0005:0600:300c:1:", 0, 0xFFFF),
     ("1050::0005:0600:3001:*", "1050::0005:0600:300c:", 1, 0),  # another head: nothing
     ("1050::0005:0600:300c:1-200:*", "1050::0005:0600:300c:201:", 1, 0)],
)  # fmt: skip
def test_a_range_of_an_ipv6_group(pattern: str, head: str, low: int, high: int) -> None:
    m = matcher(pattern)
    for i in range(-10, 65536 + 100, 7):
        assert m.match(head + format(i, "x")) == (low <= i <= high), i


def test_expand_ip() -> None:
    assert expand_ip("1050::5:600:300c:326b", 8) == "1050:0000:0000:0000:0005:0600:300C:326B"
    assert expand_ip("::1", 8) == "0000:0000:0000:0000:0000:0000:0000:0001"
    assert expand_ip("127.0.0.1", 8) == "127.0.0.1"


@pytest.mark.parametrize(
    ("peer", "ip"),
    [("127.0.0.1:5555", "127.0.0.1"), ("[::1]:5555", "::1"), ("[::ffff:10.0.0.1]:1", "10.0.0.1")],
)
def test_the_peer_ip(peer: str, ip: str) -> None:
    assert remote_ip(peer) == ip
