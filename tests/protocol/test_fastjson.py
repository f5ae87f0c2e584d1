"""fastjson quirks (protocol.md 6): bare numeric keys and object keys parse; object-keyed maps
are written the way Java writes them; standard JSON still parses the same."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aiorocketmq.remoting.protocol import fastjson


def test_bare_numeric_keys() -> None:
    """protocol.md 6.1: a Java namesrv writes brokerAddrs as {0:"...",1:"..."}."""
    text = '{"brokerAddrs":{0:"127.0.0.1:10911",1:"127.0.0.1:10931"},"brokerName":"b"}'
    assert fastjson.loads(text) == {
        "brokerAddrs": {"0": "127.0.0.1:10911", "1": "127.0.0.1:10931"},
        "brokerName": "b",
    }


def test_object_keys_round_trip() -> None:
    """protocol.md 6.5: TopicStatsTable's offsetTable is keyed by MessageQueue objects."""
    mq = {"brokerName": "broker-a", "queueId": 0, "topic": "T"}
    text = fastjson.dumps_object_keyed([(mq, {"maxOffset": 5, "minOffset": 0})])
    assert text == (
        '{{"brokerName":"broker-a","queueId":0,"topic":"T"}:{"maxOffset":5,"minOffset":0}}'
    )
    parsed = fastjson.loads('{"offsetTable":' + text + "}")
    ((key, value),) = parsed["offsetTable"].items()
    assert dict(key) == mq and value == {"maxOffset": 5, "minOffset": 0}


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.text(max_size=10)
    | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4)
    ),
    max_leaves=20,
)


@given(json_values)
def test_standard_json_parses_identically(value: object) -> None:
    """Anything the json module writes, fastjson.loads reads back the same."""
    assert fastjson.loads(json.dumps(value)) == value


@pytest.mark.parametrize("bad", ["{", '{"a" 1}', "[1,]", "{1:}", '{"a":1} x', "", "{{}", "[" * 500])
def test_malformed_input_is_a_value_error(bad: str) -> None:
    """Malformed bodies raise ValueError, nothing else."""
    with pytest.raises(ValueError):
        fastjson.loads(bad)
