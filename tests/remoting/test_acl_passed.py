"""The guard's memo of passed checks (remoting/acl/passed.py): a repeat of a request already
let through is served after its signature alone, and gets exactly the answer a whole check
gives -- a bad signature, a new resource, a reload, another peer are never taken from it."""

from __future__ import annotations

from pathlib import Path

from aiorocketmq.remoting.acl import passed
from aiorocketmq.remoting.acl.files import Location
from aiorocketmq.remoting.acl.guard import AclGuard
from aiorocketmq.remoting.acl.validator import BROKER
from aiorocketmq.remoting.acl.watch import AclFiles
from aiorocketmq.remoting.protocol.codes import RequestCode as C
from aiorocketmq.remoting.protocol.command import RemotingCommand
from aiorocketmq.remoting.protocol.signature import Credentials, sign

USER = Credentials("user00001", "userSecret1")
WRONG = Credentials("user00001", "notTheSecret")
YAML = """\
globalWhiteRemoteAddresses: ["10.1.1.*"]
accounts:
  - accessKey: user00001
    secretKey: userSecret1
    defaultTopicPerm: DENY
    topicPerms: ["open={perm}"]
"""


class Peer:
    """What the guard reads of a connection: its peer address."""

    def __init__(self, peer: str) -> None:
        self.peer = peer


def guard_on(tmp_path: Path, perm: str = "PUB") -> tuple[AclGuard, AclFiles]:
    (tmp_path / "plain_acl.yml").write_text(YAML.replace("{perm}", perm))
    files = AclFiles(Location(tmp_path / "plain_acl.yml", tmp_path / "acl"))
    files.load_now()
    return AclGuard(files, BROKER), files


def send(topic: str, credentials: Credentials | None = USER) -> RemotingCommand:
    cmd = RemotingCommand.request(C.SEND_MESSAGE_V2, {"a": "pg", "b": topic}, b"body")
    if credentials is not None:
        sign(cmd, credentials)
    return cmd


LOCAL = Peer("127.0.0.1:40000")


def test_a_repeat_is_still_refused_for_a_bad_signature(tmp_path: Path) -> None:
    guard, _ = guard_on(tmp_path)
    assert guard(send("open"), LOCAL) is None
    assert guard(send("open"), LOCAL) is None  # from the memo
    remark = guard(send("open", WRONG), LOCAL)
    assert remark is not None and "Check signature failed for accessKey=user00001" in remark
    tampered = send("open")
    tampered.body = b"other body"
    assert guard(tampered, LOCAL) is not None
    assert guard.failures == {"signature": 2}


def test_another_resource_is_checked_whole(tmp_path: Path) -> None:
    guard, _ = guard_on(tmp_path)
    assert guard(send("open"), LOCAL) is None
    remark = guard(send("closed"), LOCAL)
    assert remark is not None and "No default permission for topic:closed" in remark
    retry = send("%RETRY%pg")  # a send back to a retry topic needs the group's SUB
    assert guard(retry, LOCAL) is not None


def test_a_reload_empties_the_memo(tmp_path: Path) -> None:
    guard, files = guard_on(tmp_path)
    assert guard(send("open"), LOCAL) is None
    (tmp_path / "plain_acl.yml").write_text(YAML.replace("{perm}", "DENY"))
    files.load_now()
    remark = guard(send("open"), LOCAL)
    assert remark is not None and "No default permission for topic:open" in remark


def test_a_white_peer_passes_unsigned_and_only_that_peer(tmp_path: Path) -> None:
    guard, _ = guard_on(tmp_path)
    white = Peer("10.1.1.7:5000")
    assert guard(send("closed", None), white) is None
    assert guard(send("closed", None), white) is None
    remark = guard(send("closed", None), LOCAL)
    assert remark is not None and "No accessKey is configured" in remark


def test_the_memo_is_bounded(tmp_path: Path) -> None:
    guard, _ = guard_on(tmp_path)
    for port in range(passed.LIMIT + 10):  # a client reconnecting on new ports
        assert guard(send("open"), Peer(f"127.0.0.1:{port}")) is None
    assert len(guard._passed._entries) <= passed.LIMIT
