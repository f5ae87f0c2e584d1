"""ali-ons 3.12.0 with ``accessKey``/``secretKey`` against brokers with ACL 1.0 on (issue 32,
"Done when"): it signs as Alibaba's cloud expects, adding ``OnsChannel=ALIYUN`` to the signed
fields (channel.js), and our brokers verify that as 4.9.8 does. Its producer and push
consumer (a send-back included) are served; without keys, or with a wrong secret, each send
gets the broker's AclException."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.protocol.signature import Credentials
from tests.broker.acl_setup import acl_files, client
from tests.cluster import Cluster
from tests.compat.conftest import FAST_DELAYS, PROTOCOL_ERRORS, Node, create_everywhere

pytestmark = [pytest.mark.compat, pytest.mark.slow]

AK, SK = "onsUser001", "onsSecret-001"
PLAIN_ACL = f"""\
accounts:
  - accessKey: {AK}
    secretKey: {SK}
    admin: true
"""


@pytest.fixture
def acl_cluster(tmp_path: Path) -> Iterator[Cluster]:
    cluster = Cluster(tmp_path / "c")
    cluster.start_namesrv()
    sets = acl_files(tmp_path, PLAIN_ACL)
    try:
        for name in ("broker-a", "broker-b"):
            cluster.add_broker(name, sets=sets, messageDelayLevel=FAST_DELAYS)
        yield cluster
    finally:
        codes = cluster.stop()
        print(cluster.dump())
    events = [e for b in cluster.brokers.values() if b.proc is not None for e in b.proc.events]
    errors = [e for e in events if e.get("event") in PROTOCOL_ERRORS]
    assert not errors, f"protocol errors logged during the scenario: {errors}"
    assert all(code == 0 for code in codes.values()), codes


@pytest.fixture
async def signed_admin() -> AsyncIterator[RemotingClient]:
    async with client(Credentials(AK, SK)) as cli:
        yield cli


async def test_ali_ons_with_keys_is_served(
    acl_cluster: Cluster, signed_admin: RemotingClient
) -> None:
    await create_everywhere(signed_admin, acl_cluster, "OnsAcl", 2)
    ns = acl_cluster.namesrv_addr
    keys = (f"--accessKey={AK}", f"--secretKey={SK}")
    producer = await Node.start("produce.js", ns, "OnsAcl", "40", "--run=acl", *keys)
    assert await producer.wait() == 0, producer.stderr.decode()[-2000:]
    sent = producer.messages
    assert len(sent) == 40 and all(m.get("status") == "SEND_OK" for m in sent), sent[:3]
    consumer = await Node.start(
        "consume.js", ns, "OnsAcl", "ons_acl_group", "--expect=40", "--fail=acl:7",
        "--idle-ms=3000", *keys,
    )  # fmt: skip
    assert await consumer.wait() == 0, consumer.stderr.decode()[-2000:]
    got = {m["body"] for m in consumer.messages}
    assert got == {m["body"] for m in sent}
    redelivered = [m for m in consumer.messages if m["body"] == "acl:7"]
    assert len(redelivered) == 2 and redelivered[1]["reconsumeTimes"] == 1  # sent back, signed


async def test_ali_ons_without_keys_or_with_a_wrong_secret_is_refused(
    acl_cluster: Cluster, signed_admin: RemotingClient
) -> None:
    await create_everywhere(signed_admin, acl_cluster, "OnsAclRefused", 2)
    ns = acl_cluster.namesrv_addr
    for extra, remark in [
        ((), "No accessKey is configured"),
        ((f"--accessKey={AK}", "--secretKey=wrong-secret-1"),
         f"Check signature failed for accessKey={AK}"),
    ]:  # fmt: skip
        producer = await Node.start("produce.js", ns, "OnsAclRefused", "3", *extra)
        assert await producer.wait() == 0, producer.stderr.decode()[-2000:]
        results = producer.messages
        # ali-ons' error names no remark ("Send [4] times, still failed ..."): the brokers'
        # refusals say why (acl_refused, logged once per client a minute)
        assert len(results) == 3 and all("still failed" in m.get("error", "") for m in results)
        refused = [
            e
            for b in acl_cluster.brokers.values()
            if b.proc is not None
            for e in b.proc.events
            if e.get("event") == "acl_refused"
        ]
        assert any(remark in e.get("error", "") for e in refused), refused
