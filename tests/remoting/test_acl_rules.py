"""The ACL rules and their files (remoting.acl: permission, rules, files, edit): 4.9.8's
Permission and PlainPermissionManager, on real files under tmp_path."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from aiorocketmq.remoting.acl import permission as p
from aiorocketmq.remoting.acl.edit import (
    AccessConfig,
    delete_account,
    java_split,
    update_account,
    update_global_white,
)
from aiorocketmq.remoting.acl.errors import AclError
from aiorocketmq.remoting.acl.files import Location, acl_files, load, read
from aiorocketmq.remoting.acl.rules import build
from aiorocketmq.remoting.protocol.register import DataVersion


@pytest.mark.parametrize(
    ("needed", "owned", "ok"),
    [(p.PUB, p.PUB, True), (p.PUB, p.SUB, False), (p.SUB, p.PUB | p.SUB, True),
     (p.PUB, p.DENY, False), (p.PUB, p.DENY | p.PUB, False), (p.ANY, p.SUB, True),
     (p.ANY, p.DENY, False), (p.ANY, 0, False)],
)  # fmt: skip
def test_check_permission(needed: int, owned: int, ok: bool) -> None:
    assert p.check_permission(needed, owned) is ok


@pytest.mark.parametrize(
    ("text", "perm"),
    [("PUB", p.PUB), ("SUB", p.SUB), (" PUB|SUB ", p.PUB | p.SUB), ("SUB|PUB", p.PUB | p.SUB),
     ("DENY", p.DENY), ("PUB | SUB", p.DENY), ("pub", p.DENY), (None, p.DENY)],
)  # fmt: skip
def test_parse_perm_reads_anything_unknown_as_deny(text: str | None, perm: int) -> None:
    assert p.parse_perm(text) == perm


def test_groups_are_stored_as_retry_topics() -> None:
    account = {"accessKey": "account1", "secretKey": "secret12", "topicPerms": ["t=PUB"],
               "groupPerms": ["g=SUB", "h=nonsense"]}  # fmt: skip
    doc = {"accounts": [account]}
    rules, _ = build([("f.yml", doc)], 0)
    assert rules.accounts["account1"].perms == {"t": p.PUB, "%RETRY%g": p.SUB,
                                                "%RETRY%h": p.DENY}  # fmt: skip
    with pytest.raises(AclError, match="Parse resource permission failed for topic:t"):
        build([("f.yml", {"accounts": [{**doc["accounts"][0], "topicPerms": ["t"]}]})], 0)


@pytest.mark.parametrize(("key", "secret"), [("short6", "longEnough1"), ("longEnough", "abcdef")])
def test_keys_of_six_characters_or_fewer_are_refused(key: str, secret: str) -> None:
    """r#1379; the message is 4.9.8's, the secret masked (it goes to the log)."""
    with pytest.raises(AclError) as refused:
        build([("f.yml", {"accounts": [{"accessKey": key, "secretKey": secret}]})], 0)
    assert refused.value.message == (f"f.yml: The accessKey={key} and secretKey=*** cannot be "
                                     "null and length should longer than 6")  # fmt: skip


def test_yaml_numbers_and_booleans_are_read_as_text() -> None:
    """fastjson reads ``secretKey: 12345678`` into a String field."""
    text = "accounts:\n- {accessKey: RocketMQ, secretKey: 12345678, admin: 'true'}"
    rules, _ = build([("f.yml", yaml.safe_load(text))], 0)
    account = rules.accounts["RocketMQ"]
    assert account.secret_key == "12345678" and account.admin


def test_the_first_definition_of_an_access_key_wins(tmp_path: Path) -> None:
    """4.9.8's order: the directory's files (by name, recursively, tools.yml never), then
    plain_acl.yml; a key defined again is warned about."""
    acl = tmp_path / "acl"
    (acl / "sub").mkdir(parents=True)
    (acl / "b.yaml").write_text("accounts: [{accessKey: shared01, secretKey: fromB1234}]")
    (acl / "sub" / "a.yml").write_text("accounts: [{accessKey: other001, secretKey: fromA1234}]")
    (acl / "tools.yml").write_text("accessKey: [broken")
    (acl / "notes.txt").write_text("ignored")
    plain = tmp_path / "plain_acl.yml"
    plain.write_text("accounts: [{accessKey: shared01, secretKey: fromPlain1}]\n"
                     "dataVersion: [{counter: 7, timestamp: 9}]")  # fmt: skip
    where = Location(plain, acl)
    assert acl_files(where) == [acl / "b.yaml", acl / "sub" / "a.yml", plain]
    rules, warnings = load(read(where), 5)
    assert rules.accounts["shared01"].secret_key == "fromB1234"
    assert rules.owner == {"shared01": str(acl / "b.yaml"), "other001": str(acl / "sub" / "a.yml")}
    assert warnings == [f"The accessKey shared01 is repeated in multiple ACL files: "
                        f"{acl / 'b.yaml'} wins over {plain}"]  # fmt: skip
    assert rules.versions[str(plain)] == DataVersion(7, 9)
    assert rules.versions[str(acl / "b.yaml")] == DataVersion(0, 5)


