"""client.api, the one request layer (issue 14 item 1): builders put on the wire what the
typed headers define (the V2 fast path included), parsers follow MQClientAPIImpl."""

from __future__ import annotations

import pytest

from aiorocketmq.client.core import api
from aiorocketmq.client.core.errors import MQBrokerError
from aiorocketmq.remoting.errors import RemotingCommandError
from aiorocketmq.remoting.protocol.codes import RequestCode as C
from aiorocketmq.remoting.protocol.codes import ResponseCode as R
from aiorocketmq.remoting.protocol.command import RemotingCommand, response_to
from aiorocketmq.remoting.protocol.headers.send import SendMessageHeader


@pytest.mark.parametrize("batch", [False, True])
def test_v2_fast_path_is_the_typed_header(batch: bool) -> None:
    """SendMessageRequestHeaderV2 keys a..m, built directly, decode to what was asked."""
    cmd = api.send_message(
        "T", b"x", group="g", properties={"TAGS": "a"}, queue_id=2, sys_flag=1,
        born_timestamp=5, max_reconsume_times=3, unit_mode=True, batch=batch,
    )  # fmt: skip
    assert cmd.code == (C.SEND_BATCH_MESSAGE if batch else C.SEND_MESSAGE_V2)
    header = SendMessageHeader.from_ext(cmd.ext_fields, v2=True)
    assert header == SendMessageHeader(
        producer_group="g", topic="T", default_topic="TBW102", default_topic_queue_nums=4,
        queue_id=2, sys_flag=1, born_timestamp=5, flag=0, properties="TAGS\x01a\x02",
        reconsume_times=0, unit_mode=True, max_reconsume_times=3, batch=batch,
    )  # fmt: skip
    assert header.to_ext(v2=True) == cmd.ext_fields


def test_v1_send_uses_the_long_names() -> None:
    cmd = api.send_message("T", b"x", group="g", v2=False, born_timestamp=7)
    assert cmd.code == C.SEND_MESSAGE
    assert SendMessageHeader.from_ext(cmd.ext_fields).born_timestamp == 7
    assert "producerGroup" in cmd.ext_fields and "a" not in cmd.ext_fields


def _answer(code: int, **ext: str) -> RemotingCommand:
    return response_to(RemotingCommand.request(C.SEND_MESSAGE_V2), code, "why", ext_fields=ext)


def test_send_statuses_and_refusals() -> None:
    """processSendResponse: 0/10/11/12 are stored messages; anything else is MQBrokerError,
    retriable for DefaultMQProducer.retryResponseCodes only."""
    ok = {"msgId": "7F00000100002A9F0000000000000000", "queueId": "3", "queueOffset": "9"}
    reply = api.parse_send(_answer(R.FLUSH_DISK_TIMEOUT, **ok))
    assert (reply.status, reply.queue_id, reply.queue_offset) == (
        api.SendStatus.FLUSH_DISK_TIMEOUT,
        3,
        9,
    )
    for code, retriable in ((R.SYSTEM_ERROR, True), (R.TOPIC_NOT_EXIST, True),
                            (R.MESSAGE_ILLEGAL, False), (R.SYSTEM_BUSY, False)):  # fmt: skip
        with pytest.raises(MQBrokerError) as err:
            api.parse_send(_answer(code), "10.0.0.1:10911")
        assert (err.value.code, err.value.retriable) == (code, retriable)
        assert "10.0.0.1:10911" in str(err.value) and "why" in str(err.value)


