"""The timer rules at the send (broker.timer_rules), one test per rule of features.md 4.1."""

from __future__ import annotations

import pytest

from aiorocketmq.broker.timer_rules import (
    DISABLED_REMARK,
    TimerLimits,
    TimerRefused,
    apply_timer,
    handle_time,
    recall_slots,
    round_slot,
)
from aiorocketmq.remoting.protocol.codes import ResponseCode
from aiorocketmq.remoting.protocol.message import MessageExt, Prop, SysFlag
from aiorocketmq.remoting.protocol.timer import TIMER_TOPIC, TimerProp

NOW = 1_700_000_000_123
LIMITS = TimerLimits()


def _msg(props: dict[str, str], sys_flag: int = 0) -> MessageExt:
    return MessageExt(topic="T", body=b"x", properties=dict(props), queue_id=3, sys_flag=sys_flag)


def test_deliver_ms_waits_in_the_wheel_with_real_topic_and_queue() -> None:
    msg = _msg({TimerProp.DELIVER_MS: str(NOW + 5_500)})
    assert apply_timer(msg, LIMITS, NOW)
    assert (msg.topic, msg.queue_id) == (TIMER_TOPIC, 0)
    assert msg.properties[Prop.REAL_TOPIC] == "T"
    assert msg.properties[Prop.REAL_QID] == "3"
    assert msg.properties[TimerProp.OUT_MS] == str((NOW + 5_500) // 1000 * 1000)


def test_precedence_delay_sec_over_delay_ms_over_deliver_ms() -> None:
    msg = _msg({TimerProp.DELAY_SEC: "10", TimerProp.DELAY_MS: "3000",
                TimerProp.DELIVER_MS: str(NOW + 50_000)})  # fmt: skip
    apply_timer(msg, LIMITS, NOW)
    assert msg.properties[TimerProp.OUT_MS] == str(round_slot(NOW + 10_000, 1000))
    msg = _msg({TimerProp.DELAY_MS: "3000", TimerProp.DELIVER_MS: str(NOW + 50_000)})
    apply_timer(msg, LIMITS, NOW)
    assert msg.properties[TimerProp.OUT_MS] == str(round_slot(NOW + 3_000, 1000))


def test_rounding_floor_and_boundary_one_slot_less() -> None:
    assert round_slot(12_345, 1000) == 12_000
    assert round_slot(12_000, 1000) == 11_000
    assert round_slot(12_345, 100) == 12_300


def test_a_recall_handle_names_its_slot_as_5x_reads_it() -> None:
    """The send's handle carries TIMER_OUT_MS + 1; any time in (slot, slot + precision] --
    a handle built from a deliver time -- names the slot; a time on a boundary also names
    itself (a handle ours answered before the + 1)."""
    assert handle_time(12_000) == 12_001
    assert recall_slots(handle_time(12_000), 1000) == (12_000,)
    assert recall_slots(12_345, 1000) == (12_000,) == recall_slots(12_999, 1000)
    assert recall_slots(13_000, 1000) == (12_000, 13_000)
    assert recall_slots(12_301, 100) == (12_300,)


@pytest.mark.parametrize("name", [TimerProp.DELAY_SEC, TimerProp.DELAY_MS, TimerProp.DELIVER_MS])
def test_unparsable_is_message_illegal(name: str) -> None:
    with pytest.raises(TimerRefused) as info:
        apply_timer(_msg({name: "soon"}), LIMITS, NOW)
    assert info.value.code is ResponseCode.MESSAGE_ILLEGAL
    assert "timer message illegal" in info.value.remark
    assert "259200000ms" in info.value.remark


def test_beyond_max_delay_is_message_illegal_and_at_max_is_taken() -> None:
    with pytest.raises(TimerRefused) as info:
        apply_timer(_msg({TimerProp.DELAY_SEC: str(259_200 + 1)}), LIMITS, NOW)
    assert info.value.code is ResponseCode.MESSAGE_ILLEGAL
    assert apply_timer(_msg({TimerProp.DELAY_SEC: "259200"}), LIMITS, NOW)
    small = TimerLimits(max_delay_sec=10)
    with pytest.raises(TimerRefused):
        apply_timer(_msg({TimerProp.DELAY_MS: "10001"}), small, NOW)


def test_past_or_now_is_a_normal_message() -> None:
    for props in ({TimerProp.DELIVER_MS: str(NOW - 1)}, {TimerProp.DELIVER_MS: str(NOW)},
                  {TimerProp.DELAY_SEC: "-5"}, {TimerProp.DELAY_MS: "0"}):  # fmt: skip
        msg = _msg(props)
        assert not apply_timer(msg, LIMITS, NOW)
        assert (msg.topic, msg.queue_id) == ("T", 3)
        assert TimerProp.OUT_MS not in msg.properties


def test_delete_marker_for_the_past_is_illegal() -> None:
    with pytest.raises(TimerRefused):
        apply_timer(_msg({TimerProp.DELIVER_MS: str(NOW - 1), TimerProp.DEL_UNIQKEY: "T+X"}),
                    LIMITS, NOW)  # fmt: skip


def test_delay_level_wins_and_timer_properties_are_dropped() -> None:
    msg = _msg({Prop.DELAY: "3", TimerProp.DELAY_SEC: "10", TimerProp.DELIVER_MS: "1"})
    assert not apply_timer(msg, LIMITS, NOW)
    assert msg.topic == "T"
    assert msg.properties == {Prop.DELAY: "3"}


def test_wheel_disabled_is_system_error() -> None:
    with pytest.raises(TimerRefused) as info:
        apply_timer(_msg({TimerProp.DELAY_SEC: "5"}), TimerLimits(enabled=False), NOW)
    assert (info.value.code, info.value.remark) == (ResponseCode.SYSTEM_ERROR, DISABLED_REMARK)
    assert not apply_timer(_msg({}), TimerLimits(enabled=False), NOW)  # no timer: no refusal


def test_half_message_keeps_its_timer_until_the_commit() -> None:
    half = _msg({TimerProp.DELAY_SEC: "5"}, SysFlag.TRANSACTION_PREPARED)
    assert not apply_timer(half, LIMITS, NOW)
    assert half.properties == {TimerProp.DELAY_SEC: "5"}
    commit = _msg({TimerProp.DELAY_SEC: "5"}, SysFlag.TRANSACTION_COMMIT)
    assert apply_timer(commit, LIMITS, NOW + 60_000)  # counted from the commit
    assert commit.properties[TimerProp.OUT_MS] == str(round_slot(NOW + 65_000, 1000))


def test_rolled_message_in_the_wheel_topic_is_left_alone() -> None:
    msg = MessageExt(topic=TIMER_TOPIC, body=b"", properties={TimerProp.DELAY_SEC: "5"})
    assert not apply_timer(msg, LIMITS, NOW)
    assert TimerProp.OUT_MS not in msg.properties


def test_no_timer_property_is_untouched() -> None:
    msg = _msg({"a": "b"})
    assert not apply_timer(msg, LIMITS, NOW)
    assert msg.properties == {"a": "b"}
