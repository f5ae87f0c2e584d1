"""The check of one request against the rules, in 4.9.8's order (PlainAccessValidator.parse,
then PlainPermissionManager.validate and checkPerm; fidelity.md 3.5). Pure.

1. the resources the request needs are read (a request 4.9.8 cannot decode is refused here);
2. a peer matching a global white address passes;
3. no ``AccessKey``: "No accessKey is configured"; an unknown one: "No acl config for <ak>";
4. a peer matching the account's white address passes;
5. the signature, over every ext value but ``Signature`` and ``_UNIQUE_KEY_QUERY`` and then
   the body (4.9.8's server-side content: remoting.protocol.signature.verify), must match:
   "Check signature failed for accessKey=<ak>"; ours also takes a signature over
   ``_UNIQUE_KEY_QUERY`` too (as a 4.9.8 Java client signs a query by unique key, which
   4.9.8's broker refuses and 5.x's takes);
6. a request that only publishes to RMQ_SYS_TRACE_TOPIC passes (message trace);
7. an admin-only code needs ``admin: true``;
8. each resource needs its permission, from the account's own entry for it or its default:
   "No default permission for topic:<t>" / "group:<g>" (Java's wording for both cases).

A failure raises AclError carrying Java's message and the frame its remark names.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from aiorocketmq.remoting.acl import errors as e
from aiorocketmq.remoting.acl.errors import AclError
from aiorocketmq.remoting.acl.permission import BROKER_ADMIN_CODES, PUB, check_permission
from aiorocketmq.remoting.acl.resources import needs
from aiorocketmq.remoting.acl.rules import Account, Rules
from aiorocketmq.remoting.protocol.command import RemotingCommand
from aiorocketmq.remoting.protocol.msgid import java_hash
from aiorocketmq.remoting.protocol.signature import (
    ACCESS_KEY,
    CLIENT_SKIP,
    UNIQUE_KEY_QUERY,
    verify,
)
from aiorocketmq.remoting.protocol.topic import RETRY_GROUP_TOPIC_PREFIX, TRACE_TOPIC


@dataclass(frozen=True, slots=True)
class Policy:
    """Which codes are checked (None: every one), which need an admin account, and whether
    per-resource permissions apply (the broker: yes; the name server: no resources)."""

    checked: frozenset[int] | None = None
    admin_codes: frozenset[int] = BROKER_ADMIN_CODES
    resources: bool = True


BROKER: Final = Policy()


def identify(rules: Rules, ip: str, access_key: str | None) -> Account | None:
    """Steps 2-4: None when the peer is white-listed (globally or for its account), else the
    account whose signature must then be checked."""
    for white in rules.global_white:
        if white.match(ip):
            return None
    if access_key is None:
        raise AclError("No accessKey is configured", reason="no_access_key",
                       frame=e.NO_ACCESS_KEY_FRAME)  # fmt: skip
    account = rules.accounts.get(access_key)
    if account is None:
        raise AclError(f"No acl config for {access_key}", reason="unknown_access_key",
                       frame=e.UNKNOWN_KEY_FRAME)  # fmt: skip
    if account.white.match(ip):
        return None
    return account


def bad_signature(access_key: str) -> AclError:
    return AclError(f"Check signature failed for accessKey={access_key}", reason="signature",
                    frame=e.SIGNATURE_FRAME)  # fmt: skip


def check(rules: Rules, policy: Policy, cmd: RemotingCommand, ip: str) -> Account | None:
    """Whether ``cmd`` from ``ip`` may be served; raises AclError if not. Returns the account
    whose signature was verified (None: not checked, or a white-listed peer)."""
    code, ext = cmd.code, cmd.ext_fields
    if policy.checked is not None and code not in policy.checked:
        return None
    # compat: 4.9.8 reads no resources of a request without ext fields (an unsigned one)
    wanted = needs(cmd) if policy.resources and ext else None
    account = identify(rules, ip, ext.get(ACCESS_KEY))
    if account is None:
        return None
    check_signature(account, cmd)
    if wanted and wanted.get(TRACE_TOPIC) == PUB:
        return account
    check_perm(account, code, wanted, policy.admin_codes)
    return account


def check_signature(account: Account, cmd: RemotingCommand) -> None:
    """Step 5: the request's signature under ``account``'s secret, or AclError."""
    ext, body = cmd.ext_fields, cmd.body
    if not verify(ext, body, account.secret_key) and not (
        # ours: also the content a client signed with it (a Java client's unique-key query;
        # 5.x's broker takes that form from clients newer than 4.9.3)
        UNIQUE_KEY_QUERY in ext and verify(ext, body, account.secret_key, CLIENT_SKIP)
    ):
        raise bad_signature(account.access_key)


def check_perm(
    account: Account, code: int, wanted: Mapping[str, int] | None, admin_codes: frozenset[int]
) -> None:
    """PlainPermissionManager.checkPerm (steps 7 and 8)."""
    if code in admin_codes and not account.admin:
        raise AclError(
            f"Need admin permission for request code={code}, but accessKey="
            f"{account.access_key} is not", reason="not_admin", frame=e.ADMIN_FRAME,
        )  # fmt: skip
    if not wanted or (not account.perms and account.admin):
        return
    for resource, needed in wanted.items():
        if not _allowed(account, resource, needed):
            break
    else:
        return
    # compat: the first refused resource in Java's HashMap order is the one the remark names
    for resource in java_hashmap_order(list(wanted)):
        if not _allowed(account, resource, wanted[resource]):
            group = resource.startswith(RETRY_GROUP_TOPIC_PREFIX)
            name = (
                f"group:{resource[len(RETRY_GROUP_TOPIC_PREFIX) :]}"
                if group
                else f"topic:{resource}"
            )
            frame = e.OWNED_PERM_FRAME if resource in account.perms else e.DEFAULT_PERM_FRAME
            raise AclError(f"No default permission for {name}", reason="no_permission",
                           frame=frame)  # fmt: skip


def _allowed(account: Account, resource: str, needed: int) -> bool:
    owned = account.perms.get(resource)
    if owned is None:
        group = resource.startswith(RETRY_GROUP_TOPIC_PREFIX)
        owned = account.default_group_perm if group else account.default_topic_perm
    return check_permission(needed, owned)


def java_hashmap_order(keys: list[str]) -> list[str]:
    """The order a java.util.HashMap of these String keys, put in this order, iterates in:
    by bucket (the spread hash masked to the table size), then by insertion."""
    size = 16
    while len(keys) > size * 3 // 4:
        size *= 2

    def bucket(key: str) -> int:
        h = java_hash(key) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & (size - 1)

    return [k for _, k in sorted(enumerate(keys), key=lambda ik: (bucket(ik[1]), ik[0]))]
