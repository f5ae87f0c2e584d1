"""Remote-address patterns (4.9.8's RemoteAddressStrategyFactory, AclUtils): what an account's
``whiteRemoteAddress`` and the ``globalWhiteRemoteAddresses`` may say, and whether a peer's
IP matches.

- blank (or absent): never matches;
- ``*``, ``*.*.*.*``, ``*:*:*:*:*:*:*:*``: always;
- ``a.b.c.{1,2,3}`` (or IPv6 ``...:{a,b}``): a set, as is a comma list ``a,b,c``;
- ``*`` or ``-`` inside (``192.168.*.*``, ``10.1.1.1-5``, ``1050::300c:1-200``): a range of
  the first octet (or group) written so, after a fixed head;
- anything else: one address, IPv4 or IPv6, checked to be one.

A pattern that is none of these raises AclError with Java's message (loading then fails). The
matching is Java's, quirks included: an IPv6 range's head is compared as text after Java's
``expandIP``, so ``1050:0005:0600:300c:3261:*`` is a prefix of the expanded address.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Final

from aiorocketmq.remoting.acl.errors import AclError

_IPV4: Final = re.compile(r"(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})", re.ASCII)
_ANY: Final = frozenset({"*", "*.*.*.*", "*:*:*:*:*:*:*:*"})


def is_ipv4(text: str) -> bool:
    """InetAddressValidator.isValidInet4Address: four decimal octets, no leading zeros."""
    m = _IPV4.fullmatch(text)
    return m is not None and all(int(g) <= 255 and (g == "0" or g[0] != "0") for g in m.groups())


def is_ipv6(text: str) -> bool:
    """InetAddressValidator.isValidInet6Address."""
    try:
        ipaddress.IPv6Address(text)
    except ValueError:
        return False
    return True


def remote_ip(peer: str) -> str:
    """A peer's IP without the port (PlainAccessValidator.parse), ``[v6]:p`` unbracketed; an
    IPv4 client of a dual-stack socket as plain IPv4 (as Java's InetSocketAddress shows it)."""
    host = peer.rpartition(":")[0] if ":" in peer else peer
    if host.startswith("["):
        host = host[1:-1]
        if host.lower().startswith("::ffff:") and is_ipv4(host[7:]):
            host = host[7:]
    return host


def _split(text: str, sep: str) -> list[str]:
    # compat: StringUtils.split -- empty tokens dropped
    return [part for part in text.split(sep) if part]


def expand_ip(address: str, part: int) -> str:
    """AclUtils.expandIP: upper case, ``::`` padded out to ``part`` groups, each group padded
    to four digits."""
    address = address.upper()
    pad = part - address.count(":")
    if pad > 0:
        address = address.replace("::", ":" * (pad + 1))
    if not address:
        return ""
    return ":".join(g if len(g) >= 4 else g.rjust(4, "0") for g in address.split(":"))


def _scope_error(address: str) -> AclError:
    return AclError(f"Netaddress examine scope Exception netaddress is {address}")


class Matcher:
    """A parsed pattern; ``match(ip)`` for a peer's IP (``remote_ip``)."""

    __slots__ = ()

    def match(self, ip: str) -> bool:
        raise NotImplementedError


class Never(Matcher):
    """BlankRemoteAddressStrategy."""

    __slots__ = ()

    def match(self, ip: str) -> bool:
        return False


class Always(Matcher):
    """NullRemoteAddressStrategy."""

    __slots__ = ()

    def match(self, ip: str) -> bool:
        return True


NEVER: Final = Never()
ALWAYS: Final = Always()


class OneOf(Matcher):
    """MultipleRemoteAddressStrategy: IPv6 members kept expanded."""

    __slots__ = ("members",)

    def __init__(self, addresses: list[str]) -> None:
        members = set()
        for address in addresses:
            if is_ipv4(address):
                members.add(address)
            elif is_ipv6(address):
                members.add(expand_ip(address, 8))
            else:
                raise AclError(f"Netaddress examine Exception netaddress is {address}")
        self.members = frozenset(members)

    def match(self, ip: str) -> bool:
        return (expand_ip(ip, 8) if is_ipv6(ip) else ip) in self.members


class One(Matcher):
    """OneRemoteAddressStrategy."""

    __slots__ = ("expanded",)

    def __init__(self, address: str) -> None:
        if not (is_ipv4(address) or is_ipv6(address)):
            raise AclError(f"Netaddress examine Exception netaddress is {address}")
        self.expanded = expand_ip(address, 8)

    def match(self, ip: str) -> bool:
        return expand_ip(ip, 8) == self.expanded


class Range(Matcher):
    """RangeRemoteAddressStrategy: ``head`` fixed, then one octet (IPv4) or group (IPv6,
    compared after expand_ip) within ``start..end``; the rest of the address is free."""

    __slots__ = ("end", "head", "index", "start")

    def __init__(self, address: str) -> None:
        self.head: str | None = None  # None: matches nothing (Java: a NullPointerException)
        self.start = self.end = self.index = 0
        try:
            if ":" in address:
                self._parse_v6(address)
            else:
                self._parse_v4(address)
        except (IndexError, ValueError) as exc:  # Java: ArrayIndexOutOfBounds, NumberFormat
            raise AclError(f"Netaddress examine scope Exception netaddress is {address}") from exc

    def _parse_v4(self, address: str) -> None:
        parts = _split(address, ".")
        if (
            self._analyse(parts, 1, 255)
            or self._analyse(parts, 2, 255)
            or self._analyse(parts, 3, 255)
        ):
            _verify(address, self.index - 1)
            self.head = "".join(parts[j].strip() + "." for j in range(self.index))

    def _parse_v6(self, address: str) -> None:
        _check_v6(address)
        parts = _split(address, ":")
        for i in range(1, len(parts)):
            if self._analyse(parts, i, 0xFFFF, base=16):
                _verify(address, self.index - 1)
                head = _v6_head(address)
                self.index = len(_split(head, ":"))
                self.head = head
                break

    def _analyse(self, parts: list[str], index: int, most: int, base: int = 10) -> bool:
        value = parts[index].strip()
        self.index = index
        if value == "*":
            self.start, self.end = 0, most
        elif "-" in value:
            if value.index("-") == 0:
                raise AclError(
                    f"RangeRemoteAddressStrategy netaddress examine scope Exception value {value} "
                )
            bounds = _split(value, "-")
            self.start, self.end = int(bounds[0], base), int(bounds[1], base)
            if not (0 <= self.start <= most and 0 <= self.end <= most and self.start <= self.end):
                raise AclError(
                    "RangeRemoteAddressStrategy netaddress examine scope Exception start is "
                    f"{self.start} , end is {self.end}"
                )
        return self.end > 0

    def match(self, ip: str) -> bool:
        head = self.head
        if head is None:
            return False
        if is_ipv4(ip):
            if not ip.startswith(head):
                return False
            if self.index == 3:
                value = ip[len(head) :]
            elif self.index == 2:
                value = ip[len(head) : ip.rfind(".")]
            else:
                value = ip[len(head) : ip.rfind(".", 0, ip.rfind("."))]
            return value.isdigit() and self.start <= int(value) <= self.end
        if is_ipv6(ip):
            expanded = expand_ip(ip, 8)
            if expanded.startswith(head):
                value = expanded[5 * self.index : 5 * self.index + 4]
                return self.start <= int(value, 16) <= self.end
        return False


def _verify(address: str, index: int) -> None:
    """AclUtils.verify: the groups before the ranged one are numbers in scope."""
    if ":" in address:
        groups = _split(expand_ip(address, 8), ":")
        ok = len(groups) >= index and all(_hex_in_scope(g) for g in groups[:index])
    else:
        octets = _split(address, ".")
        ok = len(octets) == 4 and all(0 <= int(o.strip()) <= 255 for o in octets[:index])
    if not ok:
        raise _scope_error(address)


def _hex_in_scope(group: str) -> bool:
    try:
        return 0 <= int(group, 16) <= 0xFFFF
    except ValueError:
        return False


def _check_v6(address: str) -> None:
    """AclUtils.IPv6AddressCheck: ``*`` only last; a ``-`` range in the last group (or the
    one before a last ``*``)."""
    star, minus = address.find("*"), address.find("-")
    if star > -1 and star != len(address) - 1:
        raise _scope_error(address)
    if minus > -1:
        last = address.rfind(":")
        if (star == -1 and minus <= last) or (star > -1 and minus <= address.rfind(":", 0, last)):
            raise _scope_error(address)


def _v6_head(address: str) -> str:
    """AclUtils.v6ipProcess: the expanded groups before the ranged one."""
    star, minus = "*" in address, "-" in address
    if star and minus:
        last = address.rfind(":")
        return expand_ip(address[: address[:last].rfind(":")], 6)
    if not star and not minus:
        return expand_ip(address, 8)
    return expand_ip(address[: address.rfind(":")], 7)


def matcher(pattern: str | None) -> Matcher:
    """RemoteAddressStrategyFactory.getRemoteAddressStrategy; raises AclError for a pattern
    it cannot use."""
    if pattern is None or not pattern.strip():
        return NEVER
    if pattern in _ANY:
        return ALWAYS
    if pattern.endswith("}"):
        if ":" in pattern:
            last = _split(pattern, ":")[-1]
        else:
            octets = _split(pattern, ".")
            if len(octets) < 4:
                raise AclError("MultipleRemoteAddressStrategy has got a/some wrong format IP(s) ")
            last = octets[-1]
        if not last.startswith("{"):
            raise AclError(
                "MultipleRemoteAddressStrategy netaddress examine scope Exception netaddress"
            )
        prefix = pattern[: pattern.index("{")]
        return OneOf([prefix + member for member in _split(last[1:-1], ",")])
    if "," in pattern:
        return OneOf(_split(pattern, ","))
    if "*" in pattern or "-" in pattern:
        return Range(pattern)
    return One(pattern)
