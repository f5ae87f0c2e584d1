"""The ACL rules: accounts and global white addresses read from the ACL files (4.9.8's
PlainPermissionManager.load, PlainAccessResource). Pure: built from already-parsed YAML.

Each file may hold ``globalWhiteRemoteAddresses`` (a list of address patterns), ``accounts``
(each ``accessKey``, ``secretKey``, ``whiteRemoteAddress``, ``admin``, ``defaultTopicPerm``,
``defaultGroupPerm``, ``topicPerms``, ``groupPerms``) and ``dataVersion``
(``[{counter, timestamp}]``). An access key defined in two files keeps its first definition
(files in load order), with a warning; both keys must be longer than 6 characters, or the
whole load fails (r#1379).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from aiorocketmq.remoting.acl import permission
from aiorocketmq.remoting.acl.address import Matcher, matcher
from aiorocketmq.remoting.acl.errors import AclError
from aiorocketmq.remoting.protocol.register import DataVersion

GLOBAL_WHITE: Final = "globalWhiteRemoteAddresses"
ACCOUNTS: Final = "accounts"
DATA_VERSION: Final = "dataVersion"
KEY_MIN_LENGTH: Final = 6  # AclConstants.ACCESS_KEY_MIN_LENGTH / SECRET_KEY_MIN_LENGTH


@dataclass(frozen=True, slots=True)
class Account:
    """One account (PlainAccessResource); ``perms`` maps topics and ``%RETRY%<group>``."""

    access_key: str
    secret_key: str = field(repr=False)
    white: Matcher = field(repr=False)
    admin: bool = False
    default_topic_perm: int = permission.DENY
    default_group_perm: int = permission.DENY
    perms: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Rules:
    """The rules of every ACL file, merged: what a request is checked against."""

    files: tuple[str, ...] = ()  # in load order
    global_white: tuple[Matcher, ...] = ()
    accounts: Mapping[str, Account] = field(default_factory=dict)
    owner: Mapping[str, str] = field(default_factory=dict)  # access key -> its file
    versions: Mapping[str, DataVersion] = field(default_factory=dict)  # file -> dataVersion


def text_value(value: object) -> str | None:
    """A scalar as fastjson reads it into a String field (YAML may give a number or a bool:
    ``secretKey: 12345678``)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float)):
        return str(value)
    raise AclError(f"expected a text value, got {type(value).__name__}")


def _bool(value: object) -> bool:
    if isinstance(value, bool) or value is None:
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise AclError(f"admin: expected true or false, got {value!r}")


def _list(value: object, what: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise AclError(f"{what}: expected a list, got {type(value).__name__}")
    return [t for t in (text_value(v) for v in value) if t is not None]


def check_keys(access_key: str | None, secret_key: str | None, *, shown_secret: str | None) -> None:
    """PlainPermissionManager.checkPlainAccessConfig: both keys longer than 6 characters.
    ``shown_secret`` is what the message names (the load masks it: logs keep no secret)."""
    if (
        access_key is None
        or secret_key is None
        or len(access_key) <= KEY_MIN_LENGTH
        or len(secret_key) <= KEY_MIN_LENGTH
    ):
        raise AclError(
            f"The accessKey={access_key} and secretKey={shown_secret} cannot be null and "
            "length should longer than 6"
        )


def account(doc: Mapping[str, Any]) -> Account:
    """PlainPermissionManager.buildPlainAccessResource; raises AclError."""
    access_key = text_value(doc.get("accessKey"))
    secret_key = text_value(doc.get("secretKey"))
    check_keys(access_key, secret_key, shown_secret=None if secret_key is None else "***")
    assert access_key is not None and secret_key is not None
    perms = permission.parse_resource_perms(_list(doc.get("groupPerms"), "groupPerms"), topic=False)
    perms.update(
        permission.parse_resource_perms(_list(doc.get("topicPerms"), "topicPerms"), topic=True)
    )
    return Account(
        access_key=access_key,
        secret_key=secret_key,
        white=matcher(text_value(doc.get("whiteRemoteAddress"))),
        admin=_bool(doc.get("admin")),
        default_topic_perm=permission.parse_perm(text_value(doc.get("defaultTopicPerm"))),
        default_group_perm=permission.parse_perm(text_value(doc.get("defaultGroupPerm"))),
        perms=perms,
    )


def data_version(doc: Mapping[str, Any], now_ms: int) -> DataVersion:
    """The file's first ``dataVersion`` entry; none: counter 0 at ``now_ms`` (Java's new
    DataVersion())."""
    versions = doc.get(DATA_VERSION)
    if not versions:
        return DataVersion(0, now_ms)
    if not isinstance(versions, list):
        raise AclError(f"{DATA_VERSION}: expected a list")
    try:
        return DataVersion.from_json(versions[0])
    except ValueError as exc:
        raise AclError(f"{DATA_VERSION}: {exc}") from None


def build(docs: Sequence[tuple[str, object]], now_ms: int) -> tuple[Rules, list[str]]:
    """The rules of ``(path, parsed YAML)`` pairs in load order, and the warnings to log (an
    empty file, an access key defined again). Raises AclError naming the file."""
    global_white: list[Matcher] = []
    accounts: dict[str, Account] = {}
    owner: dict[str, str] = {}
    versions: dict[str, DataVersion] = {}
    warnings: list[str] = []
    for path, doc in docs:
        if not doc:
            warnings.append(f"No data in file {path}")
            continue
        if not isinstance(doc, dict):
            raise AclError(f"{path}: expected a mapping at the top, got {type(doc).__name__}")
        try:
            global_white.extend(matcher(p) for p in _list(doc.get(GLOBAL_WHITE), GLOBAL_WHITE))
            entries = doc.get(ACCOUNTS) or []
            if not isinstance(entries, list):
                raise AclError(f"{ACCOUNTS}: expected a list")
            for entry in entries:
                if not isinstance(entry, dict):
                    raise AclError(f"{ACCOUNTS}: each entry must be a mapping")
                acc = account(entry)
                if acc.access_key in owner:
                    warnings.append(
                        f"The accessKey {acc.access_key} is repeated in multiple ACL files: "
                        f"{owner[acc.access_key]} wins over {path}"
                    )
                    continue
                accounts[acc.access_key] = acc
                owner[acc.access_key] = path
            versions[path] = data_version(doc, now_ms)
        except AclError as exc:
            raise AclError(f"{path}: {exc.message}") from None
    rules = Rules(tuple(p for p, _ in docs), tuple(global_white), accounts, owner, versions)
    return rules, warnings
