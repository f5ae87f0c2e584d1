"""Permission bits and their checks (4.9.8's acl.common.Permission).

DENY 1, ANY 2, PUB 4, SUB 8. A perm is written ``DENY``, ``PUB``, ``SUB``, ``PUB|SUB`` or
``SUB|PUB``; anything else (or nothing) reads as DENY.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from aiorocketmq.remoting.acl.errors import AclError
from aiorocketmq.remoting.protocol.codes import RequestCode
from aiorocketmq.remoting.protocol.topic import retry_topic

DENY: Final = 1
ANY: Final = 2
PUB: Final = 4
SUB: Final = 8

_NAMED: Final = {"PUB": PUB, "SUB": SUB, "PUB|SUB": PUB | SUB, "SUB|PUB": PUB | SUB, "DENY": DENY}

# compat: Permission.ADMIN_CODE -- the codes only an admin account may send
ADMIN_CODES: Final = frozenset({
    RequestCode.UPDATE_AND_CREATE_TOPIC,  # 17
    RequestCode.UPDATE_BROKER_CONFIG,  # 25
    RequestCode.DELETE_TOPIC_IN_BROKER,  # 215
    RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,  # 200
    RequestCode.DELETE_SUBSCRIPTIONGROUP,  # 207
})  # fmt: skip
# ours: 4.9.8 lets any account with a valid signature rewrite the ACL files (50, 51, 53) --
# and so make itself an admin; here those need an admin account too
ACL_ADMIN_CODES: Final = frozenset({
    RequestCode.UPDATE_AND_CREATE_ACL_CONFIG,  # 50
    RequestCode.DELETE_ACL_CONFIG,  # 51
    RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG,  # 53
})  # fmt: skip
# ours: 5.x marks NOTIFY_BROKER_ROLE_CHANGED (1008) CLUSTER UPDATE; 4.9.8 has no such code
ROLE_ADMIN_CODES: Final = frozenset({RequestCode.NOTIFY_BROKER_ROLE_CHANGED})
BROKER_ADMIN_CODES: Final = ADMIN_CODES | ACL_ADMIN_CODES | ROLE_ADMIN_CODES


def parse_perm(text: object) -> int:
    """Permission.parsePermFromString: unknown or missing reads as DENY."""
    if not isinstance(text, str):
        return DENY
    return _NAMED.get(text.strip(), DENY)


def check_permission(needed: int, owned: int) -> bool:
    """Permission.checkPermission: an owned DENY refuses; ANY needs PUB or SUB; else a bit
    in common."""
    if owned & DENY:
        return False
    if needed & ANY:
        return bool(owned & (PUB | SUB))
    return bool(needed & owned)


def _split(entry: str) -> list[str]:
    # compat: StringUtils.split(resource, "=") -- empty tokens dropped
    return [part for part in entry.split("=") if part]


def parse_resource_perms(entries: Iterable[str], *, topic: bool) -> dict[str, int]:
    """Permission.parseResourcePerms: ``name=PERM`` entries; a group is stored as its retry
    topic (``%RETRY%<group>``). Raises AclError for an entry that is not ``name=PERM``."""
    perms: dict[str, int] = {}
    for entry in entries:
        items = _split(entry)
        if len(items) != 2:
            kind = "topic" if topic else "group"
            raise AclError(f"Parse resource permission failed for {kind}:{entry}")
        name = items[0].strip()
        perms[name if topic else retry_topic(name)] = parse_perm(items[1].strip())
    return perms


def check_resource_perms(entries: Iterable[str] | None) -> None:
    """Permission.checkResourcePerms: what an update (code 50) may set."""
    for entry in entries or ():
        items = _split(entry)
        if len(items) != 2:
            raise AclError(
                f"Parse Resource format error for {entry}.\n"
                "The expected resource format is 'Res=Perm'. For example: topicA=SUB"
            )
        perm = items[1].strip()
        if perm != "DENY" and parse_perm(perm) == DENY:
            raise AclError(
                f"Parse resource permission error for {entry}.\n"
                "The expected permissions are 'SUB' or 'PUB' or 'SUB|PUB' or 'PUB|SUB'."
            )
