"""RemotingCommand, its flag bits, response_to and the opaque counter.

protocol.md 2.3 (flag bit 0 = response, bit 1 = oneway; a response carries its request's opaque;
the opaque counter starts at 0 and wraps within int32), 2.4 (language, version) and 1 (the server
answers in the request's header type).
"""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aiorocketmq.remoting.protocol import command
from aiorocketmq.remoting.protocol.codes import (
    CURRENT_VERSION,
    LanguageCode,
    MQVersion,
    RequestCode,
    ResponseCode,
    SerializeType,
)
from aiorocketmq.remoting.protocol.command import (
    ONEWAY_FLAG,
    RESPONSE_FLAG,
    RemotingCommand,
    next_opaque,
    response_to,
)


def test_flag_bits():
    """protocol.md 2.3: bit 0 (1) marks a response, bit 1 (2) a oneway request."""
    assert (RESPONSE_FLAG, ONEWAY_FLAG) == (1, 2)
    req = RemotingCommand.request(RequestCode.HEART_BEAT, {"k": "v"}, b"body")
    assert (req.flag, req.is_response, req.is_oneway) == (0, False, False)
    assert (req.code, req.ext_fields, req.body) == (34, {"k": "v"}, b"body")
    oneway = RemotingCommand.request(RequestCode.UPDATE_CONSUMER_OFFSET, oneway=True)
    assert (oneway.flag, oneway.is_response, oneway.is_oneway) == (2, False, True)
    assert oneway.ext_fields == {}
    assert RemotingCommand(code=0, flag=3).is_response


def test_defaults():
    """protocol.md 2.4: our client sends PYTHON and version 409 (V4_9_8); design.md 5: type 2."""
    cmd = RemotingCommand(code=105)
    assert (cmd.language, cmd.version, cmd.opaque, cmd.flag) == (3, 409, 0, 0)
    assert cmd.language == LanguageCode.PYTHON
    assert CURRENT_VERSION == MQVersion.V4_9_8
    assert (cmd.remark, cmd.ext_fields, cmd.body) == (None, {}, b"")
    assert cmd.serialize_type == SerializeType.MSGPACK
    assert RemotingCommand(code=1).ext_fields is not cmd.ext_fields


@pytest.mark.parametrize("stype", list(SerializeType))
def test_response_to(stype):
    """protocol.md 2.3 + 1: answer with the request's opaque and type, response bit set."""
    req = RemotingCommand(
        code=RequestCode.GET_ROUTEINFO_BY_TOPIC,
        language=LanguageCode.JAVA,
        version=479,
        opaque=-123456,
        flag=0,
        remark="req",
        ext_fields={"topic": "T"},
        body=b"request body",
        serialize_type=stype,
    )
    resp = response_to(req, ResponseCode.TOPIC_NOT_EXIST, "no route", {"x": "1"}, b"b")
    assert resp.opaque == -123456
    assert resp.serialize_type == stype
    assert resp.flag == RESPONSE_FLAG
    assert (resp.is_response, resp.is_oneway) == (True, False)
    assert (resp.code, resp.remark, resp.ext_fields, resp.body) == (
        17,
        "no route",
        {"x": "1"},
        b"b",
    )
    bare = response_to(req, ResponseCode.SUCCESS)
    assert (bare.code, bare.remark, bare.ext_fields, bare.body) == (0, None, {}, b"")
    assert req.ext_fields == {"topic": "T"}  # the request is left alone


def test_response_to_oneway_flagged_request():
    """protocol.md 2.3: a response has flag 1, whatever bits the request had."""
    req = RemotingCommand(code=15, opaque=9, flag=ONEWAY_FLAG, serialize_type=SerializeType.JSON)
    assert response_to(req, 0).flag == 1


def test_next_opaque_consecutive_int32():
    """protocol.md 2.3: the opaque counter is an int32; successive requests get successive ids."""
    values = [next_opaque() for _ in range(100)]
    assert all(-(2**31) <= v < 2**31 for v in values)
    assert values == list(range(values[0], values[0] + 100))


@given(st.integers(0, 2**34))
def test_next_opaque_wraps_within_int32(start):
    """protocol.md 2.3: Java's counter starts at 0 and wraps to negative values within int32."""
    saved = command._opaques
    command._opaques = itertools.count(start)
    try:
        value = next_opaque()
    finally:
        command._opaques = saved
    assert -(2**31) <= value < 2**31
    assert (value - start) % 2**32 == 0


def test_next_opaque_wrap_point():
    """protocol.md 2.3: after 2**31 - 1 comes -2**31; the first value is 0."""
    saved = command._opaques
    try:
        command._opaques = itertools.count(0)
        assert next_opaque() == 0
        command._opaques = itertools.count(2**31 - 1)
        assert [next_opaque(), next_opaque()] == [2**31 - 1, -(2**31)]
    finally:
        command._opaques = saved


def test_codes_spot_check():
    """protocol.md 3, 4, 2.4: a few numbers the codecs rely on."""
    assert int(RequestCode.GET_ROUTEINFO_BY_TOPIC) == 105
    assert (RequestCode.SEND_MESSAGE, RequestCode.SEND_MESSAGE_V2) == (10, 310)
    assert int(RequestCode.SEND_BATCH_MESSAGE) == 320
    assert int(RequestCode.POP_MESSAGE) == 200050  # > 32767: JSON only
    assert (ResponseCode.SUCCESS, ResponseCode.SYSTEM_ERROR) == (0, 1)
    assert int(ResponseCode.REQUEST_CODE_NOT_SUPPORTED) == 3
    assert [m.value for m in LanguageCode] == list(range(14))
    assert int(LanguageCode.OTHER) == 7
    assert (MQVersion.V3_4_9, MQVersion.V4_9_4, MQVersion.V5_3_3) == (121, 401, 479)
