"""ORDER_TOPIC_CONFIG values are bounded (issue 29 build item 1): each route of the topic
carries the value to every client, which makes that many MessageQueues of each count
(Integer.parseInt in MQClientInstance.topicRouteData2TopicPublishInfo; the SDK's
PublishInfo likewise): "broker-a:2147483647" ran every producer of the topic out of memory,
"broker-a:x" broke its route in every Java client. PUT_KV_CONFIG refuses them naming the
rule; one already in kv.json is dropped at start with a warning."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.protocol.codes import RequestCode, ResponseCode
from aiorocketmq.remoting.protocol.command import RemotingCommand
from tests.harness import serving
from tests.namesrv.test_process import namesrv_args

BAD = ["broker-a:2147483647", "broker-a:1025", "broker-a:-1", "broker-a:x", "broker-a", ";",
       "a:1;;b:2", ":4"]  # fmt: skip
GOOD = ["broker-a:4", "a:4;b:8;", "a:0", "a:+16"]


def put(key: str, value: str) -> RemotingCommand:
    ext = {"namespace": "ORDER_TOPIC_CONFIG", "key": key, "value": value}
    return RemotingCommand.request(RequestCode.PUT_KV_CONFIG, ext)


@pytest.mark.parametrize("value", BAD)
async def test_an_order_topic_config_no_client_can_use_is_refused(
    tmp_path: Path, value: str
) -> None:
    with serving(namesrv_args(tmp_path)) as proc:
        addr = f"127.0.0.1:{proc.listening_port()}"
        async with RemotingClient() as cli:
            resp = await cli.invoke(addr, put("Orders", value))
            assert resp.code == ResponseCode.SYSTEM_ERROR
            assert "ORDER_TOPIC_CONFIG Orders: " in str(resp.remark), resp.remark
            assert (await cli.invoke(addr, put("Fine", "broker-a:4"))).code == 0
    saved = json.loads((tmp_path / "kv.json").read_text())
    assert saved == {"configTable": {"ORDER_TOPIC_CONFIG": {"Fine": "broker-a:4"}}}


async def test_good_values_are_kept_and_bad_stored_ones_dropped_at_start(tmp_path: Path) -> None:
    stored = {f"Old{i}": v for i, v in enumerate(BAD)} | {f"Ok{i}": v for i, v in enumerate(GOOD)}
    (tmp_path / "kv.json").write_text(json.dumps({"configTable": {"ORDER_TOPIC_CONFIG": stored}}))
    with serving(namesrv_args(tmp_path)) as proc:
        addr = f"127.0.0.1:{proc.listening_port()}"
        async with RemotingClient() as cli:
            for i, value in enumerate(GOOD):
                assert (await cli.invoke(addr, put(f"New{i}", value))).code == 0
            ask = {"namespace": "ORDER_TOPIC_CONFIG"}
            listed = await cli.invoke(
                addr, RemotingCommand.request(RequestCode.GET_KVLIST_BY_NAMESPACE, ask)
            )
        assert listed.code == 0
        table = json.loads(listed.body)["table"]
        assert table == {f"{p}{i}": v for p in ("Ok", "New") for i, v in enumerate(GOOD)}
        dropped = [e for e in proc.events if e.get("event") == "kv_config_entry_dropped"]
        assert len(dropped) == len(BAD)
