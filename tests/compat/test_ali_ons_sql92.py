"""ali-ons 3.12.0's SQL92 subscriptions (``subscribe(topic, {expressionType: 'SQL92',
subString})``, sent in every pull and in its heartbeats) against our brokers with
enablePropertyFilter (issue 33; features.md 3.1)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from aiorocketmq.remoting.client import RemotingClient
from tests.broker.sql92_wire import EXPECTED, send_matrix
from tests.cluster import Cluster
from tests.compat.conftest import FAST_DELAYS, Node, create_everywhere

pytestmark = [pytest.mark.compat, pytest.mark.slow]


@pytest.fixture
def sql_cluster(tmp_path: Path) -> Iterator[Cluster]:
    cluster = Cluster(tmp_path)
    cluster.start_namesrv()
    try:
        for name in ("broker-a", "broker-b"):
            cluster.add_broker(name, messageDelayLevel=FAST_DELAYS, enablePropertyFilter="true")
        yield cluster
    finally:
        codes = cluster.stop()
        print(cluster.dump())
    assert all(code == 0 for code in codes.values()), codes


async def test_ali_ons_sql92_consumers_get_exactly_the_matching_messages(
    sql_cluster: Cluster, admin: RemotingClient
) -> None:
    """The property matrix on both brokers (two queues each); one ali-ons consumer per
    expression, each in its own group: each gets exactly the messages the expression
    matches, once (ali-ons does not re-filter an SQL92 subscription either)."""
    await create_everywhere(admin, sql_cluster, "CompatSql", 2)
    copies = [(b, qid) for b in sql_cluster.brokers.values() for qid in (0, 1)]
    for broker, qid in copies:
        await send_matrix(admin, broker.addr, "CompatSql", qid, f"@{broker.name}/{qid}")
    cases = ["a > 5", "b NOT IN ('abc', 'x')", "a IS NULL", "NOT (a > 5)", "a > 5 OR b = 'x'"]
    consumers = [
        await Node.start(
            "consume.js",
            sql_cluster.namesrv_addr,
            "CompatSql",
            f"compat_sql{i}",
            f"--sql={expression}",
            f"--expect={len(EXPECTED[expression]) * len(copies)}",
            "--idle-ms=2000",
            "--from=first",
        )
        for i, expression in enumerate(cases)
    ]
    codes = await asyncio.gather(*(c.wait() for c in consumers))
    for expression, consumer, code in zip(cases, consumers, codes, strict=True):
        assert code == 0, (expression, consumer.stderr.decode()[-2000:])
        want = {f"{m}@{b.name}/{qid}" for m in EXPECTED[expression] for b, qid in copies}
        assert sorted(m["body"] for m in consumer.messages) == sorted(want), expression
