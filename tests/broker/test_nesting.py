"""A JSON body nested without end is a malformed body, not a crash (issue 29, found by
benchmarks/fuzz.py): fastjson's parser recursed once per ``{`` of an object key without a
depth bound -- in the compiled build a 2 MB body of ``{`` overflowed the C stack and killed
the broker (SIGSEGV); the stdlib parser behind other bodies raised RecursionError, logged as
a handler failure. Each body type is refused with code 1, the servers stay up, and nothing
is logged at error level. Real name server and broker processes."""

from __future__ import annotations

import pytest

from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.protocol.codes import RequestCode as C
from aiorocketmq.remoting.protocol.codes import ResponseCode
from aiorocketmq.remoting.protocol.command import RemotingCommand
from tests.broker.wire import create_topic, send_v2
from tests.cluster import Cluster

OBJECT_KEYS = b"{" * 2_000_000  # an object whose key is an object whose key is ...
ARRAYS = b"[" * 2_000_000
BROKER_CODES = (C.HEART_BEAT, C.LOCK_BATCH_MQ, C.UNLOCK_BATCH_MQ,
                C.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP)  # fmt: skip
NAMESRV_CODES = (C.QUERY_DATA_VERSION,)
FASTJSON_CODES = (C.HEART_BEAT, C.LOCK_BATCH_MQ, C.UNLOCK_BATCH_MQ)  # fastjson's parser
STDLIB_CODES = (C.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,)  # json's: no object keys


@pytest.mark.parametrize("body", [OBJECT_KEYS, ARRAYS], ids=["object-keys", "arrays"])
async def test_bodies_nested_without_end_are_refused(
    cluster: Cluster, json_client: RemotingClient, body: bytes
) -> None:
    broker = cluster.add_broker("broker-a")
    ident = {"brokerName": "broker-a", "brokerAddr": broker.addr,
             "clusterName": "DefaultCluster", "brokerId": "0"}  # fmt: skip
    asked: list[tuple[str, int, dict[str, str]]] = [(broker.addr, c, {}) for c in BROKER_CODES]
    asked += [(cluster.namesrv_addr, code, ident) for code in NAMESRV_CODES]
    for addr, code, ext in asked:
        resp = await json_client.invoke(addr, RemotingCommand.request(code, ext, body))
        assert resp.code == ResponseCode.SYSTEM_ERROR, (code, resp.remark)
        assert str(resp.remark).startswith("bad "), (code, resp.remark)
        deep = code in FASTJSON_CODES or (body is ARRAYS and code in STDLIB_CODES)
        assert not deep or "nested too deeply" in str(resp.remark), (code, resp.remark)
    assert (await json_client.invoke(broker.addr, create_topic("StillUp", 1))).code == 0
    assert (await json_client.invoke(broker.addr, send_v2("StillUp", b"x"))).code == 0
    assert broker.proc is not None
    errors = [e for p in (broker.proc, cluster.ns) for e in p.events if e.get("level") == "error"]
    assert errors == []
