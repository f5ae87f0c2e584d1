"""Golden frames: real requests ali-ons 3.12.0 sent (tests/compat/golden, recorded by
record_golden.py) decode with our codec and typed headers (issue 8 item 4; protocol.md 14.3:
JSON headers, language JAVA, version 121, ext values as raw numbers and booleans)."""

from __future__ import annotations

from pathlib import Path

import pytest

from aiorocketmq.remoting.protocol.codes import LanguageCode, SerializeType
from aiorocketmq.remoting.protocol.command import RemotingCommand
from aiorocketmq.remoting.protocol.frame import FrameDecoder
from aiorocketmq.remoting.protocol.headers.consumer import (
    ConsumerGroupHeader,
    PullMessageRequestHeader,
    QueueOffsetRequestHeader,
    UnregisterClientRequestHeader,
    UpdateConsumerOffsetRequestHeader,
)
from aiorocketmq.remoting.protocol.headers.namesrv import GetRouteInfoRequestHeader
from aiorocketmq.remoting.protocol.headers.send import SendMessageHeader
from aiorocketmq.remoting.protocol.heartbeat import HeartbeatData
from aiorocketmq.remoting.protocol.message import decode_properties

GOLDEN = Path(__file__).resolve().parent / "golden"


def frame(code: int) -> RemotingCommand:
    (path,) = GOLDEN.glob(f"{code}-*.bin")
    (cmd,) = FrameDecoder().feed(path.read_bytes())
    return cmd


@pytest.mark.parametrize("code", [11, 14, 15, 34, 35, 38, 105, 310])
def test_every_recorded_frame_is_an_ali_ons_json_request(code: int) -> None:
    """protocol.md 14.3: type 0 (JSON) headers, language JAVA, version 121, flag 0 (15 too,
    though meant as oneway), opaques counted from 1."""
    cmd = frame(code)
    assert (cmd.code, cmd.serialize_type, cmd.language) == (
        code,
        SerializeType.JSON,
        LanguageCode.JAVA,
    )
    assert (cmd.version, cmd.flag) == (121, 0) and cmd.opaque >= 1


def test_send_v2_with_numbers_and_booleans() -> None:
    """protocol.md 14.3: 310 with keys a-k, no UNIQ_KEY, ext values as JSON numbers/booleans
    ("d":4, "k":false), which our decoder reads as Java's text."""
    cmd = frame(310)
    assert cmd.ext_fields["d"] == "4" and cmd.ext_fields["k"] == "false"
    hdr = SendMessageHeader.from_ext(cmd.ext_fields, v2=True)
    assert (hdr.topic, hdr.default_topic, hdr.default_topic_queue_nums) == (
        "GoldenTopic",
        "TBW102",
        4,
    )
    assert (hdr.sys_flag, hdr.unit_mode, hdr.batch) == (0, False, False)
    props = decode_properties(hdr.properties)
    assert props["TAGS"] == "tag0" and "UNIQ_KEY" not in props
    assert cmd.body == b"g:0"


def test_pull_offsets_route_and_membership_headers() -> None:
    """protocol.md 14.3: the pull carries sysFlag 6 and its subscription; 14/15/35/38/105
    decode with our typed headers."""
    pull = PullMessageRequestHeader.from_ext(frame(11).ext_fields)
    assert (pull.sys_flag, pull.subscription, pull.max_msg_nums) == (6, "*", 32)
    assert pull.suspend_timeout_millis == 2000 and pull.sub_version > 0
    assert QueueOffsetRequestHeader.from_ext(frame(14).ext_fields).consumer_group == "golden_cg"
    assert UpdateConsumerOffsetRequestHeader.from_ext(frame(15).ext_fields).commit_offset >= 0
    assert UnregisterClientRequestHeader.from_ext(frame(35).ext_fields).client_id.startswith(
        "127.0.0.1@"
    )
    assert ConsumerGroupHeader.from_ext(frame(38).ext_fields).consumer_group == "golden_cg"
    assert GetRouteInfoRequestHeader.from_ext(frame(105).ext_fields).topic == "GoldenTopic"


def test_heartbeat_body() -> None:
    """protocol.md 14.3: the heartbeat body uses enum names, subVersion as a number and no
    expressionType (which means TAG)."""
    data = HeartbeatData.decode(frame(34).body)
    (consumer,) = data.consumers
    assert (consumer.group_name, consumer.consume_type, consumer.consume_from_where) == (
        "golden_cg",
        "CONSUME_PASSIVELY",
        "CONSUME_FROM_FIRST_OFFSET",
    )
    (sub,) = consumer.subscriptions
    assert (sub.topic, sub.sub_string, sub.expression_type, sub.codes) == (
        "GoldenTopic",
        "*",
        "TAG",
        None,
    )
