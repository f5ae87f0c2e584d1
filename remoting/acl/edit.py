"""What the management codes do to an ACL file's YAML (4.9.8's PlainPermissionManager
updateAccessConfig, deleteAccessConfig, updateGlobalWhiteAddrsConfig, createAclAccessConfigMap
and updateAclConfigFileVersion). Pure: a parsed file in, the file to write out.

Every rewrite bumps the file's ``dataVersion`` (counter + 1, timestamp now), which
GET_BROKER_CLUSTER_ACL_INFO (52) and ``mqadmin clusterAclConfigVersion`` show.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aiorocketmq.remoting.acl import permission
from aiorocketmq.remoting.acl.address import matcher
from aiorocketmq.remoting.acl.errors import AclError
from aiorocketmq.remoting.acl.rules import (
    ACCOUNTS,
    DATA_VERSION,
    GLOBAL_WHITE,
    KEY_MIN_LENGTH,
    account,
    check_keys,
    data_version,
    text_value,
)


@dataclass(frozen=True, slots=True)
class AccessConfig:
    """PlainAccessConfig as code 50 carries it: ``None`` leaves a field as the file has it."""

    access_key: str | None
    secret_key: str | None = None
    white_remote_address: str | None = None
    admin: bool = False
    default_topic_perm: str | None = None
    default_group_perm: str | None = None
    topic_perms: list[str] | None = None
    group_perms: list[str] | None = None

    def __repr__(self) -> str:  # the secret is never shown
        return f"AccessConfig(access_key={self.access_key!r}, admin={self.admin})"


def java_split(text: str | None, sep: str = ",") -> list[str] | None:
    """UtilAll.split: Java's ``String.split`` (trailing empty strings dropped; null stays
    null)."""
    if text is None:
        return None
    parts = text.split(sep)
    while len(parts) > 1 and parts[-1] == "":
        parts.pop()
    return parts


def bump_version(doc: dict[str, Any], now_ms: int) -> dict[str, Any]:
    """updateAclConfigFileVersion: the file's dataVersion, next."""
    version = data_version(doc, now_ms).next(now_ms)
    doc[DATA_VERSION] = [{"counter": version.counter, "timestamp": version.timestamp}]
    return doc


def _account_map(existing: dict[str, Any] | None, config: AccessConfig) -> dict[str, Any]:
    """createAclAccessConfigMap: the account's entry with what ``config`` sets."""
    entry = existing if existing is not None else {}
    key = config.access_key
    if not key or len(key) <= KEY_MIN_LENGTH:
        raise AclError(f"The accessKey={key} cannot be null and length should longer than 6")
    entry["accessKey"] = key
    if config.secret_key:
        if len(config.secret_key) <= KEY_MIN_LENGTH:
            raise AclError(f"The secretKey={config.secret_key} value length should longer than 6")
        entry["secretKey"] = config.secret_key
    if config.white_remote_address is not None:
        entry["whiteRemoteAddress"] = config.white_remote_address
    entry["admin"] = config.admin
    if config.default_topic_perm:
        entry["defaultTopicPerm"] = config.default_topic_perm
    if config.default_group_perm:
        entry["defaultGroupPerm"] = config.default_group_perm
    if config.topic_perms is not None:
        entry["topicPerms"] = list(config.topic_perms)
    if config.group_perms is not None:
        entry["groupPerms"] = list(config.group_perms)
    return entry


def update_account(doc: dict[str, Any] | None, config: AccessConfig, now_ms: int) -> dict[str, Any]:
    """Code 50 on the file that holds (or will hold) the account: its entry updated (moved
    last, as 4.9.8's remove-and-add does) or added. Raises AclError with 4.9.8's messages."""
    # compat: checkPlainAccessConfig's message names the secret the caller sent
    check_keys(config.access_key, config.secret_key, shown_secret=config.secret_key)
    permission.check_resource_perms(config.topic_perms)
    permission.check_resource_perms(config.group_perms)
    doc = dict(doc or {})
    entries = doc.get(ACCOUNTS)
    accounts = list(entries) if isinstance(entries, list) else []
    existing = None
    for i, entry in enumerate(accounts):
        if isinstance(entry, dict) and text_value(entry.get("accessKey")) == config.access_key:
            existing = dict(accounts.pop(i))
            break
    updated = _account_map(existing, config)
    account(updated)  # buildPlainAccessResource: a bad address pattern refuses the update
    accounts.append(updated)
    doc[ACCOUNTS] = accounts
    return bump_version(doc, now_ms)


def delete_account(
    doc: dict[str, Any] | None, access_key: str, now_ms: int
) -> dict[str, Any] | None:
    """Code 51: the file without the account, or None when it holds no such account."""
    entries = (doc or {}).get(ACCOUNTS)
    if not isinstance(entries, list):
        return None
    kept = [
        e for e in entries
        if not (isinstance(e, dict) and text_value(e.get("accessKey")) == access_key)
    ]  # fmt: skip
    if len(kept) == len(entries):
        return None
    out = dict(doc or {})
    out[ACCOUNTS] = kept
    return bump_version(out, now_ms)


def update_global_white(
    doc: dict[str, Any] | None, addresses: list[str], now_ms: int
) -> dict[str, Any]:
    """Code 53: the file's ``globalWhiteRemoteAddresses`` replaced. Each pattern is checked
    first (ours: 4.9.8 writes a bad one, and its next load of the file fails)."""
    for pattern in addresses:
        matcher(pattern)
    out = dict(doc or {})
    out[GLOBAL_WHITE] = list(addresses)
    return bump_version(out, now_ms)
