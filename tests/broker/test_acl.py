"""ACL 1.0 on a real broker process (issue 32; features.md 2.1, fidelity.md 3.5): each kind of
refusal gets 4.9.8's answer -- SYSTEM_ERROR (1) and the AclException remark with its Java
frame -- in 4.9.8's order of checks; permitted requests are served."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from aiorocketmq.client.core import api
from aiorocketmq.remoting.protocol.codes import RequestCode as C
from aiorocketmq.remoting.protocol.codes import ResponseCode, SerializeType
from aiorocketmq.remoting.protocol.command import ONEWAY_FLAG, RemotingCommand
from aiorocketmq.remoting.protocol.frame import FrameDecoder, encode
from aiorocketmq.remoting.protocol.heartbeat import ConsumerData, HeartbeatData, SubscriptionData
from aiorocketmq.remoting.protocol.signature import (
    ACCESS_KEY,
    SERVER_SKIP,
    SIGNATURE,
    UNIQUE_KEY_QUERY,
    Credentials,
    content,
    sign,
    signature,
)
from tests.broker.acl_setup import ADMIN, FAR, USER, WHITE, acl_files, client, inner, remark
from tests.broker.wire import create_topic, pull, send_v2
from tests.cluster import BrokerProc, Cluster, running
from tests.harness import ServerProcess
from tests.scrape import scrape, value

VALIDATE = "PlainPermissionManager.validate(PlainPermissionManager.java:{})"
CHECK_PERM = "PlainPermissionManager.checkPerm(PlainPermissionManager.java:{})"
SIGNATURE_FAILED = "Check signature failed for accessKey={}"


@pytest.fixture(scope="module")
def acl_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Cluster, BrokerProc]]:
    """One name server and one broker with ACL on, shared by the tests that change no file."""
    root = tmp_path_factory.mktemp("acl")
    with running(root) as cluster:
        sets = {**acl_files(root), "innerClientAuthenticationCredentials": inner(ADMIN)}
        broker = cluster.add_broker("broker-acl", sets=sets)
        yield cluster, broker


@pytest.fixture
async def broker(acl_cluster: tuple[Cluster, BrokerProc]) -> str:
    """The ACL broker's address, with topics allowed, readonly and secret created (by the
    admin account)."""
    addr = acl_cluster[1].addr
    async with client(ADMIN) as admin:
        for topic in ("allowed", "readonly", "secret"):
            resp = await admin.invoke(addr, create_topic(topic))
            assert resp.code == ResponseCode.SUCCESS, resp.remark
    return addr


async def test_a_client_without_credentials_is_refused(broker: str) -> None:
    """validate: no AccessKey (and no global white address matching 127.0.0.1)."""
    async with client() as anonymous:
        resp = await anonymous.invoke(broker, send_v2("allowed", b"x"))
    assert resp.code == ResponseCode.SYSTEM_ERROR
    assert resp.remark == remark("No accessKey is configured", VALIDATE.format(664))


async def test_an_unknown_access_key_is_refused(broker: str) -> None:
    async with client(Credentials("nobody1234", "whatever1")) as stranger:
        resp = await stranger.invoke(broker, send_v2("allowed", b"x"))
    assert resp.code == ResponseCode.SYSTEM_ERROR
    assert resp.remark == remark("No acl config for nobody1234", VALIDATE.format(668))


async def test_a_wrong_secret_is_refused(broker: str) -> None:
    async with client(Credentials(USER.access_key, "notTheSecret")) as wrong:
        resp = await wrong.invoke(broker, send_v2("allowed", b"x"))
    assert resp.code == ResponseCode.SYSTEM_ERROR
    assert resp.remark == remark(SIGNATURE_FAILED.format("userKey01"), VALIDATE.format(684))


async def test_a_signature_replayed_on_another_request_is_refused(broker: str) -> None:
    """ACL 1.0 signs the request's content: a Signature taken from one send and put on
    another (another body) fails; the same signature on its own request passes."""
    first = send_v2("allowed", b"first", queue_id=0)
    sign(first, USER)
    second = send_v2("allowed", b"second", queue_id=0)
    second.ext_fields[ACCESS_KEY] = USER.access_key
    second.ext_fields[SIGNATURE] = first.ext_fields[SIGNATURE]
    async with client() as unsigned:  # sends the fields as they are
        replayed = await unsigned.invoke(broker, second)
        original = await unsigned.invoke(broker, first)
    assert replayed.code == ResponseCode.SYSTEM_ERROR
    assert replayed.remark == remark(SIGNATURE_FAILED.format("userKey01"), VALIDATE.format(684))
    assert original.code == ResponseCode.SUCCESS, original.remark


async def test_a_permitted_client_is_served(broker: str) -> None:
    async with client(USER) as user:
        sent = await user.invoke(broker, send_v2("allowed", b"hello", queue_id=0))
        assert sent.code == ResponseCode.SUCCESS, sent.remark
        got = await user.invoke(broker, pull("cg_ok", "allowed", 0, 0, suspend_ms=0,
                                             sys_flag=4, subscription="*"))  # fmt: skip
    assert got.code == ResponseCode.SUCCESS, got.remark


async def test_a_topic_without_permission_is_refused(broker: str) -> None:
    """checkPerm: the account's default (DENY) for an unlisted topic, its own entry (SUB)
    for one it may only read -- both worded "No default permission", as in 4.9.8."""
    async with client(USER) as user:
        unlisted = await user.invoke(broker, send_v2("secret", b"x"))
        read_only = await user.invoke(broker, send_v2("readonly", b"x"))
        may_read = await user.invoke(broker, pull("cg_ok", "readonly", 0, 0, suspend_ms=0,
                                                  sys_flag=4, subscription="*"))  # fmt: skip
    assert unlisted.code == read_only.code == ResponseCode.SYSTEM_ERROR
    assert unlisted.remark == remark(
        "No default permission for topic:secret", CHECK_PERM.format(606)
    )
    assert read_only.remark == remark("No default permission for topic:readonly",
                                      CHECK_PERM.format(611))  # fmt: skip
    assert may_read.code in (ResponseCode.SUCCESS, ResponseCode.PULL_NOT_FOUND), may_read.remark


async def test_a_group_without_permission_is_refused(broker: str) -> None:
    """A group is the resource %RETRY%<group>: groupPerms denied=DENY."""
    async with client(USER) as user:
        resp = await user.invoke(broker, pull("denied", "allowed", 0, 0, suspend_ms=0))
        ext = {"consumerGroup": "denied", "topic": "allowed", "queueId": "0", "commitOffset": "1"}
        offsets = await user.invoke(broker, api.request(C.UPDATE_CONSUMER_OFFSET, ext))
    assert resp.code == offsets.code == ResponseCode.SYSTEM_ERROR
    assert resp.remark == offsets.remark == remark("No default permission for group:denied",
                                                   CHECK_PERM.format(611))  # fmt: skip


async def test_a_heartbeat_subscribing_to_a_denied_topic_is_refused(broker: str) -> None:
    """HEART_BEAT's body: each consumer's group and each subscribed topic need SUB."""
    beat = HeartbeatData(client_id="c1", consumers=[ConsumerData(
        group_name="cg_ok", subscriptions=[SubscriptionData(topic="secret")])])  # fmt: skip
    async with client(USER) as user:
        resp = await user.invoke(broker, api.request(C.HEART_BEAT, body=beat.encode()))
    assert resp.code == ResponseCode.SYSTEM_ERROR
    assert resp.remark == remark("No default permission for topic:secret", CHECK_PERM.format(606))


@pytest.mark.parametrize("code", [17, 25, 215, 200, 207, 50, 51, 53])
async def test_a_non_admin_calling_an_admin_code_is_refused(broker: str, code: int) -> None:
    """Permission.ADMIN_CODE (17, 25, 215, 200, 207), and ours for the ACL's own rewrite codes
    (50, 51, 53: in 4.9.8 any account could make itself an admin)."""
    async with client(USER) as user:
        resp = await user.invoke(broker, api.request(code, {"topic": "allowed"}))
    assert resp.code == ResponseCode.SYSTEM_ERROR
    assert resp.remark == remark(f"Need admin permission for request code={code}, but "
                                 "accessKey=userKey01 is not", CHECK_PERM.format(581))  # fmt: skip


async def test_an_admin_may_call_admin_codes(broker: str) -> None:
    async with client(ADMIN) as admin:
        resp = await admin.invoke(broker, create_topic("made_by_admin"))
    assert resp.code == ResponseCode.SUCCESS, resp.remark


async def test_an_account_white_address_skips_the_signature(broker: str) -> None:
    """validate step 4: an account whose whiteRemoteAddress matches the peer (127.0.0.1) is
    not asked for a valid signature; one whose address does not (192.168.1.*) is."""
    async with client(Credentials(WHITE.access_key, "notTheSecret")) as white:
        passed = await white.invoke(broker, api.queue_request(C.GET_MAX_OFFSET, "allowed", 0))
    async with client(Credentials(FAR.access_key, "notTheSecret")) as far:
        refused = await far.invoke(broker, api.queue_request(C.GET_MAX_OFFSET, "allowed", 0))
    assert passed.code == ResponseCode.SUCCESS, passed.remark
    assert refused.remark == remark(SIGNATURE_FAILED.format("farKey0001"), VALIDATE.format(684))


async def test_a_unique_key_query_is_served_signed_with_or_without_the_flag(
    broker: str,
) -> None:
    """4.9.8's broker rebuilds the content without _UNIQUE_KEY_QUERY
    (PlainAccessValidator.parse), so a QUERY_MESSAGE signed over it, as every Java client (and
    ours, and mqadmin) signs it, fails there; 5.x's takes that form from clients newer than
    4.9.3 (PlainAccessResource.parse). Ours (deliberate) takes both forms; a wrong signature
    is still refused."""
    ext = {"topic": "allowed", "key": "k1", "maxNum": "32", "beginTimestamp": "0",
           "endTimestamp": "9999999999999", UNIQUE_KEY_QUERY: "false",
           ACCESS_KEY: USER.access_key}  # fmt: skip
    java_style = api.request(C.QUERY_MESSAGE, dict(ext))
    java_style.ext_fields[SIGNATURE] = signature(USER.secret_key, content(ext, b""))
    server_style = api.request(C.QUERY_MESSAGE, dict(ext))
    server_style.ext_fields[SIGNATURE] = signature(USER.secret_key, content(ext, b"", SERVER_SKIP))
    forged = api.request(C.QUERY_MESSAGE, dict(ext))
    forged.ext_fields[SIGNATURE] = signature("notTheSecret", content(ext, b""))
    async with client() as raw:
        java_served = await raw.invoke(broker, java_style)
        served = await raw.invoke(broker, server_style)
        refused = await raw.invoke(broker, forged)
    assert java_served.code != ResponseCode.SYSTEM_ERROR, java_served.remark
    assert served.code != ResponseCode.SYSTEM_ERROR, served.remark
    assert refused.remark == remark(SIGNATURE_FAILED.format("userKey01"), VALIDATE.format(684))


async def test_get_broker_config_never_shows_the_inner_secret(broker: str) -> None:
    """Ours: GET_BROKER_CONFIG (26) answers every key; the inner credentials' value is hidden
    (any account may send 26, and without ACL anyone)."""
    async with client(ADMIN) as admin:
        resp = await admin.invoke(broker, api.request(C.GET_BROKER_CONFIG))
    assert resp.code == ResponseCode.SUCCESS, resp.remark
    text = resp.body.decode()
    assert "innerClientAuthenticationCredentials=***" in text.splitlines()
    assert ADMIN.secret_key not in text


async def test_code_54_is_not_supported_as_in_4_9_8(broker: str) -> None:
    """GET_BROKER_CLUSTER_ACL_CONFIG (54, which listed every secret) left in 4.9.8 (r#7653)."""
    async with client(ADMIN) as admin:
        resp = await admin.invoke(broker, api.request(54))
    assert resp.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
    assert resp.remark == " request type 54 not supported"


async def test_a_refused_oneway_request_gets_no_answer(broker: str) -> None:
    """NettyRemotingAbstract: the SYSTEM_ERROR answer is written only for a request that is
    not oneway. On one connection: an unsigned oneway send to queue 0, then a signed query and
    a signed send to the same queue; only those two are answered, and the send after the
    oneway one is stored where the oneway one would have been (it was not)."""
    async with client(USER) as user:
        before = await user.invoke(broker, api.queue_request(C.GET_MAX_OFFSET, "allowed", 0))
    oneway = send_v2("allowed", b"unsigned", queue_id=0)
    oneway.flag, oneway.opaque = ONEWAY_FLAG, 1
    query = api.queue_request(C.GET_MAX_OFFSET, "allowed", 0)
    after = send_v2("allowed", b"signed", queue_id=0)
    for opaque, cmd in ((2, query), (3, after)):
        sign(cmd, USER)
        cmd.opaque = opaque
    host, port = broker.split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    try:
        for cmd in (oneway, query, after):
            cmd.serialize_type = SerializeType.JSON
            writer.writelines(encode(cmd, 1 << 24))
        decoder, seen = FrameDecoder(1 << 24), list[RemotingCommand]()
        async with asyncio.timeout(10):
            while {c.opaque for c in seen} != {2, 3}:
                seen += decoder.feed(await reader.read(65536))
    finally:
        writer.close()
    answers = {c.opaque: c for c in seen}
    assert sorted(answers) == [2, 3]
    assert answers[3].code == ResponseCode.SUCCESS, answers[3].remark
    assert answers[3].ext_fields["queueOffset"] == before.ext_fields["offset"]


async def test_refusals_are_counted_and_logged_once_per_client_a_minute(
    acl_cluster: tuple[Cluster, BrokerProc], broker: str
) -> None:
    """Ours (issue 32): /metrics counts each refusal by reason; the log says it once per
    client address and access key a minute, never per request."""
    proc = acl_cluster[1].proc
    assert proc is not None
    before = await scrape(proc.metrics_port())
    key = Credentials("repeat0001", "whatever1")
    async with client(key) as stranger:
        for _ in range(20):
            resp = await stranger.invoke(broker, send_v2("allowed", b"x"))
            assert resp.code == ResponseCode.SYSTEM_ERROR
    after = await scrape(proc.metrics_port())
    name = "rocketmq_acl_auth_failures_total"
    counted = value(after, name, reason="unknown_access_key") - value(
        before, name, reason="unknown_access_key"
    )
    assert counted == 20
    proc.wait_for("acl_refused", 60)  # its log comes through a pipe: waited for, not read at once
    lines = [e for e in proc.events if e.get("event") == "acl_refused"]
    lines = [e for e in lines if e.get("access_key") == "repeat0001"]
    assert len(lines) == 1, lines
    assert lines[0]["peer"] == "127.0.0.1" and lines[0]["reason"] == "unknown_access_key"


async def test_with_acl_off_credential_fields_are_ignored(tmp_path: Path) -> None:
    """protocol.md 12.7: a broker without ACL serves a request whatever AccessKey, Signature,
    SecurityToken and OnsChannel it carries; and the management codes say ACL is off."""
    with running(tmp_path, ["plain"]) as cluster:
        addr = cluster.brokers["plain"].addr
        cmd = send_v2("TBW_any", b"x", AccessKey="k", Signature="garbage", SecurityToken="t",
                      OnsChannel="ALIYUN")  # fmt: skip
        async with client() as raw:
            sent = await raw.invoke(addr, cmd)
            update = await raw.invoke(addr, api.request(C.UPDATE_AND_CREATE_ACL_CONFIG, {
                "accessKey": "someone12", "secretKey": "secret123"}))  # fmt: skip
    assert sent.code == ResponseCode.SUCCESS, sent.remark
    assert update.code == 209
    assert update.remark == "ACL is not enabled on this broker (aclEnable=false)"


def test_a_key_of_six_characters_stops_the_broker_from_starting(tmp_path: Path) -> None:
    """r#1379: both keys must be longer than 6 characters; a file with a shorter one is
    refused at load, with 4.9.8's message (its secret not written to the log), before any
    port is bound."""
    text = "accounts:\n  - accessKey: short6\n    secretKey: longEnough1\n"
    sets = {**acl_files(tmp_path, text), "storePathRootDir": str(tmp_path / "store")}
    sets_args = [a for k, v in sets.items() for a in ("--set", f"{k}={v}")]
    proc = ServerProcess(["-m", "aiorocketmq.broker", "--listen-port", "0", *sets_args])
    try:
        assert proc.proc.wait(60) == 1
        error = proc.wait_for("config_error")
    finally:
        proc.stop()
    path = tmp_path / "conf" / "plain_acl.yml"
    assert error["error"] == (
        f"ACL: {path}: The accessKey=short6 and secretKey=*** cannot be null and length "
        "should longer than 6"
    )
    assert "longEnough1" not in proc.dump()
    assert not any(e.get("event") == "listening" for e in proc.events)