def test_a_broken_yaml_file_names_itself(tmp_path: Path) -> None:
    plain = tmp_path / "plain_acl.yml"
    plain.write_text("accounts: [oops")
    with pytest.raises(AclError, match=str(plain)):
        load(read(Location(plain, tmp_path / "acl")), 0)


def test_update_account_as_4_9_8(tmp_path: Path) -> None:
    """createAclAccessConfigMap: the fields given replace the entry's, the others stay; the
    entry moves last; the dataVersion goes up by one."""
    doc = {"accounts": [{"accessKey": "account1", "secretKey": "secret12", "topicPerms": ["a=PUB"],
                         "whiteRemoteAddress": "10.0.0.1"},
                        {"accessKey": "account2", "secretKey": "secret22"}],
           "dataVersion": [{"counter": 3, "timestamp": 1}]}  # fmt: skip
    new = update_account(doc, AccessConfig("account1", "secret99", admin=True,
                                           group_perms=["g=SUB"]), 100)  # fmt: skip
    assert [a["accessKey"] for a in new["accounts"]] == ["account2", "account1"]
    assert new["accounts"][1] == {"accessKey": "account1", "secretKey": "secret99",
                                  "topicPerms": ["a=PUB"], "whiteRemoteAddress": "10.0.0.1",
                                  "admin": True, "groupPerms": ["g=SUB"]}  # fmt: skip
    assert new["dataVersion"] == [{"counter": 4, "timestamp": 100}]
    added = update_account(None, AccessConfig("account3", "secret33"), 100)
    assert added["accounts"] == [{"accessKey": "account3", "secretKey": "secret33", "admin": False}]
    assert added["dataVersion"] == [{"counter": 1, "timestamp": 100}]


@pytest.mark.parametrize(
    ("config", "message"),
    [(AccessConfig("account1", "abc"), "The accessKey=account1 and secretKey=abc cannot be "
      "null and length should longer than 6"),
     (AccessConfig("account1", "secret12", topic_perms=["t"]), "Parse Resource format error "
      "for t.\nThe expected resource format is 'Res=Perm'. For example: topicA=SUB"),
     (AccessConfig("account1", "secret12", group_perms=["g=ALL"]), "Parse resource permission "
      "error for g=ALL.\nThe expected permissions are 'SUB' or 'PUB' or 'SUB|PUB' or "
      "'PUB|SUB'."),
     (AccessConfig("account1", "secret12", white_remote_address="300.1.1.1"),
      "Netaddress examine Exception netaddress is 300.1.1.1")],
)  # fmt: skip
def test_update_account_refusals(config: AccessConfig, message: str) -> None:
    with pytest.raises(AclError) as refused:
        update_account({}, config, 0)
    assert refused.value.message == message


def test_delete_and_global_white() -> None:
    doc = {"accounts": [{"accessKey": "account1", "secretKey": "secret12"}]}
    assert delete_account(doc, "nobody", 0) is None
    deleted = delete_account(doc, "account1", 5)
    assert deleted == {"accounts": [], "dataVersion": [{"counter": 1, "timestamp": 5}]}
    white = update_global_white(doc, ["10.0.0.*", "127.0.0.1"], 5)
    assert white["globalWhiteRemoteAddresses"] == ["10.0.0.*", "127.0.0.1"]
    with pytest.raises(AclError):
        update_global_white(doc, ["10.0.0.0-300"], 5)


def test_java_split() -> None:
    assert java_split("a,b,,") == ["a", "b"]
    assert java_split(",a") == ["", "a"]
    assert java_split("") == [""]
    assert java_split(None) is None