def test_send_answers_parse_as_the_typed_header() -> None:
    """parse_send reads its three keys at once, and anything unusual goes through the typed
    header: Java's parseLong rules and the field-naming errors stay."""
    ok = {"msgId": "ID", "queueId": "3", "queueOffset": "9", "MSG_REGION": "r"}
    reply = api.parse_send(_answer(R.SUCCESS, **ok))
    assert (reply.queue_id, reply.queue_offset, reply.region, reply.trace_on) == (3, 9, "r", True)
    assert api.parse_send(_answer(R.SUCCESS, **(ok | {"queueOffset": "-9"}))).queue_offset == -9
    for key, bad in (("queueId", "1_0"), ("queueId", "2147483648"), ("queueOffset", "\uff11")):
        with pytest.raises(RemotingCommandError, match=f"<{key}> is invalid"):
            api.parse_send(_answer(R.SUCCESS, **(ok | {key: bad})))
    with pytest.raises(RemotingCommandError, match="<msgId> is null"):
        api.parse_send(_answer(R.SUCCESS, queueId="1", queueOffset="2"))


@pytest.mark.parametrize(
    ("sub", "kind", "flag", "suspend"),
    [("*", "TAG", 5, 0), ("A || B", "TAG", 7, 20_000), ("a > 1", "SQL92", 4, 0)],
)
def test_a_pull_from_its_template_is_pull_message(sub: str, kind: str, flag: int,
                                                  suspend: int) -> None:  # fmt: skip
    """pull_from (a reader's pull, from a template built once per topic and subscription)
    puts on the wire what pull_message does: the same keys in the same order; the template
    is not changed by the pulls made from it."""
    template = api.pull_template("g", "T", sys_flag=flag, suspend_ms=suspend, subscription=sub,
                                 expression_type=kind)  # fmt: skip
    kept = dict(template)
    for qid, offset, n in ((0, 0, 32), (7, 123_456_789_012, 1), (2_147_483_647, 5, 256)):
        cmd = api.pull_from(template, qid, offset, n)
        want = api.pull_message(
            "g", "T", qid, offset, max_nums=n, sys_flag=flag, suspend_ms=suspend,
            subscription=sub, expression_type=kind,
        )  # fmt: skip
        assert (cmd.code, cmd.body) == (want.code, want.body) == (C.PULL_MESSAGE, b"")
        assert list(cmd.ext_fields.items()) == list(want.ext_fields.items())
        assert cmd.ext_fields is not template
    assert template == kept


def test_pull_statuses() -> None:
    ext = {"suggestWhichBrokerId": "0", "nextBeginOffset": "4", "minOffset": "0", "maxOffset": "4"}
    reply = api.parse_pull(_answer(R.PULL_NOT_FOUND, **ext))
    assert (reply.status, reply.next_begin_offset, reply.messages()) == (
        api.PullStatus.NO_NEW_MSG,
        4,
        [],
    )
    with pytest.raises(MQBrokerError):
        api.parse_pull(_answer(R.SUBSCRIPTION_NOT_LATEST))


def test_route_as_an_apache_name_server_writes_it() -> None:
    """A 4.9.8 name server (client version < 401 or fastjson defaults) writes brokerAddrs with
    bare Integer keys: ``{0:"ip:port"}``; the SDK reads it (issue 14 item 2)."""
    body = (
        b'{"brokerDatas":[{"brokerAddrs":{0:"10.0.0.1:10911",1:"10.0.0.2:10911"},'
        b'"brokerName":"broker-a","cluster":"DefaultCluster"}],"filterServerTable":{},'
        b'"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":4,'
        b'"topicSynFlag":0,"writeQueueNums":4}]}'
    )
    resp = response_to(RemotingCommand.request(C.GET_ROUTEINFO_BY_TOPIC), R.SUCCESS, body=body)
    route = api.parse_route(resp)
    assert route.broker_datas[0].broker_addrs == {0: "10.0.0.1:10911", 1: "10.0.0.2:10911"}
    assert route.queue_datas[0].write_queue_nums == 4
    missing = response_to(RemotingCommand.request(C.GET_ROUTEINFO_BY_TOPIC), R.TOPIC_NOT_EXIST)
    with pytest.raises(MQBrokerError) as err:
        api.parse_route(missing, "ns:9876")
    assert err.value.retriable
